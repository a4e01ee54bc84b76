"""The attention core under contracts: ``declare_core`` turns a q/k/v kernel into a judged implementation.

The kernels people write and ship take the core signature of torch's
``scaled_dot_product_attention``::

    fn(q, k, v, *, attn_mask=None, is_causal=False, scale=None, enable_gqa=False)

with q (B, Hq, L, E), k (B, Hkv, S, E), v (B, Hkv, S, Ev).  In a user's own
module (``tokenlaw --operators mykernel.py check``)::

    from tokenlaw.operators.core import declare_core

    def my_attention(q, k, v, *, attn_mask=None, is_causal=False, scale=None):
        ...

    my_attention_op = declare_core("my_attention", my_attention)

Keywords the function does not take (``enable_gqa`` above) are declared absent,
read from its signature, and never drawn: grouped heads are then drawn only
if ``gqa=True`` says the function maps Hq query heads onto Hkv < Hq key heads
itself.  What the function does where the formula leaves a choice is stated in
:class:`Conventions` and shown in the report (each claim's reason carries it):

* ``causal``: ``"top_left"`` (row i sees keys j <= i) or ``"bottom_right"``
  (j <= i + S - L: the last query sees every key, as in decoding);
* ``masked_row``: a row that sees no key gives ``0.0``, ``nan`` or a stated value;
* ``mask_kinds``: ``"bool"`` (True = visible) and/or ``"additive"`` (a float added to the scores,
  -inf = hidden); ``mask_shapes``: ``"full"`` (B, H, L, S), ``"square"`` (L, S), ``"rows"`` (B, H, L, 1),
  ``"cols"`` (B, H, 1, S), ``"padding"`` (B, 1, 1, S);
* ``nan_propagates``: a NaN in q_i, or in a key or value row i sees, makes out_i NaN (an inf in such a
  value: non-finite);
* ``mask_with_causal``: a mask and ``is_causal=True`` may be passed together (torch's SDPA refuses it).

The laws (``properties/core_laws.py``) draw the core's own inputs
(``fuzz/core_strategies.py``); the declared operator also runs as a
tokenlaw self-attention (tokens as q = k = v of one head), so the universal
rows (finite, differential, spec_reference) judge it too.
"""
from __future__ import annotations

import dataclasses
import inspect
import math
from typing import Callable

import torch

from .errors import DeclarationError, NotRunnableHere
from .registry import MARK, Domain, declare

KEYWORDS = ("attn_mask", "is_causal", "scale", "enable_gqa")
ALIGNMENTS = ("top_left", "bottom_right")
MASK_KINDS = ("bool", "additive")
MASK_SHAPES = ("full", "square", "rows", "cols", "padding")
DTYPES = ("float64", "float32")


@dataclasses.dataclass(frozen=True)
class Conventions:
    """What a core implementation does where the formula leaves a choice (module docstring)."""

    causal: str = "top_left"
    masked_row: float = 0.0
    mask_kinds: tuple = MASK_KINDS
    mask_shapes: tuple = MASK_SHAPES
    nan_propagates: bool = True
    mask_with_causal: bool = True

    def __post_init__(self):
        if self.causal not in ALIGNMENTS:
            raise DeclarationError(f"conventions.causal: expected one of {ALIGNMENTS}, got {self.causal!r}")
        row = self.masked_row
        if isinstance(row, bool) or not isinstance(row, (int, float)) or row in (math.inf, -math.inf):
            raise DeclarationError(f"conventions.masked_row: expected 0.0, float('nan') or a finite value, "
                                   f"got {row!r}")
        object.__setattr__(self, "masked_row", float(row))
        for name, allowed in (("mask_kinds", MASK_KINDS), ("mask_shapes", MASK_SHAPES)):
            value = getattr(self, name)
            if isinstance(value, str) or not all(v in allowed for v in value):
                raise DeclarationError(f"conventions.{name}: expected a tuple drawn from {allowed}, got {value!r}")
            object.__setattr__(self, name, tuple(value))
        for flag in ("nan_propagates", "mask_with_causal"):
            if not isinstance(getattr(self, flag), bool):
                raise DeclarationError(f"conventions.{flag}: expected a bool, got {getattr(self, flag)!r}")

    def text(self) -> str:
        """The conventions in words, as the report shows them."""
        row = "nan" if math.isnan(self.masked_row) else f"{self.masked_row:g}"
        return (f"causal {self.causal}; fully masked row -> {row}; masks {'/'.join(self.mask_kinds) or 'none'} "
                f"shaped {'/'.join(self.mask_shapes) or '-'}{'' if self.mask_with_causal else ', not with is_causal'}; "
                f"NaN {'propagates' if self.nan_propagates else 'not declared to propagate'}")


