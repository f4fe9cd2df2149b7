//! Bounds checks: a cost the C++ study could not have. Every `buf[i]` and `buf[a..b]` in safe
//! Rust compares the index with the length and branches to a panic when it is out of range,
//! unless the compiler can prove it never is. A feed handler's parse is almost nothing but such
//! reads, so this is where the checks would show.
//!
//! The parse is the trader's: MoldUDP64 packets (header, then length-prefixed blocks) of ITCH
//! 5.0 messages in a market's mix (Add Order, Order Delete, Order Executed, Order Cancel,
//! Trade), every field the trader or a book would use decoded into a [`Digest`]. It is written
//! three ways, with the same checks of the input (the header is there, each block lies inside
//! the packet, each message has its type's length) and the same result:
//!
//! * **checked indexing**: `p[m]` and `u64::from_be_bytes(p[m + 11..m + 19].try_into().unwrap())`
//!   at run-time offsets into the packet, as code ported from C reads; the compiler can't tell
//!   that `m + 19` is inside the packet (it saw `m + len <= p.len()` with a wrapping add), so
//!   most reads keep their compare and branch.
//! * **proven once**: `split_first_chunk`, `split_at_checked` and a conversion of the message to
//!   `&[u8; LEN]` of its type's length; after that one check every field is a constant range of
//!   a fixed-size array, checked at compile time (the wire crate's block walk reads this way).
//! * **`get_unchecked`**: the checked form's offsets and input checks, the reads unchecked
//!   (`unsafe`, each justified by the message-length check before it).
//!
//! A message is a few ns, below the timer's resolution: a sample is a batch of packets holding
//! [`Plan::per_batch`] messages, and the figure is the batch's time per message.

use std::cell::{Cell, RefCell};
use std::ops::Range;

use super::Rng;
use crate::Ctx;
use crate::harness::{Dist, Recorder, Tsc, Variant, interleave, tsc};
use crate::report::{Comparison, Level, Outcome, ns};
use crate::verdict::Spread;

/// MoldUDP64: session (10 bytes), the first message's sequence number (u64 BE), the message
/// count (u16 BE); then the blocks, each a u16 BE length and the message.
const HEADER_LEN: usize = 20;
const SEQUENCE: usize = 10;
const COUNT: usize = 18;
const BLOCK_LEN: usize = 2;

/// The ITCH 5.0 types the parse decodes, their fixed lengths (NASDAQ TotalView-ITCH 5.0, section
/// 4, as `wire::itch::MESSAGE_LENGTHS`), the share of the stream each makes up (per cent, a
/// market's rough mix, as `typetest`'s) and how many fields the parse reads from each (the
/// type byte and the block's length not counted).
const ADD: u8 = b'A';
const DELETE: u8 = b'D';
const EXECUTED: u8 = b'E';
const CANCEL: u8 = b'X';
const TRADE: u8 = b'P';
const ADD_LEN: usize = 36;
const DELETE_LEN: usize = 19;
const EXECUTED_LEN: usize = 31;
const CANCEL_LEN: usize = 23;
const TRADE_LEN: usize = 44;
/// (type, length, per cent of the stream, fields read).
const KINDS: [(u8, usize, usize, u32); 5] = [
    (ADD, ADD_LEN, 45, 6),
    (DELETE, DELETE_LEN, 40, 2),
    (EXECUTED, EXECUTED_LEN, 7, 4),
    (CANCEL, CANCEL_LEN, 6, 3),
    (TRADE, TRADE_LEN, 2, 7),
];

/// Field offsets inside a message. Every type starts with type (1), stock locate (2), tracking
/// number (2), timestamp (6, ns since midnight), order reference (8).
const TIMESTAMP: usize = 5;
const ORDER_REF: usize = 11;
/// Add Order and Trade: side, shares, stock, price; Trade then the match number.
const SIDE: usize = 19;
const SHARES: usize = 20;
const STOCK: usize = 24;
const PRICE: usize = 32;
const TRADE_MATCH: usize = 36;
/// Order Executed: shares, match number; Order Cancel: shares.
const EXEC_SHARES: usize = 19;
const EXEC_MATCH: usize = 23;

/// What the parse computes: every decoded field folded in, so no read is dead to the
/// optimiser, and any disagreement between the forms shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Digest {
    pub packets: u64,
    pub messages: u64,
    /// The packets' sequence numbers and counts, hashed in order.
    pub headers: u64,
    pub times: u64,
    pub refs: u64,
    pub bought: u64,
    pub sold: u64,
    pub notional: u64,
    pub executed: u64,
    pub cancelled: u64,
    pub deleted: u64,
    pub matches: u64,
    pub stocks: u64,
    /// Messages of a type the parse doesn't decode.
    pub other: u64,
    /// A short header, a block past the packet's end, an empty block, a known type at the wrong
    /// length.
    pub bad: u64,
}

impl Digest {
    #[inline(always)]
    fn packet(&mut self, seq: u64, count: u16) {
        self.packets += 1;
        self.headers = self.headers.rotate_left(7) ^ seq ^ (u64::from(count) << 48);
    }

    #[inline(always)]
    fn common(&mut self, ts: u64, order_ref: u64) {
        self.messages += 1;
        self.times = self.times.wrapping_add(ts);
        self.refs ^= order_ref;
    }

    #[inline(always)]
    fn sided(&mut self, side: u8, shares: u32, stock: u64, price: u32) {
        let buy = u64::from(side == b'B');
        let shares = u64::from(shares);
        self.bought = self.bought.wrapping_add(buy * shares);
        self.sold = self.sold.wrapping_add((1 - buy) * shares);
        self.notional = self
            .notional
            .wrapping_add(u64::from(price).wrapping_mul(shares));
        self.stocks = self.stocks.wrapping_add(stock);
    }

    #[inline(always)]
    fn add(&mut self, ts: u64, order_ref: u64, side: u8, shares: u32, stock: u64, price: u32) {
        self.common(ts, order_ref);
        self.sided(side, shares, stock, price);
    }

