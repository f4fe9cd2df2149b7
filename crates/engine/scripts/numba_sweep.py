#!/usr/bin/env python3
"""The spec's kernel in NumPy + numba, to time side by side with `engine sweep`.

    pip install numpy numba
    python3 crates/engine/scripts/numba_sweep.py [--write-closes closes.f64]

Writes the default 80-combo sweep as CSV (n,pnl,trades) to stdout's end and prints timings:
combo 0 warm, and the whole sweep single-threaded (numba's @njit, no parallel=True), the way
the published study ran it. The closes use NumPy's generator and `math.exp` (the C library's
exp; see crates/engine/src/data/mod.rs for why not `np.exp` on AVX-512 machines).
"""
import argparse
import hashlib
import math
import time

import numpy as np
from numba import njit

FEE = 0.0009


@njit(cache=False)
def wma(x, w):
    out = np.full(x.shape[0], np.nan)
    den = w * (w + 1) / 2
    for i in range(w - 1, x.shape[0]):
        s = 0.0
        for j in range(w):
            s += x[i - w + 1 + j] * (j + 1)
        out[i] = s / den
    return out


@njit(cache=False)
def backtest(close, n, half, sq, p, p3, p2):
    hma = wma(2.0 * wma(close, half) - wma(close, n), sq)
    hma3 = wma(3.0 * wma(close, p3) - wma(close, p2) - wma(close, p), p)
    pos = 0  # 1 long, -1 short
    entry = 0.0
    pnl = 0.0
    trades = 0
    for i in range(1, close.shape[0]):
        a, b, c, d = hma[i], hma3[i], hma[i - 1], hma3[i - 1]
        if np.isnan(a) or np.isnan(b) or np.isnan(c) or np.isnan(d):
            continue
        up = b > a and d < c
        dn = a > b and c < d
        new = 1 if (up and pos != 1) else (-1 if (dn and pos != -1) else 0)
        if new != 0:
            if pos != 0:
                g = close[i] / entry - 1.0 if pos == 1 else 1.0 - close[i] / entry
                pnl += 100.0 * ((1.0 + g) * (1.0 - FEE) - 1.0)
                trades += 1
            pos = new
            entry = close[i]
    if pos != 0:
        last = close[close.shape[0] - 1]
        g = last / entry - 1.0 if pos == 1 else 1.0 - last / entry
        pnl += 100.0 * ((1.0 + g) * (1.0 - FEE) - 1.0)
        trades += 1
    return pnl, trades


def windows(n):
    p = max(1, round(n / 2))
    return (n, max(1, round(n / 2)), max(1, round(math.sqrt(n))), p, max(1, round(p / 3)), max(1, round(p / 2)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--write-closes")
    args = ap.parse_args()
    r = np.random.default_rng(42).normal(0.0, 0.0008, 150_000)
    close = np.array([100.0 * math.exp(a) for a in np.cumsum(r)])
    print("sha256", hashlib.sha256(close.astype("<f8").tobytes()).hexdigest())
    if args.write_closes:
        close.astype("<f8").tofile(args.write_closes)
    grid = [windows(int(n)) for n in np.round(np.linspace(6, 200, 80)).astype(int)]
    backtest(close[:1000], *grid[0])  # compile
    t = time.perf_counter()
    pnl, trades = backtest(close, *grid[0])
    print(f"combo 0: pnl {pnl:.2f} trades {trades}  {1e3 * (time.perf_counter() - t):.1f} ms warm")
    t = time.perf_counter()
    res = [backtest(close, *g) for g in grid]
    print(f"sweep: 80 combos {time.perf_counter() - t:.3f} s (numba, 1 thread)")
    print("n,pnl,trades")
    for g, (pnl, trades) in zip(grid, res):
        print(f"{g[0]},{pnl!r},{trades}")


if __name__ == "__main__":
    main()
