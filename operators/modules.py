"""``nn.Module`` wrappers around the operator math, with a PyTorch-style signature.

The modules own parameters and call the same functions the registry
declares (``oattention``, ``sdpa``, ``fir_attention`` ...), so a module and
its registry entry can never disagree.  A :class:`Block` is built from the
host's :class:`~tokenlaw.operators.composition.Composition` (the one the
registry declares, ``hosts.STANDARD`` / ``OA_ONLY`` / ``OTRANSFORMER``): its
slots choose the sub-modules, whose math is the composition's component
table, and :func:`~tokenlaw.operators.composition.residual_block` wires them.
Inputs are ``batch_first``: (batch, tokens, features).  ``attn_mask`` is a
0/1 (or bool) visibility mask, 1 = may attend, of shape (tokens, tokens) or
(batch, tokens, tokens).

``implementation=`` runs an attention core elsewhere: a callable with the
eager operator's signature minus ``xp`` (for example the Triton backend's
``kernels.implementation(registry["oattention"])``); None (the
default) is the eager operator.
"""
from __future__ import annotations

import functools
import math
import re

import torch
from torch import nn

from . import arguments, normalisers
from .composition import FFN, INJECT, NORM, residual_block
from .errors import InvalidArgument
from .fir_attention import fir_attention
from .hosts import OA_ONLY, OTRANSFORMER, STANDARD
from .oattention import oattention
from .sdpa import sdpa
from .xp import TORCH


def check_parameters(module: nn.Module, d_model: int) -> None:
    """Every parameter of ``module`` (and its sub-modules) has the shape its layer was built with for
    ``d_model`` features and is finite; a mismatch names the parameter by its path (``blocks[1].norm1.gamma``)."""
    for path, sub in module.named_modules():
        expected = getattr(sub, "expected_shapes", None)
        if expected is None:
            continue
        for name, shape in expected(d_model).items():
            have = tuple(getattr(sub, name).shape)
            if have != shape:
                raise InvalidArgument(f"{_bracketed(f'{path}.{name}' if path else name)}: expected shape {shape} "
                                      f"for d_model {d_model}, got {have}")
    for path, p in module.named_parameters():      # once here: the blocks of a composition skip it (composed)
        arguments.finite(p.detach(), _bracketed(path))


def _bracketed(path: str) -> str:
    """A parameter's path as the errors name it: ``blocks.1.norm1.gamma`` -> ``blocks[1].norm1.gamma``."""
    return re.sub(r"\.(\d+)(?=\.|$)", r"[\1]", path)


def _features(x, d_model: int, name: str = "x"):
    """``x`` (batch, tokens, features) with ``d_model`` features: the layer's width, said as such."""
    arguments.tokens(x, name)
    if x.shape[-1] != d_model:
        raise InvalidArgument(f"{name}: expected {d_model} features (the layer's d_model), got {x.shape[-1]} "
                              f"(shape {tuple(x.shape)})")
    return x


def _implementation(value, eager):
    """``value`` when it is a callable, ``eager`` when None; anything else is refused, naming the argument."""
    if value is None:
        return eager
    if not callable(value):
        raise InvalidArgument(f"implementation: expected None (the eager operator) or a callable with the eager "
                              f"operator's signature minus xp, e.g. a backend plug-in's layer for the operator; "
                              f"got {value!r:.80}")
    return value


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

    def expected_shapes(self, d_model: int) -> dict:
        d = self.d_model
        return {**{n: (d, d) for n in ("wq", "wk", "wv", "wo")}, **{n: (d,) for n in ("bq", "bk", "bv")}}

    def projection_params(self):
        if not arguments.is_composed():       # called on its own: name a wrong parameter by its own name
            check_parameters(self, self.d_model)
        return dict(wq=self.wq, bq=self.bq, wk=self.wk, bk=self.bk, wv=self.wv, bv=self.bv, wo=self.wo, heads=self.heads)


