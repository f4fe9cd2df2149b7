//! The next tick's trigger: the exact set of prices at which [`Strategy::on_tick`] would send an
//! order, and the order, computed between ticks so that something faster than the strategy (an
//! XDP program, a NIC) can fire it when such a price arrives.
//!
//! # Why a set of prices is enough
//! With [`Strategy::prepare`] done, every sum in `on_tick` is a prepared partial sum plus one
//! product with the new price, so both averages are affine in the price, and the decision
//! depends on the previous bar's averages (fixed), the position (fixed) and one comparison of
//! the new HMA3 with the new HMA. If HMA3 was below HMA, only a cross up can fire (a buy, unless
//! already long); if above, only a cross down (a sell, unless already short); if equal or not yet
//! defined, nothing fires. So the order is known before the price, and the prices that fire it
//! are one side of a threshold.
//!
//! # Why "exact"
//! In real numbers the threshold is where two lines cross. `on_tick` computes in `f64`, and
//! rounding could make the computed comparison disagree with the real one near the crossing,
//! or even flip back and forth there. So the threshold is not simply solved for. `on_tick`'s
//! arithmetic is written once ([`Strategy`]'s `indicators`), generic over its number type, and
//! is run once more on affine forms: each value as `a + b·x` (x the price in dollars) with a
//! bound `e` on how far the `f64` value `on_tick` computes can be from it, for every price,
//! every rounding included. The comparison's two sides then differ by `A + B·x ± E`, which
//! settles every price farther than `E / |B|` from the crossing `−A / B` (a few millionths of a
//! Price(4) unit here); the prices next to it are evaluated one by one, exactly as `on_tick`
//! would. The search covers every Price(4) value (`u32`, ten-thousandths of a dollar, converted
//! as `p as f64 / 10_000.0`, the lab's one conversion). The result is armed only if the firing
//! prices form one half-line (`>= T` or `<= T`); otherwise, or during warm-up, or when nothing
//! can fire, there is no trigger and the tick is left to the strategy.
use crate::strategy::Arith;
use crate::{Side, Signal, Strategy};

/// Twice the unit roundoff of `f64`: a generous bound on one rounding's relative error.
const EPS: f64 = f64::EPSILON;
/// Margin on every error bound, for the rounding in computing the bound itself (a few
/// operations, each within `EPS`).
const MARGIN: f64 = 1.0 + 64.0 * f64::EPSILON;
/// The largest price, in dollars: `u32::MAX` Price(4) units.
const X_MAX: f64 = u32::MAX as f64 / 10_000.0;

/// A value as an affine form of the price `x` in dollars (as `on_tick` gets it:
/// [`price_f64`]), for every `x` in `0..=X_MAX`: the `f64` value `on_tick`'s arithmetic
/// computes from `x` is within `e` of `a + b·x`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Affine {
    a: f64,
    b: f64,
    e: f64,
}

impl Affine {
    /// The price itself, exactly.
    const fn price() -> Self {
        Self {
            a: 0.0,
            b: 1.0,
            e: 0.0,
        }
    }

    /// A bound on the absolute value of the computed value, for every price.
    fn magnitude(self) -> f64 {
        (self.a.abs() + self.b.abs() * X_MAX + self.e) * MARGIN
    }

    /// How far the form's coefficients, computed in `f64`, can be from the exact ones, as a
    /// bound on the form's value: one rounding each.
    fn coefficient_error(self) -> f64 {
        EPS * (self.a.abs() + self.b.abs() * X_MAX)
    }

    fn with_error(a: f64, b: f64, e: f64) -> Self {
        let f = Self { a, b, e: 0.0 };
        Self {
            a,
            b,
            e: (e + f.coefficient_error()) * MARGIN,
        }
    }

    fn is_nan(self) -> bool {
        self.a.is_nan() || self.b.is_nan() || self.e.is_nan()
    }

    /// Bounds on the computed value over the prices whose `x` is in `xlo..=xhi` (for Price(4)
    /// values `lo..=hi`, `price_f64(lo)..=price_f64(hi)`: the conversion is monotone).
    fn range(self, xlo: f64, xhi: f64) -> (f64, f64) {
        let (ends_lo, ends_hi) = {
            let (u, v) = (self.a + self.b * xlo, self.a + self.b * xhi);
            (u.min(v), u.max(v))
        };
        // The two evaluations above round too: a relative EPS of each term, and more margin.
        let slack = (self.e + 2.0 * self.coefficient_error()) * MARGIN;
        (ends_lo - slack, ends_hi + slack)
    }
}

