"""Hosts as declared compositions of registered operators (docs/mathematics.md#hosts).

A :class:`Composition` names, by their registry names, the operators a
pre-norm residual host is built from, and its depth L:

    [standardize] -> [inject] -> L x ( h + attention(norm(h); carrier h),
                                       h + ffn(norm(h); carrier h) )

From that one declaration :func:`compose_layers` evaluates the host on any
array namespace and returns the hidden state after every sub-layer (the
``layers`` a host declares), and :func:`host_params` draws its parameters.
An optional ``trace(name, value)`` callback sees every component's output
(``block0.norm1``, ``block0.attn``, ``block0.residual1``, ...): the ablation
attributes a reactivated null to the component that produced it.

Example::

    >>> OTRANSFORMER = Composition("otransformer", norm="onorm_ln", attention="oattention", ffn="offn")
    >>> OTRANSFORMER.describe()
    'onorm_ln -> oattention -> onorm_ln -> offn, x2'
"""
from __future__ import annotations

import dataclasses
import math

import torch

from . import arguments, projections
from .errors import InvalidArgument
from .ffn import ffn, ffn_params, offn
from .norms import NORMS, norm_params, onorm
from .oattention import oattention
from .oinject import linear
from .ostandardize import ostandardize
from .presence import presence
from .sdpa import sdpa
from .standardize import standardize


# -- the components a composition may name, keyed by registry name -----------
# Each adapter takes (xp, u, h, p, ctx): u the component input, h the hidden
# carrier (the residual stream before the sub-layer), p its parameters and
# ctx the host-wide tau / eps_den / mask.

def _norm(kind, gated):
    def apply(xp, u, h, p, ctx):
        if gated:
            return onorm(xp, u, tau=ctx["tau"], kind=kind, **p)
        return NORMS[kind](xp, u, **p)
    return apply


NORM = {"layernorm": _norm("layer", False), "rmsnorm": _norm("rms", False),
        "onorm_ln": _norm("layer", True), "onorm_rms": _norm("rms", True)}

ATTENTION = {
    "sdpa": lambda xp, u, h, p, ctx: sdpa(xp, u, ctx["mask"], **p),
    # hidden-carrier OAttention: presence from the residual stream h, not from norm(h)
    "oattention": lambda xp, u, h, p, ctx: oattention(xp, u, ctx["mask"], carrier=h, tau=ctx["tau"],
                                                      eps_den=ctx["eps_den"], **p),
}

FFN = {
    "ffn_update": lambda xp, u, h, p, ctx: ffn(xp, u, **p),
    "offn": lambda xp, u, h, p, ctx: offn(xp, u, carrier=h, tau=ctx["tau"], **p),
}

INJECT = {
    "linear_inject": lambda xp, x, p, ctx: linear(xp, x, **p),
    "oinject": lambda xp, x, p, ctx: presence(xp, x, tau=ctx["tau"]) * linear(xp, x, **p),
}

STANDARDIZE = {
    "standardize": lambda xp, x, ctx: standardize(xp, x),
    "ostandardize": lambda xp, x, ctx: ostandardize(xp, x, tau=ctx["tau"]),
}


