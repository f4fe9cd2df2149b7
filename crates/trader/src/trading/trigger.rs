//! The trigger path: the decision in the driver.
//!
//! Between ticks the trader arms the XDP program ([`Action::Trigger`](xdp_common::Action)) with
//! the next tick's sequence number, the prices at which the strategy would trade it and the
//! order it would send ([`Trader::next_arm`]). A one-trade packet of that tick at such a price
//! is turned into that order in the driver and sent back with XDP_TX, and the program records
//! what it fired in the line after the arm's (the arm's generation and the tick's price; the
//! rest of the order is the arm the trader wrote with that generation, which it keeps). A
//! blocking trader is woken through a ring buffer as well (unless `--no-fired-wakeup`: then by
//! the next packet). Every other packet comes through
//! the AF_XDP socket as on the XDP path.
//!
//! The trader still runs the strategy on every tick, in sequence order: a fired tick is read
//! from the record's line (before any later packet from the socket, so the two sources merge in
//! order)
//! and handed to the loop as the packet it was, with a sink that sends nothing and checks that
//! the order the strategy emits is exactly the one that was fired (a `mismatch` otherwise,
//! which must stay 0). Ticks that came unarmed are traded by the trader itself; then it re-arms.
use std::{io, os::fd::AsFd as _};
use xdp_common::filter::Claim;

use results::{TriggerReport, Unarmed as UnarmedCounts};
use wire::{
    itch::{self, Price4, Stock},
    moldudp64::{self, PacketBuilder},
    order::OrderRepr,
};
use xdp_common::{Arm, Fired};

use super::{FeedSource, OrderSink, PacketHandler, Sender, TraderIo, XdpIo};
use afxdp::{
    clock::now_ns,
    xdp::{ArmMap, BookTrigger, FiredRing},
};
use trader_core::{Line, NotArmed, Trader, arm::fired_order, desk::Resting, stats::Latency};

/// A UDP header's length: the fired packet's copy is its whole datagram.
const UDP_HEADER_LEN: usize = 8;

/// How long a blocking turn sleeps in `poll()` at most, so the stop flag and the idle timeout
/// are still seen.
const BLOCK_POLL_MS: i32 = 100;

/// The arms remembered by generation, to know what a fired generation was: one is live at a
/// time (the next is written only once the trader has the tick before), a few for margin.
const ARMS_REMEMBERED: usize = 4;

/// One turn in `n` (at least 1): the turns whose start reads the record's line.
#[derive(Debug, Clone, Copy)]
struct Every {
    n: u32,
    since: u32,
}

impl Every {
    fn new(n: u32) -> Self {
        Every {
            n: n.max(1),
            since: 0,
        }
    }

    /// Whether this turn is one: true on the `n`th call, the `2n`th, and so on.
    fn due(&mut self) -> bool {
        self.since += 1;
        if self.since >= self.n {
            self.since = 0;
            true
        } else {
            false
        }
    }
}

