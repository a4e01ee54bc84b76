"""float32's score-spacing limit (operators/limits.py: FLOAT32_SCORES), from the default check's counterexample.

tabular_otransformer's closure broke in float32 at bias scale 1e4 (seed 781, n 24, d 5): the scores
sit at |S| = 1.67e8, where float32 spaces numbers 16 apart, while a row's two largest scores are ~3
apart.  The inserted null is inert (q, k, v of the old tokens are bit-identical, its weight is
exactly 0), but the 25-column score matmul rounds some entries differently from the 24-column one,
and a weight exp(s - M) turns that into an O(1) relative change: the softmax carries no correct digit.
These tests pin that diagnosis, that the strategy no longer draws the case in float32, and that below
the limit the contract still sees a seeded null-leak.
"""
from __future__ import annotations

import pytest
import torch

import tokenlaw.operators.oattention as OA
from tokenlaw.fuzz.strategies import BIAS_SCALES, fitting, nominal_score
from tokenlaw.operators import projections
from tokenlaw.properties import statement as S
from tokenlaw.properties.case import Case
from tokenlaw.properties.catalogue import default_registry
from tokenlaw.properties.null_laws import closure
from tokenlaw.operators.xp import TORCH

REG = default_registry()
HOST = REG["tabular_otransformer"]
FOUND = dict(seed=781, batch=2, n=24, d=5, null=(0, 1, 5, 2, 3), pos=0, scale=10.0, mask_kind="random")


def _case(bias_scale, dtype=torch.float32, **changes):
    return Case(op=HOST, dtype=dtype, bias_scale=bias_scale, **{**FOUND, **changes})


def _first_scores(case, x, mask, dtype, monkeypatch):
    """The first OAttention block's score matrix, recorded from inside the operator's own code."""
    seen = []
    core = OA.oattention_core

    def recording(xp, q, k, v, p_src, p_rcv, mask, *, eps_den):
        seen.append(projections.scores(xp, q, k))
        return core(xp, q, k, v, p_src, p_rcv, mask, eps_den=eps_den)

    with monkeypatch.context() as m:
        m.setattr(OA, "oattention_core", recording)
        case.runner.layers(x, mask, dtype=dtype)
    return seen[0]


def test_the_counterexample_scores_are_spaced_past_their_spread_in_float32(monkeypatch):
    case = _case(1e4)
    limit = HOST.domain.limit("float32")
    assert limit is not None and limit.scores == 2.0 ** 24 and "2^24" in limit.reason
    s64 = _first_scores(case, case.x, case.mask, torch.float64, monkeypatch)
    s32 = _first_scores(case, case.x, case.mask, torch.float32, monkeypatch)
    top = float(s64.abs().max())
    assert top > 4 * limit.scores                                        # 1.67e8
    spacing = float(torch.finfo(torch.float32).eps) * 2.0 ** torch.floor(torch.log2(torch.tensor(top)))
    assert spacing >= 8.0                                                # 16 at 1.67e8
    assert float((s32.double() - s64).abs().max()) > spacing             # float32's own score error (~50)
    # inserting the null changes other entries' rounding in the wider matmul (exactly 0 weight for it)
    k = case.pos % (case.n + 1)
    keep = torch.tensor(S.others(case.n + 1, k))
    x2, m2 = S.insert_null(TORCH, case.x, k), S.insert_visible(case.mask, k)
    s32_new = _first_scores(case, x2, m2, torch.float32, monkeypatch)[..., keep[:, None], keep]
    assert float((s32_new.double() - s32.double()).abs().max()) >= spacing
    v = closure(case)
    assert v.violated and "layer 2" in v.detail                          # what the default check found


def test_the_strategy_no_longer_draws_the_bias_scale_in_float32_only():
    limit = HOST.domain.limit("float32")
    assert 1e4 not in fitting(BIAS_SCALES, limit, FOUND["d"], bias=True, host=True)
    assert 100.0 in fitting(BIAS_SCALES, limit, FOUND["d"], bias=True, host=True)
    assert 16 * nominal_score(100.0, 128) <= limit.scores                # bias 100 still drawn at every width
    assert HOST.domain.limit("bfloat16") is None and HOST.domain.limit("float64") is None
    assert REG["otransformer"].domain.limit("float32") == limit


@pytest.mark.parametrize("bias_scale", [100.0, 1.0])
def test_below_the_limit_closure_holds_and_a_null_leak_still_breaks_it(bias_scale, monkeypatch):
    """The same draw below the limit (the largest bias scale float32 still draws, and 1) holds; with a
    null source's presence ignored (mass 1, so its value bias enters the old tokens' average) it breaks."""
    assert closure(_case(bias_scale)).status == "holds"
    assert closure(_case(bias_scale, null=())).status == "holds"
    original = OA.oattention_core

    def leaky(xp, q, k, v, p_src, p_rcv, mask, *, eps_den):
        """(wrong) every source gets mass 1, a null one too."""
        return original(xp, q, k, v, xp.ones_like(p_src), p_rcv, mask, eps_den=eps_den)

    monkeypatch.setattr(OA, "oattention_core", leaky)
    leaked = closure(_case(bias_scale, null=()))
    assert leaked.violated and "contextual erasure lost" in leaked.detail, leaked.detail
