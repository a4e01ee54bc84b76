"""Strategies: validated bounds, and every edge the issue names is reachable (and shrinks away)."""
from __future__ import annotations

import random

import pytest
import torch
from hypothesis import HealthCheck, Phase, find, settings

from tokenlaw.fuzz.strategies import LONG_LENGTHS, cases, magnitudes, tiny_magnitudes
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties.catalogue import default_registry

REG = default_registry()
CFG = settings(max_examples=400, database=None, suppress_health_check=list(HealthCheck),
               phases=(Phase.generate, Phase.shrink))


@pytest.mark.parametrize("kwargs", [dict(n_max=0), dict(batch_max=-1), dict(scales=()), dict(scales=(0.0,)),
                                    dict(bias_scales=(float("inf"),)), dict(mask_kinds=("diagonal",)),
                                    dict(layouts=()), dict(widths=(0,)), dict(long_lengths=(0,))])
def test_bad_bounds_raise_invalid_argument_naming_them(kwargs):
    with pytest.raises(InvalidArgument, match=next(iter(kwargs))):
        cases(REG["oattention"], torch.float32, **kwargs)


def test_bounds_are_keyword_only():
    with pytest.raises(TypeError):
        cases(REG["oattention"], torch.float32, 4)   # noqa


def _reach(op, dtype, pred):
    return find(cases(REG[op], dtype), pred, settings=CFG, random=random.Random(0))


@pytest.mark.parametrize("name, op, pred", [
    ("null row", "oattention", lambda c: len(c.null) >= 1 and max(c.null) >= 1),
    ("near-null row", "oattention", lambda c: bool(c.near_null)),
    ("huge bias", "oattention", lambda c: c.bias_scale >= 1e4),
    ("large magnitude", "sdpa", lambda c: c.scale >= 100),
    ("fully masked row", "oattention", lambda c: c.mask_kind == "empty_row"),
    ("padding mask", "sdpa", lambda c: c.mask_kind == "padding"),
    ("causal mask", "oattention", lambda c: c.mask_kind == "causal"),
    ("tiny tau", "oattention", lambda c: c.tau is not None and c.tau <= 1e-3),
    ("huge tau", "oattention", lambda c: c.tau is not None and c.tau >= 1e2),
    ("tiny eps_den", "oattention", lambda c: c.eps_den is not None and c.eps_den <= 1e-10),
    ("negative pn tau", "pn_fir_tau", lambda c: c.tau is not None and c.tau < -4),
    ("long odd length", "sm_fir", lambda c: c.n in LONG_LENGTHS),
    ("odd head dim", "oattention", lambda c: c.d == 6 and c.heads == 2),
    ("transposed", "oattention", lambda c: c.layout == "transposed"),
    ("strided", "ostandardize", lambda c: c.layout == "strided"),
    ("batch 2", "oattention", lambda c: c.batch == 2),
])
def test_every_edge_is_reachable_and_shrinks_to_a_small_case(name, op, pred):
    c = _reach(op, torch.float32, pred)
    assert pred(c)
    assert c.batch <= 2 and c.seed <= 2 ** 16
    if name not in ("long odd length", "null row", "batch 2"):
        assert c.n <= 2, f"{name}: shrinking should keep the sequence short, got n={c.n}"


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
def test_near_null_magnitudes_make_the_squared_norm_subnormal(dtype):
    for tiny in tiny_magnitudes(dtype):
        h = torch.full((4,), tiny / 2, dtype=torch.float64).to(dtype)   # |h| = tiny
        assert bool((h != 0).any())
        assert float((h * h).sum()) < torch.finfo(dtype).tiny


def test_large_magnitudes_overflow_a_naive_exp_in_every_dtype():
    """The largest drawn magnitudes give scores past exp's overflow point in the dtype under test."""
    from tokenlaw.operators import projections
    from tokenlaw.operators.xp import TORCH
    from tokenlaw.properties.case import Case

    for dtype, overflow in ((torch.float64, 709.8), (torch.float32, 88.7), (torch.float16, 11.1), (torch.bfloat16, 88.7)):
        scales, biases = magnitudes(dtype)
        top = 0.0
        for seed in range(4):
            c = Case(op=REG["sdpa"], dtype=dtype, n=4, d=4, seed=seed, scale=max(scales), bias_scale=max(biases))
            p = c.params
            q, k, _ = projections.project_qkv(TORCH, c.x, **{n: p[n] for n in ("wq", "bq", "wk", "bk", "wv", "bv", "heads")})
            top = max(top, float(projections.scores(TORCH, q, k).abs().max()))
        assert top > overflow, (dtype, top)


def test_non_contiguous_layouts_keep_values():
    x = torch.randn(2, 3, 4)
    from tokenlaw.properties.case import lay_out

    for layout in ("transposed", "strided"):
        y = lay_out(x, layout)
        assert not y.is_contiguous() and torch.equal(y, x)
