//! The trader's one loop, over any I/O that can hand it packets and take its orders.
//!
//! [`run`] owns what every path shares: the stop flag, the idle timeout, `prepare` between
//! packets, RX→TX timing, the span accounting and the end reason. What differs between AF_XDP,
//! the kernel UDP socket and `recvmmsg` is only how a payload arrives and how an order's bytes
//! leave: a [`TraderIo`] implementation ([`XdpIo`], [`UdpIo`], [`MmsgIo`]). A new path is one
//! more implementation, not another copy of the loop.
use std::{
    io,
    marker::PhantomData,
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

use results::{ContextSwitches, EndReason, ThreadTime};
use wire::order::OrderRepr;

use crate::{
    clock::now_ns,
    host::SpanAccounting,
    stats::Latency,
    t2t::{PacketOutcome, Trader},
};

mod udp;
mod xdp;

pub use udp::{MmsgIo, UdpIo};
pub use xdp::XdpIo;

/// The most packets one turn of the loop takes (the AF_XDP RX batch's upper bound).
pub const MAX_BATCH: usize = 64;

/// Where the orders of one received packet go.
pub trait OrderSink {
    /// Encodes `order` and sends it (or queues it for [`TraderIo::flush`]); false when it could
    /// not (no TX frame, a socket error, an order that doesn't encode). Never sends anything
    /// partial or empty.
    fn send(&mut self, order: &OrderRepr) -> bool;
}

/// What a [`TraderIo`] hands each packet to: the loop. Generic over the sink, so every order's
/// send is a direct (inlinable) call into the path's own sink, not a virtual one.
pub trait PacketHandler {
    /// One packet: its payload, the time it was taken into userspace, and the sink for its
    /// orders (which reply to that packet's sender).
    fn on_packet<S: OrderSink>(&mut self, payload: &[u8], t_rx: u64, sink: &mut S);
}

/// A trader's market-data input and order output.
pub trait TraderIo {
    /// True when [`OrderSink::send`] only queues, and orders leave at [`TraderIo::flush`]
    /// (AF_XDP's TX ring); false when each send is on its way when it returns (a socket).
    const QUEUES_ORDERS: bool;

    /// Takes up to `max` packets that are there now (or, for an I/O built to block, waits a
    /// short while for the first), and hands each to `handler` with the time it was taken into
    /// userspace and the sink for its orders. Returns how many packets it took; 0 when none
    /// came.
    fn recv<H: PacketHandler>(&mut self, max: usize, handler: &mut H) -> io::Result<usize>;

    /// Sends what the sinks queued. A no-op where sends don't queue.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// Called when a turn took nothing: housekeeping that shouldn't run while packets wait
    /// (reclaiming TX frames, driving the kernel's busy poll).
    fn idle(&mut self) {}
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
}

/// One turn of the loop: what it does with each packet, and what it keeps for after the turn.
struct Turn<'a, I> {
    trader: &'a mut Trader,
    rx_to_tx: &'a mut Latency,
    /// RX times of the packets whose orders wait for the flush.
    queued_rx: [u64; MAX_BATCH],
    queued: usize,
    end_of_session: bool,
    /// Which path: its `QUEUES_ORDERS` is a constant in each monomorphised loop.
    io: PhantomData<fn() -> I>,
}

impl<I: TraderIo> PacketHandler for Turn<'_, I> {
    #[inline]
    fn on_packet<S: OrderSink>(&mut self, payload: &[u8], t_rx: u64, sink: &mut S) {
        // The previous packet's between-ticks work, if it isn't done yet (on a queued path,
        // after a packet of this turn: its orders wait for the flush anyway).
        self.trader.prepare();
        let mut sent_any = false;
        let outcome = self.trader.on_packet(payload, now_ns, |order| {
            let sent = sink.send(order);
            sent_any |= sent;
            sent
        });
        if sent_any {
            if I::QUEUES_ORDERS {
                if let Some(slot) = self.queued_rx.get_mut(self.queued) {
                    *slot = t_rx;
                    self.queued += 1;
                }
            } else {
                self.rx_to_tx.record(now_ns().saturating_sub(t_rx));
            }
        }
        if !I::QUEUES_ORDERS {
            // This packet's orders are out: the next tick's work now, off its path.
            self.trader.prepare();
        }
        self.end_of_session |= outcome == PacketOutcome::EndOfSession;
    }
}

/// Runs `trader` over `io` until the exchange ends the session, `stop` is set, or no packet
/// came for `config.idle_exit`. Records each packet's RX→TX time (from its arrival in userspace
/// to its orders' send, or, where orders queue, to the flush after its turn) in `rx_to_tx`,
/// one sample per packet that sent an order.
///
/// The strategy's between-ticks work (`prepare`) is never inside a tick's engine time. Where
/// orders leave at once, it runs right after them. Where they queue (AF_XDP), it runs before
/// the next packet of the turn, so orders queued earlier in a turn wait for it (as they wait for
/// that packet's decode and decision) and leave at the flush; after the flush it runs for the
/// turn's last packet. Messages 2..n of one packet get theirs inside `Trader::on_packet`, just
/// before their decision: inside that packet's RX→TX, as before.
pub fn run<I: TraderIo>(
    io: &mut I,
    trader: &mut Trader,
    rx_to_tx: &mut Latency,
    config: LoopConfig,
    stop: &AtomicBool,
) -> io::Result<LoopEnd> {
    let LoopConfig {
        batch,
        idle_exit,
        spinning,
    } = config;
    let batch = batch.clamp(1, MAX_BATCH);
    let mut span = SpanAccounting::start();
    let mut first_packet = true;
    let mut last_data = Instant::now();
    let reason = loop {
        if stop.load(Ordering::Relaxed) {
            break EndReason::Stopped;
        }
        let mut turn = Turn::<'_, I> {
            trader: &mut *trader,
            rx_to_tx: &mut *rx_to_tx,
            queued_rx: [0; MAX_BATCH],
            queued: 0,
            end_of_session: false,
            io: PhantomData,
        };
        let n = io.recv(batch, &mut turn)?;
        let Turn {
            queued_rx,
            queued,
            end_of_session,
            ..
        } = turn;
        if queued > 0 {
            if io.flush().is_err() {
                trader.counters.tx_flush_failed += 1;
            }
            let t_tx = now_ns();
            for &t_rx in &queued_rx[..queued] {
                rx_to_tx.record(t_tx.saturating_sub(t_rx));
            }
        }
        if n > 0 {
            trader.prepare();
            last_data = Instant::now();
            if first_packet {
                // The report covers the feed (first packet to the end), as the replay's covers
                // its sends, not the wait before it.
                first_packet = false;
                span = SpanAccounting::start();
            }
            if end_of_session {
                break EndReason::EndOfSession;
            }
        } else {
            io.idle();
            if idle_exit.is_some_and(|d| last_data.elapsed() > d) {
                break EndReason::IdleTimeout;
            }
        }
    };
    let (context_switches, thread_time) = span.finish(spinning);
    Ok(LoopEnd {
        reason,
        context_switches,
        thread_time,
    })
}

#[cfg(test)]
mod tests;
