//! An ITCH file streamed, never read whole: what lets `replay --source itch:FILE` replay a NASDAQ
//! day (about 8 GB raw, 3-4 GB as the `.gz` NASDAQ publishes it).
//!
//! The file is read twice, as a stream both times, with memory that does not grow with it:
//!
//! - [`prepass`] reads it once before the run and keeps only what the exchange needs up front:
//!   the ticks (sequence number and price of each Trade, `'P'`, of the traded stock) for the
//!   backtest and the schedule, and counts. It returns a [`Feed`] without packets.
//! - [`ItchStream`] reads it again while the send loop runs ([`crate::Outgoing`]): each record
//!   through one fixed read buffer, packed by a [`Packer`] into MoldUDP64 packets a few at a
//!   time ([`AHEAD`] at most), read ahead while the loop waits for a due time.
//!
//! Both see the same packets: the packing depends on the file and the [`PackRule`] alone, never
//! on the replay's speed or clock.
//!
//! **Time.** Every ITCH 5.0 message carries a 6-byte timestamp, nanoseconds since midnight
//! ([`TIMESTAMP`]). A message's time in the file is its timestamp less the first message's
//! ([`FileClock`]): a message too short to hold one, or holding one of 24 h or later, takes the
//! time of the message before it; one stamped before the message before it is held at that
//! earlier time, so the file's clock never runs backwards (both counted).
//!
//! **Packing.** A packet holds consecutive messages, in file order, up to the MTU
//! ([`MAX_PAYLOAD`]); at a `--rate`, `--batch` of them at most ([`PackRule::Count`], as the
//! prebuilt feeds are packed); paced at the file's timestamps, those within a window of the
//! packet's first message's time ([`PackRule::Window`]): a packet leaves when its last message
//! is due, so the window bounds how long any message waits for the ones after it.
use std::{
    collections::VecDeque,
    fmt,
    fs::File,
    io::{self, BufReader, Read},
    path::{Path, PathBuf},
    str::FromStr,
};

use anyhow::{Context as _, bail};
use wire::{
    itch::{self, Message, Stock},
    moldudp64::{self, BLOCK_HEADER_LEN, HEADER_LEN, Session},
};

use crate::{
    Pace, Rate,
    feed::{Feed, MAX_PAYLOAD, PacketMeta, Tick},
    pacing::Outgoing,
    schedule::Schedule,
};

/// Where every ITCH 5.0 message keeps its timestamp: after the type (1 byte), the stock locate
/// and the tracking number (2 each), 6 bytes, big-endian nanoseconds since midnight (the
/// header all 23 types share: `wire::itch`'s module documentation).
pub const TIMESTAMP: std::ops::Range<usize> = 5..11;
/// A day, ns: an ITCH timestamp at or past it is not a time of day.
const DAY_NS: u64 = 86_400 * 1_000_000_000;
/// Packets packed ahead of the send loop, at most (about 5 KiB each, its file times included).
pub const AHEAD: usize = 64;
/// The reader's buffer of ITCH bytes: small, so one refill (a read, or for a `.gz` an inflate
/// of this much) stays well inside [`crate::READ_AHEAD_NS`].
const READ_BUF: usize = 16 * 1024;
/// The compressed bytes read from a `.gz` at a time.
const GZ_BUF: usize = 64 * 1024;
/// The most messages a packet holds: MoldUDP64 blocks of at least one byte, after the header.
pub const MAX_MESSAGES: usize = (MAX_PAYLOAD - HEADER_LEN) / (BLOCK_HEADER_LEN + 1);

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
        let (num, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
            Some(i) => s.split_at(i),
            None => (s, ""),
        };
        let scale = match unit {
            "ns" => 1,
            "us" | "µs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "" if num == "0" => 1,
            _ => return Err(bad()),
        };
        let ns = num
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(scale))
            .ok_or_else(bad)?;
        if ns > Self::MAX.0 {
            return Err(bad());
        }
        Ok(PackWindow(ns))
    }
}

