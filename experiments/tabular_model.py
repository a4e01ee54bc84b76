"""A small TabPFN-like in-context regressor built from tokenlaw's host blocks.

Every row of a task is a token.  A context row carries ``[x, y, 1]``, a query
row ``[x, 0, 0]``; an embedding maps it to the hidden width, ``depth``
pre-norm blocks mix rows (every row attends to the context rows only, so
queries never see each other), and a small decoder reads the prediction off
each query token.  The embedding and the blocks are the host modules of
:mod:`tokenlaw.operators.modules` (``Embedding``, ``Block``), built from the
compositions the registry declares, whose kinds share parameter names, so a
model trained with ``kind="standard"`` loads unchanged into

* ``kind="oa_only"``: hidden-carrier OAttention swapped in, LayerNorm / FFN kept;
* ``kind="otransformer"`` with ``inject="oinject"``: the full O stack
  (OInject, ONorm, OAttention, OFFN).

The decoder (LayerNorm, Linear, GELU, Linear) reads only query tokens and is
not swapped: it is a read-out, not part of the residual stream.
"""
from __future__ import annotations

import torch
from torch import nn

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.modules import Block, Embedding

from .tabular_tasks import FEATURES

INPUTS = FEATURES + 2      # x, y (0 for queries), is-context flag


def context_mask(n_tokens, n_ctx, dtype=torch.float32):
    """(N, N) visibility: every row sees the context rows 0..n_ctx-1 and nothing else."""
    m = torch.zeros(n_tokens, n_tokens, dtype=dtype)
    m[:, :n_ctx] = 1.0
    return m


class TabularRegressor(nn.Module):
    # variant -> (Block kind, the embedding's inject slot)
    KINDS = {"standard": ("standard", "linear_inject"), "hidden_carrier": ("oa_only", "linear_inject"),
             "full_o": ("otransformer", "oinject")}

    def __init__(self, width=64, heads=4, depth=3, hidden=128, *, variant="standard", tau=1.0, eps_den=1e-6):
        super().__init__()
        if variant not in self.KINDS:
            raise InvalidArgument(f"variant: expected one of {sorted(self.KINDS)}, got {variant!r}")
        kind, inject = self.KINDS[variant]
        self.variant = variant
        self.embed = Embedding(INPUTS, width, inject, tau=tau)
        self.blocks = nn.ModuleList(Block(width, heads, kind=kind, hidden=hidden, tau=tau, eps_den=eps_den)
                                    for _ in range(depth))
        self.decoder = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.GELU(), nn.Linear(width, 1))

    def forward(self, x, y, n_ctx):
        """Predict y at the query rows (indices >= n_ctx) of x (B, N, F), y (B, N) (query targets unused)."""
        b, n, _ = x.shape
        if not 0 < n_ctx < n:
            raise InvalidArgument(f"n_ctx: expected 0 < n_ctx < {n} (context rows before query rows), got {n_ctx}")
        is_ctx = (torch.arange(n) < n_ctx).to(x.dtype)[None, :, None].expand(b, n, 1)
        t = torch.cat([x, y[..., None] * is_ctx, is_ctx], dim=-1)
        h = self.embed(t)
        mask = context_mask(n, n_ctx, x.dtype)
        for block in self.blocks:
            h = block(h, mask)
        return self.decoder(h[:, n_ctx:]).squeeze(-1)


def swapped(trained: TabularRegressor, variant: str, tau: float, **arch) -> TabularRegressor:
    """A copy of ``trained`` with O components swapped in: same weights, no retraining."""
    model = TabularRegressor(variant=variant, tau=tau, **arch)
    model.load_state_dict(trained.state_dict())
    return model.to(next(trained.parameters()).dtype).eval()