class SDPAttention(_Projections):
    """Standard softmax attention (the null-unsafe baseline); it takes no presence, so ``carrier`` is unused."""

    def forward(self, x, attn_mask=None, carrier=None):
        _features(x, self.d_model)
        return sdpa(TORCH, x, attn_mask, **self.projection_params())


class OAttention(_Projections):
    """OAttention layer: presence-gated attention with an inert null token.

    >>> layer = OAttention(8, heads=2).double()
    >>> x = torch.randn(1, 3, 8, dtype=torch.float64); x[0, 1] = 0
    >>> bool((layer(x)[0, 1] == 0).all())
    True
    """

    def __init__(self, d_model, heads=1, *, tau=1.0, eps_den=1e-6, bias=True, implementation=None):
        super().__init__(d_model, heads, bias)
        self.tau = arguments.positive(tau, "tau")
        self.eps_den = arguments.positive(eps_den, "eps_den")
        self.implementation = _implementation(implementation, functools.partial(oattention, TORCH))

    def forward(self, x, attn_mask=None, carrier=None):
        _features(x, self.d_model)
        p = self.projection_params()
        return self.implementation(x, attn_mask, carrier=carrier, tau=self.tau, eps_den=self.eps_den, **p)


class FIRAttention(_Projections):
    """Causal attention over FIR-smoothed keys; ``variant`` in sm_fir, pn, pn_fir_c, pn_fir_tau.

    For ``pn_fir_tau`` the threshold tau is a learnable ``nn.Parameter``.
    """

    VARIANTS = {"sm_fir": normalisers.softmax, "pn": normalisers.pn,
                "pn_fir_c": normalisers.pn_centred, "pn_fir_tau": normalisers.pn_tau}

    def __init__(self, d_model, heads=1, *, variant="pn_fir_tau", tau=0.0, bias=True, implementation=None):
        super().__init__(d_model, heads, bias)
        if variant not in self.VARIANTS:
            raise InvalidArgument(f"variant: expected one of {sorted(self.VARIANTS)}, got {variant!r}")
        self.variant = variant
        self.implementation = _implementation(implementation, functools.partial(_fir_eager, self.VARIANTS[variant]))
        if variant == "pn_fir_tau":
            self.tau = nn.Parameter(torch.tensor(float(arguments.finite_scalar(tau, "tau"))))

    def forward(self, x):
        _features(x, self.d_model)
        p = self.projection_params()
        norm = {"tau": self.tau} if self.variant == "pn_fir_tau" else {}
        return self.implementation(x, **p, **norm)


def _fir_eager(normaliser, x, **params):
    return fir_attention(TORCH, x, normaliser, **params)


class _Norm(nn.Module):
    """The composition's norm slot (``layernorm``, ``rmsnorm``, ``onorm_ln``, ``onorm_rms``) with its parameters.

    A module of its own so forward hooks (the closure analyser) see it.
    """

    def __init__(self, d_model, slot="layernorm", tau=None):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model))
        self.slot, self.tau = slot, tau

    def expected_shapes(self, d_model: int) -> dict:
        return {"gamma": (d_model,), "beta": (d_model,)}

    def forward(self, h):
        return NORM[self.slot](TORCH, h, h, dict(gamma=self.gamma, beta=self.beta), {"tau": self.tau})


class _FFN(nn.Module):
    """The composition's ffn slot: FFN(u) (``ffn_update``), or the OFFN branch rho(carrier) FFN(u) (``offn``)."""

    def __init__(self, d_model, hidden, slot="ffn_update", tau=None):
        super().__init__()
        self.slot, self.tau = slot, tau
        self.w1 = nn.Parameter(torch.randn(d_model, hidden) / math.sqrt(d_model))
        self.b1 = nn.Parameter(torch.zeros(hidden))
        self.w2 = nn.Parameter(torch.randn(hidden, d_model) / math.sqrt(hidden))
        self.b2 = nn.Parameter(torch.zeros(d_model))

    def expected_shapes(self, d_model: int) -> dict:
        hidden = self.b1.shape[0]
        return {"w1": (d_model, hidden), "w2": (hidden, d_model), "b2": (d_model,)}

    def params(self):
        return dict(w1=self.w1, b1=self.b1, w2=self.w2, b2=self.b2)

    def forward(self, u, carrier=None):
        return FFN[self.slot](TORCH, u, carrier, self.params(), {"tau": self.tau})


