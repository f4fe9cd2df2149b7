//! The exchange's I/O loops: open-loop pacing of the feed, the drain, the end of session.
use std::{io, time::Duration};

use super::{Exchange, Took};

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

/// The lab's clock, CLOCK_MONOTONIC ([`crate::clock::now_ns`]): the trader reads the same one.
#[cfg(feature = "io")]
#[derive(Debug, Clone, Copy, Default)]
pub struct Monotonic;

#[cfg(feature = "io")]
impl Clock for Monotonic {
    #[inline]
    fn now_ns(&mut self) -> u64 {
        crate::clock::now_ns()
    }
}

pub use paths::Rate;

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
    lateness: crate::stats::Latency,
}

impl<P: Port, C: Clock> Driver<P, C> {
    /// Each scheduled packet's send lateness ([`Driver`]'s `lateness`).
    pub fn send_lateness(&self) -> &crate::stats::Latency {
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
            lateness: crate::stats::Latency::new(),
        }
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
        mut progress: impl FnMut(Progress),
    ) -> io::Result<SendLoop> {
        let feed = ex.feed();
        let period_ns = rate.per_sec().map(|r| 1e9 / r);
        let start = self.clock.now_ns() + START_DELAY_NS;
        let mut late_sends = 0;
        let mut next_progress = start + PROGRESS_EVERY_NS;
        for i in 0..feed.packets.len() {
            // Message `k` of the whole feed is due `k` periods after the start; a packet of
            // several leaves when its last one is due, and each is measured from its own time. A
            // refused packet keeps its place: the next one is due where it would have been.
            let first = ex.messages_tried();
            let last = first + u64::from(feed.packets[i].messages.max(1)) - 1;
            let due_of = |k: u64| match period_ns {
                Some(p) => start + ((first + k) as f64 * p) as u64,
                None => 0,
            };
            let due = match period_ns {
                Some(_) => due_of(last - first),
                None => self.clock.now_ns(),
            };
            let mut now = self.clock.now_ns();
            while now < due && !stopped() {
                if due - now > POLL_GUARD_NS {
                    self.poll(ex);
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
            match self.port.send(feed.packet(i)) {
                Ok(()) if period_ns.is_some() => {
                    ex.sent_paced(i, due_of);
                    ex.send_started(i, now);
                    self.lateness.record(now.saturating_sub(due));
                }
                // Closed loop (`max`): every message is "due" when its packet went.
                Ok(()) => ex.sent(i, due),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => ex.refused(i),
                Err(e) => return Err(e),
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
            if now > next_progress {
                next_progress = now + PROGRESS_EVERY_NS;
                progress(Progress {
                    packets_done: i + 1,
                    packets: feed.packets.len(),
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
