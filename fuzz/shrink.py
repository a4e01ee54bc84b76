"""A descent over a violating example's shape and values, after Hypothesis' shrinker.

Hypothesis shrinks the choices it drew, so a counterexample is as small as the strategy lets those choices
get: a length-band fill (``strategies.banded_find``) draws n inside its band (a violation found by the fill of
9..32 shrinks to n = 9 at best), a database entry is replayed as stored, and a width or a batch drawn from a
class shrinks toward that class's first member, not toward the smallest shape.  Issue 47: a look-ahead-by-one
bug reported at n = 7, FlexAttention's seeded bugs past two tokens.  So the engine hands the example
``find`` returned to :func:`descend`, which tries smaller shapes (n, then batch, heads, d: smallest first) and
then the plainest values (no null or near-null rows, contiguous layout, unit scales, no score offset, the
drawn tau / eps_den), keeping each change under which the law is still violated *in the same way* (the
same status, and for an operator that raised, the same exception type: a shape the operator rejects is not
a smaller example of the finding) in the same numerical regimes (``fuzz.regimes``, but ``long_row``, which
is n itself: a float16 collapse at eps_den 1e-8 stays at eps_den 1e-8).  Every candidate is an example the search could have drawn: n >= 1 (the
contract's ``only_lengths`` if it lists them), a width the operator's domain draws (its ``d_model`` only
when ``fixed_width``, the contract's ``widths`` when given) that the head count divides.
"""
from __future__ import annotations

import dataclasses

from .regimes import REGIMES

SHAPE = ("n", "batch", "heads", "d")
# the plainest value of each drawn field, tried once each after the shape descent
PLAIN = (("null", ()), ("near_null", ()), ("layout", "contiguous"), ("score_offset", 0.0), ("scale", 1.0),
         ("bias_scale", 1.0), ("tau", None), ("eps_den", None), ("mask_density", 1.0), ("shift", 1.0),
         ("pos", 0), ("perm_seed", 0), ("seed", 0))
BUDGET = 48          # judgements at most: a shrink pass costs a few forward passes of a small example


def shape(case) -> dict:
    """The example's shape: n, d, batch, heads (None: the domain's own head count)."""
    return {k: getattr(case, k, None) for k in ("n", "d", "batch", "heads")}


def _kind(v) -> tuple:
    """How an example violates: its status, and for a raise the exception type (the detail's first word)."""
    return v.status, v.raised.type if v.raised is not None else ""


def _regimes(case) -> tuple:
    """The numerical regimes the example visits, but long_row (n >= 9: the length is what shrinks)."""
    return tuple(name for name, r in REGIMES.items() if name != "long_row" and r.visits(case))


def _candidates(case, axis, bounds) -> list:
    cur = getattr(case, axis)
    if axis == "n":
        listed = bounds.get("only_lengths")
        pool = sorted(x for x in (listed or range(1, cur)) if x < cur)
        return pool[:4] + [x for x in (cur // 2, cur - 1) if x in pool and x not in pool[:4]]
    if axis == "batch":
        return list(range(1, cur))[:2]
    if axis == "heads":
        if cur is None:
            return []
        return [h for h in range(1, cur) if case.d % h == 0][:2]
    if axis == "d":
        if case.op.domain.fixed_width:
            return []
        pool = bounds.get("widths") or range(1, cur)
        return [w for w in sorted(pool) if w < cur and (case.heads is None or w % case.heads == 0)][:6]
    return []


def _moved(case, axis, value):
    """``case`` with ``axis`` set to ``value``; token indices past a shorter n are dropped."""
    change = {axis: value}
    if axis == "n":
        change["null"] = tuple(i for i in case.null if i < value)
        change["near_null"] = tuple(i for i in case.near_null if i < value)
    return dataclasses.replace(case, **change)


def descend(case, contract, first, *, bounds=None, budget: int = BUDGET):
    """(the smallest, plainest example found that violates ``contract`` as ``first`` (its verdict) does,
    judgements made).  ``case`` is returned unchanged when nothing smaller violates."""
    bounds = bounds or {}
    if bounds.get("core") or not all(hasattr(case, k) for k in SHAPE):
        return case, 0
    want, spent = _kind(first), 0
    kept = _regimes(case)

    def still(candidate) -> bool:
        nonlocal spent
        try:
            if _regimes(candidate) != kept:
                return False
        except Exception:  # noqa: BLE001 -- a candidate whose parameters cannot be drawn is not an example
            return False
        spent += 1
        try:
            return _kind(contract.judge(candidate)) == want
        except Exception:  # noqa: BLE001 -- a candidate the case cannot even build is not an example
            return False

    for _ in range(2):                          # shapes, values, and the shapes once more
        for axis in SHAPE:
            improved = True
            while improved and spent < budget:
                improved = False
                for value in _candidates(case, axis, bounds):
                    if spent >= budget:
                        break
                    candidate = _moved(case, axis, value)
                    if still(candidate):
                        case, improved = candidate, True
                        break
        changed = False
        for field, plain in PLAIN:
            if spent >= budget or not hasattr(case, field) or getattr(case, field) == plain:
                continue
            candidate = dataclasses.replace(case, **{field: plain})
            if still(candidate):
                case, changed = candidate, True
        if not changed:
            break
    return case, spent