/// A trader's I/O on the trigger path: the AF_XDP socket for what the program doesn't fire,
/// the arm it writes between ticks (whose slot's second line holds what the program fired), and the
/// ring that wakes it when it blocks.
///
/// `BLOCK`: wait in `poll()` on both the socket and the ring (`--wait block`): with the
/// decision in the driver the trader sleeps and leaves its CPU to the machine.
#[derive(Debug)]
pub struct TriggerIo<const BLOCK: bool, const BUSY_POLL: bool> {
    xdp: XdpIo<false, BUSY_POLL>,
    arm: ArmMap,
    ring: FiredRing,
    stock: Stock,
    /// The last arm written, while it may still fire (not seen fired, not replaced by a
    /// disarm).
    live: Option<Arm>,
    /// The last decision: for which sequence number, and whether it was armed.
    decided: Option<(u64, bool)>,
    /// What was last written to the map (an arm, or a disarm naming the session).
    written: Option<Arm>,
    /// The session of the arms written: what a fired tick's packet carried.
    session: [u8; 10],
    /// Arms left to corrupt (side flipped): a test of the mismatch check, never a mode.
    corrupt: u64,
    /// The next blocking wait lasts at most this long (ms).
    wait_cap: Option<i32>,
    /// What was armed, fired and checked ([`TriggerIo::summary`] completes it).
    report: TriggerReport,
    /// Each arm's (or disarm's) computation and write (ns), after the tick before it.
    arm_cost: Latency,
    /// The last arms written, with the generation each was written under.
    history: [(u32, Arm); ARMS_REMEMBERED],
    /// Where the next arm written goes in `history`.
    history_next: usize,
    /// The fired generation last read from the record's line.
    seen_fired: u32,
    /// When a spinning turn starts with a read of the record's line
    /// ([`TriggerIo::polling_fired_every`]); before each packet it is read always.
    poll: Every,
    /// On a full-depth feed: the firing set, the traded stock's locate (written once named),
    /// and the copies of the fired packets ([`TriggerIo::on_book`]).
    book: Option<BookTrigger>,
    /// The traded stock's locate last written to the program (a corrected Stock Directory
    /// may name another).
    book_locate: Option<u16>,
}

impl<const BLOCK: bool, const BUSY_POLL: bool> TriggerIo<BLOCK, BUSY_POLL> {
    /// The trigger path over `xdp` (the socket the program redirects the unfired feed to),
    /// arming through `arm` and reading what fired from `ring`, trading `stock`.
    pub fn new(xdp: XdpIo<false, BUSY_POLL>, arm: ArmMap, ring: FiredRing, stock: Stock) -> Self {
        let seen_fired = arm.last_fired().0;
        TriggerIo {
            history: [(u32::MAX, Arm::default()); ARMS_REMEMBERED],
            history_next: 0,
            seen_fired,
            poll: Every::new(crate::FIRED_POLL_EVERY),
            xdp,
            arm,
            ring,
            stock,
            live: None,
            written: None,
            decided: None,
            session: [0; 10],
            corrupt: 0,
            wait_cap: None,
            report: TriggerReport::default(),
            arm_cost: Latency::new(),
            book: None,
            book_locate: None,
        }
    }

    /// The trigger on a full-depth feed (`--symbols`): it fires on the traded stock's prints,
    /// an Order Executed through the firing set (`book`'s map, kept in step with the book
    /// before each arm), and each fired packet comes back as the copy the program made of it.
    #[must_use]
    pub fn on_book(mut self, book: BookTrigger) -> Self {
        self.book = Some(book);
        self
    }

    /// The firing set brought in step with the trader's book, and the stock's locate written
    /// whenever the Stock Directory names it (again): before the arm, so an arm never fires
    /// through a set older than the book it was decided on. Whether the book trigger may still
    /// arm: once the map has refused an update (counted), the set may hold an order the book
    /// doesn't, so nothing is armed again in this run and the trader sends every order itself.
    fn keep_firing_set(&mut self, trader: &mut Trader) -> bool {
        let Some(book) = &mut self.book else {
            return true;
        };
        let failed = &mut self.report.firing_set_failed;
        let locate = trader.traded_locate();
        if locate.is_some() && locate != self.book_locate {
            match locate.map(|l| book.set_locate(l)) {
                Some(Ok(())) => self.book_locate = locate,
                _ => *failed += 1,
            }
        }
        trader.take_firing(|change| {
            let ok = match change {
                Resting::Rests {
                    order_ref,
                    price,
                    shares,
                } => book.rest(order_ref, price, shares),
                Resting::Gone { order_ref } => book.gone(order_ref),
            };
            if ok.is_err() {
                *failed += 1;
            }
        });
        *failed == 0
    }

