"""Canary (near-null regime): presence computed as `1 - tau / (tau + |h|^2)` (the shipping module, one line edited).

Algebraically equal to |h|^2 / (tau + |h|^2), and exact at h = 0 (1 - tau/tau = 0), so every null
contract holds; but for a token with |h|^2 below tau times the unit roundoff the quotient rounds to 1
and the presence to 0 (or a few wrong bits just above): a tiny, non-null token is treated as null.
Only near-null rows with |h|^2 between the subnormal boundary and about eps * tau reach it.  The edit
reaches OAttention through its `presence` import (`mutated_module(..., imports=...)`).
"""
from tokenlaw.fuzz.mutants.source_edit import mutated_module, mutated_registry

REASON = "presence as 1 - tau/(tau + |h|^2) cancels: a token with |h|^2 below eps * tau gets presence 0 (or wrong bits)"
OPERATOR = "oattention"
CAUGHT_BY = ("formula_equivalence",)
CORRECT = "    return xp.norm_ratio(h, tau)"
CANCELLING = ("    sq = xp.sum(h * h, axis=-1, keepdims=True)\n"
              "    return 1.0 - xp.div(tau * xp.ones_like(sq), tau + sq)")     # tensor / tensor: exact at sq = 0


def registry(base):
    presence = mutated_module("tokenlaw.operators.presence", [(CORRECT, CANCELLING)])
    oattention = mutated_module("tokenlaw.operators.oattention", (), {"presence": presence.presence})
    return mutated_registry(base, presence, oattention)