@dataclasses.dataclass(frozen=True, eq=False)
class Core:
    """A declared core implementation: the function, the keywords it takes, its conventions and shapes.

    ``gqa``: Hkv < Hq is drawn (through ``enable_gqa=True`` where the function takes it);
    ``distinct_ev``: Ev != E is drawn; ``max_head_dim``: the largest E / Ev drawn;
    ``not_runnable``: why it cannot run on this machine (every core row says so);
    ``peer``: another declared path of the same implementation it must agree with;
    ``backward``: the function has a backward (autograd) whose gradients w.r.t. q, k, v are judged;
    ``square``: only L = S is drawn (a self-attention path: one token sequence gives q, k and v)."""

    name: str
    fn: Callable
    takes: frozenset
    conventions: Conventions
    gqa: bool = True
    distinct_ev: bool = True
    max_head_dim: int = 256
    not_runnable: str | None = None
    peer: "Core | None" = None
    backward: bool = True
    square: bool = False

    def keywords(self, *, attn_mask=None, is_causal=False, scale=None, enable_gqa=False) -> dict:
        """The keywords of one call, only those the function takes (a drawn absent one is a bug upstream)."""
        given = dict(attn_mask=attn_mask, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
        used = {k: v for k, v in given.items() if v is not None and v is not False}
        absent = sorted(set(used) - self.takes)
        if absent:
            raise DeclarationError(f"{self.name}: asked to pass {absent}, which the function does not take")
        return used

    def __call__(self, q, k, v, **kw):
        if self.not_runnable:
            raise NotRunnableHere(self.not_runnable)
        return self.fn(q, k, v, **self.keywords(**kw))


def repeat_kv(t: torch.Tensor, hq: int) -> torch.Tensor:
    """k or v (B, Hkv, S, *) with each head repeated Hq / Hkv times: q-head h reads kv-head h // (Hq / Hkv)."""
    return t.repeat_interleave(hq // t.shape[1], dim=1)


def causal_visible(L: int, S: int, alignment: str) -> torch.Tensor:
    """(L, S) bool: key j is visible to query i under causal ``alignment``.

    >>> causal_visible(2, 3, "bottom_right").int().tolist()
    [[1, 1, 0], [1, 1, 1]]
    >>> causal_visible(2, 3, "top_left").int().tolist()
    [[1, 0, 0], [1, 1, 0]]
    """
    i, j = torch.arange(L)[:, None], torch.arange(S)[None, :]
    return j <= i + (S - L if alignment == "bottom_right" else 0)


def visibility(mask, L: int, S: int, *, causal: bool, alignment: str) -> torch.Tensor:
    """Broadcastable bool: which keys each row sees (bool mask True, additive mask > -inf, causality)."""
    seen = torch.ones(L, S, dtype=torch.bool)
    if causal:
        seen = causal_visible(L, S, alignment)
    if mask is not None:
        seen = seen & (mask if mask.dtype == torch.bool else mask > -math.inf)
    return seen


def formula(q, k, v, *, attn_mask=None, is_causal=False, scale=None, alignment="top_left",
            masked_row=0.0) -> torch.Tensor:
    """softmax(q k^T scale + additive mask, over the visible keys) v in float64; a row seeing nothing: masked_row."""
    q, k, v = q.double(), k.double(), v.double()
    hq, L, S = q.shape[1], q.shape[2], k.shape[2]
    k, v = repeat_kv(k, hq), repeat_kv(v, hq)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = (q @ k.transpose(-1, -2)) * scale
    if attn_mask is not None and attn_mask.dtype != torch.bool:
        s = s + torch.where(attn_mask > -math.inf, attn_mask.double(), torch.zeros_like(attn_mask, dtype=s.dtype))
    seen = visibility(attn_mask, L, S, causal=is_causal, alignment=alignment).expand(s.shape)
    s = torch.where(seen, s, torch.full_like(s, -math.inf))
    top = s.amax(-1, keepdim=True)
    e = torch.where(seen, torch.exp(s - torch.where(torch.isfinite(top), top, torch.zeros_like(top))),
                    torch.zeros_like(s))
    den = e.sum(-1, keepdim=True)
    out = (e / torch.where(den > 0, den, torch.ones_like(den))) @ v
    return torch.where(den > 0, out, torch.full_like(out, masked_row))


def _token_body(core: Core):
    def core_operator(xp, x):
        """The core as a self-attention: tokens x (B, N, D) are q = k = v of one head (in fresh row-major
        strides: a kernel's stride requirements are not what these rows judge)."""
        # not .contiguous(): a (1, 1, 1, 1) view with stride 3 is "contiguous" to torch and returned as is, yet
        # SDPA's fused CPU kernels refuse it ("last dimension ... stride 1"): the strided layout at n = d = 1
        h = x[:, None].clone(memory_format=torch.contiguous_format)
        return core(h, h, h)[:, 0]
    return core_operator


def _token_reference(core: Core):
    def core_reference(xp, x):
        """softmax(x x^T / sqrt(D)) x in float64 (the core formula on one head)."""
        h = x[:, None]
        return formula(h, h, h, masked_row=core.conventions.masked_row)[:, 0]
    return core_reference


def no_parameters(gen, d_model, dtype=torch.float64) -> dict:
    """A core kernel has no tokenlaw parameters: q, k and v are its whole input."""
    return {}


def takes(fn) -> frozenset:
    """The core keywords ``fn`` accepts, read from its signature (all of them for ``**kwargs`` or no signature)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return frozenset(KEYWORDS)
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return frozenset(KEYWORDS)
    names = {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    return frozenset(k for k in KEYWORDS if k in names)


def _positional(fn) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return True
    pos = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(pos) >= 3 or any(p.kind is p.VAR_POSITIONAL for p in params)


def derived_claims(core: Core) -> dict:
    """The core laws the declaration implies, each with its reason (the conventions in it)."""
    c, t = core.conventions, core.takes
    said = c.text()
    claims = {
        "core_formula": "softmax(q k^T scale + mask) v, within the derived rounding bound",
        "core_batch_head_independence": "each (batch, head) is computed from its own q, k, v only",
        "core_key_permutation": "attention is a sum over keys: their order is immaterial",
        "core_shape_contract": "inconsistent q/k/v/mask shapes must be refused, never answered",
    }
    if "attn_mask" in t and c.mask_kinds and c.mask_shapes:
        claims["core_mask_respect"] = f"a hidden key never reaches the row it is hidden from ({said})"
        claims["core_masked_row"] = f"declared convention: {said}"
        if len(c.mask_kinds) > 1 or len(c.mask_shapes) > 1:
            claims["core_mask_forms"] = f"every accepted mask form of the same visibility gives one output ({said})"
    if "is_causal" in t:
        claims["core_causality"] = f"is_causal hides the keys after each query under the declared alignment ({said})"
        if not core.square:
            claims["core_decode"] = "row i of causal attention is attention of q_i alone against keys 0..i"
    if "scale" in t:
        claims["core_scale"] = "only the product scale * q k^T enters the scores"
    if core.gqa:
        claims["core_gqa"] = "grouped kv heads equal the explicitly repeated ones (q-head h reads kv-head h // g)"
    if c.nan_propagates:
        claims["core_nan"] = f"declared: a NaN in q_i or in a key or value row i sees reaches out_i ({said})"
    if core.backward:
        claims["core_gradient"] = "the backward's gradients w.r.t. q, k, v are the formula's, within the derived bound"
    if core.peer is not None:
        claims["core_paths_agree"] = f"another path of the same implementation ({core.peer.name}): one output"
    return claims


def core_of(declared) -> Core:
    """The :class:`Core` of an operator returned by :func:`declare_core` (for ``agrees_with=``)."""
    opts = getattr(declared, MARK, None)
    core = None if opts is None else opts.get("core")
    if core is None:
        raise DeclarationError(f"agrees_with: expected an operator returned by declare_core, got {declared!r}")
    return core


def declare_core(name: str, fn: Callable, *, claims: dict | None = None, violates: dict | None = None,
                 conventions: Conventions | dict | None = None, gqa: bool | None = None, distinct_ev: bool = True,
                 max_head_dim: int = 256, not_runnable: str | None = None, agrees_with=None,
                 dtypes: tuple = DTYPES, backward: bool = True, square: bool = False, module: str | None = None):
    """Declare a core attention ``fn(q, k, v, *, attn_mask, is_causal, scale, enable_gqa)``; returns the marked
    operator (assign it in your module, where ``collect`` finds it).

    ``conventions``: a :class:`Conventions` or its keywords; ``gqa``: Hkv < Hq is drawn (default: the function
    takes ``enable_gqa``); ``distinct_ev``: Ev != E is drawn; ``max_head_dim``: the largest head dim drawn;
    ``not_runnable``: why it cannot run here; ``agrees_with``: another declared path it must agree with;
    ``backward``: the function has an autograd backward (its gradients are judged: ``core_gradient``);
    ``square``: only L = S is drawn (a path that takes one token sequence for q, k and v);
    ``claims`` / ``violates``: further contracts or overrides, each with a one-line reason.

    >>> def plain(q, k, v, *, attn_mask=None, scale=None):
    ...     return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, scale=scale)
    >>> op = declare_core("plain_core", plain, module="doctest")
    >>> sorted(core_of(op).takes)
    ['attn_mask', 'scale']
    """
    if not isinstance(name, str) or not name.replace("_", "").isalnum():
        raise DeclarationError(f"name: expected an identifier, got {name!r}")
    if not callable(fn):
        raise DeclarationError(f"fn: expected a callable fn(q, k, v, *, attn_mask=..., ...), got {fn!r}")
    if not _positional(fn):
        raise DeclarationError(f"fn: expected a function taking q, k, v positionally, got {fn!r}")
    if conventions is None:
        conventions = Conventions()
    elif isinstance(conventions, dict):
        unknown = sorted(set(conventions) - {f.name for f in dataclasses.fields(Conventions)})
        if unknown:
            raise DeclarationError(f"conventions: unknown keys {unknown}; known: "
                                   f"{[f.name for f in dataclasses.fields(Conventions)]}")
        conventions = Conventions(**conventions)
    elif not isinstance(conventions, Conventions):
        raise DeclarationError(f"conventions: expected a Conventions or a dict, got {conventions!r}")
    took = takes(fn)
    if gqa is None:
        gqa = "enable_gqa" in took
    for flag, value in (("gqa", gqa), ("distinct_ev", distinct_ev), ("backward", backward),
                        ("square", square)):
        if not isinstance(value, bool):
            raise DeclarationError(f"{flag}: expected a bool, got {value!r}")
    if isinstance(max_head_dim, bool) or not isinstance(max_head_dim, int) or max_head_dim < 1:
        raise DeclarationError(f"max_head_dim: expected an int >= 1, got {max_head_dim!r}")
    if not_runnable is not None and (not isinstance(not_runnable, str) or not not_runnable.strip()):
        raise DeclarationError(f"not_runnable: expected None or the reason, got {not_runnable!r}")
    if isinstance(dtypes, str) or not dtypes or not all(d in DTYPES for d in dtypes):
        raise DeclarationError(f"dtypes: expected a tuple drawn from {DTYPES}, got {dtypes!r}")
    for kind, given in (("claims", claims), ("violates", violates)):
        if given is not None and not isinstance(given, dict):
            raise DeclarationError(f"{kind}: expected {{contract: one-line reason}}, got {given!r}")
    peer = None if agrees_with is None else core_of(agrees_with)
    core = Core(name, fn, took, conventions, gqa, distinct_ev, max_head_dim, not_runnable, peer, backward, square)
    violates = dict(violates or {})
    stated = {**{k: v for k, v in derived_claims(core).items() if k not in violates}, **dict(claims or {})}
    body = _token_body(core)
    body.__name__ = body.__qualname__ = name
    body.__module__ = module or inspect.currentframe().f_back.f_globals.get("__name__", "__main__")
    body.__doc__ = f"{getattr(fn, '__name__', fn)!s} at the attention core; {conventions.text()}."
    domain = Domain(params=no_parameters, dtypes=tuple(dtypes))
    return declare(name=name, domain=domain, traits={"token_mixing"}, claims=stated, violates=violates,
                   reference=_token_reference(core), core=core)(body)


__all__ = ["declare_core", "Conventions", "Core", "core_of", "formula", "repeat_kv", "causal_visible",
           "visibility", "KEYWORDS", "MASK_KINDS", "MASK_SHAPES", "ALIGNMENTS"]
