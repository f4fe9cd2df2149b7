//! The hand-off between two threads: a feed thread on one CPU hands messages to a strategy
//! thread on the other.
//!
//! - One-way latency, SPSC: the producer (on `ctx.other_cpu`) stamps the TSC into each message
//!   as it pushes, one message every 1-2 µs (paced by spinning on the TSC, so the queue is
//!   almost always empty: a latency test, not a throughput test); the consumer (on `ctx.cpu`)
//!   spins on `try_pop` and reads the TSC when a message comes out. The sample is pop − push.
//!   That needs one counter across both CPUs: this CPU's `constant_tsc` and `nonstop_tsc` make
//!   it invariant, and KVM keeps the guest's vCPUs' counters in step; a pop stamped before its
//!   push would show a skew, and is counted.
//! - The CPU floor beside it: two atomics on lines of their own, each thread waiting for the
//!   other's write (the lab's `floor` binary's ping-pong); one-way = round trip / 2.
//! - Throughput: the same SPSC pair unpaced, as fast as the queue goes.
//! - Contention: two threads, one per CPU, each doing push then pop on one shared queue
//!   (`ArrayQueue` vs `Mutex<VecDeque>`), per-pair latency and the pair's throughput.
//!
//! Queues: `rtrb` (a wait-free SPSC ring), `crossbeam-channel` bounded, `crossbeam-queue`'s
//! `ArrayQueue` (a lock-free bounded MPMC queue), `Mutex<VecDeque>` (std's futex mutex) and
//! std's `mpsc::sync_channel`; all of capacity [`CAPACITY`].

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crossbeam_queue::ArrayQueue;
use crossbeam_utils::CachePadded;

use super::{Rng, Start, join};
use crate::Ctx;
use crate::harness::{Dist, Recorder, Variant, interleave, tsc};
use crate::report::{Comparison, Level, Outcome, ns};
use crate::verdict::{Spread, Standing, standing};

/// Slots in every queue.
pub const CAPACITY: usize = 1024;

/// One market-data hand-off: a sequence number and the TSC at push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Msg {
    pub seq: u64,
    pub stamp: u64,
}

/// A queue's sending end.
pub trait Tx: Send {
    /// Pushes `m`, or gives it back when the queue is full.
    fn try_push(&mut self, m: Msg) -> Result<(), Msg>;
}

/// A queue's receiving end.
pub trait Rx: Send {
    /// Pops the oldest message, if there is one now.
    fn try_pop(&mut self) -> Option<Msg>;
}

impl Tx for rtrb::Producer<Msg> {
    #[inline]
    fn try_push(&mut self, m: Msg) -> Result<(), Msg> {
        self.push(m).map_err(|rtrb::PushError::Full(m)| m)
    }
}

impl Rx for rtrb::Consumer<Msg> {
    #[inline]
    fn try_pop(&mut self) -> Option<Msg> {
        self.pop().ok()
    }
}

impl Tx for crossbeam_channel::Sender<Msg> {
    #[inline]
    fn try_push(&mut self, m: Msg) -> Result<(), Msg> {
        self.try_send(m)
            .map_err(crossbeam_channel::TrySendError::into_inner)
    }
}

impl Rx for crossbeam_channel::Receiver<Msg> {
    #[inline]
    fn try_pop(&mut self) -> Option<Msg> {
        self.try_recv().ok()
    }
}

impl Tx for Arc<ArrayQueue<Msg>> {
    #[inline]
    fn try_push(&mut self, m: Msg) -> Result<(), Msg> {
        self.push(m)
    }
}

impl Rx for Arc<ArrayQueue<Msg>> {
    #[inline]
    fn try_pop(&mut self) -> Option<Msg> {
        self.pop()
    }
}

impl Tx for std::sync::mpsc::SyncSender<Msg> {
    #[inline]
    fn try_push(&mut self, m: Msg) -> Result<(), Msg> {
        use std::sync::mpsc::TrySendError;
        self.try_send(m).map_err(|e| match e {
            TrySendError::Full(m) | TrySendError::Disconnected(m) => m,
        })
    }
}

impl Rx for std::sync::mpsc::Receiver<Msg> {
    #[inline]
    fn try_pop(&mut self) -> Option<Msg> {
        self.try_recv().ok()
    }
}

/// A bounded `VecDeque` behind std's `Mutex`.
#[derive(Debug)]
pub struct Locked<T> {
    q: Mutex<VecDeque<T>>,
    cap: usize,
}

impl<T> Locked<T> {
    pub fn new(cap: usize) -> Locked<T> {
        Locked {
            q: Mutex::new(VecDeque::with_capacity(cap)),
            cap,
        }
    }

    #[inline]
    pub fn push(&self, v: T) -> Result<(), T> {
        let mut q = self.q.lock().unwrap_or_else(PoisonError::into_inner);
        if q.len() >= self.cap {
            return Err(v);
        }
        q.push_back(v);
        Ok(())
    }

    #[inline]
    pub fn pop(&self) -> Option<T> {
        self.q
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
    }
}

impl Tx for Arc<Locked<Msg>> {
    #[inline]
    fn try_push(&mut self, m: Msg) -> Result<(), Msg> {
        self.push(m)
    }
}

impl Rx for Arc<Locked<Msg>> {
    #[inline]
    fn try_pop(&mut self) -> Option<Msg> {
        self.pop()
    }
}

/// The SPSC queues compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Rtrb,
    CrossbeamChannel,
    ArrayQueue,
    MutexVecDeque,
    StdSyncChannel,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::Rtrb,
        Kind::CrossbeamChannel,
        Kind::ArrayQueue,
        Kind::MutexVecDeque,
        Kind::StdSyncChannel,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Rtrb => "rtrb SPSC ring",
            Kind::CrossbeamChannel => "crossbeam-channel bounded",
            Kind::ArrayQueue => "crossbeam ArrayQueue",
            Kind::MutexVecDeque => "Mutex<VecDeque>",
            Kind::StdSyncChannel => "std mpsc::sync_channel",
        }
    }
}

