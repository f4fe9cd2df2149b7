//! The exchange's I/O loops: open-loop pacing of the feed, the drain, the end of session.
use std::{
    fmt, io,
    str::FromStr,
    sync::{Arc, Mutex},
    time::Duration,
};

use super::{Burst, Exchange, Took};
use crate::{
    feed::{Feed, PacketMeta},
    retransmit::Window,
};

/// The exchange's end of the lab: where ticks go out and orders come in.
pub trait Port {
    /// Sends one datagram now. [`io::ErrorKind::WouldBlock`]: our own side refused it (buffer
    /// or ring full); it was not sent.
    fn send(&mut self, payload: &[u8]) -> io::Result<()>;

    /// Hands each datagram received so far to `f`, using `buf` for it, with the time the kernel
    /// took it in where the port can say (on the [`Clock`]'s time base; `None` where it can't);
    /// never blocks. `f` says what the exchange took of it (an order session answers with it).
    fn recv_each(&mut self, buf: &mut [u8], f: impl FnMut(&[u8], Option<u64>) -> Took);

    /// The feed has ended (its end of session sent): an order session ends too. The default
    /// has none.
    fn end_orders(&mut self) {}
}

/// Nanoseconds on the clock the send schedule and the orders' arrival are measured on.
pub trait Clock {
    /// Now.
    fn now_ns(&mut self) -> u64;
}

/// The lab's clock, CLOCK_MONOTONIC ([`afxdp::clock::now_ns`]): the trader reads the same one.
#[cfg(feature = "io")]
#[derive(Debug, Clone, Copy, Default)]
pub struct Monotonic;

#[cfg(feature = "io")]
impl Clock for Monotonic {
    #[inline]
    fn now_ns(&mut self) -> u64 {
        afxdp::clock::now_ns()
    }
}

pub use paths::Rate;

/// How the send loop times each packet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// Open loop at a message rate: message `k` of the run is due `k` periods after the start
    /// (`--rate`); or, for [`Rate::Max`] (`--rate max`, `--topspeed`), closed loop: each packet
    /// is due when the loop gets to it.
    Rate(Rate),
    /// An ITCH file at its own timestamps: each message is due its time in the file (after the
    /// file's first message) divided by the multiplier, after the start; a packet leaves when its
    /// last message is due (`--multiplier`, tcpreplay's).
    FileTime(Multiplier),
    /// Open loop at a message rate with bursts (`--rate` with `--burst`): message `k` is due
    /// where [`Burst::offset_ns`] puts it.
    Bursts {
        /// The steady rate between bursts, messages/s.
        rate: f64,
        /// The bursts over it.
        burst: Burst,
    },
}

impl Pace {
    /// Whether packets have due times (open loop), not just an order (closed loop).
    pub fn scheduled(self) -> bool {
        !matches!(self, Pace::Rate(Rate::Max))
    }

    /// When message `k` of a packet is due, for a loop that started at `start`, after `tried`
    /// messages before the packet (sent or refused), the packet's messages at `file_ns` in the
    /// file (empty for a prebuilt feed: only [`Pace::Rate`] paces one). `start` for
    /// [`Rate::Max`], which has no schedule.
    #[inline]
    pub fn due(self, start: u64, tried: u64, k: u64, file_ns: &[u64]) -> u64 {
        match self {
            Pace::Rate(Rate::PerSec(r)) => start + ((tried + k) as f64 * (1e9 / r)) as u64,
            Pace::Rate(Rate::Max) => start,
            Pace::Bursts { rate, burst } => start + burst.offset_ns(rate, tried + k),
            Pace::FileTime(m) => {
                let at = usize::try_from(k)
                    .ok()
                    .and_then(|k| file_ns.get(k))
                    .or(file_ns.last())
                    .copied()
                    .unwrap_or(0);
                start + m.scale(at)
            }
        }
    }
}

/// A replay speed against the file's own clock, as tcpreplay's `--multiplier` means it: 2.0
/// replays twice as fast as recorded, 0.5 at half the speed.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Multiplier(f64);

impl Multiplier {
    /// The speed recorded.
    pub const RECORDED: Multiplier = Multiplier(1.0);
    /// The slowest: a thousandth of the speed recorded (a second of the file in 17 minutes).
    pub const MIN: f64 = 1e-3;
    /// The fastest: a million times (a trading day in under a tenth of a second, which no
    /// sender keeps; `--topspeed` says that plainly).
    pub const MAX: f64 = 1e6;

    /// The factor.
    pub fn get(self) -> f64 {
        self.0
    }

