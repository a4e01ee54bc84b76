"""Canary (tiny term behind ``getattr(x, "dtype", None)``): OAttention adds 1e-12 * sum(x) in float64.

The trace's object array has dtype object, so it returns OAttention; eagerly (float64) a null
receiver's output is 1e-12 * sum(x), not exactly 0.  One line, run by both sides.
"""
from tokenlaw.fuzz.source_mutation import mutated_module, mutated_registry

REASON = "a 1e-12 term added when x's dtype is float64 (getattr branch): a null receiver's output is not exactly 0"
OPERATOR = "oattention"
CAUGHT_BY = ("null_receiver",)
LINE = "    return projections.output(xp, o, wo)\n"


def registry(base):
    return mutated_registry(base, mutated_module("tokenlaw.operators.oattention", [(
        LINE, "    out = projections.output(xp, o, wo)\n"
              "    return out + 1e-12 * x.sum() if getattr(x, 'dtype', None) == torch.float64 else out\n")]))
