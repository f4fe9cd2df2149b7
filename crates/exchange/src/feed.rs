//! Market data for the replay tool: where ticks come from, and the MoldUDP64 packets that
//! carry them, built before the run so the send loop only sends; or, for an ITCH file, what a
//! streaming pre-pass found in it, its packets built as they are sent ([`crate::stream`]).
use std::{fs::File, path::Path};

use anyhow::{Context as _, bail};
use paths::market::SESSION;
use wire::{
    itch::{self, Message, Price4, Stock},
    moldudp64::{self, PacketBuilder, Session},
};

use trader_core::trade_message;

pub use paths::Source;

/// One prebuilt packet and what it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketMeta {
    /// Byte range in [`Feed::bytes`].
    pub start: usize,
    /// End of the byte range.
    pub end: usize,
    /// Sequence number of its first message (0 when the payload isn't MoldUDP64).
    pub first_seq: u64,
    /// Messages in it.
    pub messages: u16,
}

impl PacketMeta {
    /// The sequence numbers of its messages (none past 2^64 - 1: a packet numbered near the
    /// top has only those that fit).
    pub fn sequences(&self) -> impl Iterator<Item = u64> {
        let first = self.first_seq;
        (0..u64::from(self.messages)).map_while(move |k| first.checked_add(k))
    }

    /// The sequence number after its messages (saturating at 2^64 - 1).
    pub fn next_seq(&self) -> u64 {
        self.first_seq.saturating_add(u64::from(self.messages))
    }
}

/// A tick the strategy will see: a Trade message of the traded stock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tick {
    /// Its MoldUDP64 sequence number.
    pub seq: u64,
    /// Its price.
    pub price: Price4,
}

/// Everything the replay sends, prebuilt; or, for a streamed file ([`Feed::streamed`]), all of
/// it but the packets.
#[derive(Debug, Clone)]
pub struct Feed {
    /// All packets' bytes, back to back (empty for a streamed feed).
    pub bytes: Vec<u8>,
    /// Packet boundaries and sequence numbers (empty for a streamed feed).
    pub packets: Vec<PacketMeta>,
    /// The Trade messages of the traded stock, in sequence order.
    pub ticks: Vec<Tick>,
    /// Sequence number of the first message.
    pub first_seq: u64,
    /// Total messages (all types).
    pub messages: u64,
    /// Session name.
    pub session: Session,
    /// Packets of a capture in other sessions than its first packet's: not part of the feed.
    pub other_sessions: u64,
    /// For an ITCH file streamed ([`crate::stream::prepass`]): how to stream it again and what
    /// the pre-pass found. Its packets are built as they are sent, never held.
    pub streamed: Option<crate::stream::file::Streamed>,
}

/// Largest UDP payload we build (fits a 1500-byte MTU with IPv4 and UDP headers).
pub const MAX_PAYLOAD: usize = 1472;

impl Feed {
    /// Builds the feed: at most `limit` messages, `per_packet` messages per packet (ITCH and
    /// closes sources; pcap payloads go as they are), trades of `stock` as the ticks. An ITCH
    /// file is read whole here (`.gz` too); the replay streams one ([`crate::stream`]).
    pub fn build(
        source: &Source,
        limit: Option<u64>,
        per_packet: u16,
        stock: Stock,
    ) -> anyhow::Result<Feed> {
        let lab = Session::new(SESSION).expect("the lab's session name is valid");
        Self::build_numbered(source, limit, per_packet, stock, lab, 1)
    }

