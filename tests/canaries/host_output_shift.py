"""Canary (host output shift): a host whose ``fn`` is not the last state of its ``layers``.

Prefix P(x) = 2x and blocks B(h) = 3h are closed, and so is every state ``layers``
returns; but the operator's output is ``layers[-1] + 0.1 n`` (n = token count), so
inserting a null moves every output by 0.1 and the null's own output is 0.1 (n + 1).
"""
from __future__ import annotations

import torch

from tokenlaw.operators import arguments
from tokenlaw.operators.registry import Domain, declare

REASON = "fn adds 0.1 * n (the token count) to the closed layers' last state"
DEPTH = 2


def params(gen, d_model, dtype=torch.float64):
    return {"blocks": [{} for _ in range(DEPTH)]}


def prefix(xp, x, mask=None, **_):
    arguments.tokens(x)
    return [2 * x]


def block(xp, h, mask=None, *, block, **_):
    arguments.tokens(h)
    return [3 * h]


def layers(xp, x, mask=None, *, blocks):
    states = prefix(xp, x, mask)
    for b in blocks:
        states += block(xp, states[-1], mask, block=b)
    return states


layers.prefix, layers.block = prefix, block


@declare(name="canary_host_output_shift", domain=Domain(params=params, mask="random", d_model=(2,), n_max=3),
         traits={"token_mixing", "masked", "host"}, layers=layers,
         claims={"closure": "(wrong) every layer is closed, so the output is",
                 "null_source_insertion": "(wrong) closure at the last layer"})
def canary_host_output_shift(xp, x, mask=None, *, blocks):
    """(wrong) the last state plus 0.1 per token."""
    return layers(xp, x, mask, blocks=blocks)[-1] + 0.1 * x.shape[1]
