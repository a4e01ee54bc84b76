"""Canary (shape branch): OAttention whose presence is 1 for every token when `x.shape[0] >= 3`.

Correct at every other shape, so a search (or a trace) that never reaches those shapes sees
OAttention itself; real kernel bugs live exactly there (odd head dims, batch strides, tile edges).
The symbolic tier traces at small shapes and must not call the path it never followed "proved".
"""
from tokenlaw.fuzz.mutants.source_edit import mutated_module, mutated_registry

REASON = "wrong only for batches of 3 or more (a batch-stride path): every token gets presence 1"
OPERATOR = "oattention"
CAUGHT_BY = ("null_receiver", "null_source_insertion", "empty_support")
SHAPE = "batch"
LINE = "    p = presence(xp, x if carrier is None else carrier, tau=tau)        # (B, N, 1)\n"


def registry(base):
    return mutated_registry(base, mutated_module("tokenlaw.operators.oattention", [(
        LINE, LINE + "    if x.shape[0] >= 3:\n        p = xp.ones_like(p)\n")]))
