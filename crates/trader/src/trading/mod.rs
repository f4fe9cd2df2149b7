//! The trader's one loop, over any I/O that can hand it packets and take its orders.
//!
//! [`run`] owns what every path shares: the stop flag, the idle timeout, `prepare` between
//! packets, RX→TX timing, the span accounting and the end reason. What differs between AF_XDP,
//! the kernel UDP socket and `recvmmsg` is only how a payload arrives and how an order's bytes
//! leave: a [`TraderIo`] implementation ([`XdpIo`], [`UdpIo`], [`MmsgIo`], and [`TriggerIo`],
//! AF_XDP with the decision in the driver). A new path is one more implementation, not another
//! copy of the loop.
//!
//! A packet's critical path, from its RX time to its orders' kick, reads the clock once (the RX
//! time, in the I/O) and records nothing: the TX time is read after the kick, and the RX→TX
//! sample, the engine sample (one tick in [`Trader::with_engine_sampling`]'s N, which reads the
//! clock twice around `on_tick`) and the ledger's bookings are recorded after it.
use std::{
    io,
    net::SocketAddrV4,
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use results::{ContextSwitches, EndReason, ThreadTime};
use wire::order::OrderRepr;

use afxdp::{clock::now_ns, host::SpanAccounting};
use trader_core::{Line, Nanos, PacketOutcome, Trader, stats::Latency};
use xdp_common::filter::Claim;

mod answers;
pub mod backoff;
mod rfc5961;
pub mod sock_filter;
mod tcp;
mod tcp_xdp;
mod trigger;
mod udp;
mod xdp;

pub use crate::sources::{FeedSource, Sender, Sources};
pub use tcp::{TcpOrders, WithOrders};
pub use tcp_xdp::XdpTcp;
pub use trigger::TriggerIo;
pub use udp::{MmsgIo, UdpIo};
pub use xdp::XdpIo;

pub use crate::MAX_BATCH;

/// Where the orders of one received packet go.
pub trait OrderSink {
    /// Encodes `order` and sends it (or queues it for [`OrderSink::flush`]); false when it
    /// could not (no TX frame, a socket error, an order that doesn't encode). Never sends
    /// anything partial or empty.
    fn send(&mut self, order: &OrderRepr) -> bool;

    /// Sends what [`OrderSink::send`] queued (AF_XDP's kick). Called once after each packet
    /// that sent an order, before anything is recorded. A no-op where sends don't queue.
    #[inline]
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// Whether this sink's sends are this process's, timed as RX→TX. False for the trigger
    /// path's fired ticks, whose orders the XDP program sent before userspace saw the tick.
    #[inline]
    fn timed(&self) -> bool {
        true
    }
}

/// What a [`TraderIo`] hands each packet to: the loop. Generic over the sink, so every order's
/// send is a direct (inlinable) call into the path's own sink, not a virtual one.
pub trait PacketHandler {
    /// One packet: its payload, the line it came on (A, the only one of a one-line feed; B;
    /// [`Line::Recovery`]: an answer of the re-request server), who sent
    /// it, the time it was taken into userspace, and the sink for its orders (which go to the
    /// configured order gateway, whoever sent the packet).
    /// `claim`: what the driver filter filed for this packet (the xdp path with the filter on),
    /// the numbers it dropped before it ([`trader_core::Trader::on_packet_claimed`]).
    fn on_packet<S: OrderSink>(
        &mut self,
        payload: &[u8],
        line: Line,
        claim: Option<Claim>,
        sender: Sender,
        t_rx: u64,
        sink: &mut S,
    );
}

/// A trader's market-data input and order output.
pub trait TraderIo {
    /// Takes up to `max` packets that are there now (or, for an I/O built to block, waits a
    /// short while for the first), and hands each to `handler` with the time it was taken into
    /// userspace and the sink for its orders. Returns how many packets it took; 0 when none
    /// came.
    fn recv<H: PacketHandler>(&mut self, max: usize, handler: &mut H) -> io::Result<usize>;

    /// Called when a turn took nothing: housekeeping that shouldn't run while packets wait
    /// (reclaiming TX frames, driving the kernel's busy poll).
    fn idle(&mut self) {}

    /// Sends a MoldUDP64 re-request to `to` from the market-data port, so that the answer comes
    /// back the way the feed does. Called between turns, never inside a packet's critical path.
    /// The default can't send one.
    fn send_request(&mut self, to: SocketAddrV4, payload: &[u8]) -> io::Result<()> {
        let _ = (to, payload);
        Err(io::ErrorKind::Unsupported.into())
    }

    /// The next blocking wait for a packet lasts at most `ms` (an A/B wait runs out then).
    /// The default ignores it (an I/O that doesn't block, or a test's).
    fn cap_wait(&mut self, ms: i32) {
        let _ = ms;
    }

    /// Hands `f` a sink for orders to the order gateway, outside a receive: for packets
    /// an A/B feed held for the other line whose wait ran out with no packet to carry them.
    /// The default has none (`f` is not called).
    fn with_sink(&mut self, f: &mut dyn FnMut(&mut dyn OrderSink)) {
        let _ = f;
    }

    /// The loop pinned line `line`'s source, learned from the feed: from now on nothing else
    /// may reach the trader on that line. The AF_XDP paths tell the XDP program, which then
    /// drops the rest in the driver. The default does nothing (the loop checks every packet).
    fn pin_source(&mut self, line: Line, source: FeedSource) {
        let _ = (line, source);
    }

    /// Called after each turn that took packets, once their orders are out and the next
    /// tick is prepared: the trigger path arms the next tick here ([`TriggerIo`]). Off every
    /// packet's critical path. The default does nothing.
    fn after_turn(&mut self, trader: &mut Trader) {
        let _ = trader;
    }

    /// Called once when the loop ends, however it ends: hands `handler` what the I/O still
    /// holds that the trader must account for (the trigger path: it disarms the program, then
    /// hands on the ticks fired meanwhile). The default has nothing.
    fn finish<H: PacketHandler>(&mut self, handler: &mut H) {
        let _ = handler;
    }

    /// Before the loop: connects and logs in to the order session this I/O carries (the
    /// userspace TCP on an AF_XDP socket, or a kernel session layered over the feed by
    /// [`WithOrders`]), waiting up to `timeout` or until `stopped`. The default carries none:
    /// its orders go out on its own sink (the lab's UDP order).
    fn login_orders(
        &mut self,
        timeout: Duration,
        stopped: &dyn Fn() -> bool,
    ) -> anyhow::Result<()> {
        let _ = (timeout, stopped);
        Ok(())
    }

    /// After the loop: waits (up to `timeout`) for every order's answer and the session's
    /// end, logs out, and returns the session's report (`None`: no session, the default).
    fn finish_orders(&mut self, timeout: Duration) -> Option<results::OrderSessionReport> {
        let _ = timeout;
        None
    }
}

/// How [`run`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopConfig {
    /// Packets per turn, 1 to [`MAX_BATCH`].
    pub batch: usize,
    /// Stop after this long without a packet (`None`: never).
    pub idle_exit: Option<Duration>,
    /// The loop is meant never to sleep (a spinning trader), so time it didn't run is stolen,
    /// not slept (see [`SpanAccounting::finish`]).
    pub spinning: bool,
    /// Where to send MoldUDP64 re-requests for the trader's gaps (`None`: never; the trader
    /// must have been made [`Trader::with_recovery`] for there to be any).
    pub retransmit_to: Option<SocketAddrV4>,
    /// Each line's source, if named (`trader --feed-source`); the others are learned when the
    /// trader confirms its feed, and pinned from then on ([`Sources`]).
    pub sources: [Option<FeedSource>; trader_core::lines::LINES],
}

