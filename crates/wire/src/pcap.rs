//! Classic pcap files (not pcapng) with Ethernet frames, and the UDP payloads inside them.
//!
//! File layout (libpcap's `pcap-savefile(5)`): a 24-byte global header, then records of a 16-byte
//! header and the captured bytes. The writer of a file picks the byte order; the magic number
//! tells a reader which it was, and whether timestamps are in microseconds or nanoseconds.
//!
//! | Offset | Len | Global header field | Value written here                              |
//! |-------:|----:|---------------------|-------------------------------------------------|
//! | 0      | 4   | magic               | `0xa1b2c3d4` (µs) or `0xa1b23c4d` (ns)          |
//! | 4      | 2   | version major       | 2                                               |
//! | 6      | 2   | version minor       | 4                                               |
//! | 8      | 4   | thiszone            | 0                                               |
//! | 12     | 4   | sigfigs             | 0                                               |
//! | 16     | 4   | snaplen             | 65535 by default                                |
//! | 20     | 4   | network             | 1, `LINKTYPE_ETHERNET`                          |
//!
//! | Offset | Len | Record header field | Meaning                                         |
//! |-------:|----:|---------------------|-------------------------------------------------|
//! | 0      | 4   | ts_sec              | seconds                                         |
//! | 4      | 4   | ts_frac             | microseconds or nanoseconds, per the magic      |
//! | 8      | 4   | incl_len            | bytes captured, which follow                    |
//! | 12     | 4   | orig_len            | bytes on the wire                               |
//!
//! This writer always writes little-endian. Unlike the codecs, this module does I/O and its
//! [`PcapError`] carries `io::Error`s; it reads capture files, it is not on the trader's hot path.

use std::io::{self, BufReader, BufWriter, Read, Write};

use crate::{read_full as fill, udp};

/// `LINKTYPE_ETHERNET` (tcpdump.org link-layer header types).
pub const LINKTYPE_ETHERNET: u32 = 1;
/// Length of the global header.
pub const GLOBAL_HEADER_LEN: usize = 24;
/// Length of a record header.
pub const RECORD_HEADER_LEN: usize = 16;
/// Magic number of microsecond-resolution files.
pub const MAGIC_MICROS: u32 = 0xa1b2_c3d4;
/// Magic number of nanosecond-resolution files.
pub const MAGIC_NANOS: u32 = 0xa1b2_3c4d;
/// The largest record a reader accepts whatever the file's snaplen says (libpcap's
/// `MAXIMUM_SNAPLEN`), so a corrupt length cannot make it allocate gigabytes.
pub const MAX_RECORD_LEN: u32 = 262_144;

/// Timestamp resolution of a pcap file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// Microseconds (magic `0xa1b2c3d4`), what most tools write.
    Micros,
    /// Nanoseconds (magic `0xa1b23c4d`).
    Nanos,
}

/// Why a pcap file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum PcapError {
    /// The underlying reader or writer failed.
    #[error("failed to {op} pcap file at byte {offset}")]
    Io {
        /// "read", "write" or "flush".
        op: &'static str,
        /// Offset of the header or record being read or written.
        offset: u64,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// Not a classic pcap file.
    #[error(
        "not a classic pcap file: magic {magic:#010x} (a pcapng file? convert it with \
         `editcap -F pcap in.pcapng out.pcap`)"
    )]
    BadMagic {
        /// The first four bytes, read big-endian.
        magic: u32,
    },
    /// A link type other than Ethernet.
    #[error("pcap link type {0} is not LINKTYPE_ETHERNET (1); capture on an Ethernet interface")]
    LinkType(u32),
    /// The file ends inside a header or a record.
    #[error("pcap file truncated: the {what} at byte {offset} needs {need} bytes, {have} present")]
    Truncated {
        /// "global header", "record header" or "record".
        what: &'static str,
        /// Offset of the header or record.
        offset: u64,
        /// Bytes needed.
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// A record longer than [`MAX_RECORD_LEN`], or than the snaplen when writing.
    #[error("pcap record at byte {offset} is {len} bytes, over the limit of {limit}")]
    RecordTooLong {
        /// Offset of the record.
        offset: u64,
        /// Its length.
        len: usize,
        /// The limit.
        limit: u32,
    },
}

/// The global header of a pcap file, as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Timestamp resolution.
    pub resolution: Resolution,
    /// Whether the file is big-endian.
    pub big_endian: bool,
    /// Version (major, minor), normally (2, 4).
    pub version: (u16, u16),
    /// Snapshot length.
    pub snaplen: u32,
    /// Link type ([`LINKTYPE_ETHERNET`]).
    pub linktype: u32,
}

