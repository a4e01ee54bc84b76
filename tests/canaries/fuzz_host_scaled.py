"""Canary (hosts' values): a host whose output is 1 % too large in every call and every dtype.

Before the hosts declared a ``reference=``, no claimed row of a host compared its values with anything:
closure, null laws and permutation are blind to a uniform scale, and ``differential`` compares the host with
itself in float64.  ``spec_reference`` (the host against its block-by-block reference) must see it.
"""
from tokenlaw.fuzz.mutants.source_edit import mutated_module, mutated_registry

REASON = "every host's output is 1.01 times its last layer state (the layers themselves are right)"
OPERATOR = "standard_host_l1"
CAUGHT_BY = ("spec_reference",)
LINE = "        return layers(xp, x, mask, blocks=blocks, tau=tau, eps_den=eps_den, inject=inject)[-1]\n"
WRONG = "        return layers(xp, x, mask, blocks=blocks, tau=tau, eps_den=eps_den, inject=inject)[-1] * 1.01\n"


def registry(base):
    return mutated_registry(base, mutated_module("tokenlaw.operators.hosts", [(LINE, WRONG)]))