    /// A spinning trader reads the record of what fired at the start of one turn in `turns`
    /// (at least 1: every turn), before every packet, and after a turn that took frames: a
    /// fire the loop hasn't seen yet is noticed at most `turns` turns late, and the record's
    /// line stays out of this core most of the time, so the program's write of it isn't a
    /// snoop (without this call: [`crate::FIRED_POLL_EVERY`]).
    #[must_use]
    pub fn polling_fired_every(mut self, turns: u32) -> Self {
        self.poll = Every::new(turns);
        self
    }

    /// Corrupts the next `n` arms written (their side flipped), so that what they fire is not
    /// the trader's order: the test that the mismatch check catches it. Never for trading.
    #[must_use]
    pub fn corrupting_arms(mut self, n: u64) -> Self {
        self.corrupt = n;
        self
    }

    /// The AF_XDP part, for its counts and statistics.
    pub fn xdp(&self) -> &XdpIo<false, BUSY_POLL> {
        &self.xdp
    }

    /// With the TCP trigger, the segment for `arm` (about to be written, under the next
    /// generation) armed in the userspace TCP: `Err` if the session can't take one now (the
    /// tick is then the trader's). Without it, nothing to do.
    fn arm_segment(&mut self, arm: &Arm) -> Result<(), super::tcp_xdp::NoSegment> {
        let Some(tcp) = self.xdp.order_tcp() else {
            return Ok(());
        };
        let order =
            fired_order(&Fired::of(arm, 0), self.stock).ok_or(super::tcp_xdp::NoSegment::Order)?;
        tcp.arm_segment(&order, self.arm.generation().wrapping_add(2))
    }

    /// What was armed, fired and checked, with the hit rate and the arm cost filled in.
    pub fn summary(&self) -> TriggerReport {
        let mut r = self.report;
        let orders = r.fired + r.software_orders;
        r.hit_rate = if orders == 0 {
            0.0
        } else {
            // A fired order that was not the trader's is no hit.
            r.fired.saturating_sub(r.mismatch) as f64 / orders as f64
        };
        r.arm_cost = self.arm_cost.summary();
        r.arm_demoted = Some(self.arm.demotes());
        r.fired_poll_every = Some(if BLOCK { 1 } else { self.poll.n });
        r
    }

    /// The disarmed arm for the tick `seq`: nothing fires, the session is named (see
    /// `after_turn`).
    fn disarm(&self, seq: u64) -> Arm {
        Arm {
            seq,
            session: self.session,
            stock: self.stock.0,
            armed: 0,
            ..Arm::default()
        }
    }

    /// The socket, and what a fired tick's processing needs, borrowed apart.
    fn split(&mut self) -> (&mut XdpIo<false, BUSY_POLL>, Fire<'_>) {
        let Self {
            xdp,
            arm,
            ring,
            stock,
            live,
            report,
            session,
            decided,
            history,
            seen_fired,
            book,
            ..
        } = self;
        let fire = Fire {
            book: book.as_ref(),
            arm,
            ring,
            history,
            seen: seen_fired,
            stock: *stock,
            live,
            report,
            session: *session,
            decided: *decided,
        };
        (xdp, fire)
    }

    /// Waits in `poll()` for the socket or the ring.
    fn wait(&mut self) -> io::Result<()> {
        let ms = self
            .wait_cap
            .take()
            .map_or(BLOCK_POLL_MS, |c| c.min(BLOCK_POLL_MS));
        afxdp::xsk::wait_any_or(self.xdp.xsks(), Some(self.ring.as_fd()), ms)
    }
}

/// The trigger's state a fired tick's processing needs, borrowed apart from the socket.
struct Fire<'a> {
    /// Where the program records what it fired.
    arm: &'a ArmMap,
    /// The wake-ups of a blocking trader (their records are the line's too).
    ring: &'a mut FiredRing,
    /// The arms written, by generation.
    history: &'a [(u32, Arm); ARMS_REMEMBERED],
    /// The fired generation last read.
    seen: &'a mut u32,
    stock: Stock,
    live: &'a mut Option<Arm>,
    report: &'a mut TriggerReport,
    session: [u8; 10],
    decided: Option<(u64, bool)>,
    /// On a full-depth feed, where the fired packets' copies are.
    book: Option<&'a BookTrigger>,
}