/// How the producer sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One message every `min..=max` ticks (from the last push); one latency sample per
    /// message.
    Paced { min: u64, max: u64 },
    /// As fast as the queue takes them; one sample per round: ticks per message.
    Flood,
}

/// What a round delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Delivered {
    /// Messages popped.
    pub count: u64,
    /// Messages whose sequence number was not the next expected one.
    pub out_of_order: u64,
    /// Pops whose TSC read was before the push's (a cross-CPU counter skew).
    pub negative: u64,
    /// Flood mode: ticks from the start to the last pop.
    pub ticks: u64,
}

/// Gives up when nothing arrives for this long (a lost message would otherwise spin forever).
const STALL_NS: f64 = 10e9;

/// One round of `msgs` messages through a fresh queue of `kind`.
pub fn spsc_round(
    ctx: &Ctx,
    kind: Kind,
    mode: Mode,
    msgs: u64,
    rec: &mut Recorder,
) -> anyhow::Result<Delivered> {
    match kind {
        Kind::Rtrb => {
            let (tx, rx) = rtrb::RingBuffer::new(CAPACITY);
            spsc(ctx, tx, rx, mode, msgs, rec)
        }
        Kind::CrossbeamChannel => {
            let (tx, rx) = crossbeam_channel::bounded(CAPACITY);
            spsc(ctx, tx, rx, mode, msgs, rec)
        }
        Kind::ArrayQueue => {
            let q = Arc::new(ArrayQueue::new(CAPACITY));
            spsc(ctx, Arc::clone(&q), q, mode, msgs, rec)
        }
        Kind::MutexVecDeque => {
            let q = Arc::new(Locked::new(CAPACITY));
            spsc(ctx, Arc::clone(&q), q, mode, msgs, rec)
        }
        Kind::StdSyncChannel => {
            let (tx, rx) = std::sync::mpsc::sync_channel(CAPACITY);
            spsc(ctx, tx, rx, mode, msgs, rec)
        }
    }
}

fn spsc<T: Tx, R: Rx>(
    ctx: &Ctx,
    mut tx: T,
    mut rx: R,
    mode: Mode,
    msgs: u64,
    rec: &mut Recorder,
) -> anyhow::Result<Delivered> {
    let start = Start::default();
    let stop = CachePadded::new(AtomicBool::new(false));
    let stall = (STALL_NS * ctx.tsc.ticks_per_ns) as u64;
    std::thread::scope(|s| {
        let h = s.spawn(|| -> anyhow::Result<()> {
            start.worker(ctx)?;
            let mut rng = Rng::new(0x5eed);
            let mut next = 0;
            for seq in 0..msgs {
                if let Mode::Paced { .. } = mode {
                    while tsc() < next {
                        std::hint::spin_loop();
                    }
                }
                let stamp = tsc();
                let mut m = Msg { seq, stamp };
                while let Err(back) = tx.try_push(m) {
                    if stop.load(Ordering::Relaxed) {
                        return Ok(());
                    }
                    m = back;
                    std::hint::spin_loop();
                }
                if let Mode::Paced { min, max } = mode {
                    next = stamp + min + rng.next_u64() % (max - min + 1);
                }
            }
            Ok(())
        });
        if !start.ready() {
            return join(h).map(|()| Delivered::default());
        }
        let mut d = Delivered::default();
        start.go();
        let t0 = tsc();
        let mut last = t0;
        let mut idle = 0u32;
        while d.count < msgs {
            if let Some(m) = rx.try_pop() {
                let t = tsc();
                if let Mode::Paced { .. } = mode {
                    if t >= m.stamp {
                        rec.record_ticks(t - m.stamp, 1);
                    } else {
                        d.negative += 1;
                        rec.record_ns(0.0);
                    }
                }
                d.out_of_order += u64::from(m.seq != d.count);
                d.count += 1;
                last = t;
                idle = 0;
            } else {
                std::hint::spin_loop();
                idle += 1;
                // The clock only now and then: a read per poll would slow the poll itself.
                if idle.is_multiple_of(4096) && tsc().wrapping_sub(last) > stall {
                    stop.store(true, Ordering::Relaxed);
                    join(h)?;
                    anyhow::bail!(
                        "nothing arrived for {STALL_NS:.0e} ns after {} of {msgs} messages",
                        d.count
                    );
                }
            }
        }
        let t1 = tsc();
        if mode == Mode::Flood {
            rec.record_ticks(t1.wrapping_sub(t0), u32::try_from(msgs).unwrap_or(u32::MAX));
            d.ticks = t1.wrapping_sub(t0);
        }
        join(h)?;
        // Nothing beyond what was sent.
        if rx.try_pop().is_some() {
            d.count += 1;
        }
        Ok(d)
    })
}

/// The CPU floor: `iters` round trips through two lines, each thread waiting for the other's
/// write; each sample is one round trip / 2 (one-way).
pub fn pingpong_round(ctx: &Ctx, iters: u64, rec: &mut Recorder) -> anyhow::Result<()> {
    let start = Start::default();
    let ping = CachePadded::new(AtomicU64::new(0));
    let pong = CachePadded::new(AtomicU64::new(0));
    std::thread::scope(|s| {
        let h = s.spawn(|| -> anyhow::Result<()> {
            start.worker(ctx)?;
            for i in 1..=iters {
                while ping.load(Ordering::Acquire) != i {
                    std::hint::spin_loop();
                }
                pong.store(i, Ordering::Release);
            }
            Ok(())
        });
        if !start.ready() {
            return join(h);
        }
        start.go();
        for i in 1..=iters {
            let t0 = tsc();
            ping.store(i, Ordering::Release);
            while pong.load(Ordering::Acquire) != i {
                std::hint::spin_loop();
            }
            let t1 = tsc();
            rec.record_ticks(t1.wrapping_sub(t0), 2);
        }
        join(h)
    })
}

/// A queue both threads push to and pop from.
pub trait Shared: Sync {
    fn push(&self, v: u64) -> bool;
    fn pop(&self) -> Option<u64>;
}

