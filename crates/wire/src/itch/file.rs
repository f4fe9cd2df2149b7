//! Raw ITCH 5.0 files as NASDAQ distributes them (e.g. `01302020.NASDAQ_ITCH50`, once
//! decompressed): a plain sequence of records, each a 2-byte big-endian length followed by that
//! many bytes of one ITCH message. There is no file header.
//!
//! [`Reader`] works over any [`std::io::Read`] (wrap a gzip decoder around the `.gz` files NASDAQ
//! publishes) and buffers internally; it reuses one 64 KiB message buffer, so reading a file
//! allocates once. The framing is all it checks: pass each message to [`crate::itch::parse`].

use std::io::{self, BufReader, BufWriter, Read, Write};

use crate::read_full as fill;

/// Length of a record's length prefix.
pub const PREFIX_LEN: usize = 2;

/// Why an ITCH file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The underlying reader or writer failed.
    #[error("failed to {op} ITCH file at byte {offset}")]
    Io {
        /// What was being done: "read" or "write" or "flush".
        op: &'static str,
        /// Offset in the file of the record being read or written.
        offset: u64,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// The file ends inside a record: a cut-off download or a file that is not an ITCH file.
    #[error(
        "ITCH file truncated: the record at byte {offset} needs {need} bytes but the file ends \
         after {have} (a partial download, or not a raw length-prefixed ITCH 5.0 file?)"
    )]
    Truncated {
        /// Offset of the record's length prefix.
        offset: u64,
        /// Bytes the record needs, prefix included.
        need: usize,
        /// Bytes of it present.
        have: usize,
    },
    /// A message too long for the 16-bit length prefix.
    #[error("a message of {len} bytes does not fit the ITCH file's 16-bit length prefix")]
    TooLong {
        /// The message length.
        len: usize,
    },
}

/// One record of an ITCH file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// Offset in the file of the record's length prefix.
    pub offset: u64,
    /// The message, without its length prefix.
    pub message: &'a [u8],
}

/// Reads the records of an ITCH file one at a time.
#[derive(Debug)]
pub struct Reader<R: Read> {
    inner: BufReader<R>,
    message: Box<[u8]>,
    offset: u64,
}

impl<R: Read> Reader<R> {
    /// Wraps a reader, with a 64 KiB read buffer.
    pub fn new(inner: R) -> Self {
        Self::with_capacity(64 * 1024, inner)
    }

    /// Wraps a reader, with a read buffer of `capacity` bytes.
    pub fn with_capacity(capacity: usize, inner: R) -> Self {
        Reader {
            inner: BufReader::with_capacity(capacity, inner),
            message: vec![0; usize::from(u16::MAX)].into_boxed_slice(),
            offset: 0,
        }
    }

    /// Reads the next record: `Ok(None)` at a clean end of file (on a record boundary),
    /// [`FileError::Truncated`] if the file ends inside a record. After an error, further calls
    /// carry on from wherever the reader stopped, which is rarely useful.
    pub fn read_message(&mut self) -> Result<Option<Record<'_>>, FileError> {
        let offset = self.offset;
        let io = |source| FileError::Io {
            op: "read",
            offset,
            source,
        };
        let mut prefix = [0u8; PREFIX_LEN];
        match fill(&mut self.inner, &mut prefix).map_err(io)? {
            0 => return Ok(None),
            PREFIX_LEN => {}
            have => {
                return Err(FileError::Truncated {
                    offset,
                    need: PREFIX_LEN,
                    have,
                });
            }
        }
        let len = usize::from(u16::from_be_bytes(prefix));
        // Cannot fail: the buffer is u16::MAX long.
        let message = self.message.get_mut(..len).unwrap_or_default();
        let got = fill(&mut self.inner, message).map_err(io)?;
        if got < len {
            let (need, have) = (PREFIX_LEN + len, PREFIX_LEN + got);
            return Err(FileError::Truncated { offset, need, have });
        }
        self.offset += (PREFIX_LEN + len) as u64;
        Ok(Some(Record { offset, message }))
    }

    /// Offset of the next record.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Returns the underlying reader; buffered bytes not yet returned are lost.
    pub fn into_inner(self) -> R {
        self.inner.into_inner()
    }
}

/// Writes records to an ITCH file, buffered.
#[derive(Debug)]
pub struct Writer<W: Write> {
    inner: BufWriter<W>,
    offset: u64,
}

impl<W: Write> Writer<W> {
    /// Wraps a writer, with a 64 KiB write buffer.
    pub fn new(inner: W) -> Self {
        Writer {
            inner: BufWriter::with_capacity(64 * 1024, inner),
            offset: 0,
        }
    }

