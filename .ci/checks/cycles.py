#!/usr/bin/env python3
"""Import cycles between the modules of each crate (issue 44).

For every crate (a folder with a Cargo.toml and a src/), each crate root (src/lib.rs,
src/main.rs, src/bin/*.rs or src/bin/*/main.rs) is walked through its `mod x;` declarations
(files) and inline `mod x { ... }` blocks; every module is a node. A module A depends on a
module B when A names B in a `use` (crate::, super::, self:: or a child module's name) or in a
path in its code (`crate::b::Item`, `super::Item`, `child::Item`). Naming an item that B
re-exports counts as using B *and*, when the re-export points inside the crate, the module the
item comes from (so `use super::X`, with the parent's `pub use y::X`, is a use of the parent
and of y). The crate root is the crate's facade: paths through it are resolved to the modules
its re-exports point to, but no edge goes to the root itself (every module would otherwise be
in a cycle with it).

Prints each cycle (a strongly connected component of more than one module) as
`crate: a -> b -> a` with the references behind each edge, and a total; prints
`0 cycles` and exits 0 when there are none, exits 1 otherwise.

Usage: python3 .ci/checks/cycles.py [repo root, default: this script's repository] [-v: list every edge]
"""
import os
import re
import sys

ROOT = next(
    (a for a in sys.argv[1:] if not a.startswith("-")),
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."),
)
VERBOSE = "-v" in sys.argv
# The crates the issue counts: the product, the studies, the eBPF program and its layouts, xtask.
CRATE_DIRS = ["crates/*", "studies/*", "ebpf/*", "xtask", "test/*"]


def crates():
    import glob

    for pat in CRATE_DIRS:
        for d in sorted(glob.glob(os.path.join(ROOT, pat))):
            if os.path.isfile(os.path.join(d, "Cargo.toml")) and os.path.isdir(
                os.path.join(d, "src")
            ):
                yield d


