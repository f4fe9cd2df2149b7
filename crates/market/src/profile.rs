//! When in the day the messages come: an intraday intensity in 10-second bins from 04:00 to
//! 20:00, U-shaped over the regular session with a burst at the open, and the map from a
//! uniform clock onto it.
//!
//! The shape is fitted to NASDAQ TotalView-ITCH 5.0 of 2019-10-30 (the cumulative counts at
//! each system event and every 25 M messages in Jansen's parse notebook): 3.25 % of the day's
//! messages before 09:30 and 1.04 % after 16:00; about 18.2 k msg/s over 09:30-09:44, 7.3 k
//! over the midday trough (12:44-13:41) and 27.6 k over 15:50-16:00, so 2.5×, 1× and 3.8× the
//! trough. No published figure resolves the open below those 14 minutes: the first ten seconds
//! at 20× the trough and the rest of the first minute at 6× are this generator's choice (the
//! "opening burst"), within the 14-minute mean.

/// Seconds since midnight at the start of the first bin (04:00, start of system hours).
pub(crate) const START_S: u64 = 4 * 3600;
/// Seconds since midnight at the end of the last bin (20:00, end of system hours).
pub(crate) const END_S: u64 = 20 * 3600;
/// The regular session's open, 09:30.
pub const OPEN_S: u64 = 9 * 3600 + 30 * 60;
/// The regular session's close, 16:00.
pub const CLOSE_S: u64 = 16 * 3600;
/// Width of a bin.
pub(crate) const BIN_S: u64 = 10;
/// Nanoseconds per second.
pub(crate) const NS: u64 = 1_000_000_000;

/// The relative intensity at `t` seconds since midnight, the midday trough = 1.
pub fn intensity(t: u64) -> f64 {
    let m = |h: u64, min: u64| h * 3600 + min * 60;
    match t {
        _ if t < m(8, 0) => 0.015,
        _ if t < m(9, 25) => 0.12,
        _ if t < OPEN_S => 1.0,
        _ if t < OPEN_S + 10 => 20.0,
        _ if t < OPEN_S + 60 => 6.0,
        _ if t < m(9, 44) => 1.8,
        // 1.8x at 09:44, linearly down to 1.3x at 10:30.
        _ if t < m(10, 30) => 1.8 - 0.5 * (t - m(9, 44)) as f64 / (m(10, 30) - m(9, 44)) as f64,
        _ if t < m(12, 0) => 1.3,
        _ if t < m(14, 0) => 1.0,
        _ if t < m(15, 30) => 1.3,
        _ if t < m(15, 50) => 2.0,
        _ if t < CLOSE_S - 60 => 3.8,
        _ if t < CLOSE_S => 5.0,
        _ => 0.025,
    }
}

/// The map from a uniform clock u in [0, 1) onto the day, by the intensity: the cumulative
/// intensity of the bins, inverted by a cursor that only moves forward (the generator's clock
/// only moves forward).
#[derive(Debug, Clone)]
pub(crate) struct Profile {
    cumulative: Vec<f64>,
    cursor: usize,
}

impl Profile {
    pub(crate) fn new() -> Profile {
        let bins = ((END_S - START_S) / BIN_S) as usize;
        let mut cumulative = Vec::with_capacity(bins + 1);
        let mut sum = 0.0;
        cumulative.push(0.0);
        for b in 0..bins as u64 {
            sum += intensity(START_S + b * BIN_S);
            cumulative.push(sum);
        }
        for c in &mut cumulative {
            *c /= sum;
        }
        Profile {
            cumulative,
            cursor: 0,
        }
    }

    /// Nanoseconds since midnight for a uniform clock `u` no smaller than the last one asked.
    pub(crate) fn time_ns(&mut self, u: f64) -> u64 {
        let c = &self.cumulative;
        while self.cursor + 2 < c.len() && c[self.cursor + 1] <= u {
            self.cursor += 1;
        }
        let (lo, hi) = (c[self.cursor], c[self.cursor + 1]);
        let frac = if hi > lo {
            ((u - lo) / (hi - lo)).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let bin_start = START_S + self.cursor as u64 * BIN_S;
        bin_start * NS + (frac * (BIN_S * NS) as f64) as u64
    }

    /// The share of the day's messages between two times (seconds since midnight).
    #[cfg(test)]
    pub(crate) fn share(&self, from_s: u64, to_s: u64) -> f64 {
        let bin = |t: u64| ((t.clamp(START_S, END_S) - START_S) / BIN_S) as usize;
        self.cumulative[bin(to_s)] - self.cumulative[bin(from_s)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_maps_onto_the_day_in_order() {
        let mut p = Profile::new();
        let mut last = 0;
        for k in 0..=10_000 {
            let t = p.time_ns(f64::from(k) / 10_001.0);
            assert!(t >= last);
            assert!((START_S * NS..END_S * NS).contains(&t));
            last = t;
        }
    }

    #[test]
    fn most_messages_in_the_session_and_a_burst_at_the_open() {
        let p = Profile::new();
        let session = p.share(OPEN_S, CLOSE_S);
        assert!(session > 0.9, "{session}");
        // The first minute is several times an average session minute.
        let first = p.share(OPEN_S, OPEN_S + 60);
        let mean_minute = session / 390.0;
        assert!(first > 5.0 * mean_minute, "{first} vs {mean_minute}");
    }
}