/// How a [`run`] ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoopEnd {
    /// Why.
    pub reason: EndReason,
    /// Context switches from the first packet (or the loop's start, if none came) to the end.
    pub context_switches: ContextSwitches,
    /// Where the same span's wall time went.
    pub thread_time: ThreadTime,
    /// Of the same span, the time the loop was working on packets: from each turn's first
    /// packet taken to the end of that turn's work (its orders, its arming), summed. A
    /// spinning trader is on its CPU all the time; this is the part that wasn't waiting.
    pub busy_ns: u64,
}

/// One turn of the loop: what it does with each packet.
struct Turn<'a, C> {
    trader: &'a mut Trader,
    /// Who may send on each line.
    sources: &'a mut Sources,
    rx_to_tx: &'a mut Latency,
    clock: &'a C,
    /// RX time of the turn's last packet.
    last_rx: u64,
    /// RX time of the turn's first packet (0: none yet).
    first_rx: u64,
    end_of_session: bool,
}

impl<'a, C> Turn<'a, C> {
    /// A turn that has seen no packet yet (`last_rx`: the last one's RX time before it).
    fn new(
        trader: &'a mut Trader,
        sources: &'a mut Sources,
        rx_to_tx: &'a mut Latency,
        clock: &'a C,
        last_rx: u64,
    ) -> Self {
        Turn {
            trader,
            sources,
            rx_to_tx,
            clock,
            last_rx,
            first_rx: 0,
            end_of_session: false,
        }
    }
}