impl Shared for ArrayQueue<u64> {
    #[inline]
    fn push(&self, v: u64) -> bool {
        ArrayQueue::push(self, v).is_ok()
    }
    #[inline]
    fn pop(&self) -> Option<u64> {
        ArrayQueue::pop(self)
    }
}

impl Shared for Locked<u64> {
    #[inline]
    fn push(&self, v: u64) -> bool {
        Locked::push(self, v).is_ok()
    }
    #[inline]
    fn pop(&self) -> Option<u64> {
        Locked::pop(self)
    }
}

/// Sums and counts of one contended round: everything pushed (the prefill included) and
/// everything popped (the final drain included).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ledger {
    pub pushed: u64,
    pub pushed_sum: u64,
    pub popped: u64,
    pub popped_sum: u64,
    /// Ticks from the start until both threads finished their pairs.
    pub ticks: u64,
}

/// Items in the shared queue before a contended round: a pop after one's own push then always
/// finds one.
const PREFILL: u64 = 64;

/// `pairs` push-then-pop pairs on `q`; one sample per pair. Returns the ledger's part and the
/// TSC at the end.
fn pairs_on<Q: Shared>(q: &Q, base: u64, pairs: u64, rec: &mut Recorder) -> (Ledger, u64) {
    let mut l = Ledger::default();
    for i in 0..pairs {
        let v = base + i;
        let t0 = tsc();
        while !q.push(v) {
            std::hint::spin_loop();
        }
        let got = loop {
            if let Some(x) = q.pop() {
                break x;
            }
            std::hint::spin_loop();
        };
        let t1 = tsc();
        rec.record_ticks(t1.wrapping_sub(t0), 1);
        l.pushed += 1;
        l.pushed_sum += v;
        l.popped += 1;
        l.popped_sum += got;
    }
    (l, tsc())
}

/// One contended round: both threads start together; `mine` gets this thread's pairs,
/// `theirs` the other's, `wall` one sample: the round's ticks over both threads' pairs.
pub fn mpmc_round<Q: Shared>(
    ctx: &Ctx,
    q: &Q,
    pairs: u64,
    mine: &mut Recorder,
    theirs: &mut Recorder,
    wall: &mut Recorder,
) -> anyhow::Result<Ledger> {
    let mut total = Ledger::default();
    for v in 1..=PREFILL {
        if !q.push(v) {
            anyhow::bail!("the queue took only {} of {PREFILL} items", v - 1);
        }
        total.pushed += 1;
        total.pushed_sum += v;
    }
    let start = Start::default();
    let (a, b, t0, end) = std::thread::scope(|s| {
        let h = s.spawn(|| -> anyhow::Result<(Ledger, u64)> {
            start.worker(ctx)?;
            Ok(pairs_on(q, 1 << 40, pairs, theirs))
        });
        if !start.ready() {
            return join(h).map(|_| (Ledger::default(), Ledger::default(), 0, 0));
        }
        start.go();
        let t0 = tsc();
        let (a, end_a) = pairs_on(q, 1 << 20, pairs, mine);
        let (b, end_b) = join(h)?;
        Ok((a, b, t0, end_a.max(end_b)))
    })?;
    wall.record_ticks(
        end.wrapping_sub(t0),
        u32::try_from(2 * pairs).unwrap_or(u32::MAX),
    );
    total.ticks = end.wrapping_sub(t0);
    for l in [a, b] {
        total.pushed += l.pushed;
        total.pushed_sum += l.pushed_sum;
        total.popped += l.popped;
        total.popped_sum += l.popped_sum;
    }
    while let Some(x) = q.pop() {
        total.popped += 1;
        total.popped_sum += x;
    }
    Ok(total)
}

/// Sizes of one run.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    /// Paced messages per round per queue.
    pub latency_msgs: u64,
    pub latency_rounds: usize,
    /// Ping-pong round trips per round.
    pub pingpong_iters: u64,
    /// Unpaced messages per round per queue.
    pub flood_msgs: u64,
    pub flood_rounds: usize,
    /// Push+pop pairs per thread per contended round.
    pub mpmc_pairs: u64,
    pub mpmc_rounds: usize,
    pub warmup: usize,
}

fn params(ctx: &Ctx) -> Params {
    ctx.pick(
        Params {
            latency_msgs: 3_000,
            latency_rounds: 3,
            pingpong_iters: 5_000,
            flood_msgs: 20_000,
            flood_rounds: 2,
            mpmc_pairs: 10_000,
            mpmc_rounds: 2,
            warmup: 1,
        },
        Params {
            latency_msgs: 25_000,
            latency_rounds: 12,
            pingpong_iters: 25_000,
            flood_msgs: 50_000,
            flood_rounds: 6,
            mpmc_pairs: 100_000,
            mpmc_rounds: 8,
            warmup: 1,
        },
    )
}

const PINGPONG: &str = "ping-pong one-way (CPU floor)";

fn flood_name(k: Kind) -> String {
    format!("{}, unpaced: ns per message", k.name())
}

const MPMC: [&str; 2] = ["ArrayQueue", "Mutex<VecDeque>"];

fn mpmc_names(q: &str, ctx: &Ctx) -> [String; 3] {
    [
        format!("{q}, 2 threads push+pop: pair on CPU {}", ctx.cpu),
        format!("{q}, 2 threads push+pop: pair on CPU {}", ctx.other_cpu),
        format!("{q}, 2 threads push+pop: wall ns per pair (throughput)"),
    ]
}

pub fn run(ctx: &Ctx) -> anyhow::Result<Outcome> {
    run_with(ctx, params(ctx))
}

