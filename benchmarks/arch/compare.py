"""Compare the report trees two checkouts made (``reports.sh``), byte for byte but for what differs by design.

usage: python3 benchmarks/arch/compare.py DIR_A DIR_B [--changed PATH ...]

Masked, each named in the output:

* the ``--out`` directory each tree was written to (it stands in recorded commands and replay paths);
* the symbolic tier's wall-clock seconds (``"seconds": x``, ``total x s``, ``| x s |``);
* the sha256 of a plug-in source in ``meta.kernel_sources``, where the two trees' files differ: a report
  records the digest of the code it ran (the gate's stale-report check), so an edited kernel changes it.
  Each masked digest is listed by file; with ``--changed`` (e.g. ``$(git diff --name-only main HEAD)``) a
  digest that differs for a file outside that list is a difference, not a mask.

Exit 0 when every file is the same after masking, 1 when one differs or stands in one tree only (the first
lines of each difference are printed), 2 on bad arguments.
"""
from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from pathlib import Path

SECONDS = [(re.compile(r'"seconds": [0-9.e+-]+'), '"seconds": T'),
           (re.compile(r"total [0-9.]+ s"), "total T s"),
           (re.compile(r"\| [0-9.]+s \|"), "| Ts |")]


def digests(root: Path) -> dict[str, set[str]]:
    """{source file: the sha256 digests the tree's JSON reports record for it} over every report under root."""
    out: dict[str, set[str]] = {}
    for path in root.rglob("*.json"):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        meta = doc.get("meta") if isinstance(doc, dict) else None
        for name, sha in ((meta or {}).get("kernel_sources") or {}).items():
            out.setdefault(name, set()).add(sha)
    return out


def masks(a: Path, b: Path, changed: list[str] | None) -> tuple[dict, dict, list[str], list[str]]:
    """(digest -> mark for a, for b, files masked, files that differ outside ``changed``)."""
    da, db = digests(a), digests(b)
    ma, mb, masked, unexplained = {}, {}, [], []
    for name in sorted(set(da) | set(db)):
        if da.get(name) == db.get(name):
            continue
        if changed is not None and name not in changed:
            unexplained.append(name)
            continue
        masked.append(name)
        for sha in da.get(name, ()):
            ma[sha] = f"<sha256 of {name}>"
        for sha in db.get(name, ()):
            mb[sha] = f"<sha256 of {name}>"
    return ma, mb, masked, unexplained


def normalised(path: Path, root: Path, digest_marks: dict) -> str:
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    for form in {str(root), str(root.resolve())}:
        text = text.replace(form, "OUT")
    for pattern, mark in SECONDS:
        text = pattern.sub(mark, text)
    for sha, mark in digest_marks.items():
        text = text.replace(sha, mark)
    return text


def compare(a: Path, b: Path, changed: list[str] | None = None, show: int = 20) -> int:
    ma, mb, masked, unexplained = masks(a, b, changed)
    files_a = {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
    files_b = {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    differ = sorted(files_a ^ files_b)
    for f in sorted(files_a ^ files_b):
        print(f"only in {'A' if f in files_a else 'B'}: {f}")
    for f in sorted(files_a & files_b):
        ta, tb = normalised(a / f, a, ma), normalised(b / f, b, mb)
        if ta != tb:
            differ.append(f)
            lines = list(difflib.unified_diff(ta.splitlines(), tb.splitlines(), f"A/{f}", f"B/{f}", n=0, lineterm=""))
            print("\n".join(line[:300] for line in lines[:show]))
    if unexplained:
        print(f"kernel_sources digests differ for files outside --changed: {', '.join(unexplained)}")
    print(f"masked: out directories, proof seconds; kernel_sources digests of {len(masked)} changed file(s)"
          + (f": {', '.join(masked)}" if masked else ""))
    n = len(files_a | files_b)
    if differ or unexplained:
        print(f"DIFFERENT: {len(differ)} of {n} files")
        return 1
    print(f"IDENTICAL: {n} files, byte for byte after masking")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--changed", nargs="*", default=None,
                    help="the source files the change edited (paths as kernel_sources names them)")
    args = ap.parse_args(argv)
    for d in (args.a, args.b):
        if not d.is_dir():
            print(f"compare.py: {d}: not a directory", file=sys.stderr)
            return 2
    return compare(args.a.absolute(), args.b.absolute(), args.changed)


if __name__ == "__main__":
    sys.exit(main())