    /// `ns` of the file's time, in the replay's.
    #[inline]
    pub fn scale(self, ns: u64) -> u64 {
        if self.0 == 1.0 {
            ns
        } else {
            (ns as f64 / self.0) as u64
        }
    }

    /// `ns` of the replay's time, in the file's (saturating).
    pub fn unscale(self, ns: f64) -> u64 {
        (ns * self.0) as u64
    }
}

impl FromStr for Multiplier {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.parse::<f64>() {
            Ok(m) if (Multiplier::MIN..=Multiplier::MAX).contains(&m) => Ok(Multiplier(m)),
            _ => Err(format!(
                "bad multiplier {s:?}: a speed against the file's own clock, {} to {:e} (2.0: \
                 twice as fast as recorded, 0.5: half as fast; --topspeed: as fast as it goes)",
                Multiplier::MIN,
                Multiplier::MAX
            )),
        }
    }
}

/// The factor as [`FromStr`] reads it back (Rust's shortest round-trip form).
impl fmt::Display for Multiplier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The packets a send loop sends, in order: a prebuilt feed's, or a file's streamed.
pub trait Outgoing {
    /// Packets in all (for the progress line).
    fn packets(&self) -> usize;

    /// Moves to the next packet and says what it holds; `None` after the last. The packet's bytes
    /// are [`Outgoing::current`]'s until the next call.
    ///
    /// # Errors
    /// The source could not be read.
    fn next_packet(&mut self) -> io::Result<Option<PacketMeta>>;

    /// The packet [`Outgoing::next_packet`] moved to: its bytes, and each message's time in the
    /// file, ns after the file's first message (empty where the source has no clock).
    fn current(&self) -> (&[u8], &[u64]);

    /// Called while the loop waits for a packet's due time, with at least [`READ_AHEAD_NS`]
    /// to spare: a streamed source reads and packs ahead here, out of the sends' way. It must
    /// leave [`Outgoing::current`] as it is.
    ///
    /// # Errors
    /// The source could not be read.
    fn read_ahead(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A prebuilt feed's packets, in feed order.
#[derive(Debug)]
pub struct Prebuilt<'f> {
    feed: &'f Feed,
    /// The index after the current packet (0: none yet).
    next: usize,
}

impl<'f> Prebuilt<'f> {
    /// The packets of `feed`.
    pub fn new(feed: &'f Feed) -> Self {
        Prebuilt { feed, next: 0 }
    }
}

impl Outgoing for Prebuilt<'_> {
    fn packets(&self) -> usize {
        self.feed.packets.len()
    }

    fn next_packet(&mut self) -> io::Result<Option<PacketMeta>> {
        let meta = self.feed.packets.get(self.next).copied();
        if meta.is_some() {
            self.next += 1;
        }
        Ok(meta)
    }

    fn current(&self) -> (&[u8], &[u64]) {
        match self.next.checked_sub(1) {
            Some(i) => (self.feed.packet(i), &[]),
            None => (&[], &[]),
        }
    }
}

/// The first packet is due this long after the send loop starts.
const START_DELAY_NS: u64 = 2_000_000;
/// A packet sent later than this after its due time counts as a late send: the sender itself
/// fell behind.
const LATE_NS: u64 = 10_000;
/// How often the send loop reports progress.
const PROGRESS_EVERY_NS: u64 = 1_000_000_000;
/// No order is taken (no `recv`, no order session served) this close to a packet's due time:
/// the last stretch before a send is a plain spin on the clock, so no poll that starts in it
/// delays the send (tick-to-trade counts from the due time; a poll started earlier that runs
/// longer still can). Orders are stamped where they arrive, so reading them a little later
/// leaves tick-to-trade as it is; the figures taken at the read (`tick_to_trade_seen`, the
/// harness delay, unstamped orders) and the answers' timing include the wait.
pub(crate) const POLL_GUARD_NS: u64 = 2_000;
/// A streamed source reads ahead only while this much time is left before the next packet is
/// due: more than the slowest read-ahead step takes (one packet's messages, and at most one
/// refill of the reader's buffer: 16 KiB inflated, tens of µs).
pub const READ_AHEAD_NS: u64 = 100_000;
/// End of session is sent this many times, this far apart: it travels over UDP.
const END_OF_SESSION_REPEATS: usize = 3;
const END_OF_SESSION_GAP: Duration = Duration::from_millis(2);
/// Receive buffer: larger than any datagram of orders the lab's MTU lets through.
const RECV_BUF: usize = 2048;

/// Where the send loop is, for a progress line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Packets handled (sent or refused).
    pub packets_done: usize,
    /// Packets in the feed.
    pub packets: usize,
    /// Orders taken so far.
    pub orders: u64,
}

