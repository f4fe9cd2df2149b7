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
    io::{self, Read},
    path::PathBuf,
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

// What a stream reads and how (`feed` names the file's part: a feed carries a `Streamed`).
pub(crate) mod file;

#[cfg(test)]
use file::DAY_NS;
pub use file::{FileClock, Limit, PackRule, PackWindow, StreamConfig, Streamed, TIMESTAMP, open};

/// Packets packed ahead of the send loop, at most (about 5 KiB each, its file times included).
pub const AHEAD: usize = 64;
/// The reader's buffer of ITCH bytes: small, so one refill (a read, or for a `.gz` an inflate
/// of this much) stays well inside [`crate::READ_AHEAD_NS`].
const READ_BUF: usize = 16 * 1024;
/// The most messages a packet holds: MoldUDP64 blocks of at least one byte, after the header.
pub const MAX_MESSAGES: usize = (MAX_PAYLOAD - HEADER_LEN) / (BLOCK_HEADER_LEN + 1);

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