def strip(src):
    """The code without comments, strings and char literals (each replaced by spaces or an
    empty literal), so that what is left is tokens."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if src.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif src.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    if src[i] == "\n":
                        out.append("\n")
                    i += 1
        elif re.match(r'(b|c)?r#*"', src[i:i + 8]) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'(b|c)?r(#*)"', src[i:])
            end = '"' + m.group(2)
            j = src.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * src.count("\n", i, j))
            i = j
        elif c == '"' or (c in "bc" and src.startswith('"', i + 1) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_"))):
            j = i + (1 if c == '"' else 2)
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append('""' + "\n" * src.count("\n", i, j))
            i = j + 1
        elif c == "'":
            # A char literal ('a', '\n', '\u{1F600}', b'x' handled by the b above being an
            # ident char) or a lifetime ('a).
            m = re.match(r"'(\\(u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'])'", src[i:])
            if m:
                out.append("' '")
                i += m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def parse_use_tree(s):
    """`a::{b, c::{d as e, self}, f::*}` -> [(["a","b"], "b"), (["a","c","d"], "e"),
    (["a","c"], "c"), (["a","f","*"], None)]: each leaf path and the name it binds."""
    s = re.sub(r"\s+", "", s)
    pos = 0

    def tree(prefix):
        nonlocal pos
        res = []
        segs = list(prefix)
        while pos < len(s):
            if s[pos] == "{":
                pos += 1
                while pos < len(s) and s[pos] != "}":
                    res.extend(tree(segs))
                    if pos < len(s) and s[pos] == ",":
                        pos += 1
                pos += 1
                return res
            m = re.match(r"::", s[pos:])
            if m:
                pos += 2
                continue
            if s[pos] == "*":
                pos += 1
                res.append((segs + ["*"], None))
                return res
            m = re.match(IDENT, s[pos:])
            if not m:
                return res
            pos += m.end()
            segs = segs + [m.group(0)]
            if s.startswith("::", pos):
                continue
            alias = segs[-1]
            m2 = re.match(r"as(" + IDENT + ")", s[pos:])
            if m2 and s[pos:pos + 2] == "as":
                alias = m2.group(1)
                pos += m2.end()
            if segs[-1] == "self":
                segs = segs[:-1]
                alias = segs[-1] if alias == "self" else alias
            res.append((segs, alias))
            return res
        return res

    return tree([])


class Module:
    def __init__(self, path, file, parent):
        self.path = path  # tuple of names from the crate root
        self.file = file
        self.parent = parent
        self.children = {}  # name -> Module
        self.code = []  # stripped code that belongs to this module (not its inline children)
        self.uses = []  # (segments, alias, line)
        self.paths = []  # (segments, line) from code

    def name(self):
        return "::".join(self.path) or "(root)"


def mod_file(dirpath, name):
    for cand in (os.path.join(dirpath, name + ".rs"), os.path.join(dirpath, name, "mod.rs")):
        if os.path.isfile(cand):
            return cand
    return None


def load(crate_name, root_file, mods):
    """Builds the module tree under `root_file`."""
    root = Module((), root_file, None)
    mods[()] = root
    parse_file(root, root_file, True, mods)
    return root


def parse_file(mod, file, is_root_like, mods):
    src = strip(open(file, encoding="utf-8").read())
    # Where a file module's children live: next to lib.rs/main.rs/mod.rs, else in a folder
    # named after the file.
    base = os.path.basename(file)
    if is_root_like or base == "mod.rs":
        child_dir = os.path.dirname(file)
    else:
        child_dir = os.path.join(os.path.dirname(file), base[:-3])
    parse_block(mod, src, 0, len(src), child_dir, file, mods)


def parse_block(mod, src, start, end, child_dir, file, mods):
    i = start
    pieces = []
    line_of = lambda p: src.count("\n", 0, p) + 1
    mod_re = re.compile(r"\bmod\s+(" + IDENT + r")\s*([;{])")
    while i < end:
        m = mod_re.search(src, i, end)
        if not m:
            pieces.append((i, end))
            break
        pieces.append((i, m.start()))
        name = m.group(1)
        if m.group(2) == ";":
            f = mod_file(child_dir, name)
            child = Module(mod.path + (name,), f, mod)
            mod.children[name] = child
            mods[child.path] = child
            if f:
                parse_file(child, f, False, mods)
            i = m.end()
        else:
            # The inline module's block: to its matching brace.
            depth, j = 1, m.end()
            while j < end and depth:
                if src[j] == "{":
                    depth += 1
                elif src[j] == "}":
                    depth -= 1
                j += 1
            child = Module(mod.path + (name,), file, mod)
            mod.children[name] = child
            mods[child.path] = child
            parse_block(child, src, m.end(), j - 1, os.path.join(child_dir, name), file, mods)
            i = j
    for a, b in pieces:
        chunk = src[a:b]
        # `use` declarations.
        for um in re.finditer(r"\buse\s+([^;]*);", chunk):
            tree = um.group(1)
            if tree.startswith("$"):
                continue
            for segs, alias in parse_use_tree(tree):
                mod.uses.append((segs, alias, line_of(a + um.start())))
        # Paths in code (outside `use`).
        code = re.sub(r"\buse\s+[^;]*;", lambda x: re.sub(r"[^\n]", " ", x.group(0)), chunk)
        for pm in re.finditer(r"(?<![\w$:])(" + IDENT + r"(?:\s*::\s*" + IDENT + r")+)", code):
            segs = re.split(r"\s*::\s*", pm.group(1))
            mod.paths.append((segs, line_of(a + pm.start())))


def absolute(mod, segs):
    """`segs` as named in `mod`, as a path from the crate root (None if it is outside the
    crate)."""
    if not segs:
        return None
    head = segs[0]
    if head == "crate":
        return list(segs[1:])
    if head == "self":
        return list(mod.path) + list(segs[1:])
    if head == "super":
        p = list(mod.path)
        k = 0
        while k < len(segs) and segs[k] == "super":
            p = p[:-1]
            k += 1
        return p + list(segs[k:])
    if head in mod.children:
        return list(mod.path) + list(segs)
    return None


def resolve(mods, abs_segs, used_by, depth=0):
    """The modules a path from the root names: the deepest module on it and, where the item
    after it is that module's `use` (a re-export), what the re-export names, recursively.
    Returns [(module path, how)]."""
    if abs_segs is None or depth > 20:
        return []
    cur = mods[()]
    k = 0
    while k < len(abs_segs) and abs_segs[k] in cur.children:
        cur = cur.children[abs_segs[k]]
        k += 1
    found = [(cur.path, "names")]
    if k < len(abs_segs) and abs_segs[k] != "*":
        item = abs_segs[k]
        for segs, alias, _ in cur.uses:
            if alias == item:
                target = absolute(cur, segs)
                if target is not None:
                    rest = list(abs_segs[k + 1:])
                    for p, _h in resolve(mods, target + rest, used_by, depth + 1):
                        found.append((p, "re-export in " + cur.name()))
    return found


def crate_edges(mods):
    edges = {}  # (a, b) -> [why]
    for mod in mods.values():
        refs = [(s, ln, "use") for s, _a, ln in mod.uses] + [(s, ln, "path") for s, ln in mod.paths]
        for segs, ln, kind in refs:
            if segs and segs[-1] == "*":
                segs = segs[:-1]
            tgt = absolute(mod, segs)
            if tgt is None:
                continue
            for p, how in resolve(mods, tgt, mod):
                # No edge to the module itself, nor to its ancestors (the root included): an
                # ancestor is its descendants' facade, so a child's use of its parent's own
                # items is no loop, but what the ancestor re-exports is resolved (above) to the
                # module it comes from, and that edge is kept.
                if p == mod.path[: len(p)]:
                    continue
                why = "%s:%d %s %s%s" % (
                    os.path.relpath(mod.file, ROOT), ln, kind, "::".join(segs),
                    "" if how == "names" else " (" + how + ")")
                edges.setdefault((mod.path, p), []).append(why)
    return edges


def sccs(nodes, edges):
    adj = {n: [] for n in nodes}
    for a, b in edges:
        adj.setdefault(a, []).append(b)
        adj.setdefault(b, [])
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in adj[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in list(adj):
        if v not in index:
            strong(v)
    return [c for c in out if len(c) > 1]


def roots(crate_dir):
    src = os.path.join(crate_dir, "src")
    for r in ("lib.rs", "main.rs"):
        if os.path.isfile(os.path.join(src, r)):
            yield r[:-3], os.path.join(src, r)
    bindir = os.path.join(src, "bin")
    if os.path.isdir(bindir):
        for e in sorted(os.listdir(bindir)):
            p = os.path.join(bindir, e)
            if e.endswith(".rs"):
                yield "bin/" + e[:-3], p
            elif os.path.isfile(os.path.join(p, "main.rs")):
                yield "bin/" + e, os.path.join(p, "main.rs")


def main():
    total = 0
    for d in crates():
        name = os.path.relpath(d, ROOT)
        for target, rootfile in roots(d):
            mods = {}
            load(name, rootfile, mods)
            edges = crate_edges(mods)
            if VERBOSE:
                for (a, b), why in sorted(edges.items()):
                    print("%s[%s]: %s -> %s  (%s)" % (name, target, "::".join(a), "::".join(b), why[0]))
            for comp in sccs(list(mods), edges):
                total += 1
                comp_names = sorted("::".join(c) for c in comp)
                print("%s [%s]: cycle between %s" % (name, target, ", ".join(comp_names)))
                cs = set(comp)
                for (a, b), why in sorted(edges.items()):
                    if a in cs and b in cs:
                        print("    %s -> %s: %s" % ("::".join(a), "::".join(b), "; ".join(why[:3]) + (" ..." if len(why) > 3 else "")))
    print("%d cycles" % total)
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()