pub fn run_with(ctx: &Ctx, p: Params) -> anyhow::Result<Outcome> {
    ctx.pin()?;
    let errors = RefCell::new(Vec::<String>::new());
    let fail = |what: &str, e: String| errors.borrow_mut().push(format!("{what}: {e}"));
    let gap = |ns: f64| (ns * ctx.tsc.ticks_per_ns) as u64;
    let paced = Mode::Paced {
        min: gap(1_000.0),
        max: gap(2_000.0),
    };
    let negative = RefCell::new(0u64);

    // Latency: the five queues and the floor, interleaved.
    let mut variants = Vec::new();
    for k in Kind::ALL {
        let (fail, negative) = (&fail, &negative);
        variants.push(Variant::new(k.name(), move |rec| {
            match spsc_round(ctx, k, paced, p.latency_msgs, rec) {
                Ok(d) if d.count == p.latency_msgs && d.out_of_order == 0 => {
                    *negative.borrow_mut() += d.negative;
                }
                Ok(d) => fail(
                    k.name(),
                    format!("{d:?} of {} sent in order", p.latency_msgs),
                ),
                Err(e) => fail(k.name(), format!("{e:#}")),
            }
        }));
    }
    {
        let fail = &fail;
        variants.push(Variant::new(PINGPONG, move |rec| {
            if let Err(e) = pingpong_round(ctx, p.pingpong_iters, rec) {
                fail(PINGPONG, format!("{e:#}"));
            }
        }));
    }
    let mut dists = interleave(ctx.tsc, p.warmup, p.latency_rounds, &mut variants);
    drop(variants);

    // Throughput, unpaced; each recorded round's ns per message kept for the median and range.
    let flood_runs: [RefCell<Vec<f64>>; 5] = Default::default();
    let mut variants = Vec::new();
    for (j, k) in Kind::ALL.into_iter().enumerate() {
        let (fail, runs) = (&fail, &flood_runs[j]);
        let mut calls = 0;
        variants.push(Variant::new(flood_name(k), move |rec| {
            calls += 1;
            match spsc_round(ctx, k, Mode::Flood, p.flood_msgs, rec) {
                Ok(d) if d.count == p.flood_msgs && d.out_of_order == 0 => {
                    if calls > p.warmup {
                        runs.borrow_mut()
                            .push(ctx.tsc.ns(d.ticks) / p.flood_msgs as f64);
                    }
                }
                Ok(d) => fail(k.name(), format!("{d:?} of {} sent in order", p.flood_msgs)),
                Err(e) => fail(k.name(), format!("{e:#}")),
            }
        }));
    }
    dists.extend(interleave(ctx.tsc, p.warmup, p.flood_rounds, &mut variants));
    drop(variants);

    // Contention.
    let aq = ArrayQueue::<u64>::new(CAPACITY);
    let mq = Locked::<u64>::new(CAPACITY);
    // The other thread's pairs and the round's wall time, per queue; interleave's warm-up
    // rounds go to a scratch pair, as its own recorder's do.
    let extra: [[RefCell<Recorder>; 2]; 2] = std::array::from_fn(|_| {
        [
            RefCell::new(Recorder::new(ctx.tsc)),
            RefCell::new(Recorder::new(ctx.tsc)),
        ]
    });
    let wall_runs: [RefCell<Vec<f64>>; 2] = Default::default();
    let scratch = [
        RefCell::new(Recorder::new(ctx.tsc)),
        RefCell::new(Recorder::new(ctx.tsc)),
    ];
    let mut variants = Vec::new();
    for (i, q) in MPMC.iter().enumerate() {
        let [mine, _, _] = mpmc_names(q, ctx);
        let (fail, extra, scratch, aq, mq) = (&fail, &extra, &scratch, &aq, &mq);
        let runs = &wall_runs[i];
        let mut calls = 0;
        variants.push(Variant::new(mine, move |rec| {
            let warm = calls < p.warmup;
            let to = if warm { scratch } else { &extra[i] };
            calls += 1;
            let (mut theirs, mut wall) = (to[0].borrow_mut(), to[1].borrow_mut());
            let r = if i == 0 {
                mpmc_round(ctx, aq, p.mpmc_pairs, rec, &mut theirs, &mut wall)
            } else {
                mpmc_round(ctx, mq, p.mpmc_pairs, rec, &mut theirs, &mut wall)
            };
            match r {
                Ok(l) if l.pushed == l.popped && l.pushed_sum == l.popped_sum => {
                    if !warm {
                        runs.borrow_mut()
                            .push(ctx.tsc.ns(l.ticks) / (2 * p.mpmc_pairs) as f64);
                    }
                }
                Ok(l) => fail(q, format!("{l:?}: popped differs from pushed")),
                Err(e) => fail(q, format!("{e:#}")),
            }
        }));
    }
    let mpmc = interleave(ctx.tsc, p.warmup, p.mpmc_rounds, &mut variants);
    drop(variants);
    for (i, (d, q)) in mpmc.into_iter().zip(MPMC).enumerate() {
        let [_, theirs, wall] = mpmc_names(q, ctx);
        dists.push(d);
        dists.push(extra[i][0].borrow().finish(&theirs));
        dists.push(extra[i][1].borrow().finish(&wall));
    }
    if let Some(e) = errors.into_inner().first() {
        anyhow::bail!("{e}");
    }
    let mut out = Outcome::new(
        "queues",
        "Hand-off between two threads: SPSC ring, channels, lock-free and locked queues",
        Level::Code,
    );
    out.dists = dists;
    let flood = flood_runs.map(|r| rates(&r.borrow()));
    let walls = wall_runs.map(|r| rates(&r.borrow()));
    summarise(&mut out, ctx, &p, negative.into_inner(), flood, walls);
    Ok(out)
}

/// Over this, a p99.9 is a thread that wasn't running while messages waited (the host's or the
/// scheduler's), not a queue's own slow path (microseconds at most).
pub const HOST_TAIL_NS: f64 = 100_000.0;

