"""The shrink figure of docs/fuzz.md: each fuzz canary's counterexample shape before and after shrinking.

Run from a checkout (minutes: every fuzz canary's caught rows, seed 0, the ci profile, one process)::

    python tests/canaries/shrink_figure.py            # print the block
    python tests/canaries/shrink_figure.py --write    # and put it into docs/fuzz.md between its markers

Each violating cell's verdict records ``extra.shrink`` (``fuzz/shrink.py``): the shape (n, d, batch,
heads) of the search's first violating draw and of the counterexample reported.  The block gives the
median of each axis before -> after over every violating cell, then one line per cell.
``tests/fuzz/test_shrink_figure.py`` checks that the committed block's medians are its lines' and that a
fresh run of a few canaries gives their committed lines.
"""
from __future__ import annotations

import argparse
import importlib
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DOC = ROOT / "docs" / "fuzz.md"
BEGIN = "<!-- shrink figure: begin (python tests/canaries/shrink_figure.py --write renders it; do not edit) -->"
END = "<!-- shrink figure: end -->"
AXES = ("n", "d", "batch", "heads")
SEED = 0


def canaries() -> list[str]:
    """The fuzz canaries' module names, sorted."""
    return sorted(p.stem for p in HERE.glob("fuzz_*.py"))


def shrunk(names, examples: int, seed: int = SEED) -> list[tuple[str, dict]]:
    """("canary/cell id", extra.shrink) of every violating cell of the canaries ``names`` (their CAUGHT_BY rows;
    a canary that edits a shipped operator keeps its name, so the cell is named with the canary's)."""
    from tokenlaw.fuzz.rows import run_rows
    from tokenlaw.properties.catalogue import default_registry
    from tokenlaw.properties.plan import plan

    if str(HERE.parent) not in sys.path:
        sys.path.insert(0, str(HERE.parent))
    out = []
    for name in names:
        c = importlib.import_module(f"canaries.{name}")
        reg = c.registry(default_registry())
        rows = plan(reg, operators=[c.OPERATOR], contracts=list(c.CAUGHT_BY))
        run_rows(reg, rows, examples=examples, seed=seed, replay_dir=None, progress=False)
        for row in rows:
            for cell in row.cells:
                record = cell.verdict.evidence.shrink if cell.verdict is not None and cell.verdict.evidence else None
                if record:
                    out.append((f"{name}/{row.id}-{cell.dtype}", record))
    return out


def line(cell: str, record: dict) -> str:
    """``- `canary/cell`: n 7 -> 2, d 4 -> 1, batch 1 -> 1`` (an axis a shape does not record is left out)."""
    first, final = record["first"], record["final"]
    return f"- `{cell}`: " + ", ".join(f"{a} {first[a]} -> {final[a]}" for a in AXES
                                       if first.get(a) is not None and final.get(a) is not None)


def medians(rows) -> dict:
    """{axis: (median before, median after)} over the cells that have the axis."""
    out = {}
    for axis in AXES:
        pairs = [(r["first"][axis], r["final"][axis]) for _, r in rows
                 if r["first"].get(axis) is not None and r["final"].get(axis) is not None]
        if pairs:
            out[axis] = (statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs))
    return out


def render(rows, examples: int, seed: int = SEED) -> str:
    """The block: the medians, then one line per violating cell (folded)."""
    med = medians(rows)
    grew = [cell for cell, r in rows for a in AXES
            if isinstance(r["first"].get(a), int) and isinstance(r["final"].get(a), int) and r["final"][a] > r["first"][a]]
    head = (f"Over {len(rows)} violating cells of the fuzz canaries (seed {seed}, {examples} examples per cell, "
            "their caught rows), the median shape of the search's first violating draw -> of the counterexample "
            "reported: " + ", ".join(f"{a} {b:g} -> {f:g}" for a, (b, f) in med.items())
            + ("; no axis grew." if not grew else f"; an axis grew in {', '.join(sorted(set(grew)))}."))
    return "\n".join([head, "", f"<details><summary>the {len(rows)} cells</summary>", "",
                      *(line(cell, r) for cell, r in rows), "", "</details>"])


def committed(page: str | None = None) -> str:
    """The block docs/fuzz.md holds now."""
    from tokenlaw.reports.marked_block import between
    return between(DOC.read_text() if page is None else page, BEGIN, END, str(DOC))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--write", action="store_true", help=f"put the block into {DOC.relative_to(ROOT)}")
    p.add_argument("--examples", type=int, default=100, help="examples per cell (default 100, the ci profile)")
    p.add_argument("--only", nargs="+", metavar="CANARY", help="only these canaries (module names)")
    args = p.parse_args(argv)
    block = render(shrunk(args.only or canaries(), args.examples), args.examples)
    print(block)
    if args.write:
        from tokenlaw.reports.marked_block import splice
        DOC.write_text(splice(DOC.read_text(), block, BEGIN, END, str(DOC)))
        print(f"wrote {DOC}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