impl Fire<'_> {
    /// Hands the tick the program last fired, if it is new, to `handler` as the packet it was;
    /// returns how many (0 or 1: the line holds the last fire only; an arm is written only once
    /// the trader has the tick before, so at most one fires between two looks; the bench's
    /// verdict compares the fires read with the program's `trigger_fired` count, and flags a
    /// difference).
    #[inline]
    fn drain<H: PacketHandler>(&mut self, handler: &mut H) -> usize {
        // The ring only wakes a blocking trader (the program writes it for no other): consumed
        // here, what it says is the line's.
        while self.ring.next_fired().is_some() {
            self.report.wakeups += 1;
        }
        let (generation, price) = self.arm.last_fired();
        if generation == *self.seen {
            return 0;
        }
        *self.seen = generation;
        self.fired(generation, price, handler);
        1
    }

    /// The fire of the arm written under `generation`, at `price`.
    #[cold]
    fn fired<H: PacketHandler>(&mut self, generation: u32, price: u32, handler: &mut H) {
        let Some(&(_, a)) = self.history.iter().find(|(g, _)| *g == generation) else {
            // An arm this trader didn't write (or wrote too long ago): an order went out that
            // no decision here accounts for.
            self.report.fired += 1;
            self.report.mismatch += 1;
            return;
        };
        match self.book {
            None => self.on_fired(&Fired::of(&a, price), handler),
            Some(book) => {
                let f = Fired::at(&a, self.arm.last_fired_seq(), price);
                self.on_fired_packet(&f, book.fired_packet(generation), handler);
            }
        }
    }

    /// A fire on a full-depth feed: the packet it fired on is the program's copy of its
    /// datagram, handed on whole (the print, and the book's other changes in it); `None` if
    /// the copy is not that fire's (never: the program copies before it records).
    #[cold]
    fn on_fired_packet<H: PacketHandler>(
        &mut self,
        f: &Fired,
        datagram: Option<&[u8]>,
        handler: &mut H,
    ) {
        let t_rx = now_ns();
        self.report.fired += 1;
        if self.live.is_some_and(|a| a.token == f.token) {
            *self.live = None;
        }
        let Some(payload) = datagram.and_then(|d| d.get(UDP_HEADER_LEN..)) else {
            self.report.mismatch += 1;
            return;
        };
        let mut sink = CheckSink {
            fired: fired_order(f, self.stock),
            matched: false,
        };
        handler.on_packet(payload, Line::A, None, Sender::Program, t_rx, &mut sink);
        if !sink.matched {
            self.report.mismatch += 1;
        }
    }

    #[cold]
    fn on_fired<H: PacketHandler>(&mut self, f: &Fired, handler: &mut H) {
        let t_rx = now_ns();
        self.report.fired += 1;
        if self.live.is_some_and(|a| a.seq == f.seq) {
            // Consumed by the program.
            *self.live = None;
        }
        let mut buf = [0u8; moldudp64::HEADER_LEN + 2 + itch::trade::LEN];
        let Some(len) = tick_packet(&mut buf, self.session, f, self.stock) else {
            self.report.mismatch += 1;
            return;
        };
        let mut sink = CheckSink {
            fired: fired_order(f, self.stock),
            matched: false,
        };
        handler.on_packet(&buf[..len], Line::A, None, Sender::Program, t_rx, &mut sink);
        if !sink.matched {
            // The trader would have sent nothing, or something else.
            self.report.mismatch += 1;
        }
    }
}

