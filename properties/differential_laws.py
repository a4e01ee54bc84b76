"""The differential contract: the implementation in dtype D against the float64 reference."""
from __future__ import annotations

import dataclasses

import torch

from . import verdict as V
from .catalogue import contract
from .tolerance import differential as compare_differential


def _eager_probe_only(op, dtype, backend):
    if "score_normaliser" in op.traits and "sub_simplex" in op.claims:
        return ("a rectified power normaliser is discontinuous where a row's only positive score crosses the "
                "threshold (its mass jumps between 1 and 0): no rounding-error bound exists there, so the "
                "operator is judged by its metamorphic contracts instead")
    if backend == "eager" and dtype == "float32":
        return ("eager float32 is the error probe the bound is predicted from (tolerance.differential); "
                "the float32 cell is judged for kernel backends")
    return None


_OTHER_HALF = {torch.float16: torch.bfloat16, torch.bfloat16: torch.float16}


@contract(exact=False, dtypes=("float32", "float16", "bfloat16"), universal=True, skip=_eager_probe_only)
def differential(case):
    """The implementation in dtype D matches the float64 reference within D's predicted rounding error."""
    # All runs take the same float64 inputs and round them to their own
    # dtype, so the float32 probe measures this input's conditioning (input
    # rounding included) and its error, scaled by u_D / u_32, predicts D's.
    reference = dataclasses.replace(case, backend="eager", _cache={})
    a_d = case.run(case.x, case.mask)
    a_64 = reference.run(case.x, case.mask, dtype=torch.float64)
    probes = {torch.float32: reference.run(case.x, case.mask, dtype=torch.float32)}
    if case.dtype in _OTHER_HALF:
        other = _OTHER_HALF[case.dtype]
        probes[other] = reference.run(case.x, case.mask, dtype=other)
    c = compare_differential(a_d, a_64, probes, case.dtype)
    where = f"{case.backend} {str(case.dtype).replace('torch.', '')} vs float64 reference"
    return V.Verdict(V.HOLDS if c.ok else V.VIOLATED, c.discrepancy, c.bound,
                     f"{where}: |a_D - a_64| = {c.discrepancy:.3g} vs predicted bound {c.bound:.3g} at {c.index} "
                     f"(max anywhere {c.max_discrepancy:.3g})",
                     extra={"ratio": c.ratio, "max_discrepancy": c.max_discrepancy})