/// A queue's tail against the ring's, by the one rule: the ratio (queue ÷ ring, so above 1 is
/// the study's "the ring cuts the tail"), or NaN when there is nothing to judge: a p99.9
/// without its 10,000 samples ([`Dist::at`]), or one over [`HOST_TAIL_NS`] (one stall decides
/// it). The reason says which, from the figures.
pub fn tail_judgement(
    name: &str,
    p999: Option<f64>,
    ring_p999: Option<f64>,
    samples: u64,
) -> (f64, String) {
    let (Some(q), Some(r)) = (p999, ring_p999) else {
        return (
            f64::NAN,
            format!(
                "a p99.9 needs {} samples; {samples} taken",
                crate::verdict::samples_for(0.999)
            ),
        );
    };
    if q.max(r) > HOST_TAIL_NS {
        let which = if q > HOST_TAIL_NS && r > HOST_TAIL_NS {
            format!("both p99.9s ({} and {}) are", ns(q), ns(r))
        } else if q > HOST_TAIL_NS {
            format!("{name}'s p99.9 ({}) is", ns(q))
        } else {
            format!("the ring's p99.9 ({}) is", ns(r))
        };
        return (
            f64::NAN,
            format!(
                "{which} over {}: a thread preempted while messages waited (the host's noise in \
                 this run), not a queue's own tail",
                ns(HOST_TAIL_NS)
            ),
        );
    }
    let ratio = q / r;
    let reason = match standing(ratio, None) {
        Standing::Measurable => format!("the ring's p99.9 is {} lower", ns(q - r)),
        Standing::Reversed => format!("{name}'s p99.9 is {} lower", ns(r - q)),
        _ => format!("p99.9 {} vs the ring's {}", ns(q), ns(r)),
    };
    (ratio, format!("{reason}, over {samples} samples each"))
}

/// The ring-vs-floor row's reason: how many one-way line transfers a hand-off costs at the
/// p50, and how far its p90 lies above its p50 (a wide gap: messages waited for a preempted
/// thread).
pub fn handoff_reason(ring_p50: f64, floor_p50: f64, ring_p90: Option<f64>) -> String {
    let t = format!(
        "a hand-off through the ring costs {:.1} one-way line transfers at the p50 (the slot's \
         line and the write index's both cross, and the poll finds the message some time after \
         it lands)",
        ring_p50 / floor_p50
    );
    match ring_p90 {
        Some(p90) => format!("{t}; its p90 is {:.1}× its p50", p90 / ring_p50),
        None => t,
    }
}

/// The throughput row's reason: both rates (medians over rounds), which moves more, and whether
/// the two ranges over rounds overlap (`overlap`).
pub fn throughput_reason(ring_rate: f64, mutex_rate: f64, overlap: bool) -> String {
    let r = ring_rate / mutex_rate;
    let ranges = if overlap {
        "; the rounds' ranges overlap"
    } else {
        "; the rounds' ranges don't overlap"
    };
    let words = match standing(r, None) {
        Standing::Measurable => format!(
            "the ring moves {r:.1}× the messages per second ({ring_rate:.1} vs {mutex_rate:.1} \
             M/s)"
        ),
        Standing::Reversed => format!(
            "the mutex queue moves {:.1}× the messages per second here ({mutex_rate:.1} vs \
             {ring_rate:.1} M/s)",
            1.0 / r
        ),
        _ => format!("{ring_rate:.1} vs {mutex_rate:.1} M msgs/s"),
    };
    words + ranges
}

/// The contention row's reason: which queue had the lower p50, p99.9 and more pairs a second
/// (each side's `(p50 ns, p99.9 ns, M pairs/s)`), and what two pinned contenders say about the
/// study's warning.
pub fn contention_reason(lf: (f64, f64, f64), mx: (f64, f64, f64), samples: u64) -> String {
    let (lf_p50, lf_p999, lf_rate) = lf;
    let (mx_p50, mx_p999, mx_rate) = mx;
    if lf_p999.is_nan() || mx_p999.is_nan() {
        return format!(
            "a p99.9 needs {} samples; {samples} taken",
            crate::verdict::samples_for(0.999)
        );
    }
    // Within the noise band, neither is lower.
    let better = |a: f64, b: f64| match standing(b / a, None) {
        Standing::NoDifference => "neither (within noise)",
        _ if a < b => "ArrayQueue",
        _ => "the mutex",
    };
    let v = format!(
        "lower p50: {}; lower p99.9: {}; more pairs/s: {}",
        better(lf_p50, mx_p50),
        better(lf_p999, mx_p999),
        better(mx_rate, lf_rate)
    );
    match standing(mx_p999 / lf_p999, None) {
        Standing::Reversed => format!(
            "{v}: the mutex has the lower tail even with two contenders, the way the study \
             warns lock-free can lose"
        ),
        _ => format!(
            "{v}; two pinned contenders are not the study's heavy contention, which a 2-vCPU \
             guest can't pin"
        ),
    }
}

/// `flood`: each queue's unpaced rounds, M messages/s ([`Kind::ALL`]'s order); `walls`: the
/// contended queues' rounds, M pairs/s ([`MPMC`]'s order).
fn summarise(
    out: &mut Outcome,
    ctx: &Ctx,
    p: &Params,
    negative: u64,
    flood: [Option<Spread>; 5],
    walls: [Option<Spread>; 2],
) {
    let floor = out.dist(PINGPONG).clone();
    let mut rows = latency_rows(out);
    rows.push(throughput_row(&flood));
    rows.push(contention_row(out, ctx, walls));
    out.comparisons = rows;
    out.notes = notes(ctx, p, negative, &floor, &flood);
    let ring = out.dist(Kind::Rtrb.name()).at(0.5);
    out.trader = trader_note(ring.zip(floor.at(0.5)));
}

