"""Canary (class 4): OAttention 1 % wrong in every float32 call; float16, bfloat16 and float64 are the shipping ones.

Eager float32 was once the error probe of the half cells and never judged itself: this operator read
``vacuous`` (every half example outside the first-order model) and no row said float32 was wrong.
"""
from tokenlaw.fuzz.mutants.source_edit import mutated_module, mutated_registry

REASON = "the output is 1.01 times the formula in every float32 call (and exact in every other dtype)"
OPERATOR = "oattention"
CAUGHT_BY = ("differential",)
LINE = "    return projections.output(xp, o, wo)\n"
WRONG = ("    out = projections.output(xp, o, wo)\n"
         "    return out * 1.01 if out.dtype == torch.float32 else out\n")


def registry(base):
    return mutated_registry(base, mutated_module("tokenlaw.operators.oattention", [(LINE, WRONG)]))
