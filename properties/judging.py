"""Shared judging steps: exact zero checks and tolerance comparisons to verdicts."""
from __future__ import annotations

import math

import torch

from tokenlaw.operators.dtypes import name as dtype_name

from . import verdict as V
from .tolerance import BOUND_FRACTION, FIRST_ORDER_LIMIT, UNIT_ROUNDOFF, Comparison, compare, evaluate


def max_abs(t: torch.Tensor) -> float:
    """Largest |entry| as float64; NaN if any entry is NaN (a NaN is never 'zero')."""
    if t.numel() == 0:
        return 0.0
    t = t.detach().double()
    if torch.isnan(t).any():
        return float("nan")
    return float(t.abs().max())


def exact_zero(t: torch.Tensor, what: str) -> V.Verdict:
    """Holds iff every entry is exactly 0.0 (bit-for-bit up to the sign of zero)."""
    d = max_abs(t)
    return V.judge(d, 0.0, f"{what}: max |entry| = {d:.3g} (exact contract: must be 0.0)")


def relation(case, lhs, rhs, what: str, allowance: float = 0.0) -> V.Verdict:
    """Judge lhs(dtype) == rhs(dtype) with the derived tolerance of ``tolerance.compare``."""
    return compared(compare(evaluate(lhs, case.dtype), evaluate(rhs, case.dtype), case.dtype, allowance), what, case)


def unresolved(case, discrepancy: float, scale: float) -> str | None:
    """Why no rounding-error model covers this example, before any probe is consulted, or None.

    A case whose attention scores all sit near a row-wide offset (``case.score_offset``, the overflow
    regimes) is rounded by D at the offset's spacing: |offset| u_D past ``FIRST_ORDER_LIMIT`` (float64 at
    an offset of 7.4e30 rounds each score by 8e14, bfloat16 at 97.6 by 0.38) leaves the weights a function
    of D's rounding, not a first-order perturbation of the exact ones, and which rounding depends on the
    summation order (a permuted row summed in another order by the BLAS, seed 3, docs/fuzz.md item 9).
    Any two outputs within the output's own range can then differ by rounding alone, so a finite
    discrepancy up to twice the largest |float64 value| decides nothing; a non-finite value where float64
    is finite, or a discrepancy past that range, is still judged.  The offset is the one the case applies
    (``Case.applied_offset``): an operator without attention scores is not moved by a drawn offset, and an
    example of it is judged as any other (presence at batch 3, seed 0: its one such example was set aside for an
    offset of 7.4e30 that changed nothing, and a 1 % scale there went unseen, issue 43)."""
    offset = abs(getattr(case, "applied_offset", case.score_offset))
    spacing = offset * UNIT_ROUNDOFF[case.dtype]
    if spacing <= FIRST_ORDER_LIMIT or not math.isfinite(discrepancy) or discrepancy > 2 * scale:
        return None
    return (f"inconclusive, {dtype_name(case.dtype)} rounds every score near the offset {offset:.3g} "
            f"by up to {spacing:.2g} > {FIRST_ORDER_LIMIT}: no first-order error model "
            f"(|lhs - rhs| = {discrepancy:.3g} is within the output's range {scale:.3g})")


def compared(c: Comparison, what: str, case=None) -> V.Verdict:
    """A ``tolerance.compare`` result as a verdict; inconclusive where the probe left its first-order regime,
    or where D itself did (:func:`unresolved`, given the ``case``).

    A probe whose own relative error passes ``tolerance.FIRST_ORDER_LIMIT`` no longer predicts D's
    rounding (its error stopped growing with u), so an example whose discrepancy D's rounding could
    still explain -- at most that same fraction of the output's scale, the first-order model's own
    range -- is set aside as inconclusive, never judged held or violated.  A discrepancy past it is no
    first-order rounding of D whatever the probe says, and is judged against the bound as always (a
    bug that also wrecks the probe, e.g. a presence that cancels to 0 in every dtype, stays visible);
    so is a non-finite value where float64 is finite.
    """
    why = None if case is None else unresolved(case, c.discrepancy, c.scale)
    if why:
        return V.holds(0.0, 0.0, f"{what}: {why}", inconclusive=True, extra={"ratio": 0.0})
    if (c.probe_relative > FIRST_ORDER_LIMIT and math.isfinite(c.discrepancy)
            and c.discrepancy <= FIRST_ORDER_LIMIT * c.scale):
        return V.holds(0.0, 0.0, f"{what}: inconclusive, the probe's relative error {c.probe_relative:.2g} > "
                       f"{FIRST_ORDER_LIMIT} is outside the first-order error model "
                       f"(|lhs - rhs| = {c.discrepancy:.3g}, bound {c.bound:.3g} not trusted)",
                       inconclusive=True, extra={"ratio": 0.0, "probe_relative": c.probe_relative})
    if c.input_relative > BOUND_FRACTION and c.ok:
        # D's rounding of the law's own inputs moves a side by more than BOUND_FRACTION of its scale: a bound
        # that large would pass a wrong value of that size, so the example decides nothing (tolerance.py)
        return V.holds(0.0, 0.0, f"{what}: inconclusive, rounding the inputs to "
                       f"{dtype_name(case.dtype) if case is not None else 'the dtype'} alone moves a side by {c.input_relative:.2g} of its scale (> {BOUND_FRACTION:.3g}; "
                       f"|lhs - rhs| = {c.discrepancy:.3g}, bound {c.bound:.3g} not trusted)",
                       inconclusive=True, extra={"ratio": 0.0, "input_relative": c.input_relative})
    return V.Verdict(V.Status.HOLDS if c.ok else V.Status.VIOLATED, c.discrepancy, c.bound,
                     f"{what}: |lhs - rhs| = {c.discrepancy:.3g} vs bound {c.bound:.3g} at {c.index} "
                     f"(max anywhere {c.max_discrepancy:.3g})",
                     extra={"ratio": c.ratio, "max_discrepancy": c.max_discrepancy, "least_bound": c.least_bound})


def worst(*verdicts: V.Verdict) -> V.Verdict:
    """Combine sub-checks of one contract: the first violation wins, else the largest ratio."""
    bad = [v for v in verdicts if v.violated]
    if bad:
        return bad[0]
    return max(verdicts, key=lambda v: v.ratio)
