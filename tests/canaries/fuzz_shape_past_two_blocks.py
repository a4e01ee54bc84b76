"""Canary (length band): OAttention whose presence is 1 for every token when n >= 257.

Two 128-token blocks plus one: where a kernel's third key block starts.  Issue 43 (class 7) found that
nothing searched past 130 tokens; the 257+ band is drawn in one example in ten and at least once per cell.
"""
from tokenlaw.fuzz.mutants.source_edit import mutated_module, mutated_registry

REASON = "wrong only past two 128-token blocks (n >= 257): every token gets presence 1"
OPERATOR = "oattention"
CAUGHT_BY = ("null_receiver", "null_source_insertion", "empty_support")
SHAPE = "n"
LINE = "    p = presence(xp, x if carrier is None else carrier, tau=tau)        # (B, N, 1)\n"


def registry(base):
    return mutated_registry(base, mutated_module("tokenlaw.operators.oattention", [(
        LINE, LINE + "    if x.shape[1] >= 257:\n        p = xp.ones_like(p)\n")]))