class Embedding(nn.Module):
    """The composition's inject slot: ``x W + b`` (``linear_inject``), or OInject ``rho(x) (x W + b)`` (``oinject``)."""

    def __init__(self, inputs, width, slot="linear_inject", tau=None):
        super().__init__()
        if slot not in INJECT:
            raise InvalidArgument(f"slot: expected one of {sorted(INJECT)}, got {slot!r}")
        self.w = nn.Parameter(torch.randn(inputs, width) / math.sqrt(inputs))
        self.b = nn.Parameter(torch.zeros(width))
        self.slot, self.tau = slot, tau

    def forward(self, t):
        return INJECT[self.slot](TORCH, t, dict(w=self.w, b=self.b), {"tau": self.tau})


class Block(nn.Module):
    """One pre-norm block of a host: ``kind`` in standard, oa_only, otransformer (the registry's compositions).

    ``implementation``: the OAttention core's (see the module doc); a standard block has none to replace.
    """

    KINDS = {"standard": STANDARD, "oa_only": OA_ONLY, "otransformer": OTRANSFORMER}

    def __init__(self, d_model, heads=1, *, kind="otransformer", hidden=None, tau=1.0, eps_den=1e-3,
                 implementation=None):
        super().__init__()
        if kind not in self.KINDS:
            raise InvalidArgument(f"kind: expected one of {tuple(self.KINDS)}, got {kind!r}")
        comp = self.composition = self.KINDS[kind]
        self.kind, self.tau, self.eps_den = kind, arguments.positive(tau, "tau"), arguments.positive(eps_den, "eps_den")
        if comp.attention == "oattention":
            self.attn = OAttention(d_model, heads, tau=tau, eps_den=eps_den, implementation=implementation)
        elif implementation is not None:
            raise InvalidArgument(f"implementation: a {kind} block's attention is {comp.attention}, which takes no "
                                  "implementation (only OAttention does)")
        else:
            self.attn = SDPAttention(d_model, heads)
        self.d_model = d_model
        self.norm1 = _Norm(d_model, comp.norm, tau=self.tau)
        self.norm2 = _Norm(d_model, comp.norm, tau=self.tau)
        self.ffn = _FFN(d_model, hidden or 4 * d_model, comp.ffn, tau=self.tau)

    def forward(self, h, attn_mask=None):
        if not arguments.is_composed():       # called on its own: the caller's input and parameters
            _features(h, self.d_model, "h")
            check_parameters(self, self.d_model)
        arguments.tokens(h, "h")
        return residual_block(h, self.norm1, lambda u, carrier: self.attn(u, attn_mask, carrier=carrier),
                              self.norm2, self.ffn)[-1]


class Host(nn.Module):
    """A stack of ``depth`` blocks of one ``kind`` (standard, oa_only, otransformer)."""

    # What each of its parameters is, by the leaf of its name (an init that redraws them reads these):
    BIASES = ("beta", "b1", "b2", "bq", "bk", "bv")     # biases and norm shifts
    SCALES = ("gamma",)                                  # norm scales

    def __init__(self, d_model, heads=1, depth=2, *, kind="otransformer", **block_kwargs):
        super().__init__()
        if not isinstance(depth, int) or depth < 1:
            raise InvalidArgument(f"depth: expected a positive int, got {depth!r}")
        self.d_model = d_model
        self.blocks = nn.ModuleList(Block(d_model, heads, kind=kind, **block_kwargs) for _ in range(depth))

    def forward(self, x, attn_mask=None):
        _features(x, self.d_model)
        check_parameters(self, self.d_model)
        with arguments.composed():     # hidden states between blocks are the model's own values
            for block in self.blocks:
                x = block(x, attn_mask)
        return x
