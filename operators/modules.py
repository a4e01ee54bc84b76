"""``nn.Module`` wrappers around the operator math, with a PyTorch-style signature.

The modules own parameters and call the same functions the registry
declares (``oattention``, ``sdpa``, ``fir_attention`` ...), so a module and
its registry entry can never disagree.  Inputs are ``batch_first``:
(batch, tokens, features).  ``attn_mask`` is a 0/1 (or bool) visibility
mask, 1 = may attend, of shape (tokens, tokens) or (batch, tokens, tokens).
"""
from __future__ import annotations

import math

import torch
from torch import nn

from . import arguments, normalisers
from .errors import InvalidArgument
from .ffn import ffn, offn
from .fir_attention import fir_attention
from .norms import layer_norm, onorm
from .oattention import oattention
from .sdpa import sdpa
from .xp import TORCH

BACKENDS = ("eager", "triton")


def _check_backend(backend):
    if backend not in BACKENDS:
        raise InvalidArgument(f"backend: expected one of {BACKENDS}, got {backend!r}")
    return backend


class _Projections(nn.Module):
    def __init__(self, d_model, heads, bias=True):
        super().__init__()
        if not isinstance(d_model, int) or d_model < 1:
            raise InvalidArgument(f"d_model: expected a positive int, got {d_model!r}")
        arguments.heads(heads, d_model)
        self.d_model, self.heads = d_model, heads
        s = 1.0 / math.sqrt(d_model)
        for name in ("wq", "wk", "wv", "wo"):
            setattr(self, name, nn.Parameter(torch.randn(d_model, d_model) * s))
        for name in ("bq", "bk", "bv"):
            setattr(self, name, nn.Parameter(torch.zeros(d_model) if not bias else torch.randn(d_model) * 0.02))

    def projection_params(self):
        return dict(wq=self.wq, bq=self.bq, wk=self.wk, bk=self.bk, wv=self.wv, bv=self.bv, wo=self.wo, heads=self.heads)


class SDPAttention(_Projections):
    """Standard softmax attention (the null-unsafe baseline)."""

    def forward(self, x, attn_mask=None):
        return sdpa(TORCH, x, attn_mask, **self.projection_params())


class OAttention(_Projections):
    """OAttention layer: presence-gated attention with an inert null token.

    >>> layer = OAttention(8, heads=2).double()
    >>> x = torch.randn(1, 3, 8, dtype=torch.float64); x[0, 1] = 0
    >>> bool((layer(x)[0, 1] == 0).all())
    True
    """

    def __init__(self, d_model, heads=1, *, tau=1.0, eps_den=1e-6, bias=True, backend="eager"):
        super().__init__(d_model, heads, bias)
        self.tau = arguments.positive(tau, "tau")
        self.eps_den = arguments.positive(eps_den, "eps_den")
        self.backend = _check_backend(backend)

    def forward(self, x, attn_mask=None, carrier=None):
        p = self.projection_params()
        if self.backend == "triton":
            from tokenlaw.kernels import oattention_layer  # noqa: WPS433 (optional dependency)

            return oattention_layer(x, attn_mask, carrier=carrier, tau=self.tau, eps_den=self.eps_den, **p)
        return oattention(TORCH, x, attn_mask, carrier=carrier, tau=self.tau, eps_den=self.eps_den, **p)


class FIRAttention(_Projections):
    """Causal attention over FIR-smoothed keys; ``variant`` in sm_fir, pn, pn_fir_c, pn_fir_tau.

    For ``pn_fir_tau`` the threshold tau is a learnable ``nn.Parameter``.
    """

    VARIANTS = {"sm_fir": normalisers.softmax, "pn": normalisers.pn,
                "pn_fir_c": normalisers.pn_centred, "pn_fir_tau": normalisers.pn_tau}

    def __init__(self, d_model, heads=1, *, variant="pn_fir_tau", tau=0.0, bias=True, backend="eager"):
        super().__init__(d_model, heads, bias)
        if variant not in self.VARIANTS:
            raise InvalidArgument(f"variant: expected one of {sorted(self.VARIANTS)}, got {variant!r}")
        self.variant = variant
        self.backend = _check_backend(backend)
        if variant == "pn_fir_tau":
            self.tau = nn.Parameter(torch.tensor(float(arguments.finite_scalar(tau, "tau"))))

    def forward(self, x):
        p = self.projection_params()
        norm = {"tau": self.tau} if self.variant == "pn_fir_tau" else {}
        if self.backend == "triton":
            from tokenlaw.kernels import fir_attention_layer

            return fir_attention_layer(x, self.variant, **norm, **p)
        return fir_attention(TORCH, x, self.VARIANTS[self.variant], **p, **norm)


