"""Example factories for the closure analyser (``tokenlaw closure tokenlaw.integrations.closure.examples:NAME``).

Each factory returns a :class:`ClosureExample`: a model in float64 with a
stated, seeded init and example tokens (batch 2, 5 tokens, width 16) plus
its masks.  Biases and norm shifts are drawn non-zero (N(0, 0.5^2)) in our
hosts: with all-zero biases a plain LayerNorm and FFN map 0 to 0 and the
reactivation the analyser should find would be hidden by the init.
"""
from __future__ import annotations

import torch
from torch import nn

from tokenlaw.operators.modules import Host

from .analyser import ClosureExample

WIDTH, HEADS, TOKENS, BATCH, SEED = 16, 2, 5, 2, 0


def _tokens(seed=SEED):
    return torch.randn(BATCH, TOKENS, WIDTH, generator=torch.Generator().manual_seed(seed + 1), dtype=torch.float64)


def _visibility(seed=SEED):
    """A random 0/1 (B, N, N) visibility mask with a visible diagonal (each token sees itself)."""
    g = torch.Generator().manual_seed(seed + 2)
    m = (torch.rand(BATCH, TOKENS, TOKENS, generator=g) < 0.7).double()
    m[:, torch.arange(TOKENS), torch.arange(TOKENS)] = 1.0
    return m


def init_host(model: nn.Module, seed=SEED, bias_scale=0.5) -> nn.Module:
    """Redraw every bias / norm shift as N(0, bias_scale^2) and norm scale as 1 + N(0, 0.2^2), seeded."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            leaf = name.rsplit(".", 1)[-1]
            if leaf in Host.BIASES:
                p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * bias_scale)
            elif leaf in Host.SCALES:
                p.copy_(1 + 0.2 * torch.randn(p.shape, generator=g, dtype=torch.float64))
    return model


def _host(kind, masked=True, seed=SEED):
    torch.manual_seed(seed)   # Host draws its weights from the global generator
    model = init_host(Host(WIDTH, HEADS, depth=2, kind=kind, tau=1.0, eps_den=1e-3).double(), seed)
    kwargs, masks = ({"attn_mask": _visibility(seed)}, {"attn_mask": "visibility"}) if masked else ({}, {})
    return ClosureExample(model.eval(), _tokens(seed), kwargs, masks, name=f"Host(kind={kind!r})")


def otransformer():
    """Our OTransformer (ONorm, OAttention, OFFN), 2 blocks, masked: closure holds end to end."""
    return _host("otransformer")


def oa_only():
    """OA-only host (OAttention, plain LayerNorm and FFN), 2 blocks, masked: breaks at blocks.0.norm1."""
    return _host("oa_only")


def standard():
    """Standard host (SDPA, LayerNorm, FFN), 2 blocks, masked."""
    return _host("standard")


def torch_encoder(norm_first=False, masked=False, seed=SEED):
    """``torch.nn.TransformerEncoder`` (batch_first, 2 layers, PyTorch's default init, dropout 0)."""
    torch.manual_seed(seed)
    layer = nn.TransformerEncoderLayer(WIDTH, HEADS, dim_feedforward=2 * WIDTH, dropout=0.0,
                                       batch_first=True, norm_first=norm_first)
    model = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).double().eval()
    kwargs, masks = {}, {}
    if masked:
        pad = torch.zeros(BATCH, TOKENS, dtype=torch.bool)
        pad[1, -1] = True                      # the second sequence is one token shorter
        causal = torch.triu(torch.ones(TOKENS, TOKENS, dtype=torch.bool), diagonal=1)
        kwargs = {"mask": causal, "src_key_padding_mask": pad}
        masks = {"mask": "blocked", "src_key_padding_mask": "padding"}
    name = f"TransformerEncoder(norm_first={norm_first}{', masked' if masked else ''})"
    return ClosureExample(model, _tokens(seed), kwargs, masks, name=name)


def torch_encoder_norm_first():
    """Pre-norm ``TransformerEncoder``: LayerNorm(0) = beta = 0 at init, so SDPA is the first to break."""
    return torch_encoder(norm_first=True)


def torch_encoder_masked():
    """``TransformerEncoder`` called with a causal ``mask`` and a ``src_key_padding_mask``."""
    return torch_encoder(masked=True)
