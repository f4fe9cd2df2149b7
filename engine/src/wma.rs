//! WMA kernels that keep the spec's summation order (oldest to newest, from 0.0).

/// Output positions computed together by [`wma_into`]: 16 independent accumulators, eight
/// SSE2 registers, enough to hide the adder's latency (the reference's one accumulator
/// waits for every addition). Each position is still its own oldest-to-newest sum.
const LANES: usize = 16;

/// `w * (w + 1) / 2` as the spec's divisor.
#[inline]
pub(crate) fn denom(w: usize) -> f64 {
    (w * (w + 1) / 2) as f64
}

/// `sum_j xs[j] * (j + 1)` from 0.0, oldest first: the spec's window sum, or (given the
/// oldest `w - 1` values of a window) all of it but the newest term.
#[inline]
pub(crate) fn weighted_sum(xs: &[f64]) -> f64 {
    let mut s = 0.0;
    let mut k = 1.0;
    for &x in xs {
        s += x * k;
        k += 1.0;
    }
    s
}

/// WMA of `x` with window `w >= 1` into `out` (same length), bit-identical to
/// [`crate::reference::wma`]: several output positions at once, each summed in the spec's order.
pub(crate) fn wma_into(x: &[f64], w: usize, out: &mut [f64]) {
    debug_assert!(w >= 1 && out.len() == x.len());
    let n = x.len();
    let first = (w - 1).min(n);
    out[..first].fill(f64::NAN);
    let den = denom(w);
    let mut i = first;
    while i + LANES <= n {
        let xs = &x[i + 1 - w..i + LANES];
        let mut acc = [0.0_f64; LANES];
        let mut k = 1.0;
        for j in 0..w {
            let seg = &xs[j..j + LANES];
            for (a, &v) in acc.iter_mut().zip(seg) {
                *a += v * k;
            }
            k += 1.0;
        }
        for (o, a) in out[i..i + LANES].iter_mut().zip(acc) {
            *o = a / den;
        }
        i += LANES;
    }
    for i in i..n {
        out[i] = weighted_sum(&x[i + 1 - w..=i]) / den;
    }
}
