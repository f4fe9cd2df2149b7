//! The ITCH file a stream reads, and how: opening it (raw, or `.gz`), its clock, how its
//! messages are packed and how far the stream goes, and what a pre-pass found in it
//! ([`Streamed`], which a [`Feed`](crate::feed::Feed) of the file carries). The reading and the
//! packing are [`super`]'s.
use std::{
    fmt,
    fs::File,
    io::{BufReader, Read},
    path::{Path, PathBuf},
    str::FromStr,
};

use anyhow::Context as _;
use wire::moldudp64::Session;

/// Where every ITCH 5.0 message keeps its timestamp: after the type (1 byte), the stock locate
/// and the tracking number (2 each), 6 bytes, big-endian nanoseconds since midnight (the
/// header all 23 types share: `wire::itch`'s module documentation).
pub const TIMESTAMP: std::ops::Range<usize> = 5..11;
/// A day, ns: an ITCH timestamp at or past it is not a time of day.
pub(super) const DAY_NS: u64 = 86_400 * 1_000_000_000;
/// The compressed bytes read from a `.gz` at a time.
const GZ_BUF: usize = 64 * 1024;

/// Opens an ITCH file as a stream: raw, or gzip (a name ending in `.gz`: NASDAQ's day files,
/// several gzip members allowed), decompressed as it is read.
///
/// # Errors
/// When the file can't be opened.
pub fn open(path: &Path) -> anyhow::Result<Box<dyn Read>> {
    let f = File::open(path).with_context(|| format!("failed to open {}", path.display()))?;
    Ok(if is_gz(path) {
        Box::new(flate2::read::MultiGzDecoder::new(BufReader::with_capacity(
            GZ_BUF, f,
        )))
    } else {
        Box::new(f)
    })
}

fn is_gz(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"))
}

/// How messages are packed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackRule {
    /// At most this many messages a packet (`--batch`), and what fits: a feed at a `--rate`,
    /// packed as the prebuilt feeds are.
    Count(u16),
    /// Consecutive messages whose times in the file are at most `ns` after the packet's first
    /// message's, and what fits (`--pack-window`): a file at its own timestamps, or at top
    /// speed.
    Window {
        /// The window, ns of the file's time.
        ns: u64,
    },
}

/// `--pack-window`: a span of the file's time, written with its unit (`10us`, `500ns`, `1ms`,
/// `0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PackWindow(u64);

impl PackWindow {
    /// The default: 10 µs. At NASDAQ's record rate (about 1.1 million messages a second) a
    /// packet then holds about 11 messages, so the packet rate stays within what one sender
    /// keeps up with; and no message waits for later ones longer than the replay already
    /// allows itself as lateness before it calls a send late (10 µs).
    pub const DEFAULT: PackWindow = PackWindow(10_000);
    /// The widest: 1 s (a packet holding a second of the file is a batch, not a feed).
    pub const MAX: PackWindow = PackWindow(1_000_000_000);

    /// A window of `ns` (unchecked against [`PackWindow::MAX`]: for showing a rule's).
    pub const fn from_ns(ns: u64) -> PackWindow {
        PackWindow(ns)
    }

    /// The window, ns.
    pub fn ns(self) -> u64 {
        self.0
    }
}

impl FromStr for PackWindow {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "bad pack window {s:?}: a span of the file's time with its unit, e.g. 10us, \
                 500ns, 1ms, 0 (each packet only the messages of one timestamp), at most 1s"
            )
        };
        let ns = crate::span::span_ns(s).ok_or_else(bad)?;
        if ns > Self::MAX.0 {
            return Err(bad());
        }
        Ok(PackWindow(ns))
    }
}

/// The largest unit that writes the window exactly (what [`FromStr`] reads back).
impl fmt::Display for PackWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::span::span_text(self.0))
    }
}

/// The file's clock: each message's time in the file, ns after the first timestamped message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileClock {
    /// The first valid timestamp.
    origin: Option<u64>,
    /// The time of the last message (never less than the one before).
    last: u64,
    /// Messages without a time of day (shorter than the header, or 24 h or later): each took
    /// the time of the one before.
    pub invalid: u64,
    /// Messages stamped before the message before them: each held at that earlier time.
    pub behind: u64,
}

impl FileClock {
    /// The time in the file of message `m`, the next message of the file.
    pub fn time(&mut self, m: &[u8]) -> u64 {
        let stamped = m
            .get(TIMESTAMP)
            .map(|b| b.iter().fold(0u64, |t, &x| t << 8 | u64::from(x)))
            .filter(|&t| t < DAY_NS);
        match (stamped, self.origin) {
            (None, _) => self.invalid += 1,
            (Some(t), None) => {
                self.origin = Some(t);
                self.last = t;
            }
            (Some(t), Some(_)) if t < self.last => self.behind += 1,
            (Some(t), Some(_)) => self.last = t,
        }
        // Before the first timestamp, messages are at the file's start.
        self.origin.map_or(0, |o| self.last - o)
    }
}

/// How far a stream goes: at most so many messages (`--count`, or `--duration` at a `--rate`),
/// up to a time in the file (`--duration` at the file's timestamps).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limit {
    /// Messages, at most.
    pub messages: Option<u64>,
    /// The last message's time in the file, at most, ns.
    pub file_ns: Option<u64>,
}

/// What to stream and how to pack it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamConfig {
    /// The ITCH file (raw, or `.gz`).
    pub path: PathBuf,
    /// How its messages are packed.
    pub rule: PackRule,
    /// How far it goes.
    pub limit: Limit,
    /// The MoldUDP64 session it is sent in.
    pub session: Session,
    /// Its first message's sequence number.
    pub first_seq: u64,
}

/// A streamed feed: what [`prepass`](super::prepass) found, and how to stream the file again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Streamed {
    /// The file and its packing.
    pub config: StreamConfig,
    /// Packets the file packs into (as far as the limit reaches).
    pub packets: u64,
    /// ITCH bytes read (records and their length prefixes, decompressed).
    pub file_bytes: u64,
    /// The last message's time in the file, ns after the first's.
    pub span_ns: u64,
    /// The file's clock at the end ([`FileClock::invalid`], [`FileClock::behind`]).
    pub clock: FileClock,
}
