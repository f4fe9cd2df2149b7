//! WMA kernels that keep the spec's summation order (oldest to newest, from 0.0).

/// Output positions computed together by [`wma_span`]: 24 independent accumulators (12 SSE2
/// registers, 6 AVX2, 3 AVX-512; the fastest of 8/16/24/32 measured here), enough to hide the
/// adder's latency (the reference's one accumulator waits for every
/// addition). Each position is still its own oldest-to-newest sum.
const LANES: usize = 24;

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

/// The WMA at global positions `lo..hi` into `out[..hi - lo]`, where `x[k]` is the value at
/// global position `x0 + k`. Positions before `w - 1` are NaN (the spec's warm-up); every
/// other position must have its whole window inside `x` (`pos + 1 - w >= x0`).
/// Bit-identical to [`crate::reference::wma`] at every position.
///
/// The loop is plain Rust over fixed-width arrays. `pulp` runs it inside a function compiled
/// for the best instruction set the CPU has (AVX-512 or AVX2 on x86-64, detected at run time;
/// AVX-512 is stable Rust since 1.89), where LLVM vectorises it 8 or 4 lanes wide instead of
/// SSE2's 2; the unsafe
/// `target_feature` call lives in `pulp`, so this crate keeps `forbid(unsafe_code)`. Wider
/// registers change nothing in the arithmetic: the same IEEE multiplies and adds in the same
/// order per output (LLVM never contracts them into FMAs without fast-math flags, which Rust
/// does not set), as the bit-identity tests check.
pub(crate) fn wma_span(x: &[f64], x0: usize, w: usize, lo: usize, hi: usize, out: &mut [f64]) {
    struct Job<'a> {
        x: &'a [f64],
        w: usize,
        out: &'a mut [f64],
    }
    impl pulp::WithSimd for Job<'_> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _simd: S) {
            let Job { x, w, out } = self;
            wma_valid(x, w, out);
        }
    }
    let first = lo.max(w - 1).min(hi);
    out[..first - lo].fill(f64::NAN);
    if first < hi {
        let xs = &x[first + 1 - w - x0..hi - x0];
        pulp::Arch::new().dispatch(Job {
            x: xs,
            w,
            out: &mut out[first - lo..hi - lo],
        });
    }
}

/// `out[k] = WMA of xs[k..k + w]` for every full window of `xs` (`out.len() == xs.len() - w + 1`).
#[inline(always)]
fn wma_valid(xs: &[f64], w: usize, out: &mut [f64]) {
    let n = out.len();
    debug_assert_eq!(n + w - 1, xs.len());
    let den = denom(w);
    let mut i = 0;
    while i + LANES <= n {
        let win = &xs[i..i + w - 1 + LANES];
        let mut acc = [0.0_f64; LANES];
        let mut k = 1.0;
        for j in 0..w {
            let seg = &win[j..j + LANES];
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
    for (k, o) in out.iter_mut().enumerate().skip(i) {
        *o = weighted_sum(&xs[k..k + w]) / den;
    }
}