impl Arith for Affine {
    fn nan() -> Self {
        Self {
            a: f64::NAN,
            b: f64::NAN,
            e: f64::NAN,
        }
    }
    fn mul(self, c: f64) -> Self {
        // |v·c rounded − v·c| <= EPS·|v·c|, and |v·c − (a + b x)·c| <= e·c.
        Self::with_error(
            self.a * c,
            self.b * c,
            self.e * c + EPS * self.magnitude() * c,
        )
    }
    fn add(self, c: f64) -> Self {
        Self::with_error(
            self.a + c,
            self.b,
            self.e + EPS * (self.magnitude() + c.abs()),
        )
    }
    fn div(self, d: f64) -> Self {
        Self::with_error(
            self.a / d,
            self.b / d,
            self.e / d + EPS * self.magnitude() / d,
        )
    }
    fn sub(self, other: Self) -> Self {
        Self::with_error(
            self.a - other.a,
            self.b - other.b,
            self.e + other.e + EPS * (self.magnitude() + other.magnitude()),
        )
    }
}

/// A Price(4) value (ten-thousandths of a dollar) as the strategy sees it: the lab's one
/// conversion (`wire::itch::Price4::to_f64`).
#[inline(always)]
#[must_use]
pub fn price_f64(p: u32) -> f64 {
    f64::from(p) / 10_000.0
}

/// The Price(4) values that fire a trigger: one side of a threshold, the threshold included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Prices {
    /// `p >= t`.
    AtOrAbove(u32),
    /// `p <= t`.
    AtOrBelow(u32),
}

impl Prices {
    /// Whether `p` fires.
    #[inline]
    #[must_use]
    pub const fn contains(self, p: u32) -> bool {
        match self {
            Self::AtOrAbove(t) => p >= t,
            Self::AtOrBelow(t) => p <= t,
        }
    }
}

/// The next tick's trigger: at these prices [`Strategy::on_tick`] returns this signal; at any
/// other, none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Trigger {
    /// What `on_tick` returns at a firing price.
    pub signal: Signal,
    /// The prices that fire.
    pub prices: Prices,
}

/// Why there is no trigger for the next tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unarmed {
    /// The indicators are not all defined yet (warm-up), or are NaN.
    WarmingUp,
    /// The previous bar's lines were equal: no cross is possible on this tick.
    Level,
    /// The only possible cross is to the side already held: no price fires.
    Held,
    /// No Price(4) value fires (the lines can't cross within the price range).
    Never,
    /// The firing prices are not one half-line (rounding near the crossing): not armed.
    NotOneSide,
    /// The band of prices the affine bounds can't settle is wider than [`BAND`] (the lines
    /// nearly parallel in the price): not armed.
    Budget,
}

/// The most prices next to the crossing evaluated one by one; a wider band (lines nearly
/// parallel in the price) is not armed.
const BAND: u32 = 4_096;

impl Strategy {
    /// The exact trigger of the next tick (see the [module](self) documentation), or why
    /// there is none. Prepares the next tick first ([`Strategy::prepare`]), which `on_tick`
    /// would do anyway; changes nothing else.
    ///
    /// # Errors
    /// [`Unarmed`] says why the next tick can't be armed; the strategy then decides it as
    /// usual.
    pub fn trigger(&mut self) -> Result<Trigger, Unarmed> {
        self.prepare();
        let (prev_hma, prev_hma3, position) = self.decision_state();
        if prev_hma.is_nan() || prev_hma3.is_nan() {
            return Err(Unarmed::WarmingUp);
        }
        let side = if prev_hma3 < prev_hma {
            Side::Long
        } else if prev_hma < prev_hma3 {
            Side::Short
        } else {
            return Err(Unarmed::Level);
        };
        if position == Some(side) {
            return Err(Unarmed::Held);
        }
        let search = Search {
            strategy: &*self,
            t: self.ticks(),
            side,
        };
        let runs = search.runs()?;
        let signal = Signal {
            side,
            reverse: position.is_some(),
        };
        let prices = match runs.runs.as_slice() {
            [(_, _, true)] => Prices::AtOrAbove(0),
            [(_, _, false)] => return Err(Unarmed::Never),
            [(_, _, false), (lo, _, true)] => Prices::AtOrAbove(*lo),
            [(_, hi, true), (_, _, false)] => Prices::AtOrBelow(*hi),
            _ => return Err(Unarmed::NotOneSide),
        };
        Ok(Trigger { signal, prices })
    }
}

/// Consecutive price ranges with the same answer, in price order.
#[derive(Debug, Default)]
struct Runs {
    runs: Vec<(u32, u32, bool)>,
}

impl Runs {
    fn push(&mut self, lo: u32, hi: u32, fires: bool) {
        match self.runs.last_mut() {
            Some(last) if last.2 == fires => last.1 = hi,
            _ => self.runs.push((lo, hi, fires)),
        }
    }
}