/// What the send loop itself measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendLoop {
    /// When the first packet was due, ns.
    pub start_ns: u64,
    /// When the loop ended, ns.
    pub end_ns: u64,
    /// Packets sent more than 10 µs after they were due.
    pub late_sends: u64,
}

impl SendLoop {
    /// How long the send loop ran, seconds.
    pub fn seconds(&self) -> f64 {
        self.end_ns.saturating_sub(self.start_ns) as f64 / 1e9
    }
}

/// Drives an [`Exchange`] over a [`Port`], reading a [`Clock`].
#[derive(Debug)]
pub struct Driver<P, C> {
    port: P,
    clock: C,
    buf: [u8; RECV_BUF],
    /// Busy-wait this long after each send (the harness's self-test; 0 in a real run).
    stall_ns: u64,
    /// Where the sequence number after the last message put on the wire is published (for the
    /// re-request server), if anywhere.
    frontier: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// Per packet sent on a schedule, from its due time to when this loop started sending it:
    /// the sender's own lateness, inside every tick-to-trade figure (whatever the loop did
    /// meanwhile: taking orders, an order session's answers, a preemption).
    lateness: trader_core::stats::Latency,
    /// Where each packet put on the wire is kept for re-requests, if anywhere (a streamed feed's
    /// bounded window; a prebuilt feed is served from the feed itself).
    window: Option<Arc<Mutex<Window>>>,
}

impl<P: Port, C: Clock> Driver<P, C> {
    /// Each scheduled packet's send lateness ([`Driver`]'s `lateness`).
    pub fn send_lateness(&self) -> &trader_core::stats::Latency {
        &self.lateness
    }

    /// The port driven (for what it counted, after the run).
    pub fn port(&self) -> &P {
        &self.port
    }

    /// The port driven, to change (the order session's wait for the trader's login).
    pub fn port_mut(&mut self) -> &mut P {
        &mut self.port
    }

    /// Drives `port`, timed by `clock`.
    pub fn new(port: P, clock: C) -> Self {
        Driver {
            port,
            clock,
            buf: [0; RECV_BUF],
            stall_ns: 0,
            frontier: None,
            lateness: trader_core::stats::Latency::new(),
            window: None,
        }
    }

    /// The same driver keeping, after each packet put on the wire (sent, or refused by our own
    /// side: its numbers are used either way), a copy in `window`, before it publishes the
    /// frontier: what a re-request server of a streamed feed answers from.
    pub fn keep_window(mut self, window: Arc<Mutex<Window>>) -> Self {
        self.window = Some(window);
        self
    }

    /// The same driver publishing, after each packet, the sequence number after the last
    /// message put on the wire: how far a re-request server may answer.
    pub fn publish_frontier(
        mut self,
        frontier: std::sync::Arc<std::sync::atomic::AtomicU64>,
    ) -> Self {
        self.frontier = Some(frontier);
        self
    }

    /// The same driver stalling `ns` after each send before it takes orders: a stand-in for a
    /// preemption of the replay's thread, to show that arrival times don't move with it.
    pub fn stall_after_send(mut self, ns: u64) -> Self {
        self.stall_ns = ns;
        self
    }

    /// Takes every order that has arrived: each datagram stamped when the kernel took it in
    /// (where the port can say) and when this loop read it, so the harness's own delay between
    /// the two is measured rather than counted as tick-to-trade.
    #[inline]
    fn poll(&mut self, ex: &mut Exchange<'_>) {
        let Driver {
            port, clock, buf, ..
        } = self;
        port.recv_each(buf, |payload, arrived| {
            let seen = clock.now_ns();
            match arrived {
                // A kernel stamp a hair after our own read is clock-conversion rounding.
                Some(at) => ex.receive_stamped(payload, at.min(seen), seen),
                None => ex.receive_unstamped(payload, seen),
            }
        });
    }

    /// Sends the feed on its schedule, busy-waiting to each packet's due time and taking
    /// orders meanwhile, until the end or `stopped()`. Calls `progress` about once a second.
    ///
    /// # Errors
    /// A send that fails other than by our own side refusing it ([`Port::send`]).
    pub fn send_feed(
        &mut self,
        ex: &mut Exchange<'_>,
        rate: Rate,
        stopped: impl Fn() -> bool,
        progress: impl FnMut(Progress),
    ) -> io::Result<SendLoop> {
        let feed = ex.feed();
        self.send(
            ex,
            &mut Prebuilt::new(feed),
            Pace::Rate(rate),
            stopped,
            progress,
        )
    }

