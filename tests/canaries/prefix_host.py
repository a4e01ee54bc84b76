"""Canary (prefix host): a host whose blocks are closed only on the prefix's outputs.

Prefix P(x) = x^2 (token-local, zero-absorbing); block B(h) = -h + (n - 1) min(h, 0).
On states h >= 0 (all P ever emits) B commutes with null insertion, so proving each
block on the prefix's outputs "proves" closure; for h < 0 it does not, and the second
block sees the first's negative output: eagerly [1] ends at 1.0 while [1, null] ends at 0.0.
"""
from __future__ import annotations

import torch

from tokenlaw.operators import arguments
from tokenlaw.operators.registry import Domain, declare

REASON = "blocks are closed only on states >= 0 (the prefix's outputs); block 2 sees block 1's negative states"
DEPTH = 2


def params(gen, d_model, dtype=torch.float64):
    return {"blocks": [{} for _ in range(DEPTH)]}


def prefix(xp, x, mask=None, **_):
    arguments.tokens(x)
    return [x * x]


def block(xp, h, mask=None, *, block, **_):
    arguments.tokens(h)
    n = h.shape[1]
    return [xp.zeros_like(h) - h + (n - 1) * xp.minimum(h, xp.zeros_like(h))]


def layers(xp, x, mask=None, *, blocks):
    states = prefix(xp, x, mask)
    for b in blocks:
        states += block(xp, states[-1], mask, block=b)
    return states


layers.prefix, layers.block = prefix, block


@declare(name="canary_prefix_host", domain=Domain(params=params, mask="random", d_model=(2,), n_max=3),
         traits={"token_mixing", "masked", "host"}, layers=layers,
         claims={"closure": "(wrong) each block is closed on the prefix's outputs",
                 "null_source_insertion": "(wrong) closure at the last layer"})
def canary_prefix_host(xp, x, mask=None, *, blocks):
    """P then DEPTH blocks B; the last state."""
    return layers(xp, x, mask, blocks=blocks)[-1]
