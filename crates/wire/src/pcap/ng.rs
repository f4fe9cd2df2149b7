//! pcapng input (the `pcapng` feature): what Wireshark, tshark and dumpcap write by default.
//!
//! The file is read a block at a time, framed here so the record cap holds before anything is
//! allocated ([`MAX_BLOCK_LEN`]), and each block parsed by pcap-file's `PcapNgParser`. Enhanced
//! Packet Blocks (and the obsolete Packet Blocks) are the records, their time scaled by their
//! interface's `if_tsresol` and `if_tsoffset`; every interface must be Ethernet. Simple Packet
//! Blocks, which carry no time, are refused; other blocks (name resolution, statistics, custom)
//! are skipped. A new Section Header Block starts a new section: its own byte order, its own
//! interfaces.

use std::io::Read;

use pcap_file::{
    DataLink, Endianness,
    pcapng::{
        Block, PcapNgParser,
        blocks::interface_description::{InterfaceDescriptionBlock, InterfaceDescriptionOption},
    },
};

use super::{Header, LINKTYPE_ETHERNET, MAX_RECORD_LEN, PcapError, Resolution};
use crate::read_full as fill;

/// A Section Header Block's type (the same bytes in either byte order).
pub(super) const SECTION_HEADER: u32 = 0x0a0d_0d0a;
/// The byte-order magic of a Section Header Block, as its writer wrote it.
const BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;
/// The largest block read: a record's cap ([`MAX_RECORD_LEN`]) and room for its header and
/// options, so a corrupt length cannot make the reader allocate gigabytes.
pub const MAX_BLOCK_LEN: u32 = MAX_RECORD_LEN + 64 * 1024;
/// A block's type, length and (for a Section Header Block) byte-order magic: what is read before
/// its length is known. Every block is at least this long.
const BLOCK_START: usize = 12;
/// Where a packet's bytes start in an Enhanced Packet Block or a Packet Block.
const PACKET_DATA: usize = 28;

/// How one interface's timestamps are read.
#[derive(Debug, Clone, Copy)]
struct Clock {
    /// `if_tsresol`: 10^-n s a unit, or 2^-n s with the top bit set (6, microseconds, if absent).
    resolution: u8,
    /// `if_tsoffset`: seconds added to every time.
    offset_s: u64,
}

impl Clock {
    fn of(idb: &InterfaceDescriptionBlock<'_>) -> Clock {
        let mut clock = Clock {
            resolution: 6,
            offset_s: 0,
        };
        for option in &idb.options {
            match *option {
                InterfaceDescriptionOption::IfTsResol(r) => clock.resolution = r,
                InterfaceDescriptionOption::IfTsOffset(s) => clock.offset_s = s,
                _ => {}
            }
        }
        clock
    }

    /// Nanoseconds since the Unix epoch of `units` (saturating).
    fn nanos(self, units: u64) -> u64 {
        let units = u128::from(units);
        let n = u32::from(self.resolution & 0x7f);
        let ns = if self.resolution & 0x80 != 0 {
            // 2^-n s a unit.
            1u128
                .checked_shl(n)
                .map_or(0, |div| units * 1_000_000_000 / div)
        } else if n <= 9 {
            units * 10u128.pow(9 - n)
        } else {
            10u128.checked_pow(n - 9).map_or(0, |div| units / div)
        };
        let offset = u128::from(self.offset_s) * 1_000_000_000;
        u64::try_from(ns + offset).unwrap_or(u64::MAX)
    }

    /// The resolution as the classic header names it: microseconds if it is, else nanoseconds
    /// (every record's time is in nanoseconds whatever the file's unit).
    fn resolution(self) -> Resolution {
        if self.resolution == 6 {
            Resolution::Micros
        } else {
            Resolution::Nanos
        }
    }
}

/// One packet block, as read.
pub(super) struct Packet {
    /// Nanoseconds since the Unix epoch.
    pub(super) ts_nanos: u64,
    /// Length on the wire.
    pub(super) orig_len: u32,
    /// Offset of the block in the file.
    pub(super) offset: u64,
    /// Offset of the block after it.
    pub(super) next: u64,
}

/// The reading state of a pcapng file: the section's parser, its interfaces' clocks, the block
/// being read.
pub(super) struct Ng {
    parser: PcapNgParser,
    clocks: Vec<Clock>,
    block: Vec<u8>,
}

