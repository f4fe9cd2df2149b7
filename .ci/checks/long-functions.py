#!/usr/bin/env python3
"""Functions over 150 lines outside tests (issue 44: there must be none).

Reads every tracked .rs file but tests (tests/, tests.rs, a trailing `#[cfg(test)] mod tests`),
benches and the fuzz targets; a function runs from its `fn` line to the closing brace at its own
indentation (rustfmt's layout). Prints each long one as `lines path name line` and exits 1, or
prints `0 functions over 150 lines` and exits 0.

Usage: python3 .ci/checks/long-functions.py [repo root, default: this script's repository]
"""
import os
import re
import subprocess
import sys

LIMIT = 150
ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../..")
FN = re.compile(r'^(\s*)(pub(\([^)]*\))? )?(const )?(async )?(unsafe )?(extern "C" )?fn (\w+)')


def long_functions():
    files = subprocess.check_output(["git", "ls-files", "*.rs"], cwd=ROOT).decode().split()
    for f in files:
        if "/tests/" in f or f.endswith("tests.rs") or f.startswith("fuzz/") or "/benches/" in f:
            continue
        path = os.path.join(ROOT, f)
        if not os.path.exists(path):
            continue
        lines = open(path, encoding="utf-8").read().split("\n")
        for i, line in enumerate(lines):
            # A trailing inline test module (not `mod tests;`, whose file is skipped by name).
            if line.startswith("#[cfg(test)]") and i + 1 < len(lines) and lines[i + 1].startswith("mod tests {"):
                lines = lines[:i]
                break
        for i, line in enumerate(lines):
            m = FN.match(line)
            if not m or line.rstrip().endswith(";"):
                continue
            end = next((j for j in range(i + 1, len(lines)) if lines[j] == m.group(1) + "}"), None)
            if end is not None and end - i + 1 > LIMIT:
                yield end - i + 1, f, m.group(8), i + 1


found = sorted(long_functions(), reverse=True)
for n, f, name, line in found:
    print(f"{n} {f} {name} {line}")
if found:
    sys.exit(1)
print(f"0 functions over {LIMIT} lines")
