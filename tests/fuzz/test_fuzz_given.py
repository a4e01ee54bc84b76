"""The claimed cells as @given tests (fuzz/given.py; examples/hypofuzz/test_tokenlaw_cells.py for HypoFuzz)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenlaw.fuzz import given as G
from tokenlaw.fuzz.mutants.seeded import EAGER_MUTANTS
from tokenlaw.properties.catalogue import default_registry

REG = default_registry()
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hypofuzz" / "test_tokenlaw_cells.py"


def test_only_claimed_cells_that_are_judged_here_become_tests():
    ids = {c.id for c in G.claimed_cells(REG, operators=["sdpa"])}
    assert "sdpa-simplex-eager-float32" in ids
    assert "sdpa-null_receiver-eager-float32" not in ids          # an expected violation is no test
    assert "sdpa-differential-eager-float32" in ids               # judged: the half formats are its probes
    assert not any(i.startswith("oattention-") for i in ids)        # only the operators asked for


def _as_test(registry, cell, examples=30):
    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def test(data):
        G.check_example(registry, cell, data.draw(G.strategy(registry, cell)))
    return test


def _cell(operator, contract, dtype="float64"):
    (cell,) = G.claimed_cells(REG, operators=[operator], contracts=[contract], dtypes=[dtype])
    return cell


def test_a_cell_test_fails_on_a_seeded_bug_and_passes_without_it():
    cell = _cell("presence", "zero_absorption")
    _as_test(REG, cell)()                                            # the law holds
    bad = next(m for m in EAGER_MUTANTS if m.name == "presence_floor").apply(REG)
    with pytest.raises(AssertionError, match="presence-zero_absorption-eager-float64"):
        _as_test(bad, cell)()


def test_the_regimes_a_case_visits_are_hypothesis_events(monkeypatch):
    events = []
    monkeypatch.setattr(G, "event", lambda value, payload="": events.append((value, payload)))
    _as_test(REG, _cell("presence", "finite"))()
    assert ("regime", "near_null") in events and {v for v, _ in events} == {"regime"}


def test_the_example_module_runs_under_plain_pytest(tmp_path):
    env = {"TOKENLAW_OPERATORS": "presence", "TOKENLAW_DTYPES": "float64"}
    import os
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLE),
                          "--hypothesis-seed=0", "-k", "zero_absorption"], cwd=tmp_path,
                         env={**os.environ, **env}, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]