    #[inline(always)]
    fn delete(&mut self, ts: u64, order_ref: u64) {
        self.common(ts, order_ref);
        self.deleted += 1;
    }

    #[inline(always)]
    fn executed(&mut self, ts: u64, order_ref: u64, shares: u32, match_number: u64) {
        self.common(ts, order_ref);
        self.executed = self.executed.wrapping_add(u64::from(shares));
        self.matches ^= match_number;
    }

    #[inline(always)]
    fn cancel(&mut self, ts: u64, order_ref: u64, shares: u32) {
        self.common(ts, order_ref);
        self.cancelled = self.cancelled.wrapping_add(u64::from(shares));
    }

    #[inline(always)]
    #[expect(clippy::too_many_arguments, reason = "one argument per decoded field")]
    fn trade(
        &mut self,
        ts: u64,
        order_ref: u64,
        side: u8,
        shares: u32,
        stock: u64,
        price: u32,
        match_number: u64,
    ) {
        self.common(ts, order_ref);
        self.sided(side, shares, stock, price);
        self.matches ^= match_number;
    }

    /// One number for the report.
    pub fn checksum(&self) -> u64 {
        [
            self.packets,
            self.messages,
            self.headers,
            self.times,
            self.refs,
            self.bought,
            self.sold,
            self.notional,
            self.executed,
            self.cancelled,
            self.deleted,
            self.matches,
            self.stocks,
            self.other,
            self.bad,
        ]
        .iter()
        .fold(0u64, |h, &x| h.rotate_left(13) ^ x)
    }
}

/// One message as generated, before it is bytes: what the reference digest is computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Msg {
    pub kind: u8,
    pub ts: u64,
    pub order_ref: u64,
    pub side: u8,
    pub shares: u32,
    pub stock: [u8; 8],
    pub price: u32,
    pub match_number: u64,
}

impl Msg {
    fn random(r: &mut Rng, ts: u64) -> Msg {
        let mut pick = r.below(100);
        let mut kind = ADD;
        for (k, _, pct, _) in KINDS {
            if pick < pct {
                kind = k;
                break;
            }
            pick -= pct;
        }
        const STOCKS: [&[u8; 8]; 4] = [b"AAPL    ", b"MSFT    ", b"SYNTH   ", b"NVDA    "];
        Msg {
            kind,
            ts,
            order_ref: r.next_u64() >> 20,
            side: if r.below(2) == 0 { b'B' } else { b'S' },
            shares: 1 + r.below(1_000) as u32,
            stock: *STOCKS[r.below(STOCKS.len())],
            price: 1_000_000 + r.below(20_000) as u32,
            match_number: r.next_u64() >> 24,
        }
    }

    /// The message's ITCH bytes (stock locate 1, tracking number 0), appended to `out`.
    fn emit(&self, out: &mut Vec<u8>) {
        let len = kind_len(self.kind);
        let at = out.len();
        out.resize(at + len, 0);
        let m = &mut out[at..];
        m[0] = self.kind;
        m[1..3].copy_from_slice(&1u16.to_be_bytes());
        m[TIMESTAMP..TIMESTAMP + 6].copy_from_slice(&self.ts.to_be_bytes()[2..]);
        m[ORDER_REF..ORDER_REF + 8].copy_from_slice(&self.order_ref.to_be_bytes());
        match self.kind {
            ADD | TRADE => {
                m[SIDE] = self.side;
                m[SHARES..SHARES + 4].copy_from_slice(&self.shares.to_be_bytes());
                m[STOCK..STOCK + 8].copy_from_slice(&self.stock);
                m[PRICE..PRICE + 4].copy_from_slice(&self.price.to_be_bytes());
                if self.kind == TRADE {
                    m[TRADE_MATCH..TRADE_MATCH + 8]
                        .copy_from_slice(&self.match_number.to_be_bytes());
                }
            }
            EXECUTED => {
                m[EXEC_SHARES..EXEC_SHARES + 4].copy_from_slice(&self.shares.to_be_bytes());
                m[EXEC_MATCH..EXEC_MATCH + 8].copy_from_slice(&self.match_number.to_be_bytes());
            }
            CANCEL => {
                m[EXEC_SHARES..EXEC_SHARES + 4].copy_from_slice(&self.shares.to_be_bytes());
            }
            _ => {}
        }
    }

    /// What the parse folds in for this message, from the fields themselves.
    fn fold(&self, d: &mut Digest) {
        let stock = u64::from_be_bytes(self.stock);
        match self.kind {
            ADD => d.add(
                self.ts,
                self.order_ref,
                self.side,
                self.shares,
                stock,
                self.price,
            ),
            DELETE => d.delete(self.ts, self.order_ref),
            EXECUTED => d.executed(self.ts, self.order_ref, self.shares, self.match_number),
            CANCEL => d.cancel(self.ts, self.order_ref, self.shares),
            _ => d.trade(
                self.ts,
                self.order_ref,
                self.side,
                self.shares,
                stock,
                self.price,
                self.match_number,
            ),
        }
    }
}

fn kind_len(kind: u8) -> usize {
    KINDS
        .iter()
        .find(|k| k.0 == kind)
        .map_or(0, |&(_, len, _, _)| len)
}

/// The most messages a generated packet carries (a full one is then ~600 bytes, inside an
/// Ethernet frame).
const MAX_PER_PACKET: usize = 16;

/// The pre-generated input: MoldUDP64 packets back to back in one buffer, grouped in batches of
/// a fixed number of messages (one sample each).
#[derive(Debug)]
pub struct Feed {
    pub bytes: Vec<u8>,
    /// Each packet's byte range in `bytes`.
    pub packets: Vec<Range<usize>>,
    /// Each batch's range of `packets`.
    pub batches: Vec<Range<usize>>,
    /// The messages in order, as generated.
    pub msgs: Vec<Msg>,
    /// Each packet's (sequence number, message count).
    pub headers: Vec<(u64, u16)>,
    pub per_batch: u32,
}

