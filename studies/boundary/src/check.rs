//! The gate of the study: a mode's per-combo (PnL, trades) must equal the in-process ones
//! (trades exactly, PnL within [`PNL_TOLERANCE`]) before any time of it is reported.
use engine::ComboResult;

/// Largest PnL difference accepted. Every mode here runs the same engine code on the same
/// bytes, so PnL is in fact bit-equal; the tolerance is the brief's, the study's gate is 1e-6.
pub const PNL_TOLERANCE: f64 = 1e-9;

/// How a mode's results differ from the expected ones.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "{mode}: {differing} of {expected_len} combos differ from in-process (got {got_len}); \
     first at combo {first}: expected {expected:?}, got {got:?}"
)]
pub struct Mismatch {
    /// The mode checked.
    pub mode: String,
    /// Combos expected.
    pub expected_len: usize,
    /// Combos the mode returned.
    pub got_len: usize,
    /// Combos that differ (a missing or extra combo counts as differing).
    pub differing: usize,
    /// The first differing combo.
    pub first: usize,
    /// Its expected result (`None` when the mode returned an extra combo).
    pub expected: Option<ComboResult>,
    /// Its result from the mode (`None` when the mode returned too few).
    pub got: Option<ComboResult>,
}

/// True when `got` passes for `want`: trades equal, PnL within [`PNL_TOLERANCE`] (NaN only
/// passes for NaN).
#[must_use]
pub fn same(want: &ComboResult, got: &ComboResult) -> bool {
    want.trades == got.trades
        && (want.pnl.to_bits() == got.pnl.to_bits() || (want.pnl - got.pnl).abs() <= PNL_TOLERANCE)
}

/// Checks `got` against `expected`, combo by combo.
///
/// # Errors
/// A [`Mismatch`] naming the mode, how many combos differ and the first of them.
pub fn check(mode: &str, expected: &[ComboResult], got: &[ComboResult]) -> Result<(), Mismatch> {
    let n = expected.len().max(got.len());
    let bad: Vec<usize> = (0..n)
        .filter(|&i| match (expected.get(i), got.get(i)) {
            (Some(w), Some(g)) => !same(w, g),
            _ => true,
        })
        .collect();
    match bad.first() {
        None => Ok(()),
        Some(&first) => Err(Mismatch {
            mode: mode.to_owned(),
            expected_len: expected.len(),
            got_len: got.len(),
            differing: bad.len(),
            first,
            expected: expected.get(first).copied(),
            got: got.get(first).copied(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(pnl: f64, trades: u64) -> ComboResult {
        ComboResult { pnl, trades }
    }

    #[test]
    fn equal_results_pass() {
        let a = [r(-5165.58, 57_029), r(0.0, 0)];
        assert_eq!(check("same", &a, &a), Ok(()));
        assert_eq!(check("nan", &[r(f64::NAN, 1)], &[r(f64::NAN, 1)]), Ok(()));
        assert_eq!(check("tiny", &[r(1.0, 1)], &[r(1.0 + 1e-12, 1)]), Ok(()));
    }

    #[test]
    fn a_wrong_result_fails_loudly() {
        let want = [r(-5165.58, 57_029), r(12.5, 300), r(1.0, 2)];
        let mut got = want;
        got[1].trades += 1;
        got[2].pnl += 1e-6;
        let e = check("uds-batched", &want, &got).expect_err("must fail");
        assert_eq!(e.differing, 2);
        assert_eq!(e.first, 1);
        let msg = e.to_string();
        assert!(
            msg.contains("uds-batched") && msg.contains("combo 1"),
            "{msg}"
        );
    }

    #[test]
    fn missing_or_extra_combos_fail() {
        let want = [r(1.0, 1), r(2.0, 2)];
        let e = check("short", &want, &want[..1]).expect_err("too few");
        assert_eq!((e.first, e.got), (1, None));
        let e = check("long", &want[..1], &want).expect_err("too many");
        assert_eq!((e.first, e.expected), (1, None));
        assert!(check("nan", &[r(1.0, 1)], &[r(f64::NAN, 1)]).is_err());
    }
}
