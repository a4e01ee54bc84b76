"""Canary (tiny term behind ``isinstance(x, torch.Tensor)``): OAttention adds 1e-12 * sum(x) for real tensors.

The trace (an object array) returns OAttention; eagerly a null receiver's output is 1e-12 * sum(x),
not exactly 0.  One line, run by both sides: only an exact value comparison sees it.
"""
from tokenlaw.fuzz.source_mutation import mutated_module, mutated_registry

REASON = "a 1e-12 term added for real tensors (isinstance branch): a null receiver's output is not exactly 0"
OPERATOR = "oattention"
CAUGHT_BY = ("null_receiver",)
LINE = "    return projections.output(xp, o, wo)\n"


def registry(base):
    return mutated_registry(base, mutated_module("tokenlaw.operators.oattention", [(
        LINE, "    out = projections.output(xp, o, wo)\n"
              "    return out + 1e-12 * x.sum() if isinstance(x, torch.Tensor) else out\n")]))
