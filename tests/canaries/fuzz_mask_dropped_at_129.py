"""Canary (length band): SDPA that drops its mask at exactly n = 129 (one 128-token block plus one).

The shipping ``sdpa`` (operators/sdpa.py) with ``mask = None`` when ``x.shape[1] == 129``: every key is
visible there, masked or not.  Issue 43 (class 7) found it holding, n >= 129 being drawn in 17 of 285
cells; 129 is a block edge of the 129..256 band, drawn there as often as any other length of the band.
"""
from tokenlaw.fuzz.mutants.source_edit import mutated_module, mutated_registry

REASON = "the mask is ignored when the sequence is exactly 129 tokens long (one block plus one)"
OPERATOR = "sdpa"
CAUGHT_BY = ("mask_respect",)
SHAPE = "n"
LINE = "    mask = arguments.mask(mask, x)\n"


def registry(base):
    return mutated_registry(base, mutated_module("tokenlaw.operators.sdpa", [(
        LINE, LINE + "    if x.shape[1] == 129:\n        mask = None\n")]))