impl<C: Fn() -> u64> PacketHandler for Turn<'_, C> {
    #[inline]
    fn on_packet<S: OrderSink>(
        &mut self,
        payload: &[u8],
        line: Line,
        claim: Option<Claim>,
        sender: Sender,
        t_rx: u64,
        sink: &mut S,
    ) {
        // A source nobody named is never read: counted and dropped.
        if let Err(why) = self.sources.check(line, sender) {
            let c = &mut self.trader.counters;
            match why {
                xdp_common::Foreign::Addr => c.foreign_source_addr += 1,
                xdp_common::Foreign::Port => c.foreign_source_port += 1,
            }
            return;
        }
        // Only while this line's source is still to learn: nothing extra per packet after.
        let learning = self.sources.learning(line);
        let taken = if learning {
            feed_messages(self.trader)
        } else {
            0
        };
        // When it came: what the feed gate measures the feed's silence by.
        self.trader.arrived(Nanos(t_rx));
        let mut sent_any = false;
        let outcome = self
            .trader
            .on_packet_claimed(line, payload, claim, self.clock, |order| {
                let sent = sink.send(order);
                sent_any |= sent;
                sent
            });
        if sent_any && sink.timed() {
            // The kick right after this packet's orders, not after the turn: a packet later in
            // the batch must not hold them back.
            if sink.flush().is_err() {
                self.trader.counters.tx_flush_failed += 1;
            }
            // Off the critical path from here: the orders are out.
            let t_tx = (self.clock)();
            self.rx_to_tx.record(t_tx.saturating_sub(t_rx));
        }
        self.trader.settle();
        // The next tick's price-independent work, before the next packet.
        self.trader.prepare();
        if learning {
            self.learn(line, payload, sender, taken);
        }
        self.last_rx = t_rx;
        if self.first_rx == 0 {
            self.first_rx = t_rx;
        }
        self.end_of_session |= outcome == PacketOutcome::EndOfSession;
    }
}

/// Messages of the confirmed feed the trader has seen: taken, late or copies (what learning a
/// line's source waits for; heartbeats and numbers from before the join don't count).
#[inline]
fn feed_messages(trader: &Trader) -> u64 {
    let c = &trader.counters;
    c.messages
        .wrapping_add(c.duplicate_messages)
        .wrapping_add(c.late_messages)
}

impl<C> Turn<'_, C> {
    /// A line whose source is still to learn: once the trader has confirmed its feed, a
    /// packet on that line that carries the feed's messages (new ones, or copies of numbers
    /// the feed already brought: line B of an A/B feed is mostly those) and continues its
    /// sender's previous packet in sequence names the source, pinned from then on
    /// ([`Sources::seen`]).
    #[cold]
    fn learn(&mut self, line: Line, payload: &[u8], sender: Sender, taken_before: u64) {
        let Sender::Datagram(from) = sender else {
            return;
        };
        let Ok(packet) = wire::moldudp64::Packet::new_checked(payload) else {
            return;
        };
        if packet.is_heartbeat() || packet.is_end_of_session() {
            return;
        }
        let first = packet.sequence();
        let next = first.saturating_add(u64::from(packet.block_count()));
        let feed = self.trader.session() == Some(packet.session())
            && feed_messages(self.trader) > taken_before;
        self.sources.seen(line, from, first, next, feed);
    }
}

/// Runs `trader` over `io` until the exchange ends the session, `stop` is set, or no packet
/// came for `config.idle_exit`. Records each packet's RX→TX time (from its arrival in userspace
/// to the kick after its orders' send) in `rx_to_tx`, one sample per packet that sent an order.
///
/// The strategy's between-ticks work (`prepare`) is never inside a tick's engine time: it runs
/// after each packet, once that packet's orders are out. Messages 2..n of one packet get theirs
/// inside `Trader::on_packet`, just before their decision: inside that packet's RX→TX.
pub fn run<I: TraderIo>(
    io: &mut I,
    trader: &mut Trader,
    rx_to_tx: &mut Latency,
    config: LoopConfig,
    stop: &AtomicBool,
) -> io::Result<LoopEnd> {
    run_with_clock(io, trader, rx_to_tx, config, stop, &now_ns)
}

