//! pcap files with Ethernet frames, and the UDP payloads inside them: classic pcap, read and
//! written here, and (with the `pcapng` feature, the replay's) pcapng, read through pcap-file
//! ([`ng`]). [`Reader::new`] tells them apart by the first four bytes.
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
//! The writer writes classic pcap only, always little-endian. Unlike the codecs, this module does I/O and its
//! [`PcapError`] carries `io::Error`s; it reads capture files, it is not on the trader's hot path.

use std::io::{self, BufReader, BufWriter, Read, Write};

use crate::{read_full as fill, udp};

#[cfg(feature = "pcapng")]
pub mod ng;

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

/// Which format a file is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Classic pcap (`pcap-savefile(5)`).
    Pcap,
    /// pcapng (read with the `pcapng` feature).
    PcapNg,
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
    /// A pcapng block that could not be parsed (pcap-file's reason), or one this reader does
    /// not take.
    #[error("bad pcapng block at byte {offset}: {reason}")]
    PcapNg {
        /// Offset of the block.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// A record longer than [`MAX_RECORD_LEN`], or than the snaplen when writing (or, in a
    /// pcapng file, a block longer than `ng::MAX_BLOCK_LEN`).
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

/// The global header of a pcap file, as read (of a pcapng file: its first section's and first
/// interface's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The file's format.
    pub format: Format,
    /// Timestamp resolution (pcapng: microseconds where the first interface's `if_tsresol` says
    /// so, nanoseconds otherwise; a record's time is in nanoseconds either way).
    pub resolution: Resolution,
    /// Whether the file is big-endian.
    pub big_endian: bool,
    /// Version (major, minor), normally (2, 4) (pcapng: (1, 0)).
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

/// Reads a pcap file of Ethernet frames: classic, or pcapng with the `pcapng` feature.
#[derive(Debug)]
pub struct Reader<R: Read> {
    inner: BufReader<R>,
    header: Header,
    buf: Vec<u8>,
    offset: u64,
    /// A pcapng file's reading state.
    #[cfg(feature = "pcapng")]
    ng: Option<ng::Ng>,
}

impl<R: Read> Reader<R> {
    /// Reads and checks the global header: [`PcapError::BadMagic`] for anything but a classic pcap
    /// file (or a pcapng one, with the `pcapng` feature), [`PcapError::LinkType`] for a link type
    /// other than Ethernet. A pcapng file is read up to its first interface description.
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
        #[cfg(feature = "pcapng")]
        if magic_be == ng::SECTION_HEADER {
            let (ng, header, offset) = ng::Ng::open(&h[..have], &mut inner)?;
            return Ok(Reader {
                inner,
                header,
                buf: Vec::new(),
                offset,
                ng: Some(ng),
            });
        }
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
            format: Format::Pcap,
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
            #[cfg(feature = "pcapng")]
            ng: None,
        })
    }

    /// The global header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Reads the next record; `Ok(None)` at a clean end of file.
    pub fn read_record(&mut self) -> Result<Option<Record<'_>>, PcapError> {
        #[cfg(feature = "pcapng")]
        if let Some(ng) = &mut self.ng {
            let Some((packet, data)) = ng.next(&mut self.inner, self.offset)? else {
                return Ok(None);
            };
            self.offset = packet.next;
            return Ok(Some(Record {
                ts_nanos: packet.ts_nanos,
                orig_len: packet.orig_len,
                data,
                offset: packet.offset,
            }));
        }
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
                format: Format::Pcap,
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
        #[cfg(not(feature = "pcapng"))]
        assert!(matches!(
            Reader::new(&pcapng[..]),
            Err(PcapError::BadMagic { magic: 0x0a0d0d0a })
        ));
        #[cfg(feature = "pcapng")]
        assert!(matches!(
            Reader::new(&pcapng[..]),
            Err(PcapError::Truncated {
                what: "block header",
                ..
            })
        ));
        assert!(matches!(
            Reader::new(&[0x0a, 0x0d, 0x0d, 0x0b][..]),
            Err(PcapError::BadMagic { magic: 0x0a0d0d0b })
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

    /// Frames of several lengths (padding to 4 bytes in pcapng), their times in nanoseconds
    /// with a microsecond part only (a µs file holds them exactly).
    #[cfg(feature = "pcapng")]
    fn capture() -> Vec<(u64, Vec<u8>)> {
        (0..5u64)
            .map(|i| {
                let mut frame = FRAME_BYTES.to_vec();
                frame.extend((0..i).map(|b| b as u8));
                (1_700_000_000_000_000_000 + i * 1_234_567_000, frame)
            })
            .collect()
    }

    /// Every record of a file: time, length on the wire, bytes.
    #[cfg(feature = "pcapng")]
    fn records(bytes: &[u8]) -> Vec<(u64, u32, Vec<u8>)> {
        let mut reader = Reader::new(bytes).unwrap();
        let mut out = Vec::new();
        while let Some(r) = reader.read_record().unwrap() {
            out.push((r.ts_nanos, r.orig_len, r.data.to_vec()));
        }
        out
    }

    /// The capture as pcap-file writes pcapng: one Ethernet interface of `if_tsresol`
    /// `resolution` (none: the default, microseconds), Enhanced Packet Blocks.
    #[cfg(feature = "pcapng")]
    fn pcapng(endianness: pcap_file::Endianness, resolution: Option<u8>) -> Vec<u8> {
        use std::{borrow::Cow, time::Duration};

        use pcap_file::pcapng::{
            PcapNgWriter,
            blocks::{
                enhanced_packet::EnhancedPacketBlock,
                interface_description::{InterfaceDescriptionBlock, InterfaceDescriptionOption},
            },
        };
        let mut w = PcapNgWriter::with_endianness(Vec::new(), endianness).unwrap();
        w.write_pcapng_block(InterfaceDescriptionBlock {
            linktype: pcap_file::DataLink::ETHERNET,
            snaplen: 65_535,
            options: resolution
                .map(InterfaceDescriptionOption::IfTsResol)
                .into_iter()
                .collect(),
        })
        .unwrap();
        let per_unit = if resolution == Some(9) { 1 } else { 1_000 };
        for (ts, frame) in capture() {
            w.write_pcapng_block(EnhancedPacketBlock {
                interface_id: 0,
                // pcap-file writes the Duration's nanoseconds as the block's units.
                timestamp: Duration::from_nanos(ts / per_unit),
                original_len: frame.len() as u32,
                data: Cow::Borrowed(&frame),
                options: vec![],
            })
            .unwrap();
        }
        w.into_inner()
    }

    #[cfg(feature = "pcapng")]
    #[test]
    fn pcapng_gives_the_frames_of_the_same_capture_in_classic_pcap() {
        let mut classic = Writer::new(Vec::new(), Resolution::Micros).unwrap();
        for (ts, frame) in capture() {
            classic.write_frame(ts, &frame).unwrap();
        }
        let classic = records(&classic.finish().unwrap());
        assert_eq!(classic.len(), 5);
        for (endianness, resolution, big_endian, resolution_read) in [
            (pcap_file::Endianness::Big, Some(9), true, Resolution::Nanos),
            (
                pcap_file::Endianness::Little,
                None,
                false,
                Resolution::Micros,
            ),
            (
                pcap_file::Endianness::Little,
                Some(6),
                false,
                Resolution::Micros,
            ),
        ] {
            let bytes = pcapng(endianness, resolution);
            assert_eq!(records(&bytes), classic, "{endianness:?} {resolution:?}");
            let reader = Reader::new(&bytes[..]).unwrap();
            assert_eq!(
                *reader.header(),
                Header {
                    format: Format::PcapNg,
                    resolution: resolution_read,
                    big_endian,
                    version: (1, 0),
                    snaplen: 65_535,
                    linktype: LINKTYPE_ETHERNET,
                }
            );
        }
    }

    #[cfg(feature = "pcapng")]
    #[test]
    fn bad_pcapng_is_an_error_never_a_panic() {
        let good = pcapng(pcap_file::Endianness::Little, Some(9));
        let read_all = |bytes: &[u8]| -> Result<usize, PcapError> {
            let mut reader = Reader::new(bytes)?;
            let mut n = 0;
            while reader.read_record()?.is_some() {
                n += 1;
            }
            Ok(n)
        };
        assert_eq!(read_all(&good).unwrap(), 5);
        // Cut anywhere: a truncated block, or (at a block's end) the records before it.
        let ends: Vec<usize> = {
            let mut ends = vec![];
            let mut at = 0;
            while at < good.len() {
                at += u32::from_le_bytes(good[at + 4..at + 8].try_into().unwrap()) as usize;
                ends.push(at);
            }
            ends
        };
        for len in 0..good.len() {
            match read_all(&good[..len]) {
                // Cut after block k (the section header, the interface, then packets): k - 1
                // packets.
                Ok(n) => assert_eq!(ends.iter().position(|&e| e == len), Some(n + 1), "{len}"),
                Err(PcapError::Truncated { .. } | PcapError::PcapNg { .. }) => {}
                Err(e) => panic!("{len}: {e}"),
            }
        }
        // Any byte changed: whatever it gives, it gives without a panic.
        for i in 0..good.len() {
            for v in [0x00, 0xff, 0x80] {
                let mut bad = good.clone();
                bad[i] ^= v;
                let _ = read_all(&bad);
            }
        }
        // A block longer than the cap is refused before it is read.
        let mut big = good.clone();
        let epb = ends[1];
        big[epb + 4..epb + 8].copy_from_slice(&u32::MAX.to_le_bytes());
        let err = read_all(&big).unwrap_err();
        assert!(
            matches!(err, PcapError::RecordTooLong { offset, limit: ng::MAX_BLOCK_LEN, .. } if offset == epb as u64),
            "{err}"
        );
        // A link type other than Ethernet, as in a classic file.
        let mut raw = good.clone();
        let idb = ends[0];
        raw[idb + 8..idb + 10].copy_from_slice(&101u16.to_le_bytes());
        assert!(matches!(read_all(&raw), Err(PcapError::LinkType(101))));
        // A packet of an interface no block describes.
        let mut orphan = good.clone();
        orphan[epb + 8..epb + 12].copy_from_slice(&7u32.to_le_bytes());
        let err = read_all(&orphan).unwrap_err();
        assert!(err.to_string().contains("interface 7"), "{err}");
        // A packet before any interface.
        let mut early = good[..ends[0]].to_vec();
        early.extend_from_slice(&good[ends[1]..ends[2]]);
        let err = read_all(&early).unwrap_err();
        assert_eq!(
            err.to_string(),
            "bad pcapng block at byte 28: a packet of interface 0, which no interface \
             description block names"
        );
        // The section alone: no link type to read.
        let err = read_all(&good[..ends[0]]).unwrap_err();
        assert!(
            err.to_string().contains("ends before any interface"),
            "{err}"
        );
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