/// The packet the program fired on: the MoldUDP64 header of `session` and the record's
/// sequence number, one trade of `stock` at the record's price (the rest of the trade's fields
/// are not the strategy's). `None` if it doesn't fit (it always does).
fn tick_packet(buf: &mut [u8], session: [u8; 10], f: &Fired, stock: Stock) -> Option<usize> {
    let mut m = [0u8; itch::trade::LEN];
    trader_core::trade_message(f.seq, stock, Price4(f.price), 0)
        .emit_into(&mut m)
        .ok()?;
    let mut b = PacketBuilder::new(buf, moldudp64::Session(session), f.seq).ok()?;
    b.push(&m).ok()?;
    Some(b.finish().len())
}

/// A fired tick's sink: sends nothing (the program did), checks the strategy's order against
/// what was fired.
struct CheckSink {
    fired: Option<OrderRepr>,
    matched: bool,
}

impl OrderSink for CheckSink {
    fn send(&mut self, order: &OrderRepr) -> bool {
        // The order "went out" only if it is the one the program sent; any other (or a second)
        // did not, and the trader books it as failed.
        let ok = !self.matched && self.fired.as_ref() == Some(order);
        self.matched |= ok;
        ok
    }

    fn timed(&self) -> bool {
        false
    }
}

/// The handler the socket's packets go through: what the record's line says fired goes first (it
/// was fired before any later packet reached the socket), and orders the trader sends itself
/// are counted.
struct Merge<'a, 'f, H> {
    fire: &'a mut Fire<'f>,
    handler: &'a mut H,
    fired: usize,
}

impl<H: PacketHandler> PacketHandler for Merge<'_, '_, H> {
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
        self.fired += self.fire.drain(self.handler);
        let mut counting = CountingSink {
            inner: sink,
            decided: self.fire.decided,
            report: &mut *self.fire.report,
        };
        self.handler
            .on_packet(payload, line, claim, sender, t_rx, &mut counting);
    }
}

/// The socket path's sink, counting the orders the trader sends itself.
struct CountingSink<'a, S> {
    inner: &'a mut S,
    /// The last arming decision when the packet was taken.
    decided: Option<(u64, bool)>,
    report: &'a mut TriggerReport,
}

impl<S: OrderSink> OrderSink for CountingSink<'_, S> {
    #[inline]
    fn send(&mut self, order: &OrderRepr) -> bool {
        let sent = self.inner.send(order);
        if sent {
            self.report.software_orders += 1;
            if self.decided == Some((order.tick_seq, false)) {
                self.report.unarmed_orders += 1;
            } else {
                // Armed, but written after the tick reached the program (or a packet of more
                // than one message); or not decided yet: it came right behind the tick before.
                self.report.arm_late += 1;
            }
        }
        sent
    }

    #[inline]
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }

    #[inline]
    fn timed(&self) -> bool {
        self.inner.timed()
    }
}

impl<const BLOCK: bool, const BUSY_POLL: bool> TraderIo for TriggerIo<BLOCK, BUSY_POLL> {
    #[inline]
    fn recv<H: PacketHandler>(&mut self, max: usize, handler: &mut H) -> io::Result<usize> {
        if BLOCK {
            self.wait()?;
        }
        // A spinning trader reads the record's line at the start of a turn only now and then:
        // each read pulls it into this core, and the program's write of it when it fires must
        // then take it back (a snoop its order's transmit waits for). Before each packet the
        // line is read anyway (`Merge`), so no fire is merged out of order.
        let look = BLOCK || self.poll.due();
        let (xdp, mut fire) = self.split();
        let first = if look { fire.drain(handler) } else { 0 };
        let mut merge = Merge {
            fire: &mut fire,
            handler,
            fired: 0,
        };
        let n = xdp.recv(max, &mut merge)?;
        let fired = merge.fired;
        // A turn that took frames is followed by `after_turn`, which arms the next tick: it
        // must know of every fire by then, and frames that never reached `Merge` (the order
        // session's segments, frames not ours) didn't read the record. Read after them, it is
        // still in order: a fire recorded after `Merge`'s last look is of a later tick than
        // every packet handed on.
        let last = if !look && n > 0 {
            fire.drain(handler)
        } else {
            0
        };
        Ok(first + fired + n + last)
    }