/// The largest unit that writes the window exactly (what [`FromStr`] reads back).
impl fmt::Display for PackWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => f.write_str("0"),
            n if n % 1_000_000_000 == 0 => write!(f, "{}s", n / 1_000_000_000),
            n if n % 1_000_000 == 0 => write!(f, "{}ms", n / 1_000_000),
            n if n % 1_000 == 0 => write!(f, "{}us", n / 1_000),
            n => write!(f, "{n}ns"),
        }
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

/// One MoldUDP64 packet packed from a file, and its messages' times in it.
#[derive(Debug)]
pub struct Packed {
    buf: Box<[u8; MAX_PAYLOAD]>,
    len: usize,
    first_seq: u64,
    /// Each message's time in the file (its length is the packet's message count).
    file_ns: Vec<u64>,
}

impl Packed {
    fn new() -> Packed {
        Packed {
            buf: Box::new([0; MAX_PAYLOAD]),
            len: 0,
            first_seq: 0,
            file_ns: Vec::with_capacity(MAX_MESSAGES),
        }
    }

    /// Its bytes: a MoldUDP64 data packet.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// Its messages' times in the file, ns after the file's first message.
    pub fn file_ns(&self) -> &[u64] {
        &self.file_ns
    }

    /// What it holds, as a prebuilt feed's packets say it (its byte range its own).
    pub fn meta(&self) -> PacketMeta {
        PacketMeta {
            start: 0,
            end: self.len,
            first_seq: self.first_seq,
            messages: self.file_ns.len() as u16,
        }
    }

    /// Starts the packet of `session` whose first message is numbered `seq`.
    fn open(&mut self, session: Session, seq: u64) {
        let mut p = moldudp64::Packet::new_unchecked(&mut self.buf[..]);
        p.set_session(session);
        p.set_sequence(seq);
        p.set_count(0);
        self.len = HEADER_LEN;
        self.first_seq = seq;
        self.file_ns.clear();
    }

    /// Whether `len` more bytes of message fit.
    fn fits(&self, len: usize) -> bool {
        self.len + BLOCK_HEADER_LEN + len <= MAX_PAYLOAD
    }

    /// Appends message `m`, at `ns` in the file (it fits: [`Packed::fits`]).
    fn append(&mut self, m: &[u8], ns: u64) {
        let at = self.len;
        self.buf[at..at + BLOCK_HEADER_LEN].copy_from_slice(&(m.len() as u16).to_be_bytes());
        self.buf[at + BLOCK_HEADER_LEN..at + BLOCK_HEADER_LEN + m.len()].copy_from_slice(m);
        self.len += BLOCK_HEADER_LEN + m.len();
        self.file_ns.push(ns);
        let count = self.file_ns.len() as u16;
        moldudp64::Packet::new_unchecked(&mut self.buf[..]).set_count(count);
    }
}

/// Packs messages, in the order given, into MoldUDP64 packets as a [`PackRule`] says: sans-IO,
/// with a fixed number of packet buffers in use (those handed out and not given back, plus
/// one).
#[derive(Debug)]
pub struct Packer {
    rule: PackRule,
    session: Session,
    first_seq: u64,
    /// The number of the next message; `None` once 2^64 - 1 has been used.
    next_seq: Option<u64>,
    /// The packet being filled.
    open: Packed,
    /// Buffers given back.
    spare: Vec<Packed>,
    /// Buffers ever made.
    made: usize,
    /// Messages packed.
    messages: u64,
}

impl Packer {
    /// Packs `session`'s messages numbered from `first_seq`, by `rule`.
    pub fn new(rule: PackRule, session: Session, first_seq: u64) -> Packer {
        let mut open = Packed::new();
        open.open(session, first_seq);
        Packer {
            rule,
            session,
            first_seq,
            next_seq: Some(first_seq),
            open,
            spare: Vec::new(),
            made: 1,
            messages: 0,
        }
    }

    /// Whether a message of `len` bytes at `ns` joins the packet being filled.
    fn joins(&self, len: usize, ns: u64) -> bool {
        let o = &self.open;
        let Some(&first_ns) = o.file_ns.first() else {
            return true;
        };
        o.fits(len)
            && match self.rule {
                PackRule::Count(n) => o.file_ns.len() < usize::from(n),
                PackRule::Window { ns: w } => ns.saturating_sub(first_ns) <= w,
            }
    }