/// Where the trader hands data between threads or CPUs, citing the code; `ring_floor`: this
/// run's p50 one-way through the rtrb ring and through one line (the ping-pong floor).
pub fn trader_note(ring_floor: Option<(f64, f64)>) -> String {
    let here = match ring_floor {
        Some((ring, floor)) => format!(
            "here a hand-off through a ring took {} one-way at the p50 against one line's {}",
            ns(ring),
            ns(floor)
        ),
        None => "this run has too few samples to price them".to_string(),
    };
    format!(
        "No queue between feed and strategy: the trader is one thread that takes packets from \
         its I/O and sends the orders itself (crates/trader/src/trading/mod.rs `run_with_clock`: one \
         loop calling `io.recv` and, per packet, `Trader::on_packet` and the sink's send and \
         flush); the feed arrives over the network (AF_XDP's RX ring is itself a \
         single-producer single-consumer ring between the kernel and this thread: \
         crates/afxdp/src/xsk.rs). The trigger path does hand data from one CPU to another: the XDP \
         program, on the CPU that polls the NIC's RX queue, fires the armed order and tells the \
         trader. What fired travels in the second line of the `ARM` map's value, `ArmSlot` \
         (ebpf/xdp-common/src/lib.rs; the program writes `fired_price`, then `fired_generation`; the \
         trader reads the generation with acquire ordering, then the price: `ArmMap::last_fired` \
         in crates/afxdp/src/xdp/arm_mem.rs): a one-line hand-off like this experiment's ping-pong floor, not a \
         queue. The `FIRED` ring buffer (`FIRED: RingBuf`, 64 KiB, ebpf/xdp-ebpf/src/maps.rs; read \
         by `FiredRing::next_fired`, crates/afxdp/src/xdp.rs) is a single-producer single-consumer \
         ring from the program to the trader, written only when the trader blocks \
         (`FIRED_WAKEUP`), for its wake-up; a spinning trader does without it, since its \
         producer and consumer lines crossing between the two CPUs cost the fired run about \
         300 ns (`MAP_FIRED`'s docs in ebpf/xdp-common/src/lib.rs, measured with --xdp-stages): \
         {here}. No statistics atomics on the path: the trader's counters are plain fields \
         (crates/trader-core/src/lib.rs); the boundary server's atomics (studies/boundary/src/server.rs \
         `Counters`, `Connections`) change per connection accepted or closed, not per request, \
         and each connection's thread serves its requests alone (`serve_connection`)."
    )
}

/// The paced latency rows: the ring against the CPU floor, then every other queue against the
/// ring, p50 and tails.
fn latency_rows(out: &Outcome) -> Vec<Comparison> {
    let ring = out.dist(Kind::Rtrb.name()).clone();
    let floor = out.dist(PINGPONG).clone();
    let p = |d: &Dist, q: f64| d.at(q).unwrap_or(f64::NAN);
    let show = |d: &Dist, q: f64| d.at(q).map_or_else(|| "–".to_string(), ns);
    let mut rows = Vec::new();
    let r = p(&ring, 0.5) / p(&floor, 0.5);
    rows.push(Comparison::judged(
        "rtrb one-way p50 vs the CPU floor (ping-pong one-way)",
        format!("{} vs {}", show(&ring, 0.5), show(&floor, 0.5)),
        r,
        "not measured",
        None,
        &if r.is_nan() {
            format!(
                "a p50 needs 20 samples; {} taken",
                ring.count.min(floor.count)
            )
        } else {
            handoff_reason(p(&ring, 0.5), p(&floor, 0.5), ring.at(0.9))
        },
    ));
    for k in &Kind::ALL[1..] {
        let d = out.dist(k.name());
        let (ratio, reason) = tail_judgement(
            k.name(),
            d.at(0.999),
            ring.at(0.999),
            d.count.min(ring.count),
        );
        rows.push(Comparison::judged(
            format!(
                "{} vs rtrb SPSC ring, one-way p50 · p99.9 · p99.99 (ratio: p99.9)",
                k.name()
            ),
            format!(
                "{} · {} · {} vs {} · {} · {}",
                show(d, 0.5),
                show(d, 0.999),
                show(d, 0.9999),
                show(&ring, 0.5),
                show(&ring, 0.999),
                show(&ring, 0.9999)
            ),
            ratio,
            "an SPSC ring buffer cuts the tail sharply (no figure)",
            None,
            &reason,
        ));
    }
    rows
}

/// Rates in M per second from each round's ns per item (1e3 ÷ ns): their median and range.
fn rates(ns_per: &[f64]) -> Option<Spread> {
    Spread::of(&ns_per.iter().map(|ns| 1e3 / ns).collect::<Vec<_>>())
}

/// `16.1 (15.0–16.8, 6 rounds)`: a rate's median over rounds and its range.
fn ranged(s: &Option<Spread>) -> String {
    match s {
        Some(s) => format!(
            "{:.1} ({:.1}–{:.1}, {} rounds)",
            s.median, s.min, s.max, s.n
        ),
        None => "–".to_string(),
    }
}

/// A spread's median, NaN when there were no rounds.
fn median(s: &Option<Spread>) -> f64 {
    s.map_or(f64::NAN, |s| s.median)
}

/// Queue `k`'s unpaced rounds in M messages/s, from `flood` ([`Kind::ALL`]'s order).
fn flood_rate(flood: &[Option<Spread>; 5], k: Kind) -> Option<Spread> {
    flood[Kind::ALL.iter().position(|x| *x == k).unwrap_or(0)]
}

/// Unpaced throughput, the ring against the mutex queue (medians over rounds).
fn throughput_row(flood: &[Option<Spread>; 5]) -> Comparison {
    let (ring, mutex) = (
        flood_rate(flood, Kind::Rtrb),
        flood_rate(flood, Kind::MutexVecDeque),
    );
    let overlap = matches!((&ring, &mutex), (Some(a), Some(b)) if a.overlaps(b));
    Comparison::judged(
        "unpaced throughput, rtrb vs Mutex<VecDeque>, median round",
        format!("{} vs {} M msgs/s", ranged(&ring), ranged(&mutex)),
        median(&ring) / median(&mutex),
        "not measured",
        None,
        &throughput_reason(median(&ring), median(&mutex), overlap),
    )
}

