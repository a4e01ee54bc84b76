"""The judged top-up (fuzz.engine._top_up): a search past n = 1 where n = 1 judged nothing, and the bar counts it.

At seeds 1 and 2 the bfloat16 differential cells of tabular_otransformer (a lone token standardises to 0:
trivially judged) and pn_fir_c (row 0 sits on its threshold: set aside) drew n = 1 in 58 to 64 of 112
examples and read vacuous.  The top-up spends a second budget at n >= 2 only there; the bar (a tenth of
every example run) counts the top-up's examples too.
"""
import random

import hypothesis.strategies as st
import pytest
import torch
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis.errors import NoSuchExample

from tokenlaw.fuzz import engine
from tokenlaw.fuzz.strategies import FILL, PAST_ONE, cases, length_band, reachable_bands
from tokenlaw.properties.catalogue import CONTRACTS, default_registry

BANDS = reachable_bands()
CFG = settings(max_examples=10, deadline=None, database=None, derandomize=False,
               suppress_health_check=list(HealthCheck), phases=(Phase.generate,))


def _seen(n, judged):
    return {"n": n, "inconclusive": n - judged, "trivial": 0, "outside": 0}


def _counting(seen):
    def is_violation(_):
        seen["n"] += 1
        seen["inconclusive"] += 1
        return False
    return is_violation


@pytest.mark.parametrize("tally, seen, bands, why", [
    ({"1": [60, 1], "2..8": [50, 0]}, _seen(110, 1), BANDS, "n = 1 judged one"),
    ({"1": [FILL - 1, 0], "2..8": [50, 0]}, _seen(51, 0), BANDS, "too few n = 1 examples to say"),
    ({"1": [60, 0], "2..8": [50, 20]}, _seen(110, 20), BANDS, "enough judged already"),
    ({"1": [60, 0]}, _seen(60, 0), ("1",), "nothing past n = 1 is reachable"),
])
def test_no_top_up_unless_n1_judged_none_and_the_cell_is_short(tally, seen, bands, why):
    topped = []
    with pytest.raises(NoSuchExample):
        engine._top_up(lambda: st.integers(2, 10 ** 6), _counting(seen), CFG, 0, seen, tally, bands, 110, 10, topped)
    assert topped == [], why


def test_top_up_searches_its_budget_and_counts_it():
    seen = _seen(110, 1)
    topped = []
    with pytest.raises(NoSuchExample):
        engine._top_up(lambda: st.integers(2, 10 ** 6), _counting(seen), CFG, 0, seen, {"1": [60, 0]}, BANDS, 110, 10,
                       topped)
    assert topped == [10] and seen["n"] == 120


def test_top_up_returns_a_violation():
    seen = _seen(110, 1)
    topped = []
    found = engine._top_up(lambda: st.integers(2, 10 ** 6), lambda n: n >= 5000, CFG, 0, seen, {"1": [60, 0]}, BANDS, 110,
                           10, topped)
    assert found >= 5000 and len(topped) == 1


def test_past_one_never_draws_n_1_and_reaches_the_long_bands():
    op = default_registry()["pn_fir_c"]
    strategy = cases(op, torch.bfloat16, band=PAST_ONE, **CONTRACTS["differential"].fuzz_bounds)
    drawn = []

    def note(case):
        drawn.append(case.n)
        return False
    with pytest.raises(NoSuchExample):
        find(strategy, note, settings=settings(CFG, max_examples=60), random=random.Random(0))
    assert min(drawn) >= 2
    assert {length_band(n) for n in drawn} >= {"2..8", "9..32"}


@pytest.mark.slow
def test_seed1_tabular_bfloat16_differential_is_judged_past_n1():
    """The seed-1 cell that read vacuous: the top-up runs, its examples join the budget, and enough are judged."""
    op, contract = default_registry()["tabular_otransformer"], CONTRACTS["differential"]
    v = engine.run_cell(op, contract, torch.bfloat16, examples=100, seed=1, replay_dir=None)
    assert v.status == engine.V.Status.HOLDS, v.detail
    top = v.extra["top_up"]
    assert top["examples"] == 100 and top["n=1"] >= FILL
    assert v.evidence.judged >= engine.min_judged(v.examples) and v.examples > 200


@pytest.mark.slow
def test_top_up_leaves_an_unjudgeable_cell_vacuous():
    """The bar is not lowered: the trivial-reference canary (judged only where both sides are exactly 0) runs the
    top-up, judges none of its examples either, and stays vacuous with every example in the budget."""
    from tests.canaries import fuzz_trivial_reference as c

    reg = c.registry(default_registry())
    v = engine.run_cell(reg[c.OPERATOR], CONTRACTS["spec_reference"], torch.float64, examples=100, seed=0,
                        replay_dir=None)
    assert v.status == engine.V.Status.VACUOUS, v.detail
    assert v.extra["top_up"]["examples"] == 100 and v.evidence.judged == 0 and v.examples > 200
