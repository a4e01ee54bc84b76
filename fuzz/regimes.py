"""Numerical regimes: the places a rounding or overflow defect hides, and which examples visit them.

A :class:`Regime` says when it *applies* to an operator (an attention score
offset needs attention projections; a small eps_den needs an eps_den) and
whether a drawn case *visits* it.  Contracts name the regimes they depend
on (``@contract(regimes=...)``); :func:`tokenlaw.fuzz.engine.run_cell`
counts the visits of every example and a cell that never visited a regime
its contract depends on says so in its verdict.

>>> from tokenlaw.properties.catalogue import default_registry
>>> sorted(applicable(default_registry()["oattention"], ("scores_low", "long_row", "tau_far")))
['long_row', 'scores_low', 'tau_far']
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable

import torch

from tokenlaw.operators import tree

LONG_ROW = 9            # rows longer than one 8-token tile of the interpreter's kernels
SMALL_EPS_DEN = 1.5e-5  # below this exp(-log eps_den) = 1 / eps_den overflows float16
FAR_TAU = 30.0          # |tau| beyond the drawn score range (|S| of a few units at unit scale)


# The length bands a cell's drawn distribution is counted in, per shape axis (``fuzz.engine``'s
# extra["drawn"]; also ``fuzz.engine.LENGTH_BANDS``): 1, one 8-token tile, up to 32, 64, one 128-block,
# two blocks, and past two blocks (257+, where a kernel's third block starts).  Here, below both the
# engine and the strategies, so the strategies can draw to the same edges without an import cycle.
# (lo, hi), hi None: unbounded.
LENGTH_BANDS = ((1, 1), (2, 8), (9, 32), (33, 64), (65, 128), (129, 256), (257, None))


def band_label(band) -> str:
    """``1``, ``2..8``, ``257+``: how a band of :data:`LENGTH_BANDS` is named in a report.

    >>> [band_label(b) for b in LENGTH_BANDS]
    ['1', '2..8', '9..32', '33..64', '65..128', '129..256', '257+']
    """
    lo, hi = band
    return f"{lo}+" if hi is None else str(lo) if lo == hi else f"{lo}..{hi}"


def first_param(params, key):
    """The first value of ``key`` at any nesting level of a parameter tree (hosts keep per-block dicts), or None."""
    return tree.find(params, key)


def _param_keys(op) -> set:
    return tree.keys(op.domain.draw(torch.Generator().manual_seed(0), op.domain.d_model[0], torch.float64))


def _scored(op, keys) -> bool:
    """The operator has attention scores: its declared query weight is among its parameters."""
    return op.domain.roles.query[0] in keys


def scored(op) -> bool:
    """Whether ``op`` has attention scores (its declared query weight is among its drawn parameters)."""
    return _scored(op, _param_keys(op))


def _power_edge(dtype) -> float:
    return torch.finfo(dtype).max ** 0.1


def _overflow(dtype) -> float:
    return math.log(torch.finfo(dtype).max)


@dataclasses.dataclass(frozen=True)
class Regime:
    name: str
    description: str
    applies: Callable      # (op, param names, dtype) -> bool
    visits: Callable       # (case) -> bool
    # pin(dtype, limit) -> {Case field: value} that puts any drawn case in the regime, or None where the declared
    # limit keeps the regime out of the dtype's domain; None: no single field does (not pinned)
    pin: Callable | None = None


def _offset_pin(sign: float):
    """Every score of a row at sign * 1.1 log(max) of the dtype (just past exp's overflow edge, the edge
    strategies.score_offsets draws), unless the declared limit stops the offsets short of it, or (the low
    side) the pinned scores leave every float64 oracle without a value it can trust.

    Both signs pin.  The search reaches scores_low far more often than scores_high (Hypothesis draws the
    negative offsets about five times as often, fuzz.engine._fill_regimes), but a draw's mask can still blind
    it: after the near-null draws joined, standard_host's bfloat16 differential at seed 0 drew 7 scores_low
    examples, every one with a fully masked row (NaN in float64, spread to every token), and read vacuous.

    Except scores_low in float64.  There every score of the regime is below -log(max) = -709.8, so every
    exp(s) is below float64's smallest normal: a reference written as exp(s) / sum exp(s) is NaN (0 / 0)
    past -745 and, between, finite but off by about 1e-5 relative, an error no probe predicts (its float32
    run is NaN there).  Pinned at -780.8, a correct SDPA read spec_reference violated against such a
    reference at seed 0 (7.9e-11 against a bound of 3.2e-13): the pin made wrong verdicts, not evidence.
    Past the high edge the same reference is inf / NaN, which set_aside sees and counts (no oracle: the
    regime is blind, never judged), so scores_high pins in every dtype.  In the low dtypes (-97.6 in
    float32 and bfloat16, -12.2 in float16) the float64 oracle is in its normal range and both sides pin."""
    def pin(dtype, limit):
        edge = 1.1 * _overflow(dtype)
        if sign < 0 and math.exp(-edge) < torch.finfo(torch.float64).smallest_normal:
            return None
        caps = () if limit is None else tuple(c for c in (limit.scores, limit.offset) if c is not None)
        return None if any(edge > c for c in caps) else {"score_offset": sign * edge}
    return pin


def _tau_far(case) -> bool:
    tau = first_param(case.params, case.op.domain.roles.threshold)
    if tau is None:
        return False
    if {"presence", "host"} & case.op.traits:     # presence tau against |h|^2 ~ d * scale^2
        return tau <= 1e-3 or tau >= 1e2
    return abs(tau) >= FAR_TAU


REGIMES = {r.name: r for r in (
    Regime("scores_low", "every score of a row below -log(max) of the dtype (exp(-M) overflows)",
           lambda op, keys, dtype: _scored(op, keys), lambda case: case.score_offset <= -_overflow(case.dtype),
           _offset_pin(-1.0)),
    Regime("scores_high", "every score of a row above log(max) of the dtype (exp(M) overflows)",
           lambda op, keys, dtype: _scored(op, keys), lambda case: case.score_offset >= _overflow(case.dtype),
           _offset_pin(1.0)),
    Regime("power_overflow", "scores past max^(1/10) of the dtype, where a power normaliser's x^10 overflows",
           lambda op, keys, dtype: _scored(op, keys) and "score_normaliser" in op.traits
           and 1.1 * _power_edge(dtype) * torch.finfo(dtype).eps <= 1.0,
           lambda case: abs(case.score_offset) >= _power_edge(case.dtype)),
    Regime("eps_den_small", f"eps_den <= {SMALL_EPS_DEN:g} (1 / eps_den overflows float16)",
           lambda op, keys, dtype: op.domain.roles.eps_den in keys,
           lambda case: (first_param(case.params, case.op.domain.roles.eps_den) or 1.0) <= SMALL_EPS_DEN),
    Regime("tau_far", "tau far outside the score (or |h|^2) range",
           lambda op, keys, dtype: op.domain.roles.threshold in keys, _tau_far),
    Regime("long_row", f"rows of n >= {LONG_ROW} tokens (past one 8-token tile)",
           lambda op, keys, dtype: "token_mixing" in op.traits, lambda case: case.n >= LONG_ROW),
    Regime("near_null", "a row with |h|^2 subnormal or zero in the dtype (not exactly null)",
           lambda op, keys, dtype: "presence" in op.traits, lambda case: bool(case.near_null)),
    # differential's near-null rows (strategies.cases(near_null_tokens=True)): any operator, a token's norm
    # 2^e from 1 down to the dtype's smallest subnormal, where a kernel may flush, drop or mis-scale it
    Regime("near_null_tokens", "a token of norm 2^e, e over the dtype's exponents down to its subnormals "
           "(not exactly null)", lambda op, keys, dtype: True, lambda case: bool(case.near_null)),
)}


def applicable(op, names, dtype=torch.float16) -> tuple:
    """The regimes among ``names`` that apply to ``op`` in ``dtype``."""
    keys = _param_keys(op)
    return tuple(n for n in names if REGIMES[n].applies(op, keys, dtype))


def visited(case, names) -> tuple:
    """The regimes among ``names`` this case visits."""
    return tuple(n for n in names if REGIMES[n].visits(case))