@dataclasses.dataclass(frozen=True)
class Composition:
    """A host: which registered operator fills each slot, and how many blocks.

    norm:        layernorm | rmsnorm | onorm_ln | onorm_rms (both norms of a block)
    attention:   sdpa | oattention (OAttention takes presence from the carrier h)
    ffn:         ffn_update (h + FFN(u)) | offn (h + rho(h) FFN(u))
    depth:       number of blocks L >= 1
    inject:      None | linear_inject | oinject (input embedding x W + b)
    standardize: None | standardize | ostandardize (over tokens, before inject)
    """

    name: str
    norm: str
    attention: str
    ffn: str
    depth: int = 2
    inject: str | None = None
    standardize: str | None = None

    def __post_init__(self):
        for slot, table in (("norm", NORM), ("attention", ATTENTION), ("ffn", FFN)):
            if getattr(self, slot) not in table:
                raise InvalidArgument(f"{slot}: expected one of {sorted(table)}, got {getattr(self, slot)!r}")
        if self.inject is not None and self.inject not in INJECT:
            raise InvalidArgument(f"inject: expected None or one of {sorted(INJECT)}, got {self.inject!r}")
        if self.standardize is not None and self.standardize not in STANDARDIZE:
            raise InvalidArgument(f"standardize: expected None or one of {sorted(STANDARDIZE)}, got {self.standardize!r}")
        if not isinstance(self.depth, int) or self.depth < 1:
            raise InvalidArgument(f"depth: expected an int >= 1, got {self.depth!r}")

    @property
    def components(self) -> tuple:
        """Registry names of every operator this host is composed of."""
        names = [self.standardize, self.inject, self.norm, self.attention, self.ffn]
        return tuple(n for n in names if n is not None)

    def describe(self) -> str:
        pre = [n for n in (self.standardize, self.inject) if n]
        body = f"{self.norm} -> {self.attention} -> {self.norm} -> {self.ffn}, x{self.depth}"
        return " -> ".join(pre + [body])

    def with_depth(self, depth: int, name: str) -> "Composition":
        return dataclasses.replace(self, depth=depth, name=name)


def host_params(gen, d_model, dtype=torch.float64, *, depth=2, inject=False, bias_scale=1.0, heads=None):
    """One dict per block (attn, norm1, norm2, ffn) plus tau, eps_den and, with ``inject``, the embedding.

    Biases and norm shifts are N(0, bias_scale^2): non-zero, so every plain
    component visibly reactivates a null (``bias_scale=0`` gives zero biases).
    """
    blocks = []
    for _ in range(depth):
        attn = projections.attention_params(gen, d_model, dtype, heads=heads, bias_scale=bias_scale)
        n1, n2 = norm_params(gen, d_model, dtype), norm_params(gen, d_model, dtype)
        n1["beta"], n2["beta"] = n1["beta"] * bias_scale, n2["beta"] * bias_scale
        f = ffn_params(gen, d_model, dtype)
        f["b1"], f["b2"] = f["b1"] * bias_scale, f["b2"] * bias_scale
        blocks.append(dict(attn=attn, norm1=n1, norm2=n2, ffn=f))
    out = dict(blocks=blocks, tau=float(torch.empty(()).uniform_(0.1, 2.0, generator=gen)), eps_den=1e-3)
    if inject:
        w = torch.randn(d_model, d_model, generator=gen, dtype=torch.float64) / math.sqrt(d_model)
        b = torch.randn(d_model, generator=gen, dtype=torch.float64) * bias_scale
        out["inject"] = dict(w=w.to(dtype), b=b.to(dtype))
    return out


def _context(comp: Composition, x, tau, eps_den, inject, mask, blocks=None) -> dict:
    gated = comp.attention == "oattention" or comp.norm.startswith("onorm") or comp.ffn == "offn" \
        or comp.inject == "oinject" or comp.standardize == "ostandardize"
    if gated and tau is None:
        raise InvalidArgument(f"tau: {comp.name} has presence-gated components and needs tau > 0")
    if comp.attention == "oattention" and eps_den is None:
        raise InvalidArgument(f"eps_den: {comp.name} uses OAttention and needs eps_den > 0")
    if comp.inject is not None and inject is None:
        raise InvalidArgument(f"inject: {comp.name} injects its input and needs inject=dict(w=, b=)")
    # Everything the user passed is checked here, once, with its path (blocks[0].attn.wq);
    # the components then run on the model's own hidden states (arguments.composed).
    if blocks is not None:
        arguments.tree(blocks, "blocks", x)
    arguments.tree(inject, "inject", x)
    for name, value in (("tau", tau), ("eps_den", eps_den)):
        if value is not None:
            arguments.positive(value, name)
    return dict(tau=tau, eps_den=eps_den, mask=arguments.mask(mask, x))