/// One record of a pcap file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// Capture time in nanoseconds since the Unix epoch (from microseconds in µs files).
    pub ts_nanos: u64,
    /// Length of the frame on the wire (at least `data.len()`).
    pub orig_len: u32,
    /// The captured bytes: an Ethernet frame.
    pub data: &'a [u8],
    /// Offset of the record header in the file.
    pub offset: u64,
}

/// Reads a classic pcap file of Ethernet frames.
#[derive(Debug)]
pub struct Reader<R: Read> {
    inner: BufReader<R>,
    header: Header,
    buf: Vec<u8>,
    offset: u64,
}

impl<R: Read> Reader<R> {
    /// Reads and checks the global header: [`PcapError::BadMagic`] for anything but a classic pcap
    /// file, [`PcapError::LinkType`] for a link type other than Ethernet.
    pub fn new(inner: R) -> Result<Self, PcapError> {
        let mut inner = BufReader::with_capacity(64 * 1024, inner);
        let mut h = [0u8; GLOBAL_HEADER_LEN];
        let io = |source| PcapError::Io {
            op: "read",
            offset: 0,
            source,
        };
        let have = fill(&mut inner, &mut h).map_err(io)?;
        if have < 4 {
            let (need, what) = (GLOBAL_HEADER_LEN, "global header");
            return Err(PcapError::Truncated {
                what,
                offset: 0,
                need,
                have,
            });
        }
        let magic_be = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
        let magic_le = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let (resolution, big_endian) = match (magic_be, magic_le) {
            (MAGIC_MICROS, _) => (Resolution::Micros, true),
            (MAGIC_NANOS, _) => (Resolution::Nanos, true),
            (_, MAGIC_MICROS) => (Resolution::Micros, false),
            (_, MAGIC_NANOS) => (Resolution::Nanos, false),
            _ => return Err(PcapError::BadMagic { magic: magic_be }),
        };
        if have < GLOBAL_HEADER_LEN {
            let (need, what) = (GLOBAL_HEADER_LEN, "global header");
            return Err(PcapError::Truncated {
                what,
                offset: 0,
                need,
                have,
            });
        }
        let u16_at = |i: usize| {
            let b = [h[i], h[i + 1]];
            if big_endian {
                u16::from_be_bytes(b)
            } else {
                u16::from_le_bytes(b)
            }
        };
        let u32_at = |i: usize| {
            let b = [h[i], h[i + 1], h[i + 2], h[i + 3]];
            if big_endian {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        let header = Header {
            resolution,
            big_endian,
            version: (u16_at(4), u16_at(6)),
            snaplen: u32_at(16),
            linktype: u32_at(20),
        };
        if header.linktype != LINKTYPE_ETHERNET {
            return Err(PcapError::LinkType(header.linktype));
        }
        Ok(Reader {
            inner,
            header,
            buf: Vec::new(),
            offset: GLOBAL_HEADER_LEN as u64,
        })
    }

    /// The global header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Reads the next record; `Ok(None)` at a clean end of file.
    pub fn read_record(&mut self) -> Result<Option<Record<'_>>, PcapError> {
        let offset = self.offset;
        let io = |source| PcapError::Io {
            op: "read",
            offset,
            source,
        };
        let mut h = [0u8; RECORD_HEADER_LEN];
        match fill(&mut self.inner, &mut h).map_err(io)? {
            0 => return Ok(None),
            RECORD_HEADER_LEN => {}
            have => {
                let (what, need) = ("record header", RECORD_HEADER_LEN);
                return Err(PcapError::Truncated {
                    what,
                    offset,
                    need,
                    have,
                });
            }
        }
        let be = self.header.big_endian;
        let u32_at = |i: usize| {
            let b = [h[i], h[i + 1], h[i + 2], h[i + 3]];
            if be {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        let (sec, frac, incl_len, orig_len) = (u32_at(0), u32_at(4), u32_at(8), u32_at(12));
        let len = incl_len as usize;
        if incl_len > MAX_RECORD_LEN {
            return Err(PcapError::RecordTooLong {
                offset,
                len,
                limit: MAX_RECORD_LEN,
            });
        }
        self.buf.resize(len, 0);
        let got = fill(&mut self.inner, &mut self.buf).map_err(io)?;
        if got < len {
            let (what, need, have) = ("record", RECORD_HEADER_LEN + len, RECORD_HEADER_LEN + got);
            return Err(PcapError::Truncated {
                what,
                offset,
                need,
                have,
            });
        }
        self.offset += (RECORD_HEADER_LEN + len) as u64;
        let frac_nanos = match self.header.resolution {
            Resolution::Micros => u64::from(frac) * 1_000,
            Resolution::Nanos => u64::from(frac),
        };
        let ts_nanos = u64::from(sec) * 1_000_000_000 + frac_nanos;
        Ok(Some(Record {
            ts_nanos,
            orig_len,
            data: &self.buf,
            offset,
        }))
    }
}

/// Writes a classic little-endian pcap file of Ethernet frames.
#[derive(Debug)]
pub struct Writer<W: Write> {
    inner: BufWriter<W>,
    resolution: Resolution,
    snaplen: u32,
    offset: u64,
}

impl<W: Write> Writer<W> {
    /// Writes the global header, snaplen 65535.
    pub fn new(inner: W, resolution: Resolution) -> Result<Self, PcapError> {
        Self::with_snaplen(inner, resolution, 65_535)
    }

    /// Writes the global header with the given snaplen; longer frames are rejected, not cut.
    pub fn with_snaplen(inner: W, resolution: Resolution, snaplen: u32) -> Result<Self, PcapError> {
        let mut inner = BufWriter::with_capacity(64 * 1024, inner);
        let magic = match resolution {
            Resolution::Micros => MAGIC_MICROS,
            Resolution::Nanos => MAGIC_NANOS,
        };
        let mut h = [0u8; GLOBAL_HEADER_LEN];
        h[0..4].copy_from_slice(&magic.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        h[16..20].copy_from_slice(&snaplen.to_le_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        inner.write_all(&h).map_err(|source| PcapError::Io {
            op: "write",
            offset: 0,
            source,
        })?;
        Ok(Writer {
            inner,
            resolution,
            snaplen,
            offset: GLOBAL_HEADER_LEN as u64,
        })
    }

    /// Appends one frame captured at `ts_nanos` (nanoseconds since the Unix epoch); returns the
    /// record's offset.
    pub fn write_frame(&mut self, ts_nanos: u64, frame: &[u8]) -> Result<u64, PcapError> {
        let offset = self.offset;
        let len = frame.len();
        let limit = self.snaplen;
        let incl = u32::try_from(len)
            .ok()
            .filter(|&l| l <= limit)
            .ok_or(PcapError::RecordTooLong { offset, len, limit })?;
        // The classic format has 32-bit seconds; they wrap in 2106.
        let sec = (ts_nanos / 1_000_000_000) as u32;
        let frac = match self.resolution {
            Resolution::Micros => (ts_nanos % 1_000_000_000 / 1_000) as u32,
            Resolution::Nanos => (ts_nanos % 1_000_000_000) as u32,
        };
        let mut h = [0u8; RECORD_HEADER_LEN];
        for (i, v) in [sec, frac, incl, incl].into_iter().enumerate() {
            h[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        let io = |source| PcapError::Io {
            op: "write",
            offset,
            source,
        };
        self.inner.write_all(&h).map_err(io)?;
        self.inner.write_all(frame).map_err(io)?;
        self.offset += (RECORD_HEADER_LEN + len) as u64;
        Ok(offset)
    }

    /// Flushes and returns the underlying writer.
    pub fn finish(self) -> Result<W, PcapError> {
        let offset = self.offset;
        self.inner.into_inner().map_err(|e| PcapError::Io {
            op: "flush",
            offset,
            source: e.into_error(),
        })
    }
}

/// Extracts the UDP datagram from an Ethernet II frame (VLAN tags allowed, IPv4 or IPv6),
/// through the one header walk, [`crate::udp::parse`].
///
/// `Ok(None)` for a well-formed frame that is not an unfragmented UDP datagram (ARP, TCP, an IP
/// fragment, ...); `Err` for a frame whose headers are malformed or truncated.
pub fn udp_payload(
    frame: &[u8],
) -> Result<Option<udp::Datagram<'_>>, etherparse::err::packet::SliceError> {
    match udp::parse(frame) {
        Ok(d) => Ok(Some(d)),
        Err(udp::NotUdp::Malformed(e)) => Err(e),
        Err(udp::NotUdp::NotIp | udp::NotUdp::Fragment | udp::NotUdp::OtherProtocol) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Ethernet II / IPv4 / UDP, payload "hi": the UDP walk's fixture.
    use crate::udp::tests::FRAME as FRAME_BYTES;

    // Little-endian µs pcap with one record of FRAME_BYTES at 1.000002 s.
    fn file_bytes() -> Vec<u8> {
        let mut v = vec![
            0xd4, 0xc3, 0xb2, 0xa1, 0x02, 0x00, 0x04, 0x00, // magic, version 2.4
            0, 0, 0, 0, 0, 0, 0, 0, // thiszone, sigfigs
            0xff, 0xff, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, // snaplen 65535, Ethernet
            0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, // 1 s, 2 µs
            44, 0, 0, 0, 44, 0, 0, 0, // incl_len, orig_len
        ];
        v.extend_from_slice(&FRAME_BYTES);
        v
    }

    #[test]
    fn read() {
        let bytes = file_bytes();
        let mut reader = Reader::new(&bytes[..]).unwrap();
        assert_eq!(
            *reader.header(),
            Header {
                resolution: Resolution::Micros,
                big_endian: false,
                version: (2, 4),
                snaplen: 65535,
                linktype: 1
            }
        );
        let record = reader.read_record().unwrap().unwrap();
        assert_eq!(
            (record.ts_nanos, record.orig_len, record.offset),
            (1_000_002_000, 44, 24)
        );
        assert_eq!(record.data, &FRAME_BYTES[..]);
        assert!(reader.read_record().unwrap().is_none());
    }

    #[test]
    fn write() {
        let mut writer = Writer::new(Vec::new(), Resolution::Micros).unwrap();
        assert_eq!(writer.write_frame(1_000_002_999, &FRAME_BYTES).unwrap(), 24);
        assert_eq!(writer.finish().unwrap(), file_bytes());
    }

    #[test]
    fn nanos_round_trip_and_snaplen() {
        let mut writer = Writer::with_snaplen(Vec::new(), Resolution::Nanos, 44).unwrap();
        writer
            .write_frame(1_700_000_000_123_456_789, &FRAME_BYTES)
            .unwrap();
        assert!(matches!(
            writer.write_frame(0, &[0; 45]),
            Err(PcapError::RecordTooLong {
                offset: 84,
                len: 45,
                limit: 44
            })
        ));
        let bytes = writer.finish().unwrap();
        let mut reader = Reader::new(&bytes[..]).unwrap();
        assert_eq!(reader.header().resolution, Resolution::Nanos);
        let record = reader.read_record().unwrap().unwrap();
        assert_eq!(record.ts_nanos, 1_700_000_000_123_456_789);
    }

    #[test]
    fn big_endian_file() {
        let mut bytes = file_bytes();
        for range in [0..4, 16..20, 20..24, 24..28, 28..32, 32..36, 36..40] {
            bytes[range].reverse();
        }
        bytes[4..8].copy_from_slice(&[0, 2, 0, 4]);
        let mut reader = Reader::new(&bytes[..]).unwrap();
        assert!(reader.header().big_endian);
        assert_eq!(reader.header().version, (2, 4));
        assert_eq!(
            reader.read_record().unwrap().unwrap().data,
            &FRAME_BYTES[..]
        );
    }

    #[test]
    fn bad_files() {
        let pcapng = [0x0a, 0x0d, 0x0d, 0x0a, 0, 0, 0, 0];
        assert!(matches!(
            Reader::new(&pcapng[..]),
            Err(PcapError::BadMagic { magic: 0x0a0d0d0a })
        ));
        let mut bytes = file_bytes();
        bytes[20] = 101; // LINKTYPE_RAW
        assert!(matches!(
            Reader::new(&bytes[..]),
            Err(PcapError::LinkType(101))
        ));
        let bytes = file_bytes();
        for len in 0..bytes.len() {
            let end = Reader::new(&bytes[..len]).and_then(|mut r| r.read_record().map(|_| ()));
            match len {
                0..24 => assert!(matches!(
                    end,
                    Err(PcapError::Truncated {
                        what: "global header",
                        ..
                    })
                )),
                24 => assert!(end.is_ok()),
                25..40 => assert!(matches!(
                    end,
                    Err(PcapError::Truncated {
                        what: "record header",
                        ..
                    })
                )),
                _ => assert!(matches!(
                    end,
                    Err(PcapError::Truncated {
                        what: "record",
                        need: 60,
                        ..
                    })
                )),
            }
        }
        let mut bytes = file_bytes();
        bytes[32..36].copy_from_slice(&(MAX_RECORD_LEN + 1).to_le_bytes());
        let mut reader = Reader::new(&bytes[..]).unwrap();
        assert!(matches!(
            reader.read_record(),
            Err(PcapError::RecordTooLong { .. })
        ));
    }

    #[test]
    fn udp_extraction() {
        let d = udp_payload(&FRAME_BYTES).unwrap().unwrap();
        assert_eq!(d.payload, b"hi");
        // Truncated: an error, never a payload.
        assert!(udp_payload(&FRAME_BYTES[..40]).is_err());
        // A fragment (MF set) is not a datagram.
        let mut frag = FRAME_BYTES;
        frag[20] = 0x20;
        assert_eq!(udp_payload(&frag).ok().flatten(), None);
    }
}
