//! `--burst`: the open's bursts over a steady rate. Every period after the first starts with a
//! window at a multiple of the rate (`10x100ms`: ten times the rate for 100 ms, once a second),
//! then the rest of the period at the rate. The first period is steady, so the trader has its
//! feed confirmed, its books built and its caches warm before the first burst.
//!
//! Open loop like a steady rate: message `k` of the run has a due time, and each print's
//! latency is timed from its own. A sender that can't keep the burst's rate shows as late
//! sends, never as a slower burst.
use std::{fmt, str::FromStr};

use crate::span::{span_ns, span_text};

/// A burst pattern: `factor` times the rate for `len_ns`, at the start of every `every_ns`
/// after the first.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Burst {
    factor: f64,
    len_ns: u64,
    every_ns: u64,
}

impl Burst {
    /// The default period between bursts' starts: one second.
    pub const EVERY_NS: u64 = 1_000_000_000;
    /// The largest factor: a thousand times the rate.
    pub const MAX_FACTOR: f64 = 1_000.0;

    /// The multiple of the rate inside a burst.
    pub fn factor(self) -> f64 {
        self.factor
    }

    /// A burst's length, ns.
    pub fn len_ns(self) -> u64 {
        self.len_ns
    }

    /// From one burst's start to the next, ns.
    pub fn every_ns(self) -> u64 {
        self.every_ns
    }

    /// Whether a time `offset_ns` after the start lies in a burst.
    pub fn in_burst(self, offset_ns: u64) -> bool {
        offset_ns >= self.every_ns && offset_ns % self.every_ns < self.len_ns
    }

    /// Messages in a burst and in a whole later period, at `rate` messages/s.
    fn per_period(self, rate: f64) -> (f64, f64) {
        let (len, every) = (self.len_ns as f64 / 1e9, self.every_ns as f64 / 1e9);
        let fast = rate * self.factor * len;
        (fast, fast + rate * (every - len))
    }

    /// When message `k` of the run is due, ns after the start, at a base `rate` messages/s.
    pub fn offset_ns(self, rate: f64, k: u64) -> u64 {
        let every = self.every_ns as f64 / 1e9;
        let steady = rate * every;
        let k = k as f64;
        if k < steady {
            return (k / rate * 1e9).round() as u64;
        }
        let (fast, period) = self.per_period(rate);
        let k = k - steady;
        let p = (k / period).floor();
        let j = k - p * period;
        let base = every * (1.0 + p);
        let t = if j < fast {
            base + j / (rate * self.factor)
        } else {
            base + self.len_ns as f64 / 1e9 + (j - fast) / rate
        };
        (t * 1e9).round() as u64
    }

    /// How many messages are due before `seconds` into a run at a base `rate`.
    pub fn messages_in(self, rate: f64, seconds: f64) -> u64 {
        let every = self.every_ns as f64 / 1e9;
        if seconds <= every {
            return (seconds * rate).ceil() as u64;
        }
        let (fast, period) = self.per_period(rate);
        let len = self.len_ns as f64 / 1e9;
        let later = seconds - every;
        let p = (later / every).floor();
        let rem = later - p * every;
        let part = if rem < len {
            rem * rate * self.factor
        } else {
            fast + (rem - len) * rate
        };
        (rate * every + p * period + part).ceil() as u64
    }

    /// The mean rate over whole periods, for a base `rate`.
    pub fn mean_rate(self, rate: f64) -> f64 {
        self.per_period(rate).1 / (self.every_ns as f64 / 1e9)
    }
}