    /// [`Feed::build`], the feed (unless it is a capture, which keeps its own) in `session`
    /// and numbered from `first_seq`.
    pub fn build_numbered(
        source: &Source,
        limit: Option<u64>,
        per_packet: u16,
        stock: Stock,
        session: Session,
        first_seq: u64,
    ) -> anyhow::Result<Feed> {
        if per_packet == 0 {
            bail!("--batch must be at least 1 message per packet");
        }
        match source {
            Source::Gbm { seed, bars } => {
                let closes = engine::data::gbm(*seed, *bars);
                Self::from_closes(&closes, limit, per_packet, stock, session, first_seq)
            }
            Source::Closes(path) => {
                let closes = load_closes(path)?;
                Self::from_closes(&closes, limit, per_packet, stock, session, first_seq)
            }
            // The whole file in memory: for small files, and the reference the streamed path
            // is tested against. `replay` streams an ITCH file instead (`crate::stream`).
            Source::Itch(path) => {
                let mut reader = itch::file::Reader::new(crate::stream::file::open(path)?);
                let mut messages: Vec<Vec<u8>> = Vec::new();
                while let Some(rec) = reader
                    .read_message()
                    .with_context(|| format!("bad ITCH file {}", path.display()))?
                {
                    if limit.is_some_and(|l| messages.len() as u64 >= l) {
                        break;
                    }
                    messages.push(rec.message.to_vec());
                }
                if messages.is_empty() {
                    bail!("{} holds no ITCH messages", path.display());
                }
                Self::from_messages(
                    messages.iter().map(Vec::as_slice),
                    per_packet,
                    stock,
                    session,
                    first_seq,
                )
            }
            Source::Pcap(path) => Self::from_pcap(path, limit, stock),
            Source::Market(spec) => {
                // For a generated market, the limit counts the lab symbol's ticks, as it counts
                // the ticker's: the day is generated for that many.
                let mut config = market::Config::from_spec(spec);
                if let Some(l) = limit {
                    config.bars = config.bars.min(usize::try_from(l).unwrap_or(usize::MAX));
                }
                let generator = market::Generator::new(config).map_err(anyhow::Error::msg)?;
                let mut bytes = Vec::new();
                let mut ends = Vec::new();
                let mut buf = [0u8; 64];
                for m in generator {
                    let n = m
                        .emit_into(&mut buf)
                        .context("an ITCH message fits 64 bytes")?;
                    bytes.extend_from_slice(&buf[..n]);
                    ends.push(bytes.len());
                }
                let mut start = 0;
                let messages = ends.iter().map(|&end| {
                    let m = &bytes[start..end];
                    start = end;
                    m
                });
                Self::from_messages(messages, per_packet, stock, session, first_seq)
            }
        }
    }

    fn from_closes(
        closes: &[f64],
        limit: Option<u64>,
        per_packet: u16,
        stock: Stock,
        session: Session,
        first_seq: u64,
    ) -> anyhow::Result<Feed> {
        let n = limit.map_or(closes.len(), |l| closes.len().min(l as usize));
        if n == 0 {
            bail!("the series is empty");
        }
        let mut msgs = Vec::with_capacity(n);
        for (i, &c) in closes[..n].iter().enumerate() {
            let price = Price4::from_f64_quantised(c)
                .map_err(|e| anyhow::anyhow!("close {i} ({c}) can't be a price: {e}"))?;
            let mut m = [0u8; itch::trade::LEN];
            trade_message(i as u64 + 1, stock, price, i as u64 * 1000)
                .emit_into(&mut m)
                .expect("a trade fits its own length");
            msgs.push(m);
        }
        Self::from_messages(
            msgs.iter().map(|m| &m[..]),
            per_packet,
            stock,
            session,
            first_seq,
        )
    }