impl Feed {
    /// `batches` batches of `per_batch` messages, each batch cut into packets of 1 to
    /// [`MAX_PER_PACKET`] messages at random, sequence numbers running on from 1.
    pub fn new(batches: usize, per_batch: u32, seed: u64) -> Feed {
        let mut r = Rng::new(seed);
        let mut f = Feed {
            bytes: Vec::new(),
            packets: Vec::new(),
            batches: Vec::with_capacity(batches),
            msgs: Vec::new(),
            headers: Vec::new(),
            per_batch,
        };
        let (mut seq, mut ts) = (1u64, 34_200_000_000_000u64);
        for _ in 0..batches {
            let first = f.packets.len();
            let mut left = per_batch as usize;
            while left > 0 {
                let n = (1 + r.below(MAX_PER_PACKET)).min(left);
                left -= n;
                let start = f.bytes.len();
                f.bytes.extend_from_slice(b"T2TBENCH01");
                f.bytes.extend_from_slice(&seq.to_be_bytes());
                f.bytes.extend_from_slice(&(n as u16).to_be_bytes());
                for _ in 0..n {
                    ts += 1 + r.below(5_000) as u64;
                    let m = Msg::random(&mut r, ts);
                    f.bytes
                        .extend_from_slice(&(kind_len(m.kind) as u16).to_be_bytes());
                    m.emit(&mut f.bytes);
                    f.msgs.push(m);
                }
                f.headers.push((seq, n as u16));
                f.packets.push(start..f.bytes.len());
                seq += n as u64;
            }
            f.batches.push(first..f.packets.len());
        }
        f
    }

    /// The digest of the first `batches` batches (cycling), from the generated messages, not
    /// their bytes: what every parse must compute.
    pub fn reference(&self, batches: usize) -> Digest {
        let mut d = Digest::default();
        // Each packet's first message, by packet index.
        let mut firsts = Vec::with_capacity(self.packets.len() + 1);
        let mut k = 0usize;
        for &(_, n) in &self.headers {
            firsts.push(k);
            k += usize::from(n);
        }
        for b in 0..batches {
            for i in self.batches[b % self.batches.len()].clone() {
                let (seq, n) = self.headers[i];
                d.packet(seq, n);
                for m in &self.msgs[firsts[i]..firsts[i] + usize::from(n)] {
                    m.fold(&mut d);
                }
            }
        }
        d
    }

    /// How many of each type, in [`KINDS`]'s order.
    pub fn counts(&self) -> [usize; 5] {
        let mut c = [0; 5];
        for m in &self.msgs {
            if let Some(i) = KINDS.iter().position(|k| k.0 == m.kind) {
                c[i] += 1;
            }
        }
        c
    }

    /// The fields a message makes the parse read, on average over this feed.
    pub fn reads_per_message(&self) -> f64 {
        let c = self.counts();
        let reads: u64 = c
            .iter()
            .zip(KINDS)
            .map(|(&n, k)| n as u64 * u64::from(k.3))
            .sum();
        reads as f64 / self.msgs.len().max(1) as f64
    }
}

// ---- checked indexing ----

#[inline(always)]
fn c_u16(p: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(p[at..at + 2].try_into().unwrap())
}

#[inline(always)]
fn c_u32(p: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(p[at..at + 4].try_into().unwrap())
}

#[inline(always)]
fn c_u64(p: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(p[at..at + 8].try_into().unwrap())
}

#[inline(always)]
fn c_u48(p: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w[2..].copy_from_slice(&p[at..at + 6]);
    u64::from_be_bytes(w)
}

/// One packet, every read a checked index at an offset computed at run time.
#[inline(always)]
fn packet_checked(p: &[u8], d: &mut Digest) {
    if p.len() < HEADER_LEN {
        d.bad += 1;
        return;
    }
    let count = c_u16(p, COUNT);
    d.packet(c_u64(p, SEQUENCE), count);
    let mut at = HEADER_LEN;
    for _ in 0..count {
        if at + BLOCK_LEN > p.len() {
            d.bad += 1;
            return;
        }
        let len = usize::from(c_u16(p, at));
        let m = at + BLOCK_LEN;
        at = m + len;
        if len == 0 || at > p.len() {
            d.bad += 1;
            return;
        }
        match (p[m], len) {
            (ADD, ADD_LEN) => d.add(
                c_u48(p, m + TIMESTAMP),
                c_u64(p, m + ORDER_REF),
                p[m + SIDE],
                c_u32(p, m + SHARES),
                c_u64(p, m + STOCK),
                c_u32(p, m + PRICE),
            ),
            (DELETE, DELETE_LEN) => d.delete(c_u48(p, m + TIMESTAMP), c_u64(p, m + ORDER_REF)),
            (EXECUTED, EXECUTED_LEN) => d.executed(
                c_u48(p, m + TIMESTAMP),
                c_u64(p, m + ORDER_REF),
                c_u32(p, m + EXEC_SHARES),
                c_u64(p, m + EXEC_MATCH),
            ),
            (CANCEL, CANCEL_LEN) => d.cancel(
                c_u48(p, m + TIMESTAMP),
                c_u64(p, m + ORDER_REF),
                c_u32(p, m + EXEC_SHARES),
            ),
            (TRADE, TRADE_LEN) => d.trade(
                c_u48(p, m + TIMESTAMP),
                c_u64(p, m + ORDER_REF),
                p[m + SIDE],
                c_u32(p, m + SHARES),
                c_u64(p, m + STOCK),
                c_u32(p, m + PRICE),
                c_u64(p, m + TRADE_MATCH),
            ),
            (ADD | DELETE | EXECUTED | CANCEL | TRADE, _) => d.bad += 1,
            _ => d.other += 1,
        }
    }
}

// ---- proven once: fixed-size arrays ----

