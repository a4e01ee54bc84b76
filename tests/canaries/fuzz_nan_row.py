"""Canary: sm_fir whose output row 0 is NaN for every input (NaN on both sides of every comparison)."""
from tokenlaw.fuzz.mutants.source_edit import mutated_module, mutated_registry

REASON = "row 0 is NaN in every dtype: NaN == NaN must not count as agreement where the float64 value is finite"
OPERATOR = "sm_fir"
CAUGHT_BY = ("finite", "spec_reference")


def registry(base):
    return mutated_registry(base, mutated_module("tokenlaw.operators.fir_attention", [(
        "    return projections.output(xp, xp.matmul(w, v), wo)",
        "    o = projections.output(xp, xp.matmul(w, v), wo)\n"
        "    return xp.concat([o[:, :1] * float('nan'), o[:, 1:]], axis=1)")]))
