"""Canary (mask=None path): SDPA that hides the last key when it is called without a mask.

Every law judged with a mask tensor sees SDPA itself; only a run with ``mask=None`` -- the call most
users make -- takes the wrong path.  ``unmasked`` compares that run with the all-visible mask.
"""
from tokenlaw.fuzz.mutants.source_edit import mutated_module, mutated_registry

REASON = "drops the last key only when no mask is passed (mask=None), correct with any mask tensor"
OPERATOR = "sdpa"
CAUGHT_BY = ("unmasked",)
LINE = "    w = sdpa_weights(xp, projections.scores(xp, q, k), hm)\n"


def registry(base):
    return mutated_registry(base, mutated_module("tokenlaw.operators.sdpa", [(
        LINE,
        "    s = projections.scores(xp, q, k)\n"
        "    if mask is None and x.shape[1] > 1:\n"
        "        hm = xp.concat([xp.ones_like(s[..., :-1]), xp.zeros_like(s[..., -1:])], axis=-1)\n"
        "    w = sdpa_weights(xp, s, hm)\n")]))