/// `N` bytes at a constant offset of a fixed-size array: the range is checked at compile time.
#[inline(always)]
fn a_bytes<const W: usize, const N: usize>(a: &[u8; N], at: usize) -> [u8; W] {
    a[at..at + W].try_into().unwrap()
}

#[inline(always)]
fn a_u32<const N: usize>(a: &[u8; N], at: usize) -> u32 {
    u32::from_be_bytes(a_bytes(a, at))
}

#[inline(always)]
fn a_u64<const N: usize>(a: &[u8; N], at: usize) -> u64 {
    u64::from_be_bytes(a_bytes(a, at))
}

#[inline(always)]
fn a_u48<const N: usize>(a: &[u8; N], at: usize) -> u64 {
    let b: [u8; 6] = a_bytes(a, at);
    let mut w = [0u8; 8];
    w[2..].copy_from_slice(&b);
    u64::from_be_bytes(w)
}

/// One packet, split into fixed-size pieces: one check per piece, none per field.
#[inline(always)]
fn packet_proven(p: &[u8], d: &mut Digest) {
    let Some((hdr, mut rest)) = p.split_first_chunk::<HEADER_LEN>() else {
        d.bad += 1;
        return;
    };
    let count = u16::from_be_bytes(a_bytes(hdr, COUNT));
    d.packet(a_u64(hdr, SEQUENCE), count);
    for _ in 0..count {
        let Some((len, r)) = rest.split_first_chunk::<BLOCK_LEN>() else {
            d.bad += 1;
            return;
        };
        let Some((m, r)) = r.split_at_checked(usize::from(u16::from_be_bytes(*len))) else {
            d.bad += 1;
            return;
        };
        rest = r;
        let Some(&kind) = m.first() else {
            d.bad += 1;
            return;
        };
        match kind {
            ADD => match <&[u8; ADD_LEN]>::try_from(m) {
                Ok(a) => d.add(
                    a_u48(a, TIMESTAMP),
                    a_u64(a, ORDER_REF),
                    a[SIDE],
                    a_u32(a, SHARES),
                    a_u64(a, STOCK),
                    a_u32(a, PRICE),
                ),
                Err(_) => d.bad += 1,
            },
            DELETE => match <&[u8; DELETE_LEN]>::try_from(m) {
                Ok(a) => d.delete(a_u48(a, TIMESTAMP), a_u64(a, ORDER_REF)),
                Err(_) => d.bad += 1,
            },
            EXECUTED => match <&[u8; EXECUTED_LEN]>::try_from(m) {
                Ok(a) => d.executed(
                    a_u48(a, TIMESTAMP),
                    a_u64(a, ORDER_REF),
                    a_u32(a, EXEC_SHARES),
                    a_u64(a, EXEC_MATCH),
                ),
                Err(_) => d.bad += 1,
            },
            CANCEL => match <&[u8; CANCEL_LEN]>::try_from(m) {
                Ok(a) => d.cancel(
                    a_u48(a, TIMESTAMP),
                    a_u64(a, ORDER_REF),
                    a_u32(a, EXEC_SHARES),
                ),
                Err(_) => d.bad += 1,
            },
            TRADE => match <&[u8; TRADE_LEN]>::try_from(m) {
                Ok(a) => d.trade(
                    a_u48(a, TIMESTAMP),
                    a_u64(a, ORDER_REF),
                    a[SIDE],
                    a_u32(a, SHARES),
                    a_u64(a, STOCK),
                    a_u32(a, PRICE),
                    a_u64(a, TRADE_MATCH),
                ),
                Err(_) => d.bad += 1,
            },
            _ => d.other += 1,
        }
    }
}

// ---- get_unchecked ----

/// `W` bytes at `at`, unchecked.
///
/// # Safety
/// `at + W <= p.len()`.
#[inline(always)]
#[expect(
    unsafe_code,
    reason = "the experiment's third form: reads with no bounds check"
)]
unsafe fn u_bytes<const W: usize>(p: &[u8], at: usize) -> [u8; W] {
    // SAFETY: the caller guarantees `at..at + W` lies inside `p`.
    let s = unsafe { p.get_unchecked(at..at + W) };
    let mut out = [0u8; W];
    // `s.len()` is `W` by construction; the length compare folds away.
    out.copy_from_slice(s);
    out
}

/// # Safety
/// `at + 2 <= p.len()`.
#[inline(always)]
#[expect(unsafe_code, reason = "an unchecked read")]
unsafe fn u_u16(p: &[u8], at: usize) -> u16 {
    // SAFETY: passed on from the caller.
    u16::from_be_bytes(unsafe { u_bytes(p, at) })
}

/// # Safety
/// `at + 4 <= p.len()`.
#[inline(always)]
#[expect(unsafe_code, reason = "an unchecked read")]
unsafe fn u_u32(p: &[u8], at: usize) -> u32 {
    // SAFETY: passed on from the caller.
    u32::from_be_bytes(unsafe { u_bytes(p, at) })
}

/// # Safety
/// `at + 8 <= p.len()`.
#[inline(always)]
#[expect(unsafe_code, reason = "an unchecked read")]
unsafe fn u_u64(p: &[u8], at: usize) -> u64 {
    // SAFETY: passed on from the caller.
    u64::from_be_bytes(unsafe { u_bytes(p, at) })
}

/// # Safety
/// `at + 6 <= p.len()`.
#[inline(always)]
#[expect(unsafe_code, reason = "an unchecked read")]
unsafe fn u_u48(p: &[u8], at: usize) -> u64 {
    // SAFETY: passed on from the caller.
    let b: [u8; 6] = unsafe { u_bytes(p, at) };
    let mut w = [0u8; 8];
    w[2..].copy_from_slice(&b);
    u64::from_be_bytes(w)
}

/// # Safety
/// `at < p.len()`.
#[inline(always)]
#[expect(unsafe_code, reason = "an unchecked read")]
unsafe fn u_u8(p: &[u8], at: usize) -> u8 {
    // SAFETY: passed on from the caller.
    unsafe { *p.get_unchecked(at) }
}

