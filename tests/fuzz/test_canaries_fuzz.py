"""The fuzz tier's canaries (tests/canaries/fuzz_*.py): no deliberately wrong operator gets a green row.

Each canary builds a fresh registry (the default one is never mutated), or
names a wrong ``BACKEND`` of a shipping operator (registered for the test
only), and names the contracts through which the fuzz tier must see it (in
its ``DTYPES`` when it names them).  The rows run
with the CLI's default profile; every one must be an UNEXPECTED violation
with a shrunk counterexample (or, for a canary that declares ``OUTCOME``,
that undecided outcome: e.g. ``vacuous`` where nothing could be judged),
never "holds".
"""
from __future__ import annotations

import contextlib
import importlib
import pkgutil
import sys
from pathlib import Path

import pytest
import torch

from tokenlaw.fuzz.rows import run_rows
from tokenlaw.fuzz.engine import PROFILES
from tokenlaw.properties import backends
from tokenlaw.properties.catalogue import default_registry
from tokenlaw.properties import verdict as V
from tokenlaw.properties.plan import plan

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
CANARIES = sorted(i.name for i in pkgutil.iter_modules([str(Path(__file__).resolve().parents[1] / "canaries")])
                  if i.name.startswith("fuzz_"))
DEFAULT_EXAMPLES = PROFILES["quick"]      # what `tokenlaw check` runs without --profile


def _canary(name):
    return importlib.import_module(f"canaries.{name}")


def test_every_fuzz_canary_states_its_reason_and_its_catching_contracts():
    assert len(CANARIES) >= 4
    for name in CANARIES:
        c = _canary(name)
        assert isinstance(c.REASON, str) and c.REASON.strip() and "\n" not in c.REASON, name
        assert c.CAUGHT_BY and c.OPERATOR


@pytest.mark.parametrize("name", CANARIES)
def test_fuzz_tier_gives_no_canary_a_green_row(name):
    c = _canary(name)
    base = default_registry()
    reg = c.registry(base)
    backend = getattr(c, "BACKEND", None)       # a wrong implementation of a shipping operator (a Backend)
    if backend is None:
        assert reg is not base and base[c.OPERATOR].fn is not reg[c.OPERATOR].fn if c.OPERATOR in base else True
    with contextlib.nullcontext() if backend is None else backends.register(backend):
        rows = plan(reg, operators=[c.OPERATOR], contracts=list(c.CAUGHT_BY), dtypes=getattr(c, "DTYPES", None),
                    backend=backends.EAGER.name if backend is None else backend.name)
        assert {r.contract for r in rows} == set(c.CAUGHT_BY), "every catching contract must be planned"
        run_rows(reg, rows, examples=DEFAULT_EXAMPLES, seed=0, replay_dir=None, progress=False)
    expected = getattr(c, "OUTCOME", V.Outcome.UNEXPECTED)
    assert expected == V.Outcome.UNEXPECTED or expected in V.UNDECIDED, expected
    for row in rows:
        assert row.outcome == expected, f"{name}: {row.id} is {row.outcome!r} ({c.REASON})"
        if expected == V.Outcome.UNEXPECTED:
            bad = [cell.verdict for cell in row.cells if cell.verdict is not None and cell.verdict.violated]
            assert bad and bad[0].counterexample, row.id
            if getattr(c, "NONDETERMINISTIC", False):      # the finding says what it is
                assert bad[0].evidence.nondeterministic is not None, bad[0].detail
        for cell in row.cells:
            if getattr(c, "BLIND", ()):      # vacuous for the stated reason: these regimes had no finite oracle
                v = cell.verdict
                blind = v.detail.split("every row of the regime(s) ", 1)[-1].split(" was set aside", 1)[0].split(", ")
                assert v.detail.startswith("vacuous: every row of the regime(s) "), v.detail
                assert set(c.BLIND) <= set(blind), (blind, v.detail)
                assert all(v.evidence.set_aside_by_regime[r][0] == v.evidence.set_aside_by_regime[r][1] > 0
                           for r in c.BLIND), v.evidence.set_aside_by_regime
    # the default registry is untouched
    assert default_registry() is base


