"""Control for the host canaries: a closed host whose block is open only on states it never reaches.

Prefix P(x) = x^2 (>= 0), blocks B(h) = h + (n - 1) min(h, 0): on states >= 0 (all the host
ever sees: P's outputs, and B keeps them >= 0) B is the identity, so the host is closed.  On a
negative state B is not closed, so the induction step is refuted; no host input reaches such
a state, so no witness may be "found", and the direct whole-host statement proves closure.
"""
from __future__ import annotations

import torch

from tokenlaw.operators import arguments
from tokenlaw.operators.registry import Domain, declare

REASON = "control (correct): a block open only on negative states, which the host (prefix x^2) never reaches"
DEPTH = 2


def params(gen, d_model, dtype=torch.float64):
    return {"blocks": [{} for _ in range(DEPTH)]}


def prefix(xp, x, mask=None, **_):
    arguments.tokens(x)
    return [x * x]


def block(xp, h, mask=None, *, block, **_):
    arguments.tokens(h)
    n = h.shape[1]
    return [h + (n - 1) * xp.minimum(h, xp.zeros_like(h))]


def layers(xp, x, mask=None, *, blocks):
    states = prefix(xp, x, mask)
    for b in blocks:
        states += block(xp, states[-1], mask, block=b)
    return states


layers.prefix, layers.block = prefix, block


@declare(name="control_host_unreached_step", domain=Domain(params=params, mask="random", d_model=(2,), n_max=3),
         traits={"token_mixing", "masked", "host"}, layers=layers,
         claims={"closure": "the blocks are the identity on every state the host reaches (>= 0)",
                 "null_source_insertion": "closure at the last layer"})
def control_host_unreached_step(xp, x, mask=None, *, blocks):
    """P then DEPTH blocks B; the last state."""
    return layers(xp, x, mask, blocks=blocks)[-1]