class _Norm(nn.Module):
    """Affine LayerNorm, or ONorm = rho(h) LayerNorm(h) when ``tau`` is given.

    A module of its own so forward hooks (the closure analyser) see it.
    """

    def __init__(self, d_model, kind="layer", tau=None):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model))
        self.kind, self.tau = kind, tau

    def forward(self, h):
        if self.tau is not None:
            return onorm(TORCH, h, gamma=self.gamma, beta=self.beta, tau=self.tau)
        return layer_norm(TORCH, h, gamma=self.gamma, beta=self.beta)


class _FFN(nn.Module):
    def __init__(self, d_model, hidden, tau=None):
        super().__init__()
        self.tau = tau
        self.w1 = nn.Parameter(torch.randn(d_model, hidden) / math.sqrt(d_model))
        self.b1 = nn.Parameter(torch.zeros(hidden))
        self.w2 = nn.Parameter(torch.randn(hidden, d_model) / math.sqrt(hidden))
        self.b2 = nn.Parameter(torch.zeros(d_model))

    def params(self):
        return dict(w1=self.w1, b1=self.b1, w2=self.w2, b2=self.b2)

    def forward(self, u, carrier=None):
        """FFN(u), or the OFFN branch rho(carrier) FFN(u) when ``tau`` is given."""
        if self.tau is not None:
            return offn(TORCH, u, carrier=carrier, tau=self.tau, **self.params())
        return ffn(TORCH, u, **self.params())


class Block(nn.Module):
    """One pre-norm block of a host: ``kind`` in standard, oa_only, otransformer."""

    KINDS = ("standard", "oa_only", "otransformer")

    def __init__(self, d_model, heads=1, *, kind="otransformer", hidden=None, tau=1.0, eps_den=1e-3, backend="eager"):
        super().__init__()
        if kind not in self.KINDS:
            raise InvalidArgument(f"kind: expected one of {self.KINDS}, got {kind!r}")
        self.kind, self.tau, self.eps_den = kind, arguments.positive(tau, "tau"), arguments.positive(eps_den, "eps_den")
        self.attn = (SDPAttention(d_model, heads) if kind == "standard"
                     else OAttention(d_model, heads, tau=tau, eps_den=eps_den, backend=backend))
        gate = self.tau if kind == "otransformer" else None   # ONorm and OFFN gating
        self.norm1, self.norm2 = _Norm(d_model, tau=gate), _Norm(d_model, tau=gate)
        self.ffn = _FFN(d_model, hidden or 4 * d_model, tau=gate)

    def forward(self, h, attn_mask=None):
        arguments.tokens(h, "h")
        u = self.norm1(h)
        h = h + (self.attn(u, attn_mask) if self.kind == "standard" else self.attn(u, attn_mask, carrier=h))
        return h + self.ffn(self.norm2(h), carrier=h)


class Host(nn.Module):
    """A stack of ``depth`` blocks of one ``kind`` (standard, oa_only, otransformer)."""

    def __init__(self, d_model, heads=1, depth=2, *, kind="otransformer", **block_kwargs):
        super().__init__()
        if not isinstance(depth, int) or depth < 1:
            raise InvalidArgument(f"depth: expected a positive int, got {depth!r}")
        self.blocks = nn.ModuleList(Block(d_model, heads, kind=kind, **block_kwargs) for _ in range(depth))

    def forward(self, x, attn_mask=None):
        arguments.tokens(x)
        with arguments.composed():     # hidden states between blocks are the model's own values
            for block in self.blocks:
                x = block(x, attn_mask)
        return x