/// One packet: the checked form's offsets and input checks, every read unchecked.
#[inline(always)]
#[expect(
    unsafe_code,
    reason = "the experiment's third form: reads with no bounds check, each after a length check"
)]
fn packet_unchecked(p: &[u8], d: &mut Digest) {
    if p.len() < HEADER_LEN {
        d.bad += 1;
        return;
    }
    // SAFETY: COUNT + 2 and SEQUENCE + 8 are within HEADER_LEN, and `p` holds HEADER_LEN bytes.
    let (count, seq) = unsafe { (u_u16(p, COUNT), u_u64(p, SEQUENCE)) };
    d.packet(seq, count);
    let mut at = HEADER_LEN;
    for _ in 0..count {
        if at + BLOCK_LEN > p.len() {
            d.bad += 1;
            return;
        }
        // SAFETY: `at + BLOCK_LEN <= p.len()`, checked just above.
        let len = usize::from(unsafe { u_u16(p, at) });
        let m = at + BLOCK_LEN;
        at = m + len;
        if len == 0 || at > p.len() {
            d.bad += 1;
            return;
        }
        // SAFETY: `m < m + len <= p.len()` (checked just above), so the type byte is in `p`;
        // each arm reads only when `len` is its type's fixed length, and every field's offset +
        // width is within that length, so each read lies in `m..m + len`.
        unsafe {
            match (u_u8(p, m), len) {
                (ADD, ADD_LEN) => d.add(
                    u_u48(p, m + TIMESTAMP),
                    u_u64(p, m + ORDER_REF),
                    u_u8(p, m + SIDE),
                    u_u32(p, m + SHARES),
                    u_u64(p, m + STOCK),
                    u_u32(p, m + PRICE),
                ),
                (DELETE, DELETE_LEN) => {
                    d.delete(u_u48(p, m + TIMESTAMP), u_u64(p, m + ORDER_REF));
                }
                (EXECUTED, EXECUTED_LEN) => d.executed(
                    u_u48(p, m + TIMESTAMP),
                    u_u64(p, m + ORDER_REF),
                    u_u32(p, m + EXEC_SHARES),
                    u_u64(p, m + EXEC_MATCH),
                ),
                (CANCEL, CANCEL_LEN) => d.cancel(
                    u_u48(p, m + TIMESTAMP),
                    u_u64(p, m + ORDER_REF),
                    u_u32(p, m + EXEC_SHARES),
                ),
                (TRADE, TRADE_LEN) => d.trade(
                    u_u48(p, m + TIMESTAMP),
                    u_u64(p, m + ORDER_REF),
                    u_u8(p, m + SIDE),
                    u_u32(p, m + SHARES),
                    u_u64(p, m + STOCK),
                    u_u32(p, m + PRICE),
                    u_u64(p, m + TRADE_MATCH),
                ),
                (ADD | DELETE | EXECUTED | CANCEL | TRADE, _) => d.bad += 1,
                _ => d.other += 1,
            }
        }
    }
}

/// A batch of packets through one form: out of line, so each form is one function whose code
/// can be read on its own (`objdump`), and nothing of the timing loop is merged into it.
#[inline(never)]
fn batch_checked(bytes: &[u8], packets: &[Range<usize>], d: &mut Digest) {
    for r in packets {
        packet_checked(&bytes[r.clone()], d);
    }
}

#[inline(never)]
fn batch_proven(bytes: &[u8], packets: &[Range<usize>], d: &mut Digest) {
    for r in packets {
        packet_proven(&bytes[r.clone()], d);
    }
}

#[inline(never)]
fn batch_unchecked(bytes: &[u8], packets: &[Range<usize>], d: &mut Digest) {
    for r in packets {
        packet_unchecked(&bytes[r.clone()], d);
    }
}

/// A whole packet through each form, for the tests.
#[cfg(test)]
fn parse_each(p: &[u8]) -> [Digest; 3] {
    let mut d = [Digest::default(); 3];
    packet_checked(p, &mut d[0]);
    packet_proven(p, &mut d[1]);
    packet_unchecked(p, &mut d[2]);
    d
}

/// How much to measure.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Batches in the feed (it stays in L2 at 16 × 256 messages: ~150 KB).
    pub batches: usize,
    /// Messages per batch: one sample.
    pub per_batch: u32,
    pub warmup: usize,
    pub rounds: usize,
    pub samples_per_round: usize,
}

pub const CHECKED: &str = "checked indexing (run-time offsets)";
pub const PROVEN: &str = "split/fixed-size arrays (proven once)";
pub const UNCHECKED: &str = "get_unchecked (after the length checks)";

/// The study's column: C++'s `operator[]` and pointer reads check nothing, so it has no figure.
const STUDY: &str = "not measured (C++ indexing is unchecked)";

/// What a measurement returns: the distributions, each form's digest and per-round medians,
/// in the order of the distributions.
#[derive(Debug)]
pub struct Measured {
    pub dists: Vec<Dist>,
    pub digests: Vec<(String, Digest)>,
    /// Each recorded round's median ns a message, per form.
    pub rounds: Vec<Vec<f64>>,
}

/// A batch parse: the bytes, the batch's packets' ranges in them, the digest to fold into.
type Parse = fn(&[u8], &[Range<usize>], &mut Digest);