impl FromStr for Burst {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = |why: &str| {
            format!(
                "bad burst {s:?}: {why}; write FACTORxLEN[/EVERY], e.g. 10x100ms (ten times \
                 the rate for 100 ms, once a second) or 5x20ms/250ms"
            )
        };
        let (factor, rest) = s.split_once('x').ok_or_else(|| bad("no x"))?;
        let factor: f64 = factor
            .parse()
            .map_err(|_| bad("the factor is not a number"))?;
        if !(factor > 1.0 && factor <= Self::MAX_FACTOR) {
            return Err(bad("the factor must be above 1 and at most 1000"));
        }
        let (len, every) = match rest.split_once('/') {
            Some((l, e)) => (l, Some(e)),
            None => (rest, None),
        };
        let len_ns = span_ns(len)
            .filter(|&n| n > 0)
            .ok_or_else(|| bad("the length is not a span with its unit"))?;
        let every_ns = match every {
            Some(e) => span_ns(e).ok_or_else(|| bad("the period is not a span with its unit"))?,
            None => Self::EVERY_NS,
        };
        if len_ns >= every_ns {
            return Err(bad("a burst must be shorter than its period"));
        }
        Ok(Burst {
            factor,
            len_ns,
            every_ns,
        })
    }
}

/// What [`FromStr`] reads back (the period always written).
impl fmt::Display for Burst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}x{}/{}",
            self.factor,
            span_text(self.len_ns),
            span_text(self.every_ns)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Burst {
        s.parse().unwrap()
    }

    #[test]
    fn parses_what_it_writes_and_refuses_what_is_not_a_burst() {
        let x = b("10x100ms");
        assert_eq!(
            (x.factor(), x.len_ns(), x.every_ns()),
            (10.0, 100_000_000, 1_000_000_000)
        );
        assert_eq!(x.to_string(), "10x100ms/1s");
        assert_eq!(b(&x.to_string()), x);
        assert_eq!(b("2.5x20ms/250ms").to_string(), "2.5x20ms/250ms");
        for bad in [
            "", "10", "10x", "x100ms", "1x100ms", "0.5x1ms", "2000x1ms", "10x100", "10x0ms",
            "10x1s/1s", "10x2s", "10x1ms/", "tenx1ms",
        ] {
            assert!(bad.parse::<Burst>().is_err(), "{bad:?} parsed");
        }
    }

    /// The schedule at its seams: steady through the first period, `factor` times as dense in
    /// each burst, steady again after it; monotonic; and `messages_in` its inverse.
    #[test]
    fn the_schedule_is_steady_then_bursts_at_each_period_start() {
        let x = b("10x100ms");
        let rate = 1_000.0; // 1 ms a message when steady
        // The first period: 1,000 messages, 1 ms apart.
        assert_eq!(x.offset_ns(rate, 0), 0);
        assert_eq!(x.offset_ns(rate, 999), 999_000_000);
        // The burst: 1,000 messages in 100 ms, 100 µs apart.
        assert_eq!(x.offset_ns(rate, 1_000), 1_000_000_000);
        assert_eq!(x.offset_ns(rate, 1_001), 1_000_100_000);
        assert_eq!(x.offset_ns(rate, 1_999), 1_099_900_000);
        // Then 900 messages 1 ms apart, and the next burst at 2 s.
        assert_eq!(x.offset_ns(rate, 2_000), 1_100_000_000);
        assert_eq!(x.offset_ns(rate, 2_899), 1_999_000_000);
        assert_eq!(x.offset_ns(rate, 2_900), 2_000_000_000);
        assert_eq!(x.offset_ns(rate, 3_901), 2_101_000_000);
        let mut last = 0;
        for k in 0..20_000 {
            let t = x.offset_ns(rate, k);
            assert!(t >= last, "message {k} at {t} before {last}");
            last = t;
            // Just after message k is due, k + 1 are.
            let n = x.messages_in(rate, t as f64 / 1e9 + 1e-8);
            assert!(n == k + 1, "message {k} at {t}: {n} due by then");
        }
        assert!(x.in_burst(1_050_000_000) && !x.in_burst(50_000_000) && !x.in_burst(1_100_000_000));
        assert_eq!(x.mean_rate(rate), 1_900.0);
    }
}