    fn idle(&mut self) {
        self.xdp.idle();
    }

    fn cap_wait(&mut self, ms: i32) {
        self.wait_cap = Some(ms);
    }

    fn with_sink(&mut self, f: &mut dyn FnMut(&mut dyn OrderSink)) {
        self.xdp.with_sink(f);
    }

    fn send_request(&mut self, to: std::net::SocketAddrV4, payload: &[u8]) -> io::Result<()> {
        self.xdp.send_request(to, payload)
    }

    fn pin_source(&mut self, line: Line, source: FeedSource) {
        self.xdp.pin_source(line, source);
    }

    /// Arms the next tick (or disarms, if it can't be armed and an arm may still fire). With
    /// the TCP trigger, the userspace TCP first catches up with what went and serves its
    /// session (anything it sends of its own withdraws the armed segment), then the segment
    /// for the next arm is armed before the arm.
    fn after_turn(&mut self, trader: &mut Trader) {
        self.xdp.after_turn(trader);
        let t0 = now_ns();
        let sound = self.keep_firing_set(trader);
        let next = if sound {
            trader.next_arm()
        } else {
            Err(NotArmed::FeedUnknown)
        };
        let before = self.decided;
        self.decided = Some((trader.next_seq(), next.is_ok()));
        // The TCP trigger's segment still goes with the arm written last (always true without
        // it).
        let generation = self.arm.generation();
        let stands = self
            .xdp
            .order_tcp()
            .is_none_or(|t| t.armed_segment() == Some(generation));
        let write = match next {
            Ok(arm) if self.live == Some(arm) && stands => {
                // Already armed for this tick (the turn moved nothing forward).
                return;
            }
            Ok(arm) => {
                // `live` is the arm as computed; what is written may be corrupted (a test),
                // the TCP trigger's segment with it: what fires is what was written.
                let mut write = arm;
                if self.corrupt > 0 {
                    self.corrupt -= 1;
                    write.side = if arm.side == b'B' { b'S' } else { b'B' };
                }
                self.session = arm.session;
                if self.arm_segment(&write).is_ok() {
                    self.report.arms += 1;
                    self.live = Some(arm);
                    write
                } else {
                    // Counted once a tick (a turn that moved nothing forward tries again).
                    let unarmed = Some((trader.next_seq(), false));
                    if before != unarmed {
                        self.report.unarmed.no_segment += 1;
                    }
                    self.decided = unarmed;
                    self.live = None;
                    self.disarm(arm.seq)
                }
            }
            Err(why) => {
                count_unarmed(&mut self.report.unarmed, why);
                self.live = None;
                // Disarmed, but naming the session and the next number: the program keeps
                // marking the feed's numbers (so an arm written later can't fire on a copy of
                // a tick that came meanwhile), and its bound moves on with the feed.
                let Some(session) = trader.session() else {
                    return;
                };
                self.session = session.0;
                self.disarm(trader.next_seq())
            }
        };
        // A segment armed just now goes with the arm about to be written: it must be written.
        let fresh = self
            .xdp
            .order_tcp()
            .is_some_and(|t| t.armed_segment() == Some(generation.wrapping_add(2)));
        if self.written == Some(write) && !fresh && (write.armed == 0 || stands) {
            // Already there (the turn moved nothing forward).
            return;
        }
        self.arm.set(&write);
        self.history[self.history_next % ARMS_REMEMBERED] = (self.arm.generation(), write);
        self.history_next = self.history_next.wrapping_add(1);
        self.written = Some(write);
        self.arm_cost.record(now_ns().saturating_sub(t0));
    }

