"""The shrink figure in docs/fuzz.md (issue 47, acceptance: median shape before -> after shrinking on the canaries).

``python tests/canaries/shrink_figure.py --write`` renders it from a run of every fuzz canary (minutes).  Here,
fast: the committed block is well formed and its medians are those of its own lines; a fresh run of a few
canaries shrinks (no axis grows), and the planted look-ahead gives exactly its committed lines, n -> 2.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from canaries import fuzz_look_ahead_one, shrink_figure  # noqa: E402 (tests/ on the path first)

LINE = re.compile(r"^- `(?P<cell>[^`]+)`: (?P<axes>.+)$")
AXIS = re.compile(r"(\w+) (\d+) -> (\d+)")


def parse(block: str) -> dict:
    """{cell id: {axis: (before, after)}} of the block's lines."""
    cells = {}
    for text in block.splitlines()[2:]:
        if not text.startswith("- "):
            assert text in ("", "</details>") or text.startswith("<details>"), f"not a figure line: {text!r}"
            continue
        m = LINE.match(text)
        assert m, f"not a figure line: {text!r}"
        cells[m["cell"]] = {a: (int(b), int(f)) for a, b, f in AXIS.findall(m["axes"])}
    return cells


def test_the_committed_figure_is_its_own_lines_medians_and_nothing_grew():
    block = shrink_figure.committed()
    head, cells = block.splitlines()[0], parse(block)
    assert len(cells) >= 20, "the figure covers the fuzz canaries' violating cells"
    assert f"Over {len(cells)} violating cells" in head and "no axis grew" in head, head
    rows = [(c, {"first": {a: b for a, (b, _) in axes.items()}, "final": {a: f for a, (_, f) in axes.items()}})
            for c, axes in cells.items()]
    for axis, (before, after) in shrink_figure.medians(rows).items():
        assert f"{axis} {before:g} -> {after:g}" in head, (axis, before, after, head)
    assert all(f <= b for axes in cells.values() for b, f in axes.values()), "an axis grew"
    # the planted off-by-one: two tokens, in every dtype its row runs
    look = {c: a for c, a in cells.items() if c.startswith(f"fuzz_look_ahead_one/{fuzz_look_ahead_one.OPERATOR}")}
    assert look and all(a["n"][1] == fuzz_look_ahead_one.MINIMAL_N == 2 for a in look.values()), look


def test_a_fresh_run_shrinks_the_planted_look_ahead_to_its_committed_lines():
    rows = shrink_figure.shrunk(["fuzz_look_ahead_one"], examples=100)
    fresh = [shrink_figure.line(c, r) for c, r in rows]
    assert fresh and all(r["final"]["n"] == 2 and r["final"]["batch"] == 1 for _, r in rows), fresh
    committed = shrink_figure.committed().splitlines()
    assert all(line in committed for line in fresh), (fresh, committed)


@pytest.mark.parametrize("canary", ["fuzz_unmasked_acausal", "fuzz_mass_token_norm"])
def test_a_fresh_run_of_other_canaries_never_grows_an_axis(canary):
    rows = shrink_figure.shrunk([canary], examples=25)
    assert rows, f"{canary}: no violating cell to shrink"
    for cell, r in rows:
        for axis in shrink_figure.AXES:
            if isinstance(r["first"].get(axis), int) and isinstance(r["final"].get(axis), int):
                assert r["final"][axis] <= r["first"][axis], (cell, r)