struct Search<'a> {
    strategy: &'a Strategy,
    t: u64,
    side: Side,
}

impl Search<'_> {
    /// Whether a price fires: `on_tick`'s own arithmetic and comparison.
    fn fires(&self, p: u32) -> Result<bool, Unarmed> {
        let i = self.strategy.indicators(self.t, price_f64(p));
        if i.hma.is_nan() || i.hma3.is_nan() {
            return Err(Unarmed::WarmingUp);
        }
        Ok(match self.side {
            Side::Long => i.hma3 > i.hma,
            Side::Short => i.hma > i.hma3,
        })
    }

    /// `a − b` as an affine form, where the tick fires when the computed `a` exceeds the
    /// computed `b`.
    fn margin(&self) -> Result<Affine, Unarmed> {
        let i = self.strategy.indicators(self.t, Affine::price());
        let (a, b) = match self.side {
            Side::Long => (i.hma3, i.hma),
            Side::Short => (i.hma, i.hma3),
        };
        let g = a.sub(b);
        if g.is_nan() {
            return Err(Unarmed::WarmingUp);
        }
        Ok(g)
    }

    /// Whether every price of `lo..=hi` fires (`Some(true)`), none does (`Some(false)`), or
    /// the form can't tell (`None`).
    fn settles(g: Affine, lo: u32, hi: u32) -> Option<bool> {
        let (min, max) = g.range(price_f64(lo), price_f64(hi));
        if min > 0.0 {
            Some(true)
        } else if max <= 0.0 {
            Some(false)
        } else {
            None
        }
    }

    /// The firing prices as runs: the two sides of the crossing settled by the form, the band
    /// around it price by price.
    fn runs(&self) -> Result<Runs, Unarmed> {
        let g = self.margin()?;
        let mut runs = Runs::default();
        // Where the form crosses zero, in Price(4) units, and how far from it the form can't
        // tell the sign.
        let cross = -g.a / g.b * 10_000.0;
        let half = (g.e + 2.0 * g.coefficient_error()) * MARGIN / g.b.abs() * 10_000.0 + 2.0;
        if g.b == 0.0 || !cross.is_finite() || !half.is_finite() {
            // Level lines: one range, settled whole or not at all.
            let all = Self::settles(g, 0, u32::MAX).ok_or(Unarmed::Budget)?;
            runs.push(0, u32::MAX, all);
            return Ok(runs);
        }
        if half > f64::from(BAND) / 2.0 {
            return Err(Unarmed::Budget);
        }
        let clamp = |v: f64| v.clamp(0.0, f64::from(u32::MAX)) as u32;
        let band_lo = clamp((cross - half).floor());
        let band_hi = clamp((cross + half).ceil());
        if band_lo > 0 {
            let all = Self::settles(g, 0, band_lo - 1).ok_or(Unarmed::Budget)?;
            runs.push(0, band_lo - 1, all);
        }
        for p in band_lo..=band_hi {
            runs.push(p, p, self.fires(p)?);
        }
        if band_hi < u32::MAX {
            let all = Self::settles(g, band_hi + 1, u32::MAX).ok_or(Unarmed::Budget)?;
            runs.push(band_hi + 1, u32::MAX, all);
        }
        Ok(runs)
    }
}

#[cfg(test)]
mod tests {
    use super::{Prices, Search, Trigger, Unarmed, price_f64};
    use crate::Side;
    use crate::{Params, Strategy};
    use proptest::prelude::{ProptestConfig, TestCaseError, any, prop_assert_eq, proptest};

    /// A strategy fed the first `k` prices of a seeded GBM series.
    fn fed(n: i64, seed: u64, k: usize) -> Strategy {
        let mut s = Strategy::new(Params::from_n(n).expect("valid n"));
        for &p in &crate::data::gbm(seed, k) {
            // The lab's prices arrive as Price(4): round the series to them, as the feed does.
            let p4 = (p * 10_000.0).round() as u32;
            let _ = s.on_tick(price_f64(p4));
        }
        s
    }

    /// Checks the trigger of `s` against `on_tick` at price `p`.
    fn agrees(s: &Strategy, armed: Result<Trigger, Unarmed>, p: u32) -> Result<(), String> {
        let got = s.clone().on_tick(price_f64(p));
        match armed {
            Ok(t) => {
                let want = t.prices.contains(p).then_some(t.signal);
                if got != want {
                    return Err(format!("price {p}: on_tick {got:?}, trigger {t:?}"));
                }
            }
            Err(Unarmed::NotOneSide | Unarmed::Budget) => {}
            Err(why) => {
                if got.is_some() {
                    return Err(format!("price {p}: on_tick {got:?}, unarmed {why:?}"));
                }
            }
        }
        Ok(())
    }

