//! The fast sweep: bit-identical to [`crate::reference::sweep`] on every combo.
//!
//! Where the speed comes from, none of it changing a single floating-point operation:
//! - Each distinct close-series WMA window is computed once and shared by every combo that
//!   uses it (and within a combo: `half == p`). On the default grid that is 134 windows
//!   instead of 400.
//! - WMAs are computed many output positions at a time (`wma::wma_span`), so the adders work
//!   on independent sums instead of waiting on one chain; every sum keeps its order. They run
//!   AVX-512- or AVX2-wide where the CPU has it (runtime dispatch, see `wma.rs`).
//! - Time blocks: the series is processed `BLOCK` bars at a time, all WMAs of a block (plus
//!   the outer windows' look-back) held in a few MB of cache-resident scratch, and each
//!   combo's event loop carried from block to block. Nothing series-sized is allocated per
//!   window or per combo.
//! - Threads: combos are split, sorted by `n`, into one contiguous group per thread of about
//!   equal cost; neighbouring `n` share windows, so the groups' shared WMAs barely overlap
//!   and the threads never synchronise until they join.
//!
//! The event loop and [`crate::Ledger`] are the reference's own code.

use std::collections::BTreeSet;

use crate::signal::Events;
use crate::wma::wma_span;
use crate::{ComboResult, Error, Params};

/// Bars per time block: large enough that recomputing the outer windows' look-back (at most
/// `p - 1` bars) costs a few percent, small enough that a block's WMAs stay in cache.
const BLOCK: usize = 4096;

/// Sweeps `grid` over `close` on `threads` threads (2 on this lab's machines).
///
/// # Errors
/// [`Error::NoThreads`] when `threads == 0`.
pub fn sweep(close: &[f64], grid: &[Params], threads: usize) -> Result<Vec<ComboResult>, Error> {
    if threads == 0 {
        return Err(Error::NoThreads);
    }
    let groups = split(grid, threads);
    let mut results = vec![ComboResult::default(); grid.len()];
    let done: Vec<Vec<(usize, ComboResult)>> = if groups.len() <= 1 {
        groups.iter().map(|g| run_group(close, grid, g)).collect()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = groups[1..]
                .iter()
                .map(|g| s.spawn(|| run_group(close, grid, g)))
                .collect();
            let mut done = vec![run_group(close, grid, &groups[0])];
            for h in handles {
                // A panic in a worker is a bug in this module; surface it where it happened.
                done.push(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
            }
            done
        })
    };
    for (c, r) in done.into_iter().flatten() {
        results[c] = r;
    }
    Ok(results)
}

/// A rough cost of one combo: multiply-adds per bar if nothing were shared.
fn cost(p: &Params) -> usize {
    let w = p.windows();
    w.n + w.half + w.p3 + w.p2 + w.sq + 2 * w.p
}

/// Combo indices sorted by `n`, cut into at most `threads` contiguous groups of similar cost.
fn split(grid: &[Params], threads: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..grid.len()).collect();
    order.sort_by_key(|&c| grid[c].n());
    let total: usize = grid.iter().map(cost).sum();
    let per = total.div_ceil(threads).max(1);
    let mut groups: Vec<Vec<usize>> = vec![Vec::new()];
    let mut acc = 0;
    for c in order {
        if acc >= per * groups.len() && groups.len() < threads {
            groups.push(Vec::new());
        }
        acc += cost(&grid[c]);
        if let Some(g) = groups.last_mut() {
            g.push(c);
        }
    }
    groups.retain(|g| !g.is_empty());
    groups
}

/// Backtests the combos `group` of `grid`, block by block.
fn run_group(close: &[f64], grid: &[Params], group: &[usize]) -> Vec<(usize, ComboResult)> {
    let len = close.len();
    let windows: Vec<usize> = group
        .iter()
        .flat_map(|&c| {
            let w = grid[c].windows();
            [w.n, w.half, w.p, w.p3, w.p2]
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    // `windows` is sorted and holds every window of the group.
    let slot = |w: usize| windows.binary_search(&w).unwrap_or_default();
    let look = group
        .iter()
        .map(|&c| grid[c].windows())
        .map(|w| w.sq.max(w.p) - 1)
        .max()
        .unwrap_or(0);
    let span = BLOCK + look;

    let mut first = vec![0.0; windows.len() * span];
    let mut derived = vec![0.0; span];
    let mut hma = vec![0.0; BLOCK];
    let mut hma3 = vec![0.0; BLOCK];
    let mut events = vec![Events::new(); group.len()];

    for s in (0..len).step_by(BLOCK) {
        let e = (s + BLOCK).min(len);
        let lo = s.saturating_sub(look);
        let m = e - lo;
        for (u, &w) in windows.iter().enumerate() {
            wma_span(close, 0, w, lo, e, &mut first[u * span..u * span + m]);
        }
        let of = |w: usize| &first[slot(w) * span..slot(w) * span + m];
        // HMA3 depends on (p, p3, p2) only, so combos of neighbouring n often share it; the
        // group is sorted by n, so sharers are adjacent and one remembered key suffices.
        let mut hma3_of = None;
        for (&c, ev) in group.iter().zip(&mut events) {
            let w = grid[c].windows();
            for ((d, &a), &b) in derived.iter_mut().zip(of(w.half)).zip(of(w.n)) {
                *d = 2.0 * a - b;
            }
            wma_span(&derived[..m], lo, w.sq, s, e, &mut hma[..e - s]);
            if hma3_of != Some((w.p, w.p3, w.p2)) {
                hma3_of = Some((w.p, w.p3, w.p2));
                for (((d, &a), &b), &c) in
                    derived.iter_mut().zip(of(w.p3)).zip(of(w.p2)).zip(of(w.p))
                {
                    *d = 3.0 * a - b - c;
                }
                wma_span(&derived[..m], lo, w.p, s, e, &mut hma3[..e - s]);
            }
            ev.steps(&close[s..e], &hma[..e - s], &hma3[..e - s]);
        }
    }
    group
        .iter()
        .zip(events)
        .map(|(&c, mut ev)| {
            if let Some(&last) = close.last() {
                ev.ledger.close(last);
            }
            (c, ev.ledger.result())
        })
        .collect()
}
