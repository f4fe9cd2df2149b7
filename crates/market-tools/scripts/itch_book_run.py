#!/usr/bin/env python3
"""itch-book (PyPI `itch-book`, C++23 core) on a raw or gzipped ITCH 5.0 file, timed the way
`book-replay` times the lab's book: parse and full order-book apply only, input already in
memory (unless --stream, for a file bigger than memory), no output tables. A second, untimed
pass keeps the last top-of-book row per stock locate: every book's final best bid and offer,
for `cargo xtask book` to check against the lab's book.

usage: itch_book_run.py FILE [--stream] [--chunk-mb 8] [--no-bbo]
Prints one JSON object: messages, seconds, ns_per_message, stats, bbo.
"""
import argparse
import gzip
import json
import sys
import time

import numpy as np
import itch_book
from itch_book._core import Session


def chunks(path, size):
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
        f.seek(0)
        src = gzip.GzipFile(fileobj=f) if gz else f
        while c := src.read(size):
            yield c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--chunk-mb", type=float, default=8)
    ap.add_argument("--no-bbo", action="store_true")
    ap.add_argument("--stream", action="store_true", help="read while timing (file > memory)")
    a = ap.parse_args()
    size = max(1, int(a.chunk_mb * (1 << 20)))

    s = Session(tables=[], depth=0, symbols=[])
    if a.stream:
        t0 = time.perf_counter()
        for b in chunks(a.file, size):
            s.feed(b)
        secs = time.perf_counter() - t0
    else:
        bufs = list(chunks(a.file, size))
        t0 = time.perf_counter()
        for b in bufs:
            s.feed(b)
        secs = time.perf_counter() - t0
        del bufs
    st = s.stats()
    n = st["messages"]
    out = {
        "messages": n,
        "seconds": secs,
        "ns_per_message": secs * 1e9 / n if n else None,
        "itch_book_version": getattr(itch_book, "__version__", "?"),
        "io_in_timing": bool(a.stream),
        "stats": st,
    }
    if not a.no_bbo:
        s2 = Session(tables=["bbo"], depth=0, symbols=[])
        s2.reserve(size // 21 + 1)
        last = {}
        for b in chunks(a.file, size):
            s2.feed(b)
            t = s2.take_bbo()
            loc = t["locate"]
            if len(loc):
                u, first_rev = np.unique(loc[::-1], return_index=True)
                idx = len(loc) - 1 - first_rev
                for L, i in zip(u.tolist(), idx.tolist()):
                    last[L] = (int(t["bid_px"][i]), int(t["ask_px"][i]))
        names = {r[0]: r[1] for r in s2.take_symbols()}
        # Prices as Price(4) integers (itch-book's raw unit), 0 for an empty side.
        out["bbo"] = {
            str(L): {"symbol": str(names.get(L, "")).strip(), "bid": v[0], "ask": v[1]}
            for L, v in sorted(last.items())
        }
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