/// Two contenders on one queue, ArrayQueue against the mutex queue: the pair's latency on the
/// measured CPU, and the rounds' throughput (`walls`, M pairs/s).
fn contention_row(out: &Outcome, ctx: &Ctx, walls: [Option<Spread>; 2]) -> Comparison {
    let [lf, _, _] = mpmc_names(MPMC[0], ctx);
    let [mx, _, _] = mpmc_names(MPMC[1], ctx);
    let (lf, mx) = (out.dist(&lf).clone(), out.dist(&mx).clone());
    let [lf_rate, mx_rate] = walls;
    let p = |d: &Dist, q: f64| d.at(q).unwrap_or(f64::NAN);
    let show = |d: &Dist, q: f64| d.at(q).map_or_else(|| "–".to_string(), ns);
    Comparison::judged(
        "contended, 2 threads push+pop on one queue: ArrayQueue vs Mutex<VecDeque>, pair p50 · \
         p99.9 · max; throughput, median round (ratio: mutex p99.9 ÷ ArrayQueue p99.9)",
        format!(
            "{} · {} · {} vs {} · {} · {}; {} vs {} M pairs/s",
            show(&lf, 0.5),
            show(&lf, 0.999),
            ns(lf.max_ns),
            show(&mx, 0.5),
            show(&mx, 0.999),
            ns(mx.max_ns),
            ranged(&lf_rate),
            ranged(&mx_rate)
        ),
        p(&mx, 0.999) / p(&lf, 0.999),
        "under heavy contention CAS retries and line ping-pong can make lock-free worse than a \
         mutex",
        None,
        &contention_reason(
            (p(&lf, 0.5), p(&lf, 0.999), median(&lf_rate)),
            (p(&mx, 0.5), p(&mx, 0.999), median(&mx_rate)),
            lf.count.min(mx.count),
        ),
    )
}

