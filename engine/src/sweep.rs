//! The fast sweep: bit-identical to [`crate::reference::sweep`] on every combo.
//!
//! Where the speed comes from, none of it changing a single floating-point operation:
//! - Each distinct close-series WMA window is computed once and shared by every combo (and
//!   within a combo: `half == p`). On the default grid that is 134 windows instead of 400.
//! - WMAs are computed several output positions at a time (`wma::wma_into`), so the adder
//!   works on independent sums instead of waiting on one chain; every sum keeps its order.
//! - Both phases (shared WMAs, then per-combo indicators and the event loop) are spread
//!   over `threads` scoped threads taking work from a shared counter, largest jobs first.
//!
//! The event loop and [`crate::Ledger`] are the reference's own code.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::signal::run_events;
use crate::wma::wma_into;
use crate::{ComboResult, Error, Params};

/// Runs `job(i)` for every `i` in `order` on `threads` threads, returning results by `i`.
fn par_map<T: Send>(
    threads: usize,
    order: &[usize],
    job: impl Fn(usize) -> T + Sync,
) -> Vec<Option<T>> {
    let next = AtomicUsize::new(0);
    let len = order.iter().max().map_or(0, |m| m + 1);
    let out: Mutex<Vec<Option<T>>> = Mutex::new((0..len).map(|_| None).collect());
    let work = || {
        let mut local = Vec::new();
        loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            let Some(&i) = order.get(k) else { break };
            local.push((i, job(i)));
        }
        let mut out = out
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (i, v) in local {
            out[i] = Some(v);
        }
    };
    if threads <= 1 {
        work();
    } else {
        std::thread::scope(|s| {
            for _ in 1..threads {
                s.spawn(work);
            }
            work();
        });
    }
    out.into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Sweeps `grid` over `close` on `threads` threads (2 on this lab's machines).
///
/// # Errors
/// [`Error::NoThreads`] when `threads == 0`.
pub fn sweep(close: &[f64], grid: &[Params], threads: usize) -> Result<Vec<ComboResult>, Error> {
    if threads == 0 {
        return Err(Error::NoThreads);
    }
    let len = close.len();

    // Phase 1: every distinct window over the closes, once.
    let windows: Vec<usize> = grid
        .iter()
        .flat_map(|p| {
            let w = p.windows();
            [w.n, w.half, w.p, w.p3, w.p2]
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let biggest_first: Vec<usize> = (0..windows.len()).rev().collect();
    let shared: Vec<Vec<f64>> = par_map(threads, &biggest_first, |k| {
        let mut out = vec![0.0; len];
        wma_into(close, windows[k], &mut out);
        out
    })
    .into_iter()
    .flatten()
    .collect();
    let wma_of = |w: usize| -> &[f64] {
        // `windows` is sorted and holds every window a combo asks for.
        let k = windows.binary_search(&w).unwrap_or_default();
        &shared[k]
    };

    // Phase 2: per combo, the derived series, their WMAs and the event loop.
    let mut order: Vec<usize> = (0..grid.len()).collect();
    order.sort_by_key(|&c| {
        let w = grid[c].windows();
        std::cmp::Reverse(w.sq + w.p)
    });
    let results = par_map(threads, &order, |c| {
        let w = grid[c].windows();
        let mut derived = vec![0.0; len];
        let mut hma = vec![0.0; len];
        let mut hma3 = vec![0.0; len];
        for ((d, &a), &b) in derived.iter_mut().zip(wma_of(w.half)).zip(wma_of(w.n)) {
            *d = 2.0 * a - b;
        }
        wma_into(&derived, w.sq, &mut hma);
        for (((d, &a), &b), &c) in derived
            .iter_mut()
            .zip(wma_of(w.p3))
            .zip(wma_of(w.p2))
            .zip(wma_of(w.p))
        {
            *d = 3.0 * a - b - c;
        }
        wma_into(&derived, w.p, &mut hma3);
        run_events(close, &hma, &hma3, |_, _| {})
    });
    Ok(results.into_iter().map(Option::unwrap_or_default).collect())
}