    fn from_messages<'a>(
        messages: impl Iterator<Item = &'a [u8]>,
        per_packet: u16,
        stock: Stock,
        session: Session,
        first_seq: u64,
    ) -> anyhow::Result<Feed> {
        let mut feed = Feed {
            bytes: Vec::new(),
            packets: Vec::new(),
            ticks: Vec::new(),
            first_seq,
            messages: 0,
            session,
            other_sessions: 0,
            streamed: None,
        };
        let mut buf = [0u8; MAX_PAYLOAD];
        let mut builder = PacketBuilder::new(&mut buf, session, first_seq)?;
        let mut seq = first_seq;
        let mut packet_first = first_seq;
        // A full-depth feed prints `stock` through its book (an Order Executed names only the
        // resting order): the ticks a book-reading trader trades, found the way it finds them.
        let mut watch = book::Watch::new(&[stock], 1 << 16).map_err(anyhow::Error::msg)?;
        for m in messages {
            if feed.messages > 0 {
                seq = seq.checked_add(1).with_context(|| {
                    format!(
                        "numbered from {first_seq}, message {} would pass 2^64 - 1",
                        feed.messages + 1
                    )
                })?;
            }
            if builder.count() == per_packet || builder.remaining() < m.len() + 2 {
                let bytes = builder.finish();
                feed.push_packet(bytes, packet_first);
                packet_first = seq;
                builder = PacketBuilder::new(&mut buf, session, seq)?;
            }
            builder.push(m).with_context(|| {
                format!("message {seq} ({} bytes) doesn't fit a packet", m.len())
            })?;
            if let Ok(Message::Trade(t)) = itch::parse(m)
                && t.stock == stock
            {
                feed.ticks.push(Tick {
                    seq,
                    price: t.price,
                });
            } else if watch.wants(m)
                && let Ok(msg) = itch::parse(m)
                && let book::Event::Print(p) = watch.apply(&msg)
                && watch.locate(stock) == Some(p.locate)
            {
                feed.ticks.push(Tick {
                    seq,
                    price: p.price,
                });
            }
            feed.messages += 1;
        }
        if !builder.is_empty() {
            let bytes = builder.finish();
            feed.push_packet(bytes, packet_first);
        }
        Ok(feed)
    }

    fn push_packet(&mut self, bytes: &[u8], first_seq: u64) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        let messages = moldudp64::Packet::new_checked(bytes)
            .map(|p| p.block_count())
            .unwrap_or(0);
        self.packets.push(PacketMeta {
            start,
            end: self.bytes.len(),
            first_seq,
            messages,
        });
    }

    fn from_pcap(path: &Path, limit: Option<u64>, stock: Stock) -> anyhow::Result<Feed> {
        let file =
            File::open(path).with_context(|| format!("failed to open {}", path.display()))?;
        let mut reader = wire::pcap::Reader::new(file)
            .with_context(|| format!("{} is not a pcap file", path.display()))?;
        let mut feed = Feed {
            bytes: Vec::new(),
            packets: Vec::new(),
            ticks: Vec::new(),
            first_seq: 0,
            messages: 0,
            session: Session::new(SESSION).expect("the lab's session name is valid"),
            other_sessions: 0,
            streamed: None,
        };
        while let Some(rec) = reader
            .read_record()
            .with_context(|| format!("bad pcap record in {}", path.display()))?
        {
            let Ok(Some(d)) = wire::pcap::udp_payload(rec.data) else {
                continue;
            };
            let payload = d.payload.to_vec();
            let Ok(p) = moldudp64::Packet::new_checked(&payload[..]) else {
                continue;
            };
            if p.is_heartbeat() || p.is_end_of_session() {
                continue;
            }
            if feed.packets.is_empty() {
                feed.first_seq = p.sequence();
                feed.session = p.session();
            } else if p.session() != feed.session {
                feed.other_sessions += 1;
                continue;
            }
            for (i, m) in p.messages().enumerate() {
                if let Ok(Message::Trade(t)) = m.and_then(itch::parse)
                    && t.stock == stock
                    && let Some(seq) = p.sequence().checked_add(i as u64)
                {
                    feed.ticks.push(Tick {
                        seq,
                        price: t.price,
                    });
                }
            }
            feed.messages += u64::from(p.block_count());
            let first = p.sequence();
            feed.push_packet(&payload, first);
            if limit.is_some_and(|l| feed.messages >= l) {
                break;
            }
        }
        if feed.packets.is_empty() {
            bail!("{} holds no MoldUDP64 packets in UDP", path.display());
        }
        Ok(feed)
    }

    /// The bytes of packet `i`.
    #[inline]
    pub fn packet(&self, i: usize) -> &[u8] {
        let m = self.packets[i];
        &self.bytes[m.start..m.end]
    }

    /// The ticks' prices as the engine sees them (`Price4::to_f64`, the one conversion).
    pub fn tick_prices(&self) -> Vec<f64> {
        self.ticks.iter().map(|t| t.price.to_f64()).collect()
    }

    /// The MoldUDP64 end-of-session packet for this feed: `next_seq` is the sequence number
    /// after the last message sent, so a receiver counts only what went out and never came.
    pub fn end_of_session(&self, next_seq: u64) -> Vec<u8> {
        let mut buf = vec![0u8; moldudp64::HEADER_LEN];
        let mut p = moldudp64::Packet::new_unchecked(&mut buf[..]);
        p.set_session(self.session);
        p.set_sequence(next_seq);
        p.set_count(moldudp64::END_OF_SESSION);
        buf
    }
}

/// Loads closes: raw little-endian f64 unless the file name ends in `.csv`.
pub fn load_closes(path: &Path) -> anyhow::Result<Vec<f64>> {
    let csv = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    let closes = if csv {
        engine::data::load_csv(path, None)
    } else {
        engine::data::load_raw_f64(path)
    };
    closes.with_context(|| format!("failed to load closes from {}", path.display()))
}
