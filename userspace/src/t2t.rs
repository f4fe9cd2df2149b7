//! The tick-to-trade core shared by both I/O paths: MoldUDP64 payload in, ITCH decode,
//! sequence tracking, the engine's streaming strategy, orders out.
//!
//! The XDP path and the kernel-UDP path differ only in how a payload arrives and how an
//! order's bytes leave; everything in between is this code. Nothing here allocates, logs or
//! makes a system call: the caller passes the clock readings in.
use engine::{Params, Side as EngineSide, Strategy};
use serde::{Deserialize, Serialize};
use wire::{
    itch::{self, Message, Price4, Side, Stock},
    moldudp64,
    order::OrderRepr,
};

use crate::stats::Latency;

/// Shares per order that opens a position; a reversal sends twice this (close + open).
pub const LOT: u32 = 100;

/// How many sequence numbers behind the newest one the tracker remembers, to tell a
/// duplicate from a late arrival (a power of two).
const SEEN_WINDOW: u64 = 1 << 16;

/// What the core counted. Every packet and message lands in exactly one bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// MoldUDP64 packets taken.
    pub packets: u64,
    /// Packets whose MoldUDP64 header was unreadable (shorter than 20 bytes).
    pub malformed_packets: u64,
    /// Packets of another session than the first one seen.
    pub wrong_session: u64,
    /// Heartbeats.
    pub heartbeats: u64,
    /// ITCH messages taken in sequence.
    pub messages: u64,
    /// Trade messages handed to the strategy.
    pub ticks: u64,
    /// Trade messages for another stock.
    pub other_stock: u64,
    /// Valid ITCH messages of other types.
    pub other_messages: u64,
    /// Message blocks that were not valid ITCH (unknown type, wrong length) or broke the
    /// MoldUDP64 framing (lying block length or count); each still consumes its sequence number.
    pub malformed_messages: u64,
    /// Sequence numbers skipped over when a later one arrived first (a gap).
    pub gap_messages: u64,
    /// Messages that arrived after a later one had been processed: counted, not traded
    /// (the strategy has moved past them).
    pub late_messages: u64,
    /// Messages seen before: dropped, never traded twice.
    pub duplicate_messages: u64,
    /// Orders sent.
    pub orders: u64,
    /// Orders that could not be sent (no TX frame, socket error).
    pub orders_failed: u64,
}

/// What a packet meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketOutcome {
    /// Processed (possibly nothing in it was new).
    Data,
    /// The exchange ended the session.
    EndOfSession,
}

/// The trader's state: strategy, sequence tracker, counters, timing.
#[derive(Debug)]
pub struct Trader {
    strategy: Strategy,
    stock: Option<Stock>,
    session: Option<moldudp64::Session>,
    /// Next sequence number expected.
    next_seq: u64,
    seen: Box<[u64]>,
    token: u64,
    /// What was counted.
    pub counters: Counters,
    /// Engine time per tick (`on_tick`, price in to decision out).
    pub engine: Latency,
}

impl Trader {
    /// A trader running the strategy `params` on trades of `stock` (all stocks if `None`).
    pub fn new(params: Params, stock: Option<Stock>) -> Self {
        Trader {
            strategy: Strategy::new(params),
            stock,
            session: None,
            next_seq: 1,
            seen: vec![0u64; (SEEN_WINDOW / 64) as usize].into_boxed_slice(),
            token: 0,
            counters: Counters::default(),
            engine: Latency::new(),
        }
    }