    #[test]
    fn warm_up_is_never_armed_and_a_trade_run_is() {
        let mut s = Strategy::new(Params::from_n(6).expect("valid"));
        assert_eq!(s.trigger(), Err(Unarmed::WarmingUp));
        let mut armed = 0;
        let mut fired = 0;
        for &p in &crate::data::gbm(7, 3_000) {
            let p4 = (p * 10_000.0).round() as u32;
            let t = s.trigger();
            armed += usize::from(t.is_ok());
            let got = s.on_tick(price_f64(p4));
            if let Ok(t) = t {
                assert_eq!(got, t.prices.contains(p4).then_some(t.signal), "{t:?} {p4}");
            } else {
                assert_eq!(got, None, "unarmed {t:?} but on_tick fired at {p4}");
            }
            fired += usize::from(got.is_some());
        }
        assert!(fired > 50, "the series trades: {fired}");
        // Armed whenever a cross is possible: about half the ticks (the side not held).
        assert!(armed > 1_000, "armed on {armed} of 3,000 ticks");
    }

    #[test]
    fn the_threshold_is_exact_at_its_neighbours() {
        let mut checked = 0;
        for seed in 0..40 {
            let mut s = fed(6 + (seed as i64 % 20), seed, 400);
            let Ok(t) = s.trigger() else { continue };
            let edge = match t.prices {
                Prices::AtOrAbove(e) | Prices::AtOrBelow(e) => e,
            };
            for p in edge.saturating_sub(3)..=edge.saturating_add(3) {
                agrees(&s, Ok(t), p).unwrap();
            }
            checked += 1;
        }
        assert!(checked > 10, "{checked} thresholds checked");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// The search's one claim about ranges: when the affine form says every price of a
        /// range fires (or none does), each price of it, evaluated as `on_tick` does, agrees.
        #[test]
        fn a_settled_range_is_settled_at_every_price(
            n in 4_i64..80,
            seed in 0_u64..1_000,
            k in 30_usize..400,
            long in any::<bool>(),
            offset in -20_000_i64..20_000,
            width in 0_u32..3_000,
        ) {
            let mut s = fed(n, seed, k);
            // Around where the lines cross, if they do, else around the last price.
            let centre = match s.trigger() {
                Ok(Trigger { prices: Prices::AtOrAbove(e) | Prices::AtOrBelow(e), .. }) => {
                    i64::from(e)
                }
                Err(_) => {
                    let last = crate::data::gbm(seed, k).last().copied().unwrap_or(100.0);
                    (last * 10_000.0) as i64
                }
            };
            let side = if long { Side::Long } else { Side::Short };
            let search = Search { strategy: &s, t: s.ticks(), side };
            let lo = u32::try_from((centre + offset / 8).max(0)).unwrap();
            let hi = lo.saturating_add(width);
            if let Ok(g) = search.margin()
                && let Some(all) = Search::settles(g, lo, hi)
            {
                for p in lo..=hi {
                    prop_assert_eq!(search.fires(p), Ok(all), "price {} in {}..={}", p, lo, hi);
                }
            }
        }

        /// For random prepared states and random prices: "price in the armed set" equals
        /// "`on_tick` emits", and the armed signal is the emitted one; unarmed ticks emit
        /// nothing (but where the set is not one half-line, which is reported and not armed).
        #[test]
        fn the_armed_set_is_exactly_where_on_tick_emits(
            n in 4_i64..80,
            seed in 0_u64..1_000,
            k in 0_usize..600,
            offsets in proptest::collection::vec(-5_000_i64..5_000, 1..24),
            anywhere in proptest::collection::vec(any::<u32>(), 1..8),
        ) {
            let mut s = fed(n, seed, k);
            let armed = s.trigger();
            let last = crate::data::gbm(seed, k.max(1)).last().copied().unwrap_or(100.0);
            let mut prices: Vec<u32> = anywhere;
            let centres = [
                Some((last * 10_000.0) as i64),
                armed.ok().map(|t| match t.prices {
                    Prices::AtOrAbove(e) | Prices::AtOrBelow(e) => i64::from(e),
                }),
            ];
            let at = |c: i64| u32::try_from(c.clamp(0, i64::from(u32::MAX))).unwrap();
            for c in centres.into_iter().flatten() {
                for &o in &offsets {
                    prices.push(at(c + o));
                }
            }
            // Every price next to the threshold.
            if let Some(Prices::AtOrAbove(e) | Prices::AtOrBelow(e)) = armed.ok().map(|t| t.prices) {
                let e = i64::from(e);
                prices.extend((e - 40..=e + 40).map(at));
            }
            for p in prices {
                agrees(&s, armed, p).map_err(TestCaseError::fail)?;
            }
        }
    }
}