/// One form as a variant: every sample is the next batch through `parse`, its time divided by
/// the batch's messages; the round's median is kept (the warm-up rounds' are not).
fn variant<'a>(
    name: &str,
    feed: &'a Feed,
    plan: Plan,
    out: &'a Cell<Digest>,
    medians: &'a RefCell<Vec<f64>>,
    parse: Parse,
) -> Variant<'a> {
    let (mut k, mut calls) = (0usize, 0usize);
    let mut round = Vec::with_capacity(plan.samples_per_round);
    Variant::new(name, move |r: &mut Recorder| {
        let tsc_cal = r.tsc();
        let mut d = out.get();
        round.clear();
        for _ in 0..plan.samples_per_round {
            let packets = &feed.packets[feed.batches[k].clone()];
            k = (k + 1) % feed.batches.len();
            let t0 = tsc();
            parse(&feed.bytes, packets, &mut d);
            let t1 = tsc();
            let ticks = t1.wrapping_sub(t0);
            r.record_ticks(ticks, plan.per_batch);
            round.push(
                tsc_cal.ns(ticks.saturating_sub(tsc_cal.overhead_ticks))
                    / f64::from(plan.per_batch),
            );
        }
        out.set(d);
        calls += 1;
        if calls > plan.warmup
            && let Some(s) = Spread::of(&round)
        {
            medians.borrow_mut().push(s.median);
        }
    })
}

/// Runs the three forms, interleaved, over one feed.
pub fn measure(tsc: Tsc, plan: Plan, feed: &Feed) -> Measured {
    let names = [CHECKED, PROVEN, UNCHECKED];
    let digests: Vec<Cell<Digest>> = (0..3).map(|_| Cell::new(Digest::default())).collect();
    let medians: Vec<RefCell<Vec<f64>>> = (0..3).map(|_| RefCell::new(Vec::new())).collect();
    let forms: [Parse; 3] = [batch_checked, batch_proven, batch_unchecked];
    let mut vs: Vec<Variant<'_>> = (0..3)
        .map(|i| variant(names[i], feed, plan, &digests[i], &medians[i], forms[i]))
        .collect();
    let dists = interleave(tsc, plan.warmup, plan.rounds, &mut vs);
    drop(vs);
    Measured {
        dists,
        digests: names
            .iter()
            .zip(&digests)
            .map(|(n, d)| (n.to_string(), d.get()))
            .collect(),
        rounds: medians.into_iter().map(RefCell::into_inner).collect(),
    }
}

/// Checks that every form computed the reference digest; the error names the one that didn't.
fn check(m: &Measured, want: &Digest) -> anyhow::Result<()> {
    if let Some((n, d)) = m.digests.iter().find(|(_, d)| d != want) {
        anyhow::bail!(
            "bounds-check forms disagree: {n} computed {d:?}, the generated messages give {want:?}"
        );
    }
    Ok(())
}

/// One form's figures: its p50 ns a message, and the spread of its per-round medians.
#[derive(Debug, Clone, Copy)]
pub struct Fig {
    pub p50: f64,
    pub rounds: Option<Spread>,
}

/// The reason after a pair's verdict: the difference a message, what it comes to per field
/// read (`reads` fields a message, when given), and whether the two forms' per-round medians
/// keep apart or overlap (the run-to-run spread).
pub fn pair_reason(slow: Fig, fast: Fig, reads: Option<f64>) -> String {
    let diff = slow.p50 - fast.p50;
    let mut s = format!(
        "{diff:+.2} ns a message ({:+.0} %)",
        100.0 * diff / fast.p50
    );
    if let Some(reads) = reads.filter(|r| *r > 0.0) {
        s.push_str(&format!(
            ", {:+.2} ns for each of the {reads:.1} field reads a message",
            diff / reads
        ));
    }
    match (slow.rounds, fast.rounds) {
        (Some(a), Some(b)) => {
            let how = if a.overlaps(&b) {
                "overlap: the difference is inside the run-to-run spread"
            } else if a.min > b.max {
                "keep apart, every round the same way"
            } else {
                "keep apart, the other way round"
            };
            s.push_str(&format!(
                "; per-round medians {}–{} vs {}–{} ns over {} rounds {how}",
                fmt2(a.min),
                fmt2(a.max),
                fmt2(b.min),
                fmt2(b.max),
                a.n.min(b.n)
            ));
        }
        _ => s.push_str("; no per-round medians to compare"),
    }
    s
}

fn fmt2(v: f64) -> String {
    format!("{v:.2}")
}

/// A row comparing two forms by their p50 (slow ÷ fast; the study has no figure).
pub fn pair_row(
    what: &str,
    batch: u32,
    study: &str,
    slow: Fig,
    fast: Fig,
    reads: Option<f64>,
) -> Comparison {
    Comparison::judged(
        format!("{what}, per message (p50 of {batch}-message batch means)"),
        format!("{} vs {}", ns(slow.p50), ns(fast.p50)),
        slow.p50 / fast.p50,
        study,
        None,
        &pair_reason(slow, fast, reads),
    )
}

