"""Canary (host wrong block): a host whose ``layers.block`` is not the block it really runs last.

Prefix P(x) = 2x, closed block C(h) = 3h, open block O(h) = h + 1 (a null becomes 1).
``layers`` runs P, C, O; ``layers.block`` is C for every block.  Induction over
``.prefix`` / ``.block`` proves closure of P, C, C, which is not the host: eagerly a
null inserted into [1] ends at 1.0, not 0.
"""
from __future__ import annotations

import torch

from tokenlaw.operators import arguments
from tokenlaw.operators.registry import Domain, declare

REASON = "layers.block is a closed block, but the host's real last block is h + 1, which reactivates a null"
DEPTH = 2


def params(gen, d_model, dtype=torch.float64):
    return {"blocks": [{} for _ in range(DEPTH)]}


def prefix(xp, x, mask=None, **_):
    arguments.tokens(x)
    return [2 * x]


def closed_block(xp, h, mask=None, *, block, **_):
    arguments.tokens(h)
    return [3 * h]


def open_block(xp, h, mask=None, *, block, **_):
    arguments.tokens(h)
    return [h + xp.ones_like(h)]


def layers(xp, x, mask=None, *, blocks):
    states = prefix(xp, x, mask)
    for i, b in enumerate(blocks):
        run = open_block if i == len(blocks) - 1 else closed_block
        states += run(xp, states[-1], mask, block=b)
    return states


layers.prefix, layers.block = prefix, closed_block          # (wrong) the last block is open_block


@declare(name="canary_host_wrong_block", domain=Domain(params=params, mask="random", d_model=(2,), n_max=3),
         traits={"token_mixing", "masked", "host"}, layers=layers,
         claims={"closure": "(wrong) the prefix and .block are closed",
                 "null_source_insertion": "(wrong) closure at the last layer"})
def canary_host_wrong_block(xp, x, mask=None, *, blocks):
    """P, then closed blocks, then the open one; the last state."""
    return layers(xp, x, mask, blocks=blocks)[-1]
