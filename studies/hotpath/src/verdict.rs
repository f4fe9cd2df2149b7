//! The one agreement rule every verdict in the report follows.
//!
//! A row compares two variants by a ratio, "dearer ÷ cheaper" in the direction the study (or the
//! experiment's premise) expects, so a ratio above 1 says what the study says. The rule, in
//! this order:
//!
//! 1. No figure to judge (NaN, zero, negative, a percentile without its samples): **undecided**.
//! 2. Ours within [`NOISE`] of 1 either way: **no measurable difference here**, or **agrees**
//!    when the study also found none (its ratio within [`NOISE`] of 1).
//! 3. Ours on the other side of 1 from the study's (or below 1 where the study gives none):
//!    **reversed here**.
//! 4. Ours within [`AGREE`] of the study's, either way: **agrees**; above it **larger here**,
//!    below it **smaller here**. Without a study ratio: **measurable here**.
//!
//! The words say how the numbers stand; what follows them in a verdict is the reason, which an
//! experiment computes from what it measured (a line count, a sample count, a fault count), so
//! no verdict reads the same whatever the data: each experiment's tests feed it data that flips
//! it.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A ratio within this factor of 1, either way, is no difference on this shared host: the
/// run-to-run spread of one variant is about this wide here.
pub const NOISE: f64 = 1.10;

/// Ours agrees with the study's ratio when within this factor of it, either way: a different
/// CPU, compiler and language put more between two ratios than noise does.
pub const AGREE: f64 = 1.5;

/// How our figure stands, by the rule above.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Standing {
    /// Within [`AGREE`] of the study's ratio (or both within [`NOISE`] of 1).
    Agrees,
    /// The study's direction, more than [`AGREE`]× its ratio.
    LargerHere,
    /// The study's direction, less than its ratio ÷ [`AGREE`].
    SmallerHere,
    /// Within [`NOISE`] of 1 where the study found a difference (or gives no ratio).
    NoDifference,
    /// The other way round from the study (or from the experiment's premise).
    Reversed,
    /// No study ratio to compare with; a difference beyond [`NOISE`] in the expected direction.
    Measurable,
    /// Nothing to judge: a figure missing or a percentile without its samples.
    Undecided,
}

impl Standing {
    /// The words a verdict starts with.
    pub fn words(self) -> &'static str {
        match self {
            Standing::Agrees => "agrees",
            Standing::LargerHere => "larger here",
            Standing::SmallerHere => "smaller here",
            Standing::NoDifference => "no measurable difference here",
            Standing::Reversed => "reversed here",
            Standing::Measurable => "measurable here",
            Standing::Undecided => "undecided",
        }
    }
}

impl fmt::Display for Standing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.words())
    }
}

fn usable(r: f64) -> bool {
    r.is_finite() && r > 0.0
}

fn near_one(r: f64) -> bool {
    (1.0 / NOISE..=NOISE).contains(&r)
}

/// Our ratio against the study's (when it states one), by the rule.
pub fn standing(ours: f64, study: Option<f64>) -> Standing {
    if !usable(ours) || study.is_some_and(|s| !usable(s)) {
        return Standing::Undecided;
    }
    match study {
        _ if near_one(ours) => match study {
            Some(s) if near_one(s) => Standing::Agrees,
            _ => Standing::NoDifference,
        },
        // The study found none; we found one.
        Some(s) if near_one(s) => {
            if ours > 1.0 {
                Standing::LargerHere
            } else {
                Standing::Reversed
            }
        }
        Some(s) if (ours > 1.0) != (s > 1.0) => Standing::Reversed,
        Some(s) => {
            let f = ours / s;
            if f > AGREE {
                Standing::LargerHere
            } else if f < 1.0 / AGREE {
                Standing::SmallerHere
            } else {
                Standing::Agrees
            }
        }
        None if ours < 1.0 => Standing::Reversed,
        None => Standing::Measurable,
    }
}

/// A verdict's text: the standing's words, our ratio against the study's, then the reason (from
/// the data).
pub fn verdict(ours: f64, study: Option<f64>, reason: &str) -> String {
    let s = standing(ours, study);
    let figures = match study {
        Some(st) if usable(ours) => format!(" ({ours:.2}× vs the study's {st:.2}×)"),
        None if usable(ours) => format!(" ({ours:.2}×)"),
        _ => String::new(),
    };
    if reason.is_empty() {
        format!("{s}{figures}")
    } else {
        format!("{s}{figures}: {reason}")
    }
}