def test_fp16_collapse_is_found_by_the_default_profile_and_shrunk():
    """The pre-fix OAttention formula: the default profile reaches the regime (the search, or the combined-extremes
    edge after it) and shrinks to it."""
    c = _canary("fuzz_fp16_collapse")
    reg = c.registry(default_registry())
    rows = plan(reg, operators=["oattention"], contracts=["differential"], dtypes=["float16"])
    run_rows(reg, rows, examples=DEFAULT_EXAMPLES, seed=0, replay_dir=None, progress=False)
    (row,) = rows
    assert row.outcome == V.Outcome.UNEXPECTED
    v = row.cells[0].verdict
    ce = v.counterexample
    assert ce["n"] <= 2 and ce["eps_den"] is not None and ce["eps_den"] <= 1.5e-5, ce
    assert ce["score_offset"] < -11 or ce["scale"] > 1 or ce["bias_scale"] > 1, ce   # scores below -11
    # found within the run's budget: the search, then banded_find's FILL examples per missed band and per
    # explicit edge (at seed 0 the combined-extremes edge finds it, example 107; v.examples adds the shrinking)
    from tokenlaw.fuzz.strategies import EDGES, FILL, LENGTH_BANDS
    assert v.evidence.found_at <= DEFAULT_EXAMPLES + FILL * (len(LENGTH_BANDS) + len(EDGES)), v.evidence.found_at


def test_the_fixed_operator_holds_where_the_canary_fails():
    """Same search, shipping formula: the fp16 differential row is green."""
    reg = default_registry()
    rows = plan(reg, operators=["oattention"], contracts=["differential"], dtypes=["float16"])
    run_rows(reg, rows, examples=DEFAULT_EXAMPLES, seed=0, replay_dir=None, progress=False)
    assert rows[0].outcome == V.Outcome.HOLDS, rows[0].cells[0].verdict.detail
    assert rows[0].cells[0].verdict.evidence.regimes["scores_low"] > 0


def test_presence_cancellation_is_caught_through_near_null_rows_alone():
    """With tau held at its default draws (no wide tau), the cancelling presence is still caught, and
    its counterexample keeps a near-null row: the log-uniform |h|^2 draws reach it (issue 19, point 5)."""
    import dataclasses

    from tokenlaw.fuzz.engine import run_cell
    from tokenlaw.properties.catalogue import CONTRACTS
    from tokenlaw.properties.contract import FuzzOptions

    c = _canary("fuzz_presence_cancellation")
    reg = c.registry(default_registry())
    law = CONTRACTS["formula_equivalence"]
    narrow = dataclasses.replace(law, fuzz=FuzzOptions(**{**law.fuzz_bounds, "wide_params": False}))
    v = run_cell(reg["oattention"], narrow, torch.float64, examples=DEFAULT_EXAMPLES, seed=0, replay_dir=None)
    assert v.violated and v.evidence.found_at <= DEFAULT_EXAMPLES, v.detail
    ce = v.counterexample
    # |h|^2 far below tau (drawn in 0.1..2): the quotient tau / (tau + |h|^2) rounds and presence loses its bits
    assert ce["near_null"] and 0 < ce["tiny"] ** 2 <= 2.0 ** -20, ce
    # control: the shipping presence holds the same narrowed search
    ok = run_cell(default_registry()["oattention"], narrow, torch.float64, examples=DEFAULT_EXAMPLES, seed=0,
                  replay_dir=None)
    assert not ok.violated, ok.detail


