"""Canary (issue 43, adversary gap): OAttention 1 % wrong in every float16 call; every other dtype is the shipping one.

A 1 % scale is 20 float16 roundoffs but only 0.2-0.9 of the normwise differential bound (K = 8 times the
probes' scaled normwise error): it survived the default check until ``differential`` judged D's systematic
relative bias (properties/tolerance.py, *Systematic bias*).
"""
from tokenlaw.fuzz.mutants.source_edit import mutated_module, mutated_registry

REASON = "the output is 1.01 times the formula in every float16 call (and exact in every other dtype)"
OPERATOR = "oattention"
CAUGHT_BY = ("differential",)
DTYPES = ("float16",)
LINE = "    return projections.output(xp, o, wo)\n"
WRONG = ("    out = projections.output(xp, o, wo)\n"
         "    return out * 1.01 if out.dtype == torch.float16 else out\n")


def registry(base):
    return mutated_registry(base, mutated_module("tokenlaw.operators.oattention", [(LINE, WRONG)]))