    /// Processes one MoldUDP64 packet; `emit` is called for each order, in tick order, and
    /// returns whether the order went out. `clock` reads the time (for the engine's share).
    #[inline]
    pub fn on_packet(
        &mut self,
        payload: &[u8],
        clock: impl Fn() -> u64,
        mut emit: impl FnMut(&OrderRepr) -> bool,
    ) -> PacketOutcome {
        self.counters.packets += 1;
        let Ok(packet) = moldudp64::Packet::new_checked(payload) else {
            self.counters.malformed_packets += 1;
            return PacketOutcome::Data;
        };
        let session = packet.session();
        match self.session {
            None => self.session = Some(session),
            Some(s) if s != session => {
                self.counters.wrong_session += 1;
                return PacketOutcome::Data;
            }
            Some(_) => {}
        }
        if packet.is_end_of_session() {
            return PacketOutcome::EndOfSession;
        }
        if packet.is_heartbeat() {
            self.counters.heartbeats += 1;
            return PacketOutcome::Data;
        }
        let first = packet.sequence();
        for (i, block) in packet.messages().enumerate() {
            let seq = first.wrapping_add(i as u64);
            if !self.admit(seq) {
                continue;
            }
            self.counters.messages += 1;
            let Ok(block) = block else {
                self.counters.malformed_messages += 1;
                continue;
            };
            match itch::parse(block) {
                Ok(Message::Trade(t)) => {
                    if self.stock.is_some_and(|s| s != t.stock) {
                        self.counters.other_stock += 1;
                        continue;
                    }
                    self.counters.ticks += 1;
                    let price = t.price.to_f64();
                    let t0 = clock();
                    let signal = self.strategy.on_tick(price);
                    self.engine.record(clock().saturating_sub(t0));
                    if let Some(signal) = signal {
                        self.token += 1;
                        let order = OrderRepr {
                            side: match signal.side {
                                EngineSide::Long => Side::Buy,
                                EngineSide::Short => Side::Sell,
                            },
                            reverse: signal.reverse,
                            shares: if signal.reverse { 2 * LOT } else { LOT },
                            token: self.token,
                            tick_seq: seq,
                            price: t.price,
                            stock: t.stock,
                        };
                        if emit(&order) {
                            self.counters.orders += 1;
                        } else {
                            self.counters.orders_failed += 1;
                        }
                    }
                }
                Ok(Message::Other { .. }) => self.counters.other_messages += 1,
                Err(_) => self.counters.malformed_messages += 1,
            }
        }
        PacketOutcome::Data
    }

    /// Work for the next tick that doesn't depend on its price; call after the orders of the
    /// last packet are out.
    #[inline]
    pub fn prepare(&mut self) {
        self.strategy.prepare();
    }

    /// Sequence tracking: true when `seq` is new and in order (possibly after a gap).
    #[inline]
    fn admit(&mut self, seq: u64) -> bool {
        if seq >= self.next_seq {
            let skipped = seq - self.next_seq;
            self.counters.gap_messages += skipped;
            // Forget what the window held for the sequence numbers we now move over.
            if skipped + 1 >= SEEN_WINDOW {
                self.seen.fill(0);
            } else {
                for s in self.next_seq..=seq {
                    self.clear(s);
                }
            }
            self.mark(seq);
            self.next_seq = seq + 1;
            return true;
        }
        if self.next_seq - seq > SEEN_WINDOW || !self.is_marked(seq) {
            // Older than a gap we passed: the tick arrived late.
            self.counters.late_messages += 1;
            if self.next_seq - seq <= SEEN_WINDOW {
                self.mark(seq);
            }
        } else {
            self.counters.duplicate_messages += 1;
        }
        false
    }

    #[inline]
    fn slot(seq: u64) -> (usize, u64) {
        let i = seq % SEEN_WINDOW;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    #[inline]
    fn mark(&mut self, seq: u64) {
        let (w, b) = Self::slot(seq);
        if let Some(word) = self.seen.get_mut(w) {
            *word |= b;
        }
    }

    #[inline]
    fn clear(&mut self, seq: u64) {
        let (w, b) = Self::slot(seq);
        if let Some(word) = self.seen.get_mut(w) {
            *word &= !b;
        }
    }

    #[inline]
    fn is_marked(&self, seq: u64) -> bool {
        let (w, b) = Self::slot(seq);
        self.seen.get(w).is_some_and(|word| word & b != 0)
    }
}

/// Builds the ITCH Trade message for one tick (synthetic feeds).
pub fn trade_message(seq: u64, stock: Stock, price: Price4, timestamp_ns: u64) -> itch::TradeRepr {
    itch::TradeRepr {
        stock_locate: 1,
        tracking_number: 0,
        timestamp: itch::Timestamp::from_nanos(timestamp_ns % itch::Timestamp::MAX.nanos())
            .unwrap_or(itch::Timestamp::MAX),
        order_ref: seq,
        side: Side::Buy,
        shares: LOT,
        stock,
        price,
        match_number: seq,
    }
}