def test_subnormal_token_canary_is_caught_through_a_near_null_row():
    """Issue 43, class 5: differential draws near-null rows (a token's norm 2^e down to float16's
    subnormals) and counts them as their own regime; the canary's shrunk counterexample keeps one, and
    without those draws (differential's old bounds: no near-null row) the same search holds."""
    import dataclasses

    from tokenlaw.fuzz.engine import run_cell
    from tokenlaw.properties.catalogue import CONTRACTS
    from tokenlaw.properties.contract import FuzzOptions

    op = _canary("fuzz_subnormal_tokens_fp16").registry(default_registry())["sdpa"]
    law = CONTRACTS["differential"]
    v = run_cell(op, law, torch.float16, examples=DEFAULT_EXAMPLES, seed=0, replay_dir=None)
    assert v.violated and v.evidence.found_at <= DEFAULT_EXAMPLES, v.detail
    ce = v.counterexample
    assert ce["near_null"] and 0 < ce["tiny"] <= 2.0 ** -14 * ce["d"] ** 0.5, ce
    blind = dataclasses.replace(law, fuzz=FuzzOptions(near_null=False, wide_params=False))
    old = run_cell(op, blind, torch.float16, examples=DEFAULT_EXAMPLES, seed=0, replay_dir=None)
    assert not old.violated, old.detail
    ok = run_cell(default_registry()["sdpa"], law, torch.float16, examples=DEFAULT_EXAMPLES, seed=0, replay_dir=None)
    assert ok.status == V.Status.HOLDS and ok.evidence.accounting["near_null_tokens"]["judged"] > 0, ok.detail


def test_flex_canary_is_the_defect_past_128_not_the_alibi():
    """Control of fuzz_flex_score_mod_past_128: the same causal ALiBi without the bias past key 128 holds
    relative_mods on the same search, and the canary's counterexample reaches a key index >= 128."""
    import types

    from tokenlaw.fuzz.engine import run_cell
    from tokenlaw.operators.flex import declare_flex
    from tokenlaw.properties.catalogue import CONTRACTS, collect

    c = _canary("fuzz_flex_score_mod_past_128")
    law = CONTRACTS["relative_mods"]
    bad = run_cell(c.registry(default_registry())[c.OPERATOR], law, torch.float64, examples=DEFAULT_EXAMPLES,
                   seed=0, replay_dir=None)
    ce = bad.counterexample
    assert bad.violated and ce["n"] + ce["pos"] + 1 > 128, (bad.detail, ce)
    module = types.ModuleType("tokenlaw_test_alibi")
    module.alibi = declare_flex("alibi", score_mod=lambda s, b, h, q, kv: s - 0.125 * (q - kv), mask_mod=c.causal,
                                causal=True, relative=True, module=module.__name__)
    ok = run_cell(collect(module)["alibi"], law, torch.float64, examples=DEFAULT_EXAMPLES, seed=0, replay_dir=None)
    assert ok.status == V.Status.HOLDS, ok.detail


@pytest.mark.slow
def test_naive_reference_canary_reads_what_a_correct_operator_reads():
    """Control of fuzz_naive_reference: a correct SDPA declared against the same naive reference reads the
    same vacuous verdict with the same blind regimes, never violated: the canary's verdict is about the
    oracle (no finite reference where its bug lives), the most any search can say with that reference."""
    from tokenlaw.fuzz.engine import run_cell
    from tokenlaw.fuzz.mutants.source_edit import mutated_module, mutated_registry
    from tokenlaw.properties.catalogue import CONTRACTS

    c = _canary("fuzz_naive_reference")
    law = CONTRACTS["spec_reference"]
    ok = mutated_registry(default_registry(), mutated_module("tokenlaw.operators.sdpa", [
        ("\n@declare(", c.NAIVE), ("reference=references.sdpa_reference,", "reference=_naive_reference,")]))["sdpa"]
    v = run_cell(ok, law, torch.float64, examples=DEFAULT_EXAMPLES, seed=0, replay_dir=None)
    assert v.status == V.Status.VACUOUS and not v.violated, v.detail
    assert set(c.BLIND) <= set(v.evidence.unjudged), v.detail
