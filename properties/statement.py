"""One statement per contract, evaluated by both tiers (issue 11 point 6).

A contract's law is written once, as a small function over the array
namespace ``xp`` that returns :class:`Claim` s::

    def statement(xp, run, x, mask, k) -> [Claim]

``run(x, mask, **overrides)`` runs the operator under test (its output), or
for score laws ``weights(s, **overrides)`` returns the weights the
operator's code applies; an override names the part a parameter plays
(``threshold=``, ``eps_den=``: ``tokenlaw.operators.roles``), so one
statement serves operators that name their parameters otherwise.  The tiers differ only in what they feed it:

* the fuzz tier (:func:`judge`) calls it on float64 torch tensors with a
  runner that casts to a dtype, once in the dtype under test and, when a
  claim is tolerance-based, in float64 and the probe precision; ``zero``
  ``same`` and exact ``at_most`` claims are judged bit-for-bit in the dtype under
  test, ``equal`` and inexact ``at_most`` claims with the tolerance model;
* the symbolic tier (``tokenlaw.symbolic.laws``) calls it on z3 object
  arrays and proves every claim (``zero``/``equal`` as ``=``, ``at_most``
  as ``<=``), for every position instead of one drawn position.

The array edits a statement needs (zero a token, insert a null token, grow
a mask) are here too, with one meaning for torch tensors and numpy object
arrays.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import torch

from tokenlaw.operators.xp import TORCH

from . import verdict as V
from .judging import compared, exact_zero, worst
from .tolerance import compare, evaluate


@dataclasses.dataclass
class Claim:
    """``lhs == 0`` (zero, exact), ``lhs == rhs`` (equal), ``lhs <= rhs`` (at_most) or
    ``lhs`` finite (finite), elementwise."""

    kind: str
    lhs: object
    rhs: object
    what: str
    exact: bool = False
    terms: tuple = (0, 0)   # entries (lhs, rhs) each sum in the dtype's own arithmetic (tolerance.accumulation)


def zero(t, what: str) -> Claim:
    """t = 0 exactly (bit-for-bit in every dtype)."""
    return Claim("zero", t, None, what, exact=True)


def finite(t, what: str) -> Claim:
    """Every entry of t is finite (the symbolic tier proves it through each division's obligation)."""
    return Claim("finite", t, None, what, exact=True)


def equal(a, b, what: str, terms: tuple = (0, 0)) -> Claim:
    """a = b (in the reals; within the tolerance model in floating point).  ``terms``: the entries a and b
    each sum in the dtype's own arithmetic, where the statement knows it (``tolerance.accumulation``)."""
    return Claim("equal", a, b, what, terms=terms)


def same(a, b, what: str) -> Claim:
    """a = b in the reals; in floating point bit for bit in the dtype under test (NaN where the other is NaN,
    the same infinities), with no rounding allowance: for two runs of the same arithmetic."""
    return Claim("equal", a, b, what, exact=True)


def at_most(a, b, what: str, exact: bool = False, terms: tuple = (0, 0)) -> Claim:
    """a <= b (exact: with no rounding allowance in any dtype; ``terms`` as in :func:`equal`)."""
    return Claim("at_most", a, b, what, exact=exact, terms=terms)


# -- array edits, for torch tensors and object arrays alike -----------------------------

def is_torch(x) -> bool:
    return torch.is_tensor(x)


def copy(x):
    return x.clone() if is_torch(x) else x.copy()


def with_token(x, i, value):
    """x with token i (axis 1) replaced by ``value`` (0 or an array of shape (B, D))."""
    out = copy(x)
    out[:, i] = value
    return out


def with_nulls(x, nulls):
    """x with every token in ``nulls`` set to 0."""
    out = copy(x)
    for i in nulls:
        out[:, i] = 0
    return out


def insert_null(xp, x, k):
    """(h_1..h_{k-1}, 0, h_k..h_n) along axis 1."""
    return xp.concat([x[:, :k], xp.zeros_like(x[:, :1]), x[:, k:]], axis=1)


def insert_visible(mask, k):
    """Grow a (B, n, n) mask to n + 1 with row and column k visible."""
    if mask is None:
        return None
    b, n, _ = mask.shape
    keep = [i for i in range(n + 1) if i != k]
    if is_torch(mask):
        out = torch.ones(b, n + 1, n + 1, dtype=mask.dtype)
    else:
        out = np.empty((b, n + 1, n + 1), dtype=object)
        out.fill(1)
    out[:, np.array(keep)[:, None], np.array(keep)[None, :]] = mask
    return out


def all_visible(x, causal: bool = False):
    """The (B, n, n) 0/1 mask of tokens ``x`` (B, n, d) that hides nothing (``causal``: every key j <= i),
    in ``x``'s array type (float64 torch tensors, object arrays of 0/1)."""
    b, n = x.shape[0], x.shape[1]
    ones = np.tril(np.ones((n, n), dtype=int)) if causal else np.ones((n, n), dtype=int)
    if is_torch(x):
        return torch.as_tensor(ones, dtype=torch.float64).expand(b, n, n).contiguous()
    return np.broadcast_to(ones.astype(object), (b, n, n)).copy()


def others(n_new, k):
    """Indices of the old tokens after inserting at k."""
    return [i for i in range(n_new) if i != k]


class Runner:
    """What a statement runs: ``run(x, mask, **overrides)`` is the operator's output and
    ``run.reference(x, mask)`` its declared direct formula (``op.reference``)."""

    def __init__(self, call, reference=None):
        self._call, self._reference = call, reference

    def __call__(self, x, mask, **overrides):
        return self._call(x, mask, **overrides)

    def reference(self, x, mask):
        return self._reference(x, mask)


# -- the fuzz tier's evaluation -----------------------------------------------------------

def runner(case, dtype) -> Runner:
    """The case's operator on float64 inputs cast to ``dtype``; its outputs (the values
    it computed in ``dtype``) as float64, so a statement's own arithmetic adds no rounding."""
    def reference(x, mask):
        with torch.no_grad():
            return case.op.reference(TORCH, x.to(dtype), **case.runner.arguments(mask, dtype)).double()

    roles = case.op.domain.roles           # a statement's overrides are by part (threshold=...)
    return Runner(lambda x, mask, **overrides: case.runner.run(x, mask, dtype=dtype,
                                                               **roles.named(overrides)).double(), reference)


def judge(case, statement, make_run=runner, make_rounded=None) -> V.Verdict:
    """The fuzz verdict of ``statement(xp, run)`` on a case (see the module docstring).

    ``make_run(case, dtype)`` builds the runner the statement gets; the first
    violated claim (in the statement's order) decides, else the largest ratio.
    ``make_rounded(case, dtype)``, where given, builds a runner that rounds the statement's inputs to
    ``dtype`` and computes in float64: each tolerance claim's sides then carry their inputs' own rounding
    (``tolerance.compare``'s ``input_rounding``), computed outright rather than predicted by a probe.
    """
    claims = {case.dtype: statement(TORCH, make_run(case, case.dtype))}
    if not claims[case.dtype]:
        return V.holds(0.0, 0.0, "nothing to compare")
    rounded = None
    if any(not c.exact for c in claims[case.dtype]):
        claims = evaluate(lambda dt: statement(TORCH, make_run(case, dt)), case.dtype, claims)
        if make_rounded is not None and case.dtype != torch.float64:
            rounded = statement(TORCH, make_rounded(case, case.dtype))
    verdicts = []
    for i, c in enumerate(claims[case.dtype]):
        if c.kind == "finite":
            if not bool(torch.isfinite(c.lhs).all()):
                verdicts.append(V.violated(float("nan"), 0.0, f"non-finite output {c.what}"))
        elif c.kind == "zero":
            verdicts.append(exact_zero(c.lhs, c.what))
        elif c.kind == "equal" and c.exact:
            verdicts.append(_same(c.lhs, c.rhs, c.what))
        elif c.exact:
            excess = (torch.as_tensor(c.lhs).double() - torch.as_tensor(c.rhs).double()).clamp(min=0)
            d = float(excess.max()) if excess.numel() else 0.0
            if excess.isnan().any():
                d = float("nan")
            verdicts.append(V.judge(d, 0.0, f"{c.what}: largest excess {d:.3g} (exact: must be <= 0)"))
        else:
            a = {dt: cs[i].lhs for dt, cs in claims.items()}
            b = {dt: cs[i].rhs if c.kind == "equal" else torch.minimum(cs[i].lhs, _like(cs[i].rhs, cs[i].lhs))
                 for dt, cs in claims.items()}
            moved = (None, None)
            if rounded is not None:
                r, c64 = rounded[i], claims[torch.float64][i]
                moved = ((torch.as_tensor(r.lhs).double() - torch.as_tensor(c64.lhs).double()).abs(),
                         None if c.kind != "equal" else (torch.as_tensor(r.rhs).double()
                                                         - torch.as_tensor(c64.rhs).double()).abs())
            verdicts.append(compared(compare(a, b, case.dtype, terms=c.terms, input_rounding=moved), c.what, case))
    return worst(*verdicts)


def _same(a, b, what: str) -> V.Verdict:
    """The exact ``same`` claim: bit for bit, NaN matching NaN and an infinity the same infinity."""
    a, b = torch.as_tensor(a).double(), torch.as_tensor(b).double()
    if a.shape != b.shape:
        return V.violated(float("inf"), 0.0, f"{what}: shapes {tuple(a.shape)} vs {tuple(b.shape)}")
    agree = (a == b) | (torch.isnan(a) & torch.isnan(b))
    off = ~agree
    if not bool(off.any()):
        return V.holds(0.0, 0.0, f"{what}: all {a.numel()} entries equal bit for bit (exact contract)")
    gap = (a - b).abs()[off]
    d = float("nan") if bool(gap.isnan().any()) else float(gap.max())
    return V.violated(d, 0.0, f"{what}: {int(off.sum())} of {a.numel()} entries differ, largest |difference| "
                              f"{d:.3g} (exact contract: the same arithmetic must give the same bits)")


def _like(v, ref):
    return v if is_torch(v) else torch.full_like(ref, float(v))