/// The notes on method: the paced rounds, the TSC across CPUs (`negative`: pops stamped before
/// their push), the counter's resolution, the CPU `floor`, the unpaced rates (`flood`, as in
/// [`summarise`]), the contended rounds, and the mutex's futex.
fn notes(
    ctx: &Ctx,
    p: &Params,
    negative: u64,
    floor: &Dist,
    flood: &[Option<Spread>; 5],
) -> Vec<String> {
    let flood: Vec<String> = Kind::ALL
        .iter()
        .map(|k| format!("{} {} M/s", k.name(), ranged(&flood_rate(flood, *k))))
        .collect();
    let at = |q: f64| floor.at(q).map_or_else(|| "–".to_string(), ns);
    vec![
        format!(
            "Latency: {} paced messages per round, one every 1-2 µs (random gap), {} rounds per \
             queue, interleaved with the ping-pong floor ({} round trips per round). Each \
             sample is pop − push on the TSC, the timer's own cost ({}) subtracted as for every \
             sample. The consumer spins on try_pop with a pause hint, as the `floor` binary \
             does.",
            p.latency_msgs,
            p.latency_rounds,
            p.pingpong_iters,
            ns(ctx.tsc.overhead_ns())
        ),
        format!(
            "The TSC across the two CPUs: the CPU reports constant_tsc and nonstop_tsc, and KVM \
             gives the vCPUs one counter; pops stamped before their push (a skew would show \
             as such): {negative}."
        ),
        {
            let step = ctx.tsc.step_ns();
            format!(
                "Resolution: the counter's smallest step seen in this run is {} ({:.1} ticks), \
                 so single samples of a few tens of ns (a contended pair whose lines were at \
                 home) read in multiples of about that after the timer's cost is taken off; \
                 tails of microseconds are not affected.",
                ns(step),
                step * ctx.tsc.ticks_per_ns
            )
        },
        format!(
            "The CPU floor: {} one-way at p50 ({} round trip), p99.9 {}, max {}, over {} \
             round trips; the lab's `floor` binary (`crates/floor/src/lib.rs`) measures the \
             same thing, a round trip through one 128-byte line between two pinned threads, and \
             reports the round trip. A queue hand-off can't be faster than one such transfer \
             and usually costs two or more (the slot's line and the index's line). The host \
             places the two vCPUs anew from run to run, so only figures of one run compare.",
            at(0.5),
            floor
                .at(0.5)
                .map_or_else(|| "–".to_string(), |v| ns(2.0 * v)),
            at(0.999),
            ns(floor.max_ns),
            floor.count
        ),
        format!(
            "Unpaced throughput, the median round of {} messages with the range over rounds: \
             {}.",
            p.flood_msgs,
            flood.join(", ")
        ),
        format!(
            "Contention: two pinned threads, one per CPU, each pushing then popping on one \
             shared queue of {CAPACITY} (prefilled with {PREFILL}), {} pairs each per round; \
             the sum and count of everything popped (and drained) equal everything pushed, \
             checked every round. Each sample is one push+pop pair, timed by its own thread. \
             With only two vCPUs the study's heavy contention (many threads) can't be \
             reproduced pinned; more threads than CPUs would measure the scheduler (a \
             preempted spinner or lock holder), not the queue.",
            p.mpmc_pairs
        ),
        "std's Mutex spins briefly, then sleeps on a futex: a tail sample of Mutex<VecDeque> can \
         include a futex wait and wake (a system call each), which a lock-free queue never \
         makes. No hardware PMU here: CAS retries and line transfers can't be counted, only \
         timed."
            .to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec() -> Recorder {
        Recorder::new(crate::code::test_ctx().tsc)
    }

    #[test]
    fn the_queue_reasons_follow_the_data() {
        // One ~1 ms stall in one variant must not read as a finding.
        let (r, v) = tail_judgement(
            "Mutex<VecDeque>",
            Some(1_000_000.0),
            Some(13_000.0),
            300_000,
        );
        assert!(r.is_nan());
        assert!(
            v.starts_with("Mutex<VecDeque>'s p99.9 (1.000 ms) is over"),
            "{v}"
        );
        let (_, v) = tail_judgement("x", Some(5_000.0), Some(2_000_000.0), 300_000);
        assert!(v.starts_with("the ring's p99.9"), "{v}");
        let (_, v) = tail_judgement("x", Some(300_000.0), Some(200_000.0), 300_000);
        assert!(v.starts_with("both p99.9s"), "{v}");
        // Too few samples: undecided, with the count.
        let (r, v) = tail_judgement("x", None, Some(10_000.0), 9_000);
        assert!(r.is_nan());
        assert_eq!(v, "a p99.9 needs 10000 samples; 9000 taken");
        let (r, v) = tail_judgement("x", Some(30_000.0), Some(10_000.0), 300_000);
        assert_eq!(r, 3.0);
        assert_eq!(
            v,
            "the ring's p99.9 is 20.0 µs lower, over 300000 samples each"
        );
        let (r, v) = tail_judgement("x", Some(5_000.0), Some(10_000.0), 300_000);
        assert_eq!(standing(r, None), Standing::Reversed);
        assert!(v.starts_with("x's p99.9 is 5.00 µs lower"), "{v}");
        let (_, v) = tail_judgement("x", Some(10_500.0), Some(10_000.0), 300_000);
        assert!(v.starts_with("p99.9 10.5 µs vs the ring's 10.0 µs"), "{v}");

        assert!(throughput_reason(30.0, 10.0, false).contains("3.0× the messages"));
        assert_eq!(
            throughput_reason(10.5, 10.0, true),
            "10.5 vs 10.0 M msgs/s; the rounds' ranges overlap"
        );
        assert!(throughput_reason(5.0, 10.0, false).contains("mutex queue moves 2.0×"));
        let r = rates(&[100.0, 50.0, 200.0]).unwrap();
        assert_eq!((r.median, r.min, r.max, r.n), (10.0, 5.0, 20.0, 3));
        assert_eq!(ranged(&Some(r)), "10.0 (5.0–20.0, 3 rounds)");

        let h = handoff_reason(641.5, 135.4, Some(1_283.0));
        assert!(h.contains("4.7 one-way line transfers") && h.ends_with("its p90 is 2.0× its p50"));

        let c = contention_reason((80.0, 420.0, 10.0), (100.0, 1850.0, 6.7), 20_000);
        assert!(
            c.starts_with(
                "lower p50: ArrayQueue; lower p99.9: ArrayQueue; more pairs/s: ArrayQueue;"
            ),
            "{c}"
        );
        let c = contention_reason((80.0, 2000.0, 100.0), (100.0, 500.0, 90.0), 20_000);
        assert!(
            c.contains("lower p99.9: the mutex") && c.contains("the study warns"),
            "{c}"
        );
        let c = contention_reason((70.1, 260.5, 13.0), (70.1, 240.4, 13.4), 20_000);
        assert!(
            c.starts_with(
                "lower p50: neither (within noise); lower p99.9: neither (within noise); more \
                 pairs/s: neither (within noise)"
            ),
            "{c}"
        );
        let c = contention_reason((80.0, f64::NAN, 10.0), (100.0, 500.0, 11.1), 2_000);
        assert_eq!(c, "a p99.9 needs 10000 samples; 2000 taken");
    }

    #[test]
    fn the_trader_note_prices_the_hand_offs_from_the_run() {
        let n = trader_note(Some((631.3, 235.4)));
        assert!(
            n.contains("took 631.3 ns one-way at the p50 against one line's 235.4 ns"),
            "{n}"
        );
        assert!(n.contains("ArmSlot") && n.contains("FIRED"));
        assert!(trader_note(None).contains("too few samples"));
    }

    #[test]
    fn every_queue_delivers_every_message_once_in_order() {
        let ctx = crate::code::test_ctx();
        for k in Kind::ALL {
            for mode in [Mode::Paced { min: 0, max: 100 }, Mode::Flood] {
                let mut r = rec();
                let d = spsc_round(&ctx, k, mode, 3_000, &mut r).unwrap();
                assert_eq!(d.count, 3_000, "{k:?} {mode:?}");
                assert_eq!(d.out_of_order, 0, "{k:?} {mode:?}");
                let samples = if mode == Mode::Flood { 1 } else { 3_000 };
                assert_eq!(r.len(), samples, "{k:?} {mode:?}");
            }
        }
    }

    #[test]
    fn the_floor_takes_one_sample_per_round_trip() {
        let mut r = rec();
        pingpong_round(&crate::code::test_ctx(), 500, &mut r).unwrap();
        let d = r.finish("x");
        assert_eq!((d.count, d.ops_per_sample), (500, 2));
    }

    #[test]
    fn contended_queues_pop_what_was_pushed() {
        let ctx = crate::code::test_ctx();
        let (mut a, mut b, mut w) = (rec(), rec(), rec());
        let l = mpmc_round(
            &ctx,
            &ArrayQueue::new(CAPACITY),
            2_000,
            &mut a,
            &mut b,
            &mut w,
        )
        .unwrap();
        assert_eq!(
            (l.pushed, l.popped),
            (2 * 2_000 + PREFILL, 2 * 2_000 + PREFILL)
        );
        assert_eq!(l.pushed_sum, l.popped_sum);
        let l = mpmc_round(&ctx, &Locked::new(CAPACITY), 2_000, &mut a, &mut b, &mut w).unwrap();
        assert_eq!(l.pushed, l.popped);
        assert_eq!(l.pushed_sum, l.popped_sum);
        assert_eq!((a.len(), b.len(), w.len()), (4_000, 4_000, 2));
    }

    #[test]
    fn a_full_locked_queue_refuses() {
        let q = Locked::new(2);
        assert!(q.push(1).is_ok() && q.push(2).is_ok());
        assert_eq!(q.push(3), Err(3));
        assert_eq!(q.pop(), Some(1));
    }

    #[test]
    fn the_experiment_runs_small() {
        let ctx = crate::code::test_ctx();
        let out = run_with(
            &ctx,
            Params {
                latency_msgs: 500,
                latency_rounds: 2,
                pingpong_iters: 200,
                flood_msgs: 2_000,
                flood_rounds: 1,
                mpmc_pairs: 500,
                mpmc_rounds: 1,
                warmup: 0,
            },
        )
        .unwrap();
        // 5 queues + the floor, 5 unpaced, 2 × 3 contended.
        assert_eq!(out.dists.len(), 6 + 5 + 6);
        assert_eq!(out.dist(Kind::Rtrb.name()).count, 1_000);
        assert_eq!(out.dist(PINGPONG).count, 400);
        assert_eq!(out.dist(&flood_name(Kind::MutexVecDeque)).count, 1);
        assert_eq!(out.comparisons.len(), 1 + 4 + 1 + 1);
    }
}
