//! The streaming strategy: one tick in, at most one order out, the batch kernel's answers.
//!
//! # Why `prepare` exists, and what it can do
//! Every WMA sum runs oldest to newest, so the newest value is always the *last* term:
//! `s = (((0 + x[t-w+1]*1) + ...) + x[t-1]*(w-1)) + x[t]*w`. Everything but that last term is
//! known before tick `t` arrives; [`Strategy::prepare`] computes those partial sums between
//! ticks, and [`Strategy::on_tick`] adds one product to each. The operations and their order
//! are exactly the batch kernel's, so the results are bit-identical.
//!
//! The indicators are nested: `HMA = WMA(diff, sq)` with `diff[t] = 2*WMA(close, half)[t] -
//! WMA(close, n)[t]`, and HMA3 likewise over `der[t]`. `diff[t]` and `der[t]` depend on the new
//! price, but they are again the newest terms of the outer sums, so the outer partial sums over
//! `diff[t-sq+1..t]` and `der[t-p+1..t]` are prepared too. What is left for `on_tick` is fixed
//! work whatever `n` is: five first-level completions (one multiply, one add, one divide each),
//! the two derived values, two outer completions, and the decision. That is the measured
//! decision latency; `prepare` (O(n) dependent additions) is the rest of the per-tick work.

use crate::signal::Events;
use crate::wma::{denom, weighted_sum};
use crate::{ComboResult, Ledger, Params, Side, Signal};

/// The arithmetic of one tick's indicators, on one price (`f64`) or on every price at once
/// (the affine forms of the [`trigger`](crate::trigger)). Constants are positive (window
/// weights and denominators, 2, 3).
pub(crate) trait Arith: Copy {
    fn nan() -> Self;
    /// `self * c`, `c > 0`.
    fn mul(self, c: f64) -> Self;
    /// `self + c` (IEEE addition is commutative: `c + self` is the same value).
    fn add(self, c: f64) -> Self;
    /// `self / d`, `d > 0`.
    fn div(self, d: f64) -> Self;
    /// `self - other`.
    fn sub(self, other: Self) -> Self;
}

impl Arith for f64 {
    #[inline(always)]
    fn nan() -> Self {
        f64::NAN
    }
    #[inline(always)]
    fn mul(self, c: f64) -> Self {
        self * c
    }
    #[inline(always)]
    fn add(self, c: f64) -> Self {
        self + c
    }
    #[inline(always)]
    fn div(self, d: f64) -> Self {
        self / d
    }
    #[inline(always)]
    fn sub(self, other: Self) -> Self {
        self - other
    }
}

/// A ring of the most recent `cap` values, stored twice so any suffix is one contiguous slice.
#[derive(Debug, Clone)]
struct Ring {
    buf: Vec<f64>,
    cap: usize,
    /// The slot the next value goes to (also the oldest value's slot once full).
    head: usize,
}

impl Ring {
    fn new(cap: usize) -> Self {
        let cap = cap.max(1);
        Self {
            buf: vec![f64::NAN; 2 * cap],
            cap,
            head: 0,
        }
    }

    #[inline]
    fn push(&mut self, v: f64) {
        self.buf[self.head] = v;
        self.buf[self.head + self.cap] = v;
        self.head = if self.head + 1 == self.cap {
            0
        } else {
            self.head + 1
        };
    }

    /// The newest `k <= cap` values, oldest first (NaN where fewer were pushed).
    #[inline]
    fn last(&self, k: usize) -> &[f64] {
        let end = self.head + self.cap;
        &self.buf[end - k..end]
    }
}

/// One window's constants and its prepared partial sum.
#[derive(Debug, Clone, Copy)]
struct Window {
    w: usize,
    weight: f64,
    den: f64,
    partial: f64,
}

impl Window {
    fn new(w: usize) -> Self {
        Self {
            w,
            weight: w as f64,
            den: denom(w),
            partial: 0.0,
        }
    }

    fn prepare(&mut self, ring: &Ring) {
        self.partial = weighted_sum(ring.last(self.w - 1));
    }

    /// The window's WMA at tick index `t` (0-based) with newest value `x`:
    /// `(partial + x * weight) / den`, on one price or on a range of them ([`Arith`]).
    #[inline(always)]
    fn complete<A: Arith>(&self, t: u64, x: A) -> A {
        if t + 1 >= self.w as u64 {
            x.mul(self.weight).add(self.partial).div(self.den)
        } else {
            A::nan()
        }
    }
}

/// One tick's indicators: the derived values and the two averages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Indicators<A> {
    pub(crate) diff: A,
    pub(crate) der: A,
    pub(crate) hma: A,
    pub(crate) hma3: A,
}

