"""Canary (class 4): OAttention 1 % wrong in float32 only at batch size 3 (the batch axis is drawn 1..4).

Before eager float32 was judged, every differential row of it held: the float32 cell was not run and
the half cells set the batch-3 examples aside (their float32 probe predicted a large error).
"""
from tokenlaw.fuzz.mutants.source_edit import mutated_module, mutated_registry

REASON = "the output is 1.01 times the formula in float32 when the batch holds exactly 3 sequences"
OPERATOR = "oattention"
CAUGHT_BY = ("differential",)
LINE = "    return projections.output(xp, o, wo)\n"
WRONG = ("    out = projections.output(xp, o, wo)\n"
         "    return out * 1.01 if out.dtype == torch.float32 and x.shape[0] == 3 else out\n")


def registry(base):
    return mutated_registry(base, mutated_module("tokenlaw.operators.oattention", [(LINE, WRONG)]))