def compose_layers(comp: Composition, xp, x, mask=None, *, blocks, tau=None, eps_den=None, inject=None,
                   trace=None) -> list:
    """The hidden state after every sub-layer of ``comp`` (standardize, inject, then 2 per block).

    ``len(blocks)`` blocks run, whatever ``comp.depth`` says.  The same states are
    ``prefix_layers`` followed by ``block_layers`` of each block, fed the previous state.
    """
    arguments.tokens(x)
    # comp.depth is the depth the registry declares and host_params draws.
    if not isinstance(blocks, (list, tuple)) or not blocks:
        raise InvalidArgument(f"blocks: expected a non-empty list of block parameter dicts for {comp.name}, "
                              f"got {blocks!r:.80}")
    ctx = _context(comp, x, tau, eps_den, inject, mask, blocks)
    with arguments.composed():
        return _run_layers(comp, xp, x, blocks, inject, ctx, trace)


def _run_layers(comp, xp, x, blocks, inject, ctx, trace) -> list:
    seen = trace or (lambda name, value: None)
    states = _prefix(comp, xp, x, inject, ctx, seen)
    h = states[-1] if states else x
    for i, b in enumerate(blocks):
        states += _block(comp, xp, h, b, ctx, seen, i)
        h = states[-1]
    return states


def prefix_layers(comp: Composition, xp, x, mask=None, *, tau=None, eps_den=None, inject=None, **_blocks) -> list:
    """The states after the host's prefix (standardize, inject) alone: [] for a host without one.

    The symbolic tier proves the prefix and each block separately (closure by induction)."""
    arguments.tokens(x)
    ctx = _context(comp, x, tau, eps_den, inject, mask)
    with arguments.composed():
        return _prefix(comp, xp, x, inject, ctx, lambda name, value: None)


def block_layers(comp: Composition, xp, h, mask=None, *, block, tau=None, eps_den=None, inject=None,
                 **_blocks) -> list:
    """The two sub-layer states of one block applied to *any* state h (not only a prefix output)."""
    arguments.tokens(h)
    ctx = _context(comp, h, tau, eps_den, inject, mask, [block])
    with arguments.composed():
        return _block(comp, xp, h, block, ctx, lambda name, value: None, 0)


def _prefix(comp, xp, x, inject, ctx, seen) -> list:
    states, h = [], x
    if comp.standardize is not None:
        h = STANDARDIZE[comp.standardize](xp, h, ctx)
        seen("standardize", h)
        states.append(h)
    if comp.inject is not None:
        with arguments.within("inject"):
            h = INJECT[comp.inject](xp, h, inject, ctx)
        seen("inject", h)
        states.append(h)
    return states


def residual_block(h, norm1, attention, norm2, ffn, seen=None, prefix="") -> list:
    """The two sub-layer states of one pre-norm block (docs/mathematics.md#hosts), the one definition every host uses:

        h1 = h + attention(norm1(h); carrier h),    h2 = h1 + ffn(norm2(h1); carrier h1)

    ``norm(h)``, ``attention(u, carrier)`` and ``ffn(u, carrier)`` are the block's components (the composition's
    tables applied to a parameter dict here, ``nn`` modules in ``operators/modules.py``); ``seen(name, value)``
    is shown each residual state as ``<prefix>residual1`` / ``residual2``.
    """
    h = h + attention(norm1(h), h)
    if seen is not None:
        seen(f"{prefix}residual1", h)
    h2 = h + ffn(norm2(h), h)
    if seen is not None:
        seen(f"{prefix}residual2", h2)
    return [h, h2]


def _block(comp, xp, h, b, ctx, seen, i) -> list:
    def component(table, slot, key):
        def run(u, carrier):
            with arguments.within(f"blocks[{i}].{key}"):
                out = table[slot](xp, u, carrier, b[key], ctx)
            seen(f"block{i}.{key}", out)
            return out
        return run

    norm1, norm2 = component(NORM, comp.norm, "norm1"), component(NORM, comp.norm, "norm2")
    return residual_block(h, lambda u: norm1(u, u), component(ATTENTION, comp.attention, "attn"),
                          lambda u: norm2(u, u), component(FFN, comp.ffn, "ffn"), seen, f"block{i}.")