impl std::fmt::Debug for Ng {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ng")
            .field("interfaces", &self.clocks.len())
            .field("block_len", &self.block.len())
            .finish_non_exhaustive()
    }
}

fn bad(offset: u64, reason: impl std::fmt::Display) -> PcapError {
    PcapError::PcapNg {
        offset,
        reason: reason.to_string(),
    }
}

/// Reads the block at `offset` whole into `block`, its first bytes `start` already read (at the
/// file's start; none after); `Ok(false)` at a clean end of file.
/// `big_endian`: the section's byte order, for any block but a Section Header Block.
fn read_block(
    inner: &mut impl Read,
    start: &[u8],
    offset: u64,
    big_endian: bool,
    block: &mut Vec<u8>,
) -> Result<bool, PcapError> {
    let io = |source| PcapError::Io {
        op: "read",
        offset,
        source,
    };
    let mut inner = start.chain(inner);
    let mut h = [0u8; BLOCK_START];
    let have = fill(&mut inner, &mut h).map_err(io)?;
    if have == 0 {
        return Ok(false);
    }
    if have < BLOCK_START {
        return Err(PcapError::Truncated {
            what: "block header",
            offset,
            need: BLOCK_START,
            have,
        });
    }
    let kind = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    let big_endian = if kind == SECTION_HEADER {
        match u32::from_be_bytes([h[8], h[9], h[10], h[11]]) {
            BYTE_ORDER_MAGIC => true,
            m if m == BYTE_ORDER_MAGIC.swap_bytes() => false,
            m => return Err(bad(offset, format_args!("byte-order magic {m:#010x}"))),
        }
    } else {
        big_endian
    };
    let len_bytes = [h[4], h[5], h[6], h[7]];
    let len = if big_endian {
        u32::from_be_bytes(len_bytes)
    } else {
        u32::from_le_bytes(len_bytes)
    };
    if len > MAX_BLOCK_LEN {
        return Err(PcapError::RecordTooLong {
            offset,
            len: len as usize,
            limit: MAX_BLOCK_LEN,
        });
    }
    let len = len as usize;
    if len < BLOCK_START || !len.is_multiple_of(4) {
        return Err(bad(
            offset,
            format_args!("block length {len}, not a multiple of 4 of at least 12"),
        ));
    }
    block.clear();
    block.extend_from_slice(&h);
    block.resize(len, 0);
    let got = fill(&mut inner, &mut block[BLOCK_START..]).map_err(io)?;
    if got < len - BLOCK_START {
        return Err(PcapError::Truncated {
            what: "block",
            offset,
            need: len,
            have: BLOCK_START + got,
        });
    }
    Ok(true)
}

impl Ng {
    /// Reads the Section Header Block (its first bytes `start` already read) and the blocks up
    /// to the first Interface Description Block, which gives the header. Returns the header and
    /// the offset of the next block.
    pub(super) fn open(
        start: &[u8],
        inner: &mut impl Read,
    ) -> Result<(Ng, Header, u64), PcapError> {
        let mut block = Vec::new();
        if !read_block(inner, start, 0, true, &mut block)? {
            return Err(PcapError::Truncated {
                what: "block header",
                offset: 0,
                need: BLOCK_START,
                have: 0,
            });
        }
        let (_, parser) = PcapNgParser::new(&block).map_err(|e| bad(0, e))?;
        let mut ng = Ng {
            parser,
            clocks: Vec::new(),
            block,
        };
        let mut offset = ng.block.len() as u64;
        loop {
            if !read_block(inner, &[], offset, ng.big_endian(), &mut ng.block)? {
                return Err(bad(
                    offset,
                    "the file ends before any interface description block",
                ));
            }
            let at = offset;
            offset += ng.block.len() as u64;
            // A packet here is of an interface not yet described: an error.
            ng.parse(at)?;
            if let (Some(clock), Some(idb)) = (ng.clocks.first(), ng.parser.interfaces().first()) {
                let header = Header {
                    format: super::Format::PcapNg,
                    resolution: clock.resolution(),
                    big_endian: ng.big_endian(),
                    version: (
                        ng.parser.section().major_version,
                        ng.parser.section().minor_version,
                    ),
                    snaplen: idb.snaplen,
                    linktype: LINKTYPE_ETHERNET,
                };
                return Ok((ng, header, offset));
            }
        }
    }

