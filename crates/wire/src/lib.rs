//! Sans-IO, panic-free codecs for the tick-to-trade lab's wire formats.
//!
//! * [`moldudp64`]: NASDAQ MoldUDP64 downstream packets (session, sequence number, message count,
//!   length-prefixed message blocks).
//! * [`itch`]: NASDAQ TotalView-ITCH 5.0 messages: all 23 types decoded, every field, each a
//!   view and a `Repr` in its own module. [`itch::file`] reads and writes ITCH files as NASDAQ
//!   distributes them.
//! * [`order`]: the trader's fixed 36-byte, OUCH-style Enter Order.
//! * [`ouch`]: Nasdaq OUCH 5.0, the order entry protocol venues take: Enter Order and Cancel
//!   Order in, Order Accepted, Executed, Canceled, Rejected and System Event out.
//! * [`pcap`]: classic pcap files (LINKTYPE_ETHERNET) and UDP payload extraction from their frames,
//!   for the replay tool.
//! * [`soupbin`]: SoupBinTCP 3.00, the session under OUCH on TCP, and the [`soupbin::Framer`]
//!   that finds its packets in a TCP byte stream however it was split.
//! * [`udp`]: the UDP datagram in an Ethernet frame: the one header walk, shared by the pcap
//!   reader and the trader's AF_XDP receive path.
//!
//! Every format follows smoltcp's shape: a `Packet<T: AsRef<[u8]>>` view over a byte buffer with
//! named byte ranges, `new_checked` that validates the length once so that no accessor can panic
//! afterwards, and a typed `Repr` with `parse`, `emit` and `buffer_len`. Nothing on the parse or
//! emit path allocates, and no parser panics on any input (checked by the proptests in
//! `tests/prop.rs`). All multi-byte integers are big-endian, as NASDAQ specifies.
#![forbid(unsafe_code)]

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
#[cfg(test)]
use criterion as _;

mod error;
pub mod itch;
pub mod moldudp64;
pub mod order;
pub mod ouch;
pub mod pcap;
pub mod soupbin;
pub mod udp;

pub use error::{Error, Result};

/// Reads until `buf` is full or the reader reports end of file; returns the bytes read (the
/// file readers' one read loop: a short count means a truncated file, not an error).
pub(crate) fn read_full(reader: &mut impl std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while let Some(rest) = buf.get_mut(filled..).filter(|rest| !rest.is_empty()) {
        match reader.read(rest) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

// The formats' byte ranges live in `xdp_common::layout`, shared with the XDP program, which
// reads and rewrites these same fields; each codec's `field` module is that layout.
pub use xdp_common::layout::{Field, Rest};

/// Big-endian reads and writes of fixed-width integers at a `Field`.
///
/// The callers index with `Field` constants whose widths match the integer, on buffers whose length
/// `new_checked` has validated, so the slice operations cannot fail; on a buffer wrapped with
/// `new_unchecked` that is too short they panic, exactly as smoltcp's accessors do.
mod be {
    use crate::Field;

    #[inline]
    fn array<const N: usize>(data: &[u8], field: Field) -> [u8; N] {
        let mut out = [0u8; N];
        out.copy_from_slice(&data[field]);
        out
    }

    #[inline]
    pub(crate) fn u16(data: &[u8], field: Field) -> u16 {
        u16::from_be_bytes(array(data, field))
    }

    #[inline]
    pub(crate) fn u32(data: &[u8], field: Field) -> u32 {
        u32::from_be_bytes(array(data, field))
    }

    #[inline]
    pub(crate) fn u64(data: &[u8], field: Field) -> u64 {
        u64::from_be_bytes(array(data, field))
    }

    /// A 6-byte unsigned integer (ITCH timestamps).
    #[inline]
    pub(crate) fn u48(data: &[u8], field: Field) -> u64 {
        let b: [u8; 6] = array(data, field);
        let mut wide = [0u8; 8];
        wide[2..].copy_from_slice(&b);
        u64::from_be_bytes(wide)
    }

    #[inline]
    pub(crate) fn bytes<const N: usize>(data: &[u8], field: Field) -> [u8; N] {
        array(data, field)
    }

    #[inline]
    pub(crate) fn set_u16(data: &mut [u8], field: Field, value: u16) {
        data[field].copy_from_slice(&value.to_be_bytes());
    }

    #[inline]
    pub(crate) fn set_u32(data: &mut [u8], field: Field, value: u32) {
        data[field].copy_from_slice(&value.to_be_bytes());
    }

    #[inline]
    pub(crate) fn set_u64(data: &mut [u8], field: Field, value: u64) {
        data[field].copy_from_slice(&value.to_be_bytes());
    }

    /// Writes the low 48 bits of `value`; callers guarantee `value < 2^48`.
    #[inline]
    pub(crate) fn set_u48(data: &mut [u8], field: Field, value: u64) {
        data[field].copy_from_slice(&value.to_be_bytes()[2..]);
    }

    #[inline]
    pub(crate) fn set_bytes(data: &mut [u8], field: Field, value: &[u8]) {
        data[field].copy_from_slice(value);
    }
}