    /// Disarms the program (nothing fires once the trader stops reading), then hands on the
    /// ticks it fired before that: their orders went out, so the trader books and checks them.
    fn finish<H: PacketHandler>(&mut self, handler: &mut H) {
        if let Some((seq, _)) = self.decided {
            let disarm = self.disarm(seq);
            self.arm.set(&disarm);
        }
        self.live = None;
        // The TCP trigger's segment too: the stack learns now if it went.
        if let Some(tcp) = self.xdp.order_tcp() {
            tcp.withdraw_segment();
        }
        // A program run that read the arm just before the disarm commits its record within
        // microseconds: give it a millisecond before the last read of the ring.
        std::thread::sleep(std::time::Duration::from_millis(1));
        self.split().1.drain(handler);
    }

    /// The TCP trigger's session is the AF_XDP part's userspace TCP.
    fn login_orders(
        &mut self,
        timeout: std::time::Duration,
        stopped: &dyn Fn() -> bool,
    ) -> anyhow::Result<()> {
        self.xdp.login_orders(timeout, stopped)
    }

    fn finish_orders(
        &mut self,
        timeout: std::time::Duration,
    ) -> Option<results::OrderSessionReport> {
        self.xdp.finish_orders(timeout)
    }
}

fn count_unarmed(c: &mut UnarmedCounts, why: NotArmed) {
    use engine::trigger::Unarmed as E;
    match why {
        NotArmed::Engine(E::WarmingUp) => c.warming_up += 1,
        NotArmed::Engine(E::Level) => c.level += 1,
        NotArmed::Engine(E::Held) => c.held += 1,
        NotArmed::Engine(E::Never) => c.never += 1,
        NotArmed::Engine(E::NotOneSide | E::Budget) => c.unsettled += 1,
        NotArmed::FeedUnknown | NotArmed::AnyStock | NotArmed::Lines | NotArmed::SequenceEnd => {
            c.other += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fired_record_becomes_the_tick_it_fired_on() {
        let stock = Stock::new("SYNTH").unwrap();
        let f = Fired {
            seq: 42,
            token: 7,
            price: 1_234_567,
            shares: 100,
            side: b'B',
            flags: [0; 2],
            pad: [0; 5],
        };
        let mut buf = [0u8; moldudp64::HEADER_LEN + 2 + itch::trade::LEN];
        let n = tick_packet(&mut buf, *b"T2TLAB0001", &f, stock).unwrap();
        let p = moldudp64::Packet::new_checked(&buf[..n]).unwrap();
        assert_eq!(p.sequence(), 42);
        assert_eq!(p.session().0, *b"T2TLAB0001");
        assert_eq!(p.block_count(), 1);
        let block = p.messages().next().unwrap().unwrap();
        let itch::Message::Trade(t) = itch::parse(block).unwrap() else {
            panic!("not a trade");
        };
        assert_eq!((t.price, t.stock), (Price4(1_234_567), stock));
    }

    #[test]
    fn the_check_accepts_the_fired_order_once_and_nothing_else() {
        let stock = Stock::new("SYNTH").unwrap();
        let order = OrderRepr {
            side: itch::Side::Buy,
            reverse: false,
            shares: 100,
            token: 7,
            tick_seq: 42,
            price: Price4(5),
            stock,
        };
        let mut s = CheckSink {
            fired: Some(order),
            matched: false,
        };
        assert!(!s.send(&OrderRepr { token: 8, ..order }));
        assert!(!s.matched);
        assert!(s.send(&order));
        assert!(!s.send(&order), "a second copy did not go out");
        assert!(s.matched);
        assert!(!s.timed());
    }

    #[test]
    fn every_nth_turn_reads_the_record_and_one_means_every_turn() {
        let mut e = Every::new(4);
        let due: Vec<bool> = (0..9).map(|_| e.due()).collect();
        assert_eq!(
            due,
            [false, false, false, true, false, false, false, true, false]
        );
        let mut each = Every::new(1);
        assert!((0..5).all(|_| each.due()));
        let mut zero = Every::new(0);
        assert!(zero.due(), "0 is taken as 1");
    }
}