/// The stop-and-reverse strategy of one combo, fed one price at a time.
///
/// It allocates only in [`Strategy::new`]; [`Strategy::on_tick`] and [`Strategy::prepare`]
/// touch only its own buffers. It embeds a [`Ledger`] and fills it at each signal's price, so
/// [`Strategy::finish`] followed by [`Strategy::result`] equals the batch
/// [`crate::reference::backtest`] on the same series, bit for bit.
#[derive(Debug, Clone)]
pub struct Strategy {
    params: Params,
    closes: Ring,
    diffs: Ring,
    ders: Ring,
    n: Window,
    half: Window,
    p3: Window,
    p2: Window,
    p: Window,
    sq_outer: Window,
    p_outer: Window,
    prepared: bool,
    ticks: u64,
    last_price: f64,
    /// The batch kernels' own event-loop state (ledger and previous indicators).
    events: Events,
}

impl Strategy {
    /// A strategy with no history, flat.
    #[must_use]
    pub fn new(params: Params) -> Self {
        let w = params.windows();
        let longest = w.n.max(w.half).max(w.p).max(w.p3).max(w.p2);
        Self {
            params,
            closes: Ring::new(longest),
            diffs: Ring::new(w.sq),
            ders: Ring::new(w.p),
            n: Window::new(w.n),
            half: Window::new(w.half),
            p3: Window::new(w.p3),
            p2: Window::new(w.p2),
            p: Window::new(w.p),
            sq_outer: Window::new(w.sq),
            p_outer: Window::new(w.p),
            prepared: false,
            ticks: 0,
            last_price: f64::NAN,
            events: Events::new(),
        }
    }

    /// The combo this strategy trades.
    #[must_use]
    pub const fn params(&self) -> &Params {
        &self.params
    }

    /// Does all of the next tick's work that does not need its price: every window sum but its
    /// newest term. Call it after acting on a signal, before the next price; calling it twice,
    /// or not at all, is fine ([`Strategy::on_tick`] prepares if needed).
    pub fn prepare(&mut self) {
        if self.prepared {
            return;
        }
        for win in [&mut self.n, &mut self.half, &mut self.p3, &mut self.p2] {
            win.prepare(&self.closes);
        }
        // `p == half` for every combo built by `Params::from_n`: the same sum, done once.
        if self.p.w == self.half.w {
            self.p.partial = self.half.partial;
        } else {
            self.p.prepare(&self.closes);
        }
        self.sq_outer.prepare(&self.diffs);
        self.p_outer.prepare(&self.ders);
        self.prepared = true;
    }

    /// Takes the next price; returns the order to send, if the rule fires on this bar. The
    /// embedded ledger is filled at `price`. The first tick never signals (the rule needs the
    /// previous bar).
    #[inline]
    pub fn on_tick(&mut self, price: f64) -> Option<Signal> {
        if !self.prepared {
            self.prepare();
        }
        self.prepared = false;
        let t = self.ticks;
        self.ticks += 1;

        let Indicators {
            diff,
            der,
            hma,
            hma3,
        } = self.indicators(t, price);
        let signal = self.events.step(price, hma, hma3);

        self.closes.push(price);
        self.diffs.push(diff);
        self.ders.push(der);
        self.last_price = price;
        signal
    }

    /// Tick `t`'s indicators for the price `x` with the prepared partial sums: the only place
    /// they are computed, for [`Strategy::on_tick`] (on one price) and for
    /// [`Strategy::trigger`] (on a range of prices, whose ends then bound every price's
    /// result: each operation is monotone in its inputs and so is rounding).
    #[inline(always)]
    pub(crate) fn indicators<A: Arith>(&self, t: u64, x: A) -> Indicators<A> {
        let diff = self.half.complete(t, x).mul(2.0).sub(self.n.complete(t, x));
        let der = self
            .p3
            .complete(t, x)
            .mul(3.0)
            .sub(self.p2.complete(t, x))
            .sub(self.p.complete(t, x));
        let hma = self.sq_outer.complete(t, diff);
        let hma3 = self.p_outer.complete(t, der);
        Indicators {
            diff,
            der,
            hma,
            hma3,
        }
    }

    /// The previous bar's indicators and the position: what the next tick's decision is
    /// taken against.
    pub(crate) fn decision_state(&self) -> (f64, f64, Option<Side>) {
        let (hma, hma3) = self.events.prev();
        (hma, hma3, self.events.ledger.position())
    }

    /// Closes an open position at the last price seen (the batch kernel's forced close).
    pub fn finish(&mut self) {
        if self.ticks > 0 {
            self.events.ledger.close(self.last_price);
        }
    }

    /// Closed trades and their PnL so far.
    #[must_use]
    pub const fn result(&self) -> ComboResult {
        self.events.ledger.result()
    }

    /// The position the strategy holds.
    #[must_use]
    pub fn position(&self) -> Option<Side> {
        self.events.ledger.position()
    }

    /// The embedded ledger.
    #[must_use]
    pub const fn ledger(&self) -> &Ledger {
        &self.events.ledger
    }

    /// Ticks seen.
    #[must_use]
    pub const fn ticks(&self) -> u64 {
        self.ticks
    }
}