/// The fewest samples a percentile `q` needs before the report prints it: 10 ÷ (1 − q), so at
/// least ten samples lie above it (p50: 20, p99: 1,000, p99.9: 10,000, p99.99: 100,000). With
/// fewer it is the maximum or next to it, and a verdict on it compares single samples.
pub fn samples_for(q: f64) -> u64 {
    let x = 10.0 / (1.0 - q);
    // 10 ÷ (1 − 0.9) is 100.000…01 in floating point: a whole number that close is meant.
    let whole = x.round();
    if (x - whole).abs() <= 1e-6 * x {
        whole as u64
    } else {
        x.ceil() as u64
    }
}

/// The spread of one figure over rounds: the median, the range, how many rounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

impl Spread {
    /// Of `v` (NaNs ignored); `None` when nothing is left.
    pub fn of(v: &[f64]) -> Option<Spread> {
        let mut v: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
            n,
        })
    }

    /// Whether two spreads' ranges overlap: their medians' difference is then inside the
    /// rounds' own spread.
    pub fn overlaps(&self, other: &Spread) -> bool {
        self.min <= other.max && other.min <= self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_in_each_of_its_branches() {
        assert_eq!(standing(1.4, Some(1.47)), Standing::Agrees);
        assert_eq!(standing(2.5, Some(1.47)), Standing::LargerHere);
        assert_eq!(standing(25.0, Some(70.0)), Standing::SmallerHere);
        assert_eq!(standing(2.92, Some(1.78)), Standing::LargerHere);
        assert_eq!(standing(1.02, Some(1.47)), Standing::NoDifference);
        assert_eq!(standing(1.02, Some(1.01)), Standing::Agrees);
        assert_eq!(standing(1.5, Some(1.01)), Standing::LargerHere);
        assert_eq!(standing(0.5, Some(1.01)), Standing::Reversed);
        assert_eq!(standing(0.5, Some(3.0)), Standing::Reversed);
        assert_eq!(standing(2.0, None), Standing::Measurable);
        assert_eq!(standing(0.8, None), Standing::Reversed);
        assert_eq!(standing(1.05, None), Standing::NoDifference);
        assert_eq!(standing(f64::NAN, Some(2.0)), Standing::Undecided);
        assert_eq!(standing(2.0, Some(f64::INFINITY)), Standing::Undecided);
        assert_eq!(standing(0.0, None), Standing::Undecided);
    }

    #[test]
    fn the_boundaries_are_the_stated_factors() {
        assert_eq!(standing(1.5 * 2.0, Some(2.0)), Standing::Agrees);
        assert_eq!(standing(1.51 * 2.0, Some(2.0)), Standing::LargerHere);
        assert_eq!(standing(2.0 / 1.49, Some(2.0)), Standing::Agrees);
        assert_eq!(standing(2.0 / 1.51, Some(2.0)), Standing::SmallerHere);
        assert_eq!(standing(NOISE, None), Standing::NoDifference);
        assert_eq!(standing(NOISE + 0.01, None), Standing::Measurable);
    }

    #[test]
    fn a_verdict_is_words_figures_and_reason() {
        assert_eq!(
            verdict(2.92, Some(1.78), "SoA moves 2.0× fewer bytes"),
            "larger here (2.92× vs the study's 1.78×): SoA moves 2.0× fewer bytes"
        );
        assert_eq!(verdict(f64::NAN, None, "x"), "undecided: x");
        assert_eq!(verdict(3.0, None, ""), "measurable here (3.00×)");
    }

    #[test]
    fn a_percentile_needs_ten_samples_beyond_it() {
        assert_eq!(samples_for(0.5), 20);
        assert_eq!(samples_for(0.9), 100);
        assert_eq!(samples_for(0.99), 1_000);
        assert_eq!(samples_for(0.999), 10_000);
        assert_eq!(samples_for(0.9999), 100_000);
    }

    #[test]
    fn a_spread_is_median_and_range() {
        let s = Spread::of(&[3.0, 1.0, f64::NAN, 2.0, 10.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (2.5, 1.0, 10.0, 4));
        assert_eq!(Spread::of(&[5.0]).unwrap().median, 5.0);
        assert!(Spread::of(&[f64::NAN]).is_none());
        let a = Spread::of(&[1.0, 2.0]).unwrap();
        assert!(a.overlaps(&Spread::of(&[2.0, 3.0]).unwrap()));
        assert!(!a.overlaps(&Spread::of(&[2.5, 3.0]).unwrap()));
    }
}
