//! The Internet checksum (RFC 1071): the one implementation the XDP program (the reflector
//! rewrites IPv4 headers), the AF_XDP frame builder (IPv4 and UDP) and the fault injector use.
//!
//! Straight-line code over a byte slice with no indexing that could panic, so the eBPF
//! verifier accepts it: on the XDP side it runs over a header already copied out of the
//! packet, a fixed-size array whose loop the compiler unrolls.

/// The ones'-complement sum of `bytes` as big-endian 16-bit words (an odd trailing byte is
/// padded with a zero), not yet folded. Sums of several parts add up before [`fold`] (the UDP
/// pseudo header, header and payload). A `u64` cannot overflow for any slice that fits in
/// memory.
#[inline(always)]
pub fn sum(bytes: &[u8]) -> u64 {
    let (words, rest) = bytes.as_chunks::<2>();
    let mut sum: u64 = 0;
    for word in words {
        sum += u64::from(u16::from_be_bytes(*word));
    }
    if let [last] = rest {
        sum += u64::from(*last) << 8;
    }
    sum
}

/// [`sum`] of the bytes `words` hold in memory, read 32 bits at a time in native byte order:
/// a quarter of the additions, on aligned words. Folded, it is the byte-swapped [`sum`] on a
/// little-endian machine: [`fold_native`] gives the big-endian one. It is the reference for a
/// native-order partial sum such as the kernel's `csum_partial` (what `bpf_csum_diff` returns,
/// which the XDP program's UDP checksum folds with [`fold_native`]).
#[inline(always)]
pub fn sum_native(words: &[u64]) -> u64 {
    let mut sum: u64 = 0;
    for w in words {
        sum += (w & 0xffff_ffff) + (w >> 32);
    }
    sum
}

/// Folds a [`sum_native`] to the 16 bits [`fold`] of [`sum`] gives over the same bytes
/// (ones'-complement sums commute with byte swapping, RFC 1071).
#[inline(always)]
pub const fn fold_native(sum: u64) -> u16 {
    fold(sum).to_be()
}

/// Folds a [`sum`] to 16 bits by adding the carries back in (end-around carry). Four fixed
/// steps take any `u64` down to 16 bits: no loop for the verifier to bound.
#[inline(always)]
pub const fn fold(sum: u64) -> u16 {
    let s = (sum & 0xffff_ffff) + (sum >> 32); // < 2^33
    let s = (s & 0xffff) + (s >> 16); // <= 0x2_fffe
    let s = (s & 0xffff) + (s >> 16); // <= 0x1_0001
    let s = (s & 0xffff) + (s >> 16); // <= 0xffff
    s as u16
}

/// The IPv4 header checksum (RFC 791) of `header` (options included), computed with its
/// checksum field set to zero. Over a header that carries its checksum, a correct one gives 0.
#[inline(always)]
pub fn ipv4_header(header: &[u8]) -> u16 {
    !fold(sum(header))
}

/// The TCP checksum's [`sum`] over an IPv4 datagram without options, `ip`, carrying one TCP
/// segment: its pseudo header (addresses, protocol, TCP length), then the segment as it is
/// (its checksum field as it stands: zero it first to compute one). Not folded.
#[inline(always)]
pub fn tcp_sum(ip: &[u8]) -> u64 {
    use crate::layout::ipv4;
    let Some(segment) = ip.get(ipv4::HEADER_LEN..) else {
        return 0;
    };
    let mut pseudo = [0u8; 12];
    if let Some(addrs) = ip.get(ipv4::SRC.start..ipv4::DST.end) {
        pseudo[..8].copy_from_slice(addrs);
    }
    pseudo[9] = ipv4::PROTOCOL_TCP;
    pseudo[10..].copy_from_slice(&(segment.len() as u16).to_be_bytes());
    sum(&pseudo) + sum(segment)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// IPv4, IHL 5, total length 30, DF, TTL 64, UDP, 10.0.0.1 -> 10.0.0.2; checksum 0x26cd
    /// (as `wire::pcap`'s fixture and Wireshark have it).
    const HEADER: [u8; 20] = [
        0x45, 0x00, 0x00, 0x1e, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02,
    ];

    #[test]
    fn ipv4_header_checksum_of_a_known_header() {
        assert_eq!(ipv4_header(&HEADER), 0x26cd);
        let mut with = HEADER;
        with[10..12].copy_from_slice(&0x26cdu16.to_be_bytes());
        assert_eq!(ipv4_header(&with), 0, "a correct checksum verifies to 0");
    }

    /// RFC 1071's worked example (section 3): 00 01 f2 03 f4 f5 f6 f7 sums to 0xddf2.
    #[test]
    fn rfc1071_example_and_odd_lengths() {
        let bytes = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(sum(&bytes)), 0xddf2);
        assert_eq!(sum(&[0xab]), 0xab00);
        assert_eq!(sum(&[0x12, 0x34, 0xab]), 0x1234 + 0xab00);
        assert_eq!(sum(&[]), 0);
    }

    /// Over bytes of every length up to 80 (zero-padded to whole words, as the XDP program's
    /// buffer is), the native 64-bit sum folds to what the byte-wise big-endian sum does.
    #[test]
    fn the_native_sum_folds_to_the_byte_sum() {
        let mut x: u32 = 0x1234_5678;
        for len in 0..=80usize {
            let mut bytes = [0u8; 80];
            for b in bytes.iter_mut().take(len) {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                *b = (x >> 16) as u8;
            }
            let mut words = [0u64; 10];
            for (w, c) in words.iter_mut().zip(bytes.as_chunks::<8>().0) {
                *w = u64::from_ne_bytes(*c);
            }
            assert_eq!(
                fold_native(sum_native(&words)),
                fold(sum(&bytes[..len])),
                "{len} bytes"
            );
        }
        // All ones: every carry path.
        let ones = [u64::MAX; 10];
        assert_eq!(fold_native(sum_native(&ones)), fold(sum(&[0xff; 80])));
    }

    #[test]
    fn fold_adds_carries_back_until_16_bits() {
        assert_eq!(fold(0), 0);
        assert_eq!(fold(0xffff), 0xffff);
        assert_eq!(fold(0x1_0000), 1);
        assert_eq!(fold(0x1_ffff), 1);
        assert_eq!(fold(0x2_fffe), 1);
        // Folding is arithmetic mod 0xffff, with 0xffff (not 0) for a nonzero multiple.
        for s in [
            u64::MAX,
            u64::MAX - 1,
            0x1234_5678_9abc_def0,
            0xffff_ffff,
            1 << 33,
        ] {
            let want = match s % 0xffff {
                0 => 0xffff,
                r => r as u16,
            };
            assert_eq!(fold(s), want, "{s:#x}");
        }
    }
}