    /// Whether the current section is big-endian.
    fn big_endian(&self) -> bool {
        self.parser.section().endianness == Endianness::Big
    }

    /// Parses the block read (at `offset`): a packet's time and length and where its bytes are
    /// in the block, or `None` for a block that is not a packet.
    fn parse(
        &mut self,
        offset: u64,
    ) -> Result<Option<(Packet, std::ops::Range<usize>)>, PcapError> {
        let (_, parsed) = self
            .parser
            .next_block(&self.block)
            .map_err(|e| bad(offset, e))?;
        let (interface, units, orig_len, data) = match parsed {
            Block::SectionHeader(_) => {
                self.clocks.clear();
                return Ok(None);
            }
            Block::InterfaceDescription(idb) => {
                let linktype = u32::from(idb.linktype);
                if idb.linktype != DataLink::ETHERNET {
                    return Err(PcapError::LinkType(linktype));
                }
                self.clocks.push(Clock::of(&idb));
                return Ok(None);
            }
            Block::EnhancedPacket(p) => (
                p.interface_id,
                u64::try_from(p.timestamp.as_nanos()).unwrap_or(u64::MAX),
                p.original_len,
                p.data,
            ),
            Block::Packet(p) => (
                u32::from(p.interface_id),
                p.timestamp,
                p.original_len,
                p.data,
            ),
            Block::SimplePacket(_) => {
                return Err(bad(offset, "a simple packet block (no time) is not read"));
            }
            _ => return Ok(None),
        };
        let Some(clock) = self.clocks.get(interface as usize) else {
            return Err(bad(
                offset,
                format_args!(
                    "a packet of interface {interface}, which no interface description block names"
                ),
            ));
        };
        let len = data.len();
        if len > MAX_RECORD_LEN as usize {
            return Err(PcapError::RecordTooLong {
                offset,
                len,
                limit: MAX_RECORD_LEN,
            });
        }
        // The packet's bytes in the block: after the type, the length and five 32-bit fields in
        // both kinds of packet block (pcap-file borrows them from there).
        let range = PACKET_DATA..PACKET_DATA + len;
        if self.block.get(range.clone()) != Some(&data[..]) {
            return Err(bad(offset, "packet data outside its block"));
        }
        let packet = Packet {
            ts_nanos: clock.nanos(units),
            orig_len,
            offset,
            next: offset + self.block.len() as u64,
        };
        Ok(Some((packet, range)))
    }

    /// Reads blocks from `offset` to the next packet: the packet and its bytes; `Ok(None)` at a
    /// clean end of file.
    pub(super) fn next(
        &mut self,
        inner: &mut impl Read,
        mut offset: u64,
    ) -> Result<Option<(Packet, &[u8])>, PcapError> {
        loop {
            if !read_block(inner, &[], offset, self.big_endian(), &mut self.block)? {
                return Ok(None);
            }
            let at = offset;
            offset += self.block.len() as u64;
            if let Some((packet, range)) = self.parse(at)? {
                return Ok(Some((packet, &self.block[range])));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Clock;

    #[test]
    fn times_follow_the_interfaces_resolution_and_offset() {
        let clock = |resolution, offset_s| Clock {
            resolution,
            offset_s,
        };
        assert_eq!(clock(6, 0).nanos(1_500_000), 1_500_000_000);
        assert_eq!(clock(9, 0).nanos(1_500_000), 1_500_000);
        assert_eq!(clock(0, 0).nanos(2), 2_000_000_000);
        // Finer than nanoseconds: cut to them.
        assert_eq!(clock(12, 0).nanos(1_234_567), 1_234);
        // 2^-10 s a unit.
        assert_eq!(clock(0x80 | 10, 0).nanos(1024), 1_000_000_000);
        assert_eq!(clock(6, 10).nanos(1), 10_000_001_000);
        // Past u64's nanoseconds: the largest, never a wrap or a panic.
        assert_eq!(clock(0, 0).nanos(u64::MAX), u64::MAX);
        assert_eq!(clock(0x80 | 127, 0).nanos(u64::MAX), 0);
        assert_eq!(clock(127, u64::MAX).nanos(u64::MAX), u64::MAX);
    }
}