/// [`run`], reading the TX time and the engine's samples from `clock` (a test's fake; the RX
/// time is the I/O's).
fn run_with_clock<I: TraderIo, C: Fn() -> u64>(
    io: &mut I,
    trader: &mut Trader,
    rx_to_tx: &mut Latency,
    config: LoopConfig,
    stop: &AtomicBool,
    clock: &C,
) -> io::Result<LoopEnd> {
    let LoopConfig {
        batch,
        idle_exit,
        spinning,
        retransmit_to,
        sources,
    } = config;
    let mut sources = Sources::new(sources);
    let batch = batch.clamp(1, MAX_BATCH);
    let idle_exit_ns = idle_exit.map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    let mut span = SpanAccounting::start();
    let mut first_packet = true;
    // The last packet's RX time (CLOCK_MONOTONIC, as `now_ns`): no clock read per turn.
    let mut last_data = now_ns();
    // The idle timeout counts from the last packet that wasn't another session's: a stream of
    // a foreign session (an exchange restarted under a new name with its end lost) doesn't
    // keep a trader that trades none of it alive.
    let mut last_feed = last_data;
    let mut fed = trader.feed_progress();
    let mut busy_ns = 0u64;
    let reason = loop {
        if stop.load(Ordering::Relaxed) {
            break Ok(EndReason::Stopped);
        }
        // A packet waiting for the other line of an A/B feed: a blocking receive waits no
        // longer than its wait has left.
        if let Some(due) = trader.waiting_due() {
            let left_ns = due.ns().saturating_sub(now_ns());
            io.cap_wait(i32::try_from(left_ns.div_ceil(1_000_000)).unwrap_or(i32::MAX));
        }
        let mut turn = Turn::new(trader, &mut sources, rx_to_tx, clock, last_data);
        let n = match io.recv(batch, &mut turn) {
            Ok(n) => n,
            Err(e) => break Err(e),
        };
        let Turn {
            last_rx,
            first_rx,
            end_of_session,
            ..
        } = turn;
        if let Some((line, source)) = sources.take_fresh() {
            io.pin_source(line, source);
        }
        if n > 0 {
            last_data = last_rx;
            if trader.feed_progress() != fed {
                fed = trader.feed_progress();
                last_feed = last_rx;
            } else if idle_exit_ns.is_some_and(|d| now_ns().saturating_sub(last_feed) > d) {
                // A turn of nothing but others' datagrams (or frames that weren't ours).
                break Ok(EndReason::IdleTimeout);
            }
            if first_packet {
                // The report covers the feed (first packet to the end), as the replay's covers
                // its sends, not the wait before it.
                first_packet = false;
                span = SpanAccounting::start();
                busy_ns = 0;
            }
            if end_of_session {
                break Ok(EndReason::EndOfSession);
            }
            io.after_turn(trader);
            // Off the critical path: the turn's orders are out and the next arm written. One
            // clock read per turn that took packets, none for the empty turns of a spin.
            if first_rx != 0 {
                busy_ns = busy_ns.saturating_add(now_ns().saturating_sub(first_rx));
            }
        } else {
            io.idle();
            if idle_exit_ns.is_some_and(|d| now_ns().saturating_sub(last_feed) > d) {
                break Ok(EndReason::IdleTimeout);
            }
        }
        // An A/B wait (or a book's) that ran out with no packet to end it: its packets go
        // now. Or the feed stayed silent after an end of session at its next number: over.
        if let Some(due) = trader.waiting_due() {
            let now = now_ns();
            if now >= due.ns() {
                // An end's silence is taken only when this turn's receive found nothing.
                let silent = n == 0;
                let mut outcome = PacketOutcome::Data;
                io.with_sink(&mut |sink| {
                    let mut sent_any = false;
                    outcome = trader.release_due(silent.then_some(Nanos(now)), clock, |order| {
                        let sent = sink.send(order);
                        sent_any |= sent;
                        sent
                    });
                    if sent_any && sink.flush().is_err() {
                        trader.counters.tx_flush_failed += 1;
                    }
                });
                trader.settle();
                if outcome == PacketOutcome::EndOfSession {
                    break Ok(EndReason::EndOfSession);
                }
            }
        }
        // Between turns, after the orders: at most one re-request a turn, paced by the trader.
        if let Some(to) = retransmit_to {
            let now = if n > 0 { last_data } else { now_ns() };
            if let Some(req) = trader.next_request(Nanos(now))
                && io.send_request(to, &req.emit()).is_err()
            {
                trader.counters.retransmit_send_failed += 1;
            }
        }
    };
    // What the I/O still holds (orders already sent in the driver): accounted for before the
    // report, however the loop ended.
    let mut turn = Turn::new(trader, &mut sources, rx_to_tx, clock, last_data);
    io.finish(&mut turn);
    // After `finish`, whatever ended the loop: an I/O error too.
    let reason = reason?;
    let (context_switches, thread_time) = span.finish(spinning);
    Ok(LoopEnd {
        reason,
        context_switches,
        thread_time,
        busy_ns,
    })
}

#[cfg(test)]
mod tests;
