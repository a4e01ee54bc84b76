"""Canary (batch): LayerNorm 1 % too large for batches of 4.

Hypothesis draws a batch in 1..4 towards 1 (89 of 106 examples at batch 1, one at batch 4, in one
spec_reference cell at seed 0): the standing adversary's layernorm batch >= 4 mutant reached only laws
that compare the operator with itself.  The explicit edge ``batch`` draws the largest batch.
"""
from ._build import edited

REASON = "wrong only for a batch of 4 or more (a batch-stride path): LayerNorm scaled by 1.01"
OPERATOR = "layernorm"
CAUGHT_BY = ("spec_reference",)
SHAPE = "batch"
LINE = "    return layer_norm(xp, x, gamma=gamma, beta=beta)\n"


registry = edited("norms", (
    LINE, "    if x.shape[0] >= 4:\n        return 1.01 * layer_norm(xp, x, gamma=gamma, beta=beta)\n" + LINE))