    /// Sends `out`'s packets as `pace` says, busy-waiting to each packet's due time and taking
    /// orders meanwhile (and, with time to spare, letting `out` read ahead), until the end or
    /// `stopped()`. Calls `progress` about once a second.
    ///
    /// # Errors
    /// A send that fails other than by our own side refusing it ([`Port::send`]), or `out`
    /// failing to read its source.
    pub fn send(
        &mut self,
        ex: &mut Exchange<'_>,
        out: &mut impl Outgoing,
        pace: Pace,
        stopped: impl Fn() -> bool,
        mut progress: impl FnMut(Progress),
    ) -> io::Result<SendLoop> {
        let scheduled = pace.scheduled();
        let start = self.clock.now_ns() + START_DELAY_NS;
        if let Pace::Bursts { burst, .. } = pace {
            ex.bursts_from(start, burst);
        }
        let mut late_sends = 0;
        let mut next_progress = start + PROGRESS_EVERY_NS;
        let packets = out.packets();
        let mut done = 0;
        while let Some(meta) = out.next_packet()? {
            // Message `k` of the whole feed is due `k` periods after the start (at a rate), or
            // at its time in the file (at its timestamps); a packet of several leaves when its
            // last one is due, and each is measured from its own time. A refused packet keeps
            // its place: the next one is due where it would have been.
            let tried = ex.messages_tried();
            let last = u64::from(meta.messages.max(1)) - 1;
            let due = if scheduled {
                pace.due(start, tried, last, out.current().1)
            } else {
                self.clock.now_ns()
            };
            let mut now = self.clock.now_ns();
            while now < due && !stopped() {
                if due - now > POLL_GUARD_NS {
                    self.poll(ex);
                    // Timed from before the poll, which took some of it: READ_AHEAD_NS is
                    // far more than a poll and a read-ahead step together.
                    if due - now > READ_AHEAD_NS {
                        out.read_ahead()?;
                    }
                } else {
                    std::hint::spin_loop();
                }
                now = self.clock.now_ns();
            }
            if stopped() {
                break;
            }
            if now > due + LATE_NS {
                late_sends += 1;
            }
            let (bytes, file_ns) = out.current();
            let due_of = |k: u64| pace.due(start, tried, k, file_ns);
            match self.port.send(bytes) {
                Ok(()) if scheduled => {
                    ex.sent_packet(meta, due_of);
                    ex.send_started_packet(meta, now);
                    self.lateness.record(now.saturating_sub(due));
                }
                // Closed loop (`max`): every message is "due" when its packet went.
                Ok(()) => ex.sent_packet(meta, |_| due),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => ex.refused_packet(meta),
                Err(e) => return Err(e),
            }
            if let Some(w) = &self.window {
                w.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(meta, bytes);
            }
            if let Some(f) = &self.frontier {
                f.store(ex.session_end(), std::sync::atomic::Ordering::Relaxed);
            }
            if self.stall_ns > 0 {
                let until = self.clock.now_ns() + self.stall_ns;
                while self.clock.now_ns() < until {
                    std::hint::spin_loop();
                }
            }
            self.poll(ex);
            done += 1;
            if now > next_progress {
                next_progress = now + PROGRESS_EVERY_NS;
                progress(Progress {
                    packets_done: done,
                    packets,
                    orders: ex.orders().received,
                });
            }
        }
        Ok(SendLoop {
            start_ns: start,
            end_ns: self.clock.now_ns(),
            late_sends,
        })
    }

    /// After the last tick: takes orders until every expected one is in (for the ticks that
    /// went out), nothing came for `quiet_ns`, or `stopped()`.
    pub fn drain(&mut self, ex: &mut Exchange<'_>, quiet_ns: u64, stopped: impl Fn() -> bool) {
        ex.finish_sending();
        let mut last = self.clock.now_ns();
        let mut seen = ex.orders().received;
        while ex.awaiting_orders() && !stopped() {
            self.poll(ex);
            let now = self.clock.now_ns();
            let received = ex.orders().received;
            if received != seen {
                seen = received;
                last = now;
            } else if now - last > quiet_ns {
                break;
            }
        }
    }

    /// Tells the trader the session is over, after the last message put on the wire (a few
    /// times, a little apart: UDP may lose one). Failures are ignored: nothing is left to
    /// measure.
    pub fn end_session(&mut self, ex: &Exchange<'_>) {
        let eos = ex.feed().end_of_session(ex.session_end());
        for _ in 0..END_OF_SESSION_REPEATS {
            let _ = self.port.send(&eos);
            std::thread::sleep(END_OF_SESSION_GAP);
        }
        self.port.end_orders();
    }
}