    /// Appends one message with its length prefix; returns the record's offset.
    pub fn write_message(&mut self, message: &[u8]) -> Result<u64, FileError> {
        let len = message.len();
        let prefix = u16::try_from(len).map_err(|_| FileError::TooLong { len })?;
        let offset = self.offset;
        let io = |source| FileError::Io {
            op: "write",
            offset,
            source,
        };
        self.inner.write_all(&prefix.to_be_bytes()).map_err(io)?;
        self.inner.write_all(message).map_err(io)?;
        self.offset += (PREFIX_LEN + len) as u64;
        Ok(offset)
    }

    /// Bytes written so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Flushes and returns the underlying writer.
    pub fn finish(self) -> Result<W, FileError> {
        let offset = self.offset;
        self.inner.into_inner().map_err(|e| FileError::Io {
            op: "flush",
            offset,
            source: e.into_error(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::itch::{self, Message};

    // Two records: an 'S' System Event (start of messages) and a 1-byte junk message.
    static FILE_BYTES: [u8; 17] = [
        0x00, 0x0c, // length 12
        b'S', 0x00, 0x00, 0x00, 0x00, 0x09, 0xD2, 0x92, 0x29, 0xE0, 0x01, b'O', // message
        0x00, 0x01, // length 1
        b'Z',
    ];

    #[test]
    fn read() {
        let mut reader = Reader::with_capacity(3, &FILE_BYTES[..]);
        let first = reader.read_message().unwrap().unwrap();
        assert_eq!(first.offset, 0);
        assert_eq!(first.message, &FILE_BYTES[2..14]);
        assert_eq!(
            itch::parse(first.message),
            Ok(Message::SystemEvent(itch::SystemEventRepr {
                stock_locate: 0,
                tracking_number: 0,
                timestamp: itch::Timestamp::from_nanos(10_800_000_000_001).unwrap(),
                event_code: b'O',
            }))
        );
        let second = reader.read_message().unwrap().unwrap();
        assert_eq!(
            second,
            Record {
                offset: 14,
                message: b"Z"
            }
        );
        assert!(reader.read_message().unwrap().is_none());
        assert!(reader.read_message().unwrap().is_none());
        assert_eq!(reader.offset(), 17);
    }

    #[test]
    fn truncated_at_every_length() {
        for len in 0..FILE_BYTES.len() {
            let mut reader = Reader::new(&FILE_BYTES[..len]);
            let mut seen = 0;
            let end = loop {
                match reader.read_message() {
                    Ok(Some(_)) => seen += 1,
                    Ok(None) => break None,
                    Err(e) => break Some(e),
                }
            };
            match (len, end) {
                (0 | 14, None) => {}
                (
                    1,
                    Some(FileError::Truncated {
                        offset: 0,
                        need: 2,
                        have: 1,
                    }),
                ) => {}
                (
                    2..=13,
                    Some(FileError::Truncated {
                        offset: 0,
                        need: 14,
                        have,
                    }),
                ) => {
                    assert_eq!(have, len);
                }
                (
                    15,
                    Some(FileError::Truncated {
                        offset: 14,
                        need: 2,
                        have: 1,
                    }),
                ) => {}
                (
                    16,
                    Some(FileError::Truncated {
                        offset: 14,
                        need: 3,
                        have: 2,
                    }),
                ) => {}
                (len, end) => panic!("len {len}: {end:?}"),
            }
            assert_eq!(seen, usize::from(len >= 14));
        }
    }

    #[test]
    fn truncated_error_message() {
        let err = Reader::new(&FILE_BYTES[..5]).read_message().unwrap_err();
        assert!(
            err.to_string().contains("record at byte 0 needs 14 bytes"),
            "{err}"
        );
    }

    #[test]
    fn write() {
        let mut writer = Writer::new(Vec::new());
        assert_eq!(writer.write_message(&FILE_BYTES[2..14]).unwrap(), 0);
        assert_eq!(writer.write_message(b"Z").unwrap(), 14);
        assert!(matches!(
            writer.write_message(&[0; 65536]),
            Err(FileError::TooLong { len: 65536 })
        ));
        assert_eq!(writer.offset(), 17);
        assert_eq!(writer.finish().unwrap(), FILE_BYTES);
    }

    #[test]
    fn round_trip_max_len() {
        let big = vec![0x5a; 65535];
        let mut writer = Writer::new(Vec::new());
        writer.write_message(&big).unwrap();
        writer.write_message(&[]).unwrap();
        let bytes = writer.finish().unwrap();
        let mut reader = Reader::new(&bytes[..]);
        assert_eq!(reader.read_message().unwrap().unwrap().message, &big[..]);
        assert_eq!(reader.read_message().unwrap().unwrap().message, b"");
        assert!(reader.read_message().unwrap().is_none());
    }

    #[test]
    fn io_error_is_reported_with_offset() {
        struct Failing;
        impl Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::other("disk on fire"))
            }
        }
        let err = Reader::new(Failing).read_message().unwrap_err();
        assert!(
            matches!(
                err,
                FileError::Io {
                    op: "read",
                    offset: 0,
                    ..
                }
            ),
            "{err:?}"
        );
    }
}