pub fn run(ctx: &Ctx) -> anyhow::Result<Outcome> {
    ctx.pin()?;
    let plan = Plan {
        batches: 16,
        per_batch: 256,
        warmup: 2,
        rounds: ctx.pick(40, 400),
        samples_per_round: ctx.pick(25, 100),
    };
    ctx.progress(&format!(
        "3 forms × {} samples of {} messages, interleaved",
        plan.rounds * plan.samples_per_round,
        plan.per_batch
    ));
    let feed = Feed::new(plan.batches, plan.per_batch, 0xB0_0D5);
    let m = measure(ctx.tsc, plan, &feed);
    // Every form parsed (warm-up + rounds) × samples batches, in the same order.
    let want = feed.reference((plan.warmup + plan.rounds) * plan.samples_per_round);
    check(&m, &want)?;
    let mut o = Outcome::new(
        "bounds",
        "Bounds checks in the feed parse: checked indexing vs proven once vs get_unchecked",
        Level::Code,
    );
    o.dists = m.dists;
    let reads = feed.reads_per_message();
    let fig = |i: usize| Fig {
        p50: o.dists[i].p50_ns,
        rounds: Spread::of(&m.rounds[i]),
    };
    let (checked, proven, unchecked) = (fig(0), fig(1), fig(2));
    o.comparisons = vec![
        pair_row(
            "checked indexing vs get_unchecked",
            plan.per_batch,
            STUDY,
            checked,
            unchecked,
            Some(reads),
        ),
        pair_row(
            "checked indexing vs split/fixed-size arrays",
            plan.per_batch,
            STUDY,
            checked,
            proven,
            Some(reads),
        ),
        pair_row(
            "split/fixed-size arrays vs get_unchecked",
            plan.per_batch,
            STUDY,
            proven,
            unchecked,
            None,
        ),
    ];
    let c = feed.counts();
    let n = feed.msgs.len();
    let pct = |i: usize| 100.0 * c[i] as f64 / n as f64;
    o.notes = vec![
        format!(
            "The feed: {n} ITCH messages in {} MoldUDP64 packets ({:.1} messages and {:.0} bytes \
             a packet on average, {} bytes in all, so it stays in L2): Add Order {:.0} %, Order \
             Delete {:.0} %, Order Executed {:.0} %, Order Cancel {:.0} %, Trade {:.0} %, in \
             random order. The parse reads {reads:.2} fields a message on this mix, besides the \
             block's length and the type byte.",
            feed.packets.len(),
            n as f64 / feed.packets.len() as f64,
            feed.bytes.len() as f64 / feed.packets.len() as f64,
            feed.bytes.len(),
            pct(0),
            pct(1),
            pct(2),
            pct(3),
            pct(4),
        ),
        format!(
            "A message is a few ns: each sample is one batch of {} messages (whole packets), \
             and the percentiles are those of a batch's per-message mean. Every form does the \
             same work besides its reads: the input checks, a jump on the message type (random, \
             so often mispredicted) and the fold into the digest; that shared work is in every \
             figure, so the ratios are of whole parses, not of the reads alone.",
            plan.per_batch
        ),
        format!(
            "All three forms computed the same digest as the generated messages themselves \
             (checksum {:#x}: {} packets, {} messages, none bad), checked every run.",
            want.checksum(),
            want.packets,
            want.messages
        ),
        "No instruction or branch counts: this guest exposes no hardware PMU. What the \
         compiler left of the checks is read from the code, not measured: with rustc 1.95, \
         `objdump -d` of the release build shows 17 calls to a panic in `batch_checked` (14 \
         `slice_index_fail`, 3 `panic_bounds_check`) and one each in `batch_proven` and \
         `batch_unchecked` (the batch loop's slicing of a packet out of the buffer, which all \
         three share). A check that never fails is a compare and a branch predicted not \
         taken; what it costs besides is the code it keeps from being merged or vectorised."
            .to_string(),
    ];
    o.trader = "The trader's parse is the proven-once form, with no unsafe (wire has \
        `#![forbid(unsafe_code)]`, crates/wire/src/lib.rs). The MoldUDP64 blocks are walked with \
        `split_first_chunk` and `split_at_checked` (`Messages::next`, crates/wire/src/moldudp64.rs); an \
        ITCH message is length-checked once against its type's fixed length (`itch::parse`, \
        crates/wire/src/itch/mod.rs) and by `TradePacket::new_checked`, then every field is read \
        as `&data[field]` with a constant range (`be::u64` and friends, crates/wire/src/lib.rs; \
        `Repr::parse`, crates/wire/src/itch/trade.rs), the smoltcp pattern: checked indexing in the \
        source, at constant offsets of a slice whose length was just compared, which the \
        compiler can prove as it does here for the fixed-size arrays. The header is read the \
        same way after `Packet::new_checked` (`Sequencer::on_packet` and \
        `Sequencer::deliver`, crates/trader-core/src/sequencer.rs). Read from the trader's release build \
        (rustc 1.95, `objdump -d`): `wire::itch::parse`, `itch::trade::Repr::parse` and \
        `Messages::next` call no panic, so no bounds check is left in them."
        .to_string();
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A Trade (the wire crate's own fixture bytes) and a Delete in one packet.
    fn fixture() -> Vec<u8> {
        let trade: [u8; 44] = [
            b'P', 0x00, 0x0d, 0x00, 0x02, 0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x30, 0x39, b'B', 0x00, 0x00, 0x00, 0x64, b'A', b'A', b'P', b'L',
            b' ', b' ', b' ', b' ', 0x00, 0x12, 0xd6, 0x87, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
            0x07, 0x08,
        ];
        let mut delete = [0u8; 19];
        delete[0] = b'D';
        delete[TIMESTAMP + 5] = 9;
        delete[ORDER_REF + 7] = 7;
        let mut p = b"SESSION001".to_vec();
        p.extend_from_slice(&42u64.to_be_bytes());
        p.extend_from_slice(&2u16.to_be_bytes());
        for m in [&trade[..], &delete[..]] {
            p.extend_from_slice(&(m.len() as u16).to_be_bytes());
            p.extend_from_slice(m);
        }
        p
    }

    #[test]
    fn every_form_decodes_the_fixture_alike() {
        let p = fixture();
        let mut want = Digest::default();
        want.packet(42, 2);
        want.trade(
            34_200_123_456_789,
            12345,
            b'B',
            100,
            u64::from_be_bytes(*b"AAPL    "),
            1_234_567,
            0x0102_0304_0506_0708,
        );
        want.delete(9, 7);
        for d in parse_each(&p) {
            assert_eq!(d, want);
        }
        assert_eq!(want.bought, 100);
        assert_eq!(want.notional, 123_456_700);
    }

    #[test]
    fn every_form_rejects_bad_input_alike() {
        let p = fixture();
        // A short header; a block past the end; a Trade of the wrong length; an unknown type;
        // an empty block; every truncation.
        let mut cases: Vec<Vec<u8>> = vec![p[..19].to_vec(), p[..p.len() - 1].to_vec()];
        let mut wrong = p.clone();
        wrong[21] = 43; // the Trade's block says 43 bytes: a bad length, and framing then off
        cases.push(wrong);
        let mut unknown = p.clone();
        unknown[22] = b'Z';
        cases.push(unknown);
        let mut empty = p[..20].to_vec();
        empty[19] = 1;
        empty.extend_from_slice(&[0, 0]);
        cases.push(empty);
        cases.extend((0..p.len()).map(|n| p[..n].to_vec()));
        for c in &cases {
            let [a, b, u] = parse_each(c);
            assert_eq!(a, b, "{c:?}");
            assert_eq!(a, u, "{c:?}");
        }
        let [d, ..] = parse_each(&cases[3]);
        assert_eq!((d.other, d.messages), (1, 1));
        assert!(parse_each(&cases[0])[0].bad == 1 && parse_each(&cases[4])[0].bad == 1);
    }

    #[test]
    fn the_feed_parses_to_the_generated_messages() {
        let f = Feed::new(4, 64, 9);
        assert_eq!(f.msgs.len(), 256);
        assert!(f.batches.iter().all(|b| {
            f.headers[b.clone()]
                .iter()
                .map(|h| u32::from(h.1))
                .sum::<u32>()
                == 64
        }));
        let mut d = [Digest::default(); 3];
        for b in &f.batches {
            let ps = &f.packets[b.clone()];
            batch_checked(&f.bytes, ps, &mut d[0]);
            batch_proven(&f.bytes, ps, &mut d[1]);
            batch_unchecked(&f.bytes, ps, &mut d[2]);
        }
        let want = f.reference(4);
        assert_eq!(d, [want; 3]);
        assert_eq!((want.messages, want.bad, want.other), (256, 0, 0));
        assert!(f.counts().iter().all(|&c| c > 0), "{:?}", f.counts());
    }

    #[test]
    fn the_trader_takes_the_feed_as_valid() {
        // The trader's own parse (wire's) over the same packets: every message counted, none
        // malformed, every Trade of its stock a tick.
        let f = Feed::new(4, 64, 3);
        let mut t = trader_core::workload::trader(6);
        for r in &f.packets {
            t.on_packet(&f.bytes[r.clone()], || 0, |_| true);
            t.settle();
        }
        let c = &t.counters;
        assert_eq!(c.messages, 256);
        assert_eq!(
            c.malformed_messages + c.malformed_framing + c.malformed_packets,
            0
        );
        let trades = f.msgs.iter().filter(|m| m.kind == TRADE).count() as u64;
        let ours = f
            .msgs
            .iter()
            .filter(|m| m.kind == TRADE && &m.stock == b"SYNTH   ")
            .count() as u64;
        assert_eq!(c.ticks, ours);
        assert_eq!(c.other_stock, trades - ours);
        assert_eq!(c.other_messages, 256 - trades);
    }

    #[test]
    fn a_run_checks_every_form_against_the_messages() {
        let plan = Plan {
            batches: 3,
            per_batch: 50,
            warmup: 1,
            rounds: 3,
            samples_per_round: 2,
        };
        let feed = Feed::new(plan.batches, plan.per_batch, 5);
        let m = measure(Tsc::calibrate(Duration::from_millis(5)), plan, &feed);
        assert_eq!(m.dists.len(), 3);
        assert!(
            m.dists
                .iter()
                .all(|d| d.count == 6 && d.ops_per_sample == 50)
        );
        assert!(m.rounds.iter().all(|r| r.len() == 3), "{:?}", m.rounds);
        check(&m, &feed.reference(8)).unwrap();
        assert!(check(&m, &feed.reference(7)).is_err());
    }

    fn spread(v: &[f64]) -> Option<Spread> {
        Spread::of(v)
    }

    #[test]
    fn the_verdict_follows_the_figures() {
        let fig = |p50, r: &[f64]| Fig {
            p50,
            rounds: spread(r),
        };
        // 3.0 vs 2.0 ns, rounds apart: measurable, and the reason says so.
        let a = pair_row(
            "a vs b",
            256,
            "-",
            fig(3.0, &[2.9, 3.1]),
            fig(2.0, &[1.9, 2.1]),
            Some(4.0),
        );
        assert_eq!(a.standing, Some(crate::verdict::Standing::Measurable));
        assert!(
            a.verdict.contains("+1.00 ns a message (+50 %)"),
            "{}",
            a.verdict
        );
        assert!(
            a.verdict.contains("+0.25 ns for each of the 4.0"),
            "{}",
            a.verdict
        );
        assert!(
            a.verdict.contains("keep apart, every round"),
            "{}",
            a.verdict
        );
        // 2.05 vs 2.0 ns, rounds overlapping: no difference, and the reason says why.
        let b = pair_row(
            "a vs b",
            256,
            "-",
            fig(2.05, &[1.9, 2.2]),
            fig(2.0, &[1.95, 2.1]),
            None,
        );
        assert_eq!(b.standing, Some(crate::verdict::Standing::NoDifference));
        assert!(b.verdict.contains("overlap"), "{}", b.verdict);
        assert!(!b.verdict.contains("field reads"), "{}", b.verdict);
        // Faster "checked": reversed.
        let c = pair_row(
            "a vs b",
            256,
            "-",
            fig(1.5, &[1.4, 1.6]),
            fig(2.0, &[1.9, 2.1]),
            None,
        );
        assert_eq!(c.standing, Some(crate::verdict::Standing::Reversed));
        assert!(c.verdict.contains("the other way round"), "{}", c.verdict);
        let d = pair_row("a vs b", 256, "-", fig(2.0, &[]), fig(1.0, &[]), None);
        assert!(d.verdict.contains("no per-round medians"), "{}", d.verdict);
    }

    #[test]
    fn the_experiment_reports_its_rows() {
        let ctx = crate::code::test_ctx();
        let o = run(&ctx).unwrap();
        assert_eq!(o.dists.len(), 3);
        assert_eq!(o.comparisons.len(), 3);
        assert!(o.comparisons.iter().all(|c| c.our_ratio.is_some()));
        assert!(
            o.notes
                .iter()
                .any(|n| n.contains("computed the same digest"))
        );
        assert!(o.trader.contains("crates/wire/src/moldudp64.rs"));
    }
}
