//! The reference kernel against the published fingerprint, and every faster variant against
//! the reference, bit for bit.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use {
    anyhow as _, clap as _, criterion as _, proptest as _, pulp as _, serde_json as _, sha2 as _,
    thiserror as _,
};

use engine::{ComboResult, Error, Params, Side, Signal, Strategy, grid_default, reference, sweep};

fn spec_series() -> Vec<f64> {
    engine::data::gbm(engine::data::SPEC_SEED, engine::data::SPEC_BARS)
}

fn params(n: i64) -> Params {
    Params::from_n(n).unwrap_or_else(|e| panic!("n = {n}: {e}"))
}

fn same_bits(a: ComboResult, b: ComboResult) -> bool {
    a.trades == b.trades && a.pnl.to_bits() == b.pnl.to_bits()
}

#[test]
fn combo_zero_matches_published_fingerprint() {
    let r = reference::backtest(&spec_series(), &params(6)).expect("backtest");
    assert_eq!(r.trades, 57_029);
    assert_eq!(format!("{:.2}", r.pnl), "-5165.58");
    assert!((r.pnl - -5_165.579_95).abs() < 1e-5, "{}", r.pnl);
}

/// The one run of the full reference sweep (a few seconds); everything else compares to it.
#[test]
fn fast_sweep_is_bit_identical_to_reference_on_all_80_combos() {
    let close = spec_series();
    let grid = grid_default();
    let want = reference::sweep(&close, &grid).expect("reference sweep");
    assert_eq!(want[0].trades, 57_029);
    for threads in [1, 2, 3] {
        let got = sweep::sweep(&close, &grid, threads).expect("fast sweep");
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                same_bits(*g, *w),
                "threads {threads}, combo {i} (n = {}): fast {g:?} != reference {w:?}",
                grid[i].n()
            );
        }
    }
}

fn stream(close: &[f64], p: Params, prepare: bool) -> (ComboResult, Vec<(usize, Signal)>) {
    let mut s = Strategy::new(p);
    let mut fills = Vec::new();
    for (i, &x) in close.iter().enumerate() {
        if let Some(sig) = s.on_tick(x) {
            fills.push((i, sig));
        }
        if prepare {
            s.prepare();
        }
    }
    s.finish();
    (s.result(), fills)
}

#[test]
fn streaming_equals_batch() {
    let close = spec_series();
    for n in [6, 103, 200] {
        let p = params(n);
        let (want, want_fills) = reference::signals(&close, &p).expect("batch");
        assert!(want.trades > 100, "n = {n}: a meaningful number of trades");
        for prepare in [true, false] {
            let (got, fills) = stream(&close, p, prepare);
            assert_eq!(
                fills.len(),
                want_fills.len(),
                "n = {n}, prepare {prepare}: signal count"
            );
            assert!(
                fills == want_fills,
                "n = {n}, prepare {prepare}: signal sequence differs"
            );
            assert!(
                same_bits(got, want),
                "n = {n}, prepare {prepare}: stream {got:?} != batch {want:?}"
            );
        }
    }
}

#[test]
fn streaming_signals_are_well_formed() {
    let close = spec_series();
    let (_, fills) = reference::signals(&close[..20_000], &params(6)).expect("batch");
    assert!(!fills[0].1.reverse, "the first fill opens from flat");
    for pair in fills.windows(2) {
        assert_ne!(
            pair[0].1.side, pair[1].1.side,
            "stop-and-reverse alternates sides"
        );
        assert!(pair[1].1.reverse);
    }
    assert!(fills.iter().any(|(_, s)| s.side == Side::Short));
}

/// Random windows straight off the wire, not derived from n, and a NaN-laced series.
#[test]
fn fast_and_streaming_match_reference_on_odd_params_and_nans() {
    let mut close = engine::data::gbm(7, 5_000);
    for i in [0, 1, 777, 778, 2_500, 4_000] {
        close[i] = f64::NAN;
    }
    let grid: Vec<Params> = [
        [6, 3, 2, 3, 1, 2],
        [1, 1, 1, 1, 1, 1],
        [7, 5, 3, 9, 2, 4],
        [40, 1, 17, 2, 33, 50],
        [30, 15, 5, 15, 5, 8],
    ]
    .into_iter()
    .map(|w| Params::from_wire(w).expect("valid windows"))
    .collect();
    let want = reference::sweep(&close, &grid).expect("reference");
    let got = sweep::sweep(&close, &grid, 2).expect("fast");
    for (i, p) in grid.iter().enumerate() {
        assert!(
            same_bits(got[i], want[i]),
            "{:?}: fast {:?} != reference {:?}",
            p.to_wire(),
            got[i],
            want[i]
        );
        let (s, _) = stream(&close, *p, i % 2 == 0);
        assert!(
            same_bits(s, want[i]),
            "{:?}: stream {s:?} != reference {:?}",
            p.to_wire(),
            want[i]
        );
    }
}

#[test]
fn edge_cases_give_documented_results() {
    let close = spec_series();
    let empty = ComboResult {
        pnl: 0.0,
        trades: 0,
    };

    // Window longer than the series: no signals.
    let short = &close[..150];
    assert_eq!(
        reference::backtest(short, &params(200)).expect("short"),
        empty
    );
    assert_eq!(
        sweep::sweep(short, &[params(200)], 2).expect("short")[0],
        empty
    );

    // Empty series.
    assert_eq!(reference::backtest(&[], &params(6)).expect("empty"), empty);
    assert_eq!(
        sweep::sweep(&[], &grid_default(), 2).expect("empty"),
        vec![empty; 80]
    );
    let mut s = Strategy::new(params(6));
    s.finish();
    assert_eq!(s.result(), empty);

    // Empty grid, zero threads.
    assert_eq!(
        sweep::sweep(&close[..100], &[], 2).expect("no combos"),
        vec![]
    );
    assert!(matches!(
        sweep::sweep(&close[..100], &[params(6)], 0),
        Err(Error::NoThreads)
    ));

    // n < 1.
    assert!(matches!(
        Params::from_n(0),
        Err(Error::InvalidWindow {
            name: "n",
            value: 0
        })
    ));

    // A NaN in the middle only silences the bars whose windows see it.
    let mut with_nan = close[..10_000].to_vec();
    with_nan[5_000] = f64::NAN;
    let r = reference::backtest(&with_nan, &params(6)).expect("nan");
    assert!(r.pnl.is_finite() && r.trades > 0);
    // All NaN: nothing happens.
    assert_eq!(
        reference::backtest(&[f64::NAN; 500], &params(6)).expect("all nan"),
        empty
    );
    // A NaN last close with a position open: the forced close books NaN (documented).
    let mut last_nan = close[..10_000].to_vec();
    last_nan[9_999] = f64::NAN;
    let r = reference::backtest(&last_nan, &params(6)).expect("last nan");
    assert!(r.pnl.is_nan());
}

#[test]
fn scaling_the_series_keeps_trades() {
    let close = spec_series();
    let scaled: Vec<f64> = close[..30_000].iter().map(|x| x * 2.0).collect();
    let a = reference::backtest(&close[..30_000], &params(6)).expect("a");
    let b = reference::backtest(&scaled, &params(6)).expect("b");
    assert_eq!(a, b);
}