    /// Packs message `m`, whose time in the file is `ns` (never less than the message
    /// before's); the packet it closed, if it did not join the one being filled.
    ///
    /// # Errors
    /// A message that fits no packet (empty, or longer than a packet holds), or one numbered
    /// past 2^64 - 1.
    pub fn push(&mut self, m: &[u8], ns: u64) -> anyhow::Result<Option<Packed>> {
        let Some(seq) = self.next_seq else {
            bail!(
                "numbered from {}, message {} would pass 2^64 - 1",
                self.first_seq,
                self.messages + 1
            );
        };
        if m.is_empty() || HEADER_LEN + BLOCK_HEADER_LEN + m.len() > MAX_PAYLOAD {
            bail!("message {seq} ({} bytes) doesn't fit a packet", m.len());
        }
        let closed = if self.joins(m.len(), ns) {
            None
        } else {
            let mut fresh = self.spare.pop().unwrap_or_else(|| {
                self.made += 1;
                Packed::new()
            });
            fresh.open(self.session, seq);
            Some(std::mem::replace(&mut self.open, fresh))
        };
        self.open.append(m, ns);
        self.messages += 1;
        self.next_seq = seq.checked_add(1);
        Ok(closed)
    }

    /// The last packet, if it holds a message; after it, the packer is empty.
    pub fn finish(&mut self) -> Option<Packed> {
        if self.open.file_ns.is_empty() {
            return None;
        }
        let mut fresh = self.spare.pop().unwrap_or_else(|| {
            self.made += 1;
            Packed::new()
        });
        fresh.open(self.session, self.next_seq.unwrap_or(u64::MAX));
        Some(std::mem::replace(&mut self.open, fresh))
    }

    /// Gives a packet's buffer back, to be filled again.
    pub fn recycle(&mut self, p: Packed) {
        self.spare.push(p);
    }

    /// Packet buffers ever made: what the packer's memory is, a multiple of about 5 KiB.
    pub fn buffers_made(&self) -> usize {
        self.made
    }

