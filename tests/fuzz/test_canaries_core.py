"""The core canaries (tests/canaries/core_*.py): each seeded kernel bug is caught by the default profile.

Each canary declares, with ``declare_core``, the correct core attention of
``tests/canaries/_core.py`` with one defect switched on, and names the core
laws that must see it.  Run with the CLI's default profile and seed, every
such row must be an UNEXPECTED violation with a shrunk counterexample that
``tokenlaw replay`` reproduces bit for bit; the same function with no defect
(the control) holds on the same rows.
"""
from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

import pytest

from tokenlaw.fuzz.rows import run_rows
from tokenlaw.fuzz.engine import PROFILES
from tokenlaw.fuzz.replay import replay
from tokenlaw.properties import verdict as V
from tokenlaw.properties.plan import plan

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
CANARIES = sorted(i.name for i in pkgutil.iter_modules([str(Path(__file__).resolve().parents[1] / "canaries")])
                  if i.name.startswith("core_"))
DEFAULT_EXAMPLES = PROFILES["ci"]      # what `tokenlaw check` runs without --profile


def _canary(name):
    return importlib.import_module(f"canaries.{name}")


def test_every_core_canary_states_its_reason_and_its_catching_laws():
    assert len(CANARIES) == 9
    for name in CANARIES:
        c = _canary(name)
        assert isinstance(c.REASON, str) and c.REASON.strip() and "\n" not in c.REASON, name
        assert c.CAUGHT_BY and all(law.startswith("core_") for law in c.CAUGHT_BY), name


@pytest.mark.parametrize("name", CANARIES)
def test_default_profile_catches_each_core_canary_with_a_replayable_counterexample(name, tmp_path):
    c = _canary(name)
    reg = c.registry()
    rows = plan(reg, operators=[c.OPERATOR], contracts=list(c.CAUGHT_BY))
    assert {r.contract for r in rows} == set(c.CAUGHT_BY), "every catching law must be planned"
    run_rows(reg, rows, examples=DEFAULT_EXAMPLES, seed=0, replay_dir=tmp_path, progress=False)
    for row in rows:
        assert row.outcome == V.Outcome.UNEXPECTED, f"{name}: {row.id} is {row.outcome!r} ({c.REASON})"
        bad = [cell.verdict for cell in row.cells if cell.verdict is not None and cell.verdict.violated]
        assert bad and bad[0].counterexample and bad[0].replay, row.id
        again = replay(bad[0].replay, tmp_path, registry=reg)
        assert again.reproduced, (row.id, again.verdict.detail)


def test_the_control_holds_where_the_canaries_fail():
    """The canaries' function with no defect: every row the canaries are caught by holds (smoke profile)."""
    from canaries import _core
    reg = _core.registry("canary_control", lambda q, k, v, *, attn_mask=None, is_causal=False, scale=None:
                         _core.attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale))
    laws = sorted({law for name in CANARIES for law in _canary(name).CAUGHT_BY})
    rows = plan(reg, operators=["canary_control"], contracts=laws)
    run_rows(reg, rows, examples=PROFILES["smoke"], seed=0, replay_dir=None, progress=False)
    assert {r.contract for r in rows} == set(laws)
    for row in rows:
        assert row.outcome == V.Outcome.HOLDS, (row.id, [c.verdict.detail for c in row.cells])
