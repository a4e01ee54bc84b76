"""Canary (length band): the FIR attention family's causal mask off by one only when n > 64.

The shipping ``causal_mask`` (operators/fir_attention.py) with ``np.tril(..., 1)`` for sequences longer
than one 64-token compiled tile: row t sees token t + 1.  Issue 43 (class 9) found this seeded bug
surviving the default check at seed 0, n > 64 being about 3 % of the draws; the length bands draw it in
a third of the examples and at least once per cell.
"""
from tokenlaw.fuzz.mutants.source_edit import mutated_module, mutated_registry

REASON = "the causal mask leaks token t + 1 into row t, only for sequences longer than 64 tokens"
OPERATOR = "sm_fir"
CAUGHT_BY = ("causality",)
SHAPE = "n"
LINE = "    return xp.asarray(np.tril(np.ones((n, n))), like)     # in like's array type: no type branch here\n"


def registry(base):
    return mutated_registry(base, mutated_module("tokenlaw.operators.fir_attention", [(
        LINE, "    return xp.asarray(np.tril(np.ones((n, n)), 1 if n > 64 else 0), like)\n")]))
