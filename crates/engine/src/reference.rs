//! The reference kernel: the spec written out for clarity, one combo at a time.
//!
//! This is the truth every faster variant is checked against, bit for bit. Nothing here is
//! clever: each WMA output is its own direct sum, oldest to newest, starting from 0.0.
//!
//! # Edge cases (documented results, never a panic)
//! - A window longer than the series: every WMA output is NaN, so no bar qualifies; the
//!   result is 0 trades and PnL 0.0.
//! - NaNs in the input: any WMA window holding a NaN is NaN (it propagates through the sums),
//!   the indicators derived from it are NaN, and bars whose `hma`/`hma3` at `i` or `i - 1` are
//!   NaN are skipped. If the last close is NaN while a position is open, the forced close books
//!   a NaN PnL (the spec's rule applied literally); the trade still counts.
//! - An empty series: 0 trades, PnL 0.0.
//! - `n < 1`: rejected earlier, by [`Params::from_n`] ([`Error::InvalidWindow`]).

use crate::signal::{Signal, run_events};
use crate::{ComboResult, Error, Params};

/// `WMA(x, w)`: NaN for the first `w - 1` positions, then
/// `sum_{j=0..w-1} x[i-w+1+j] * (j+1) / (w(w+1)/2)`, summed oldest to newest.
///
/// `w = 0` gives all NaN (no window); the kernels never pass it.
#[must_use]
pub fn wma(x: &[f64], w: usize) -> Vec<f64> {
    let mut out = vec![f64::NAN; x.len()];
    if w == 0 {
        return out;
    }
    let den = (w * (w + 1) / 2) as f64;
    for i in (w - 1)..x.len() {
        let mut s = 0.0;
        for j in 0..w {
            s += x[i + 1 - w + j] * (j + 1) as f64;
        }
        out[i] = s / den;
    }
    out
}

/// `HMA(n) = WMA(2 * WMA(close, half) - WMA(close, n), sq)`.
#[must_use]
pub fn hma(close: &[f64], p: &Params) -> Vec<f64> {
    let w = p.windows();
    let a = wma(close, w.half);
    let b = wma(close, w.n);
    let diff: Vec<f64> = a.iter().zip(&b).map(|(&a, &b)| 2.0 * a - b).collect();
    wma(&diff, w.sq)
}

/// `HMA3(n) = WMA(3 * WMA(close, p3) - WMA(close, p2) - WMA(close, p), p)`.
#[must_use]
pub fn hma3(close: &[f64], p: &Params) -> Vec<f64> {
    let w = p.windows();
    let a = wma(close, w.p3);
    let b = wma(close, w.p2);
    let c = wma(close, w.p);
    let der: Vec<f64> = a
        .iter()
        .zip(&b)
        .zip(&c)
        .map(|((&a, &b), &c)| 3.0 * a - b - c)
        .collect();
    wma(&der, w.p)
}

/// Backtests one combo: the stop-and-reverse event loop over [`hma`] and [`hma3`], every
/// trade booked through [`crate::Ledger`].
///
/// # Errors
/// None today ([`Params`] is valid by construction); kept fallible so that a future check
/// (say, a series too long for the wire) is not an API break.
pub fn backtest(close: &[f64], p: &Params) -> Result<ComboResult, Error> {
    Ok(run_events(
        close,
        &hma(close, p),
        &hma3(close, p),
        |_, _| {},
    ))
}

/// Like [`backtest`], also returning every fill as `(bar index, signal)`, in order.
///
/// # Errors
/// As [`backtest`].
pub fn signals(close: &[f64], p: &Params) -> Result<(ComboResult, Vec<(usize, Signal)>), Error> {
    let mut fills = Vec::new();
    let r = run_events(close, &hma(close, p), &hma3(close, p), |i, s| {
        fills.push((i, s))
    });
    Ok((r, fills))
}

/// The reference sweep: [`backtest`] on each combo in turn, one thread.
///
/// # Errors
/// As [`backtest`].
pub fn sweep(close: &[f64], grid: &[Params]) -> Result<Vec<ComboResult>, Error> {
    grid.iter().map(|p| backtest(close, p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wma_by_hand() {
        let x = [1.0, 2.0, 3.0, 4.0];
        let out = wma(&x, 3);
        assert!(out[0].is_nan() && out[1].is_nan());
        assert_eq!(out[2], (1.0 + 4.0 + 9.0) / 6.0);
        assert_eq!(out[3], (2.0 + 6.0 + 12.0) / 6.0);
        assert_eq!(wma(&x, 1), x.to_vec());
        assert!(wma(&x, 5).iter().all(|v| v.is_nan()));
    }

    #[test]
    fn wma_nan_poisons_its_windows_only() {
        let x = [1.0, f64::NAN, 3.0, 4.0, 5.0, 6.0];
        let out = wma(&x, 2);
        let nan: Vec<bool> = out.iter().map(|v| v.is_nan()).collect();
        assert_eq!(nan, [true, true, true, false, false, false]);
    }
}