    /// Messages packed.
    pub fn messages(&self) -> u64 {
        self.messages
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

/// A streamed feed: what [`prepass`] found, and how to stream the file again.
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

/// An ITCH file streamed into MoldUDP64 packets, a few ahead of the send loop: the file's
/// packets as [`Outgoing`] sends them. Its memory is fixed: the reader's buffers (the file's,
/// 16 KiB, one message's, 64 KiB, and for a `.gz` the inflater's, about 100 KiB) and at most
/// [`AHEAD`] + 2 packets.
pub struct ItchStream {
    reader: itch::file::Reader<Box<dyn Read>>,
    path: PathBuf,
    clock: FileClock,
    packer: Packer,
    limit: Limit,
    /// Packets packed, not yet sent.
    queue: VecDeque<Packed>,
    /// The packet the send loop is on.
    current: Option<Packed>,
    /// Packets in all, where known (from the pre-pass).
    packets: usize,
    /// The last message read that is within the limit: the stream ended.
    ended: bool,
}

impl fmt::Debug for ItchStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItchStream")
            .field("path", &self.path)
            .field("offset", &self.reader.offset())
            .field("messages", &self.packer.messages())
            .field("queued", &self.queue.len())
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl ItchStream {
    /// Opens `config`'s file to stream it.
    ///
    /// # Errors
    /// When it can't be opened.
    pub fn open(config: &StreamConfig) -> anyhow::Result<ItchStream> {
        let StreamConfig {
            path,
            rule,
            limit,
            session,
            first_seq,
        } = config;
        Ok(ItchStream {
            reader: itch::file::Reader::with_capacity(READ_BUF, open(path)?),
            path: path.clone(),
            clock: FileClock::default(),
            packer: Packer::new(*rule, *session, *first_seq),
            limit: *limit,
            queue: VecDeque::with_capacity(AHEAD + 1),
            current: None,
            packets: 0,
            ended: false,
        })
    }

    /// The same stream, saying it holds `packets` in all (for the progress line).
    pub fn with_packets(mut self, packets: u64) -> Self {
        self.packets = usize::try_from(packets).unwrap_or(usize::MAX);
        self
    }

    /// Reads until one more packet is packed (or the stream ends); whether one was.
    fn pack_one(&mut self) -> anyhow::Result<bool> {
        let ItchStream {
            reader,
            path,
            clock,
            packer,
            limit,
            queue,
            ended,
            ..
        } = self;
        while !*ended {
            if limit.messages.is_some_and(|l| packer.messages() >= l) {
                *ended = true;
                break;
            }
            let Some(rec) = reader
                .read_message()
                .with_context(|| format!("bad ITCH file {}", path.display()))?
            else {
                *ended = true;
                break;
            };
            let mut next = *clock;
            let ns = next.time(rec.message);
            if limit.file_ns.is_some_and(|l| ns > l) {
                *ended = true;
                break;
            }
            *clock = next;
            if let Some(p) = packer.push(rec.message, ns)? {
                queue.push_back(p);
                return Ok(true);
            }
        }
        match packer.finish() {
            Some(p) => {
                queue.push_back(p);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Moves to the next packet (what [`ItchStream::current`] then holds); `None` after the last.
    ///
    /// # Errors
    /// When the file can't be read, or is not an ITCH file (cut short, a message too long).
    pub fn advance(&mut self) -> anyhow::Result<Option<PacketMeta>> {
        if let Some(p) = self.current.take() {
            self.packer.recycle(p);
        }
        if self.queue.is_empty() {
            self.pack_one()?;
        }
        self.current = self.queue.pop_front();
        Ok(self.current.as_ref().map(Packed::meta))
    }

    /// The packet [`ItchStream::advance`] moved to.
    pub fn current(&self) -> Option<&Packed> {
        self.current.as_ref()
    }

    /// Packs one more packet ahead, unless [`AHEAD`] are waiting.
    ///
    /// # Errors
    /// As [`ItchStream::advance`].
    pub fn ahead(&mut self) -> anyhow::Result<()> {
        if self.queue.len() < AHEAD && !self.ended {
            self.pack_one()?;
        }
        Ok(())
    }

    /// Messages packed so far.
    pub fn messages(&self) -> u64 {
        self.packer.messages()
    }

    /// ITCH bytes read so far.
    pub fn offset(&self) -> u64 {
        self.reader.offset()
    }

    /// The file's clock so far.
    pub fn clock(&self) -> FileClock {
        self.clock
    }

    /// Packet buffers ever made (at most [`AHEAD`] + 2, however long the file).
    pub fn buffers_made(&self) -> usize {
        self.packer.buffers_made()
    }

    /// Heap bytes held beyond the reader's fixed buffers: the packet buffers and the queue.
    pub fn held_bytes(&self) -> usize {
        let packed = MAX_PAYLOAD + MAX_MESSAGES * std::mem::size_of::<u64>();
        self.packer.buffers_made() * packed
            + self.queue.capacity() * std::mem::size_of::<Packed>()
            + self.packer.spare.capacity() * std::mem::size_of::<Packed>()
    }
}

fn read_error(e: anyhow::Error) -> io::Error {
    io::Error::other(format!("{e:#}"))
}

impl Outgoing for ItchStream {
    fn packets(&self) -> usize {
        self.packets
    }

    fn next_packet(&mut self) -> io::Result<Option<PacketMeta>> {
        self.advance().map_err(read_error)
    }

    fn current(&self) -> (&[u8], &[u64]) {
        self.current
            .as_ref()
            .map_or((&[], &[]), |p| (p.bytes(), p.file_ns()))
    }

    fn read_ahead(&mut self) -> io::Result<()> {
        self.ahead().map_err(read_error)
    }
}

/// Where the pre-pass is, for a progress line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrepassProgress {
    /// ITCH bytes read.
    pub bytes: u64,
    /// Messages read.
    pub messages: u64,
    /// Ticks found.
    pub ticks: u64,
    /// The time in the file reached, ns after its first message.
    pub file_ns: u64,
}

/// The pre-pass calls its progress this often, in packets.
const PREPASS_PROGRESS_EVERY: u64 = 1 << 14;

/// Streams `config`'s file once, before the run, and keeps what the exchange needs up front: the
/// ticks (Trade messages, `'P'`, of `stock`, numbered as they will be sent) and counts, in a
/// [`Feed`] without packets ([`Feed::streamed`] says how to stream it again). Calls `progress`
/// every few thousand packets; gives up when `stopped()`.
///
/// # Errors
/// When the file can't be read, is not an ITCH file, holds no messages (within the limit), or
/// the pre-pass was stopped.
pub fn prepass(
    config: &StreamConfig,
    stock: Stock,
    stopped: impl Fn() -> bool,
    mut progress: impl FnMut(PrepassProgress),
) -> anyhow::Result<Feed> {
    let mut s = ItchStream::open(config)?;
    let mut ticks = Vec::new();
    let mut packets = 0u64;
    let mut span_ns = 0;
    while let Some(meta) = s.advance()? {
        let Some(p) = s.current() else { break };
        let mold = moldudp64::Packet::new_unchecked(p.bytes());
        for (seq, m) in meta.sequences().zip(mold.messages()) {
            if let Ok(m) = m
                && m.first() == Some(&itch::trade::KIND)
                && let Ok(Message::Trade(t)) = itch::parse(m)
                && t.stock == stock
            {
                ticks.push(Tick {
                    seq,
                    price: t.price,
                });
            }
        }
        span_ns = p.file_ns().last().copied().unwrap_or(span_ns);
        packets += 1;
        if packets.is_multiple_of(PREPASS_PROGRESS_EVERY) {
            if stopped() {
                bail!("stopped during the pre-pass of {}", config.path.display());
            }
            progress(PrepassProgress {
                bytes: s.offset(),
                messages: s.messages(),
                ticks: ticks.len() as u64,
                file_ns: span_ns,
            });
        }
    }
    let messages = s.messages();
    if messages == 0 {
        bail!("{} holds no ITCH messages", config.path.display());
    }
    Ok(Feed {
        bytes: Vec::new(),
        packets: Vec::new(),
        ticks,
        first_seq: config.first_seq,
        messages,
        session: config.session,
        other_sessions: 0,
        streamed: Some(Streamed {
            config: config.clone(),
            packets,
            file_bytes: s.offset(),
            span_ns,
            clock: s.clock(),
        }),
    })
}

/// The packets a streamed run put on the wire, each with the time it was scheduled to leave (its
/// last message's due time), in order: the file streamed once more after the run, as the send
/// loop streamed it, so a capture never holds the run in memory. `schedule` says how far the
/// run went and which packets our own side refused (left out); `start_ns` is when its first
/// packet was due. With [`Rate::Max`] nothing was scheduled: each packet is stamped at its time
/// in the file after `start_ns` (the file's own timing, replayable as recorded). Calls `f` with
/// each; returns how many.
///
/// # Errors
/// When the file can't be read again, or `f` fails.
pub fn sent_packets(
    streamed: &Streamed,
    schedule: &Schedule,
    pace: Pace,
    start_ns: u64,
    mut f: impl FnMut(u64, &[u8]) -> anyhow::Result<()>,
) -> anyhow::Result<u64> {
    let Some(reached) = schedule.reached() else {
        return Ok(0);
    };
    let mut s = ItchStream::open(&streamed.config)?;
    let mut tried = 0u64;
    let mut written = 0;
    while let Some(meta) = s.advance()? {
        if meta.first_seq >= reached {
            break;
        }
        let Some(p) = s.current() else { break };
        let last = u64::from(meta.messages.max(1)) - 1;
        if !schedule.was_refused(meta.first_seq) {
            let due = match pace {
                Pace::Rate(Rate::Max) => start_ns + p.file_ns().last().copied().unwrap_or_default(),
                _ => pace.due(start_ns, tried, last, p.file_ns()),
            };
            f(due, p.bytes())?;
            written += 1;
        }
        tried += u64::from(meta.messages);
    }
    Ok(written)
}

#[cfg(test)]
mod tests;
