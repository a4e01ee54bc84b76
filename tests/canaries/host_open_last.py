"""Canary (open last block): a closed prefix and closed blocks, then a plain FFN block.

Prefix OInject (rho(x) (x W + b)), two OTransformer blocks (ONorm, OAttention, OFFN),
then h + FFN(h) with biases: FFN(0) = gelu(b1) W2 + b2 != 0, so a null token that
reaches the last block unchanged (the prefix and the first blocks keep it 0) leaves it
non-zero.  Every host input reaches that state.  The induction step of the last block is
refuted; the whole-host statement is too large for z3 to decide in the budget.
"""
from __future__ import annotations

import torch

from tokenlaw.operators import arguments
from tokenlaw.operators.composition import Composition, block_layers, host_params, prefix_layers
from tokenlaw.operators.ffn import ffn, ffn_params
from tokenlaw.operators.registry import Domain, declare

REASON = "closed prefix and blocks, but the last block is h + FFN(h) with biases: FFN(0) != 0 reactivates a null"
CLOSED = Composition("canary_host_open_last", norm="onorm_ln", attention="oattention", ffn="offn",
                     inject="oinject")


def params(gen, d_model, dtype=torch.float64):
    p = host_params(gen, d_model, dtype, depth=2, inject=True)
    p["blocks"].append({"ffn": ffn_params(gen, d_model, dtype)})      # the open last block
    return p


def prefix(xp, x, mask=None, *, tau=None, eps_den=None, inject=None, **_):
    return prefix_layers(CLOSED, xp, x, mask, tau=tau, eps_den=eps_den, inject=inject)


def block(xp, h, mask=None, *, block, tau=None, eps_den=None, inject=None, **_):
    if "attn" in block:
        return block_layers(CLOSED, xp, h, mask, block=block, tau=tau, eps_den=eps_den, inject=inject)
    arguments.tokens(h)
    return [h + ffn(xp, h, **block["ffn"])]


def layers(xp, x, mask=None, *, blocks, tau, eps_den, inject):
    states = prefix(xp, x, mask, tau=tau, eps_den=eps_den, inject=inject)
    for b in blocks:
        states += block(xp, states[-1], mask, block=b, tau=tau, eps_den=eps_den, inject=inject)
    return states


layers.prefix, layers.block = prefix, block


@declare(name="canary_host_open_last",
         domain=Domain(params=params, mask="random", d_model=(4,), n_max=5, positive=("tau", "eps_den")),
         traits={"token_mixing", "masked", "host", "presence"}, layers=layers,
         claims={"closure": "(wrong) a closed prefix and closed first blocks",
                 "null_source_insertion": "(wrong) closure at the last layer"})
def canary_host_open_last(xp, x, mask=None, *, blocks, tau, eps_den, inject):
    """OInject, two OTransformer blocks, then h + FFN(h); the last state."""
    return layers(xp, x, mask, blocks=blocks, tau=tau, eps_den=eps_den, inject=inject)[-1]
