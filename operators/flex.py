"""FlexAttention under contracts: ``declare_flex`` turns a ``score_mod`` / ``mask_mod`` pair into an operator.

A FlexAttention user writes attention as two small functions of positions
(``torch.nn.attention.flex_attention``)::

    score_mod(score, b, h, q_idx, kv_idx) -> the score to use
    mask_mod(b, h, q_idx, kv_idx)         -> whether q_idx may see kv_idx

and states what they believe about them.  In their own module (loaded with
``tokenlaw --operators mymods.py check``)::

    from tokenlaw.operators.flex import declare_flex

    def causal(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx

    causal_attention = declare_flex("causal_attention", mask_mod=causal, causal=True)

The declared operator projects tokens to q, k, v with the standard
projections (``operators/projections.py``), runs ``flex_attention`` itself
(its eager body) and projects out; its ``reference=`` is a dense float64
computation written from the same two mods (every score, ``score_mod``
elementwise, ``mask_mod`` as a boolean matrix, softmax, a fully masked row
as 0), so a wrong block mask, a wrong tile edge or a wrong convention in
flex is seen against the formula.  What the user states becomes claims,
each with its reason (``properties/flex_laws.py`` holds the mod laws):

* always: ``mod_mask_respect`` (mask_mod is the ground truth of who sees
  whom), ``block_layouts`` (a BlockMask built for a longer sequence, adjusted, and the
  all-partial-blocks description give the same output), ``masked_row_lse``
  (a fully masked row gives 0 and LSE -inf), ``gradcheck``, plus the
  universal ``finite`` / ``differential`` / ``spec_reference``;
* ``causal=True``: ``causality`` and ``block_prefix`` (the output on a
  prefix is the prefix of the output);
* ``additive=True`` (score_mod(s) = s + bias): ``score_shift_invariance``;
* ``relative=True`` (the mods depend on q_idx, kv_idx only through their
  difference): ``relative_mods``.

``claims=`` / ``violates=`` add or override any contract of the catalogue
with a one-line reason.  Where flex has no backward (CPU, torch 2.13) the
body raises :class:`~tokenlaw.operators.errors.NotRunnableHere`, so the
gradient cells read "not runnable here: FlexAttention has no CPU backward".
"""
from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import math
import warnings
from typing import Callable

import torch

from . import arguments, limits, projections
from .errors import DeclarationError, InvalidArgument, NotRunnableHere
from .registry import Domain, declare

INSTALL = "FlexAttention needs torch >= 2.5 (pip install -U torch)"
BLOCK_SIZE = 128            # flex's default tile: the edge its bugs sit at


def flex_api():
    """``torch.nn.attention.flex_attention``, imported on first use: it loads torch._dynamo (7 s measured on
    a loaded 2-core machine), which only a run of a flex operator should pay."""
    try:
        from torch.nn.attention import flex_attention  # optional: FlexAttention (torch >= 2.5), heavy import
    except ImportError:
        raise NotRunnableHere(INSTALL) from None
    return flex_attention


def available() -> str | None:
    """None when FlexAttention can be imported here; else how to get it."""
    return None if importlib.util.find_spec("torch.nn.attention.flex_attention") is not None else INSTALL


@dataclasses.dataclass(frozen=True)
class Variant:
    """How one call describes the same attention to flex (the block laws compare these).

    ``extent``: the BlockMask is built for this many tokens (>= n; None: exactly n), then adjusted to n
    (``BlockMask._adjust``: flex refuses an unadjusted longer mask);
    ``partial``: every block is described as partial (``separate_full_blocks=False``), none as full;
    ``hide_row``: the mask also hides every key from this query row (a fully masked row);
    ``lse``: return the log-sum-exp (B, H, N) of each row instead of the output;
    ``explicit``: without a ``mask_mod``, give flex a BlockMask of every key instead of ``block_mask=None``
    (the two descriptions of "no mask": the laws compare them, so the no-mask path is judged too).
    """

    extent: int | None = None
    partial: bool = False
    hide_row: int | None = None
    lse: bool = False
    explicit: bool = False


PLAIN = Variant()


@dataclasses.dataclass(frozen=True, eq=False)
class Mods:
    """A declared ``score_mod`` / ``mask_mod`` pair and what the user stated about it."""

    score_mod: Callable | None
    mask_mod: Callable | None
    block_size: int = BLOCK_SIZE
    causal: bool = False
    _masks: dict = dataclasses.field(default_factory=dict, repr=False)   # (shape, variant) -> BlockMask

    # -- the mods evaluated densely: the ground truth every law and the reference use ------------
    @staticmethod
    def indices(batch: int, heads: int, n: int, offset: int = 0):
        """(b, h, q_idx, kv_idx) as broadcastable int64 index tensors (B,1,1,1) ... (1,1,1,N), positions + offset."""
        ar = torch.arange
        return (ar(batch).view(-1, 1, 1, 1), ar(heads).view(1, -1, 1, 1),
                ar(n).view(1, 1, -1, 1) + offset, ar(n).view(1, 1, 1, -1) + offset)

    def visible(self, batch: int, heads: int, n: int, offset: int = 0) -> torch.Tensor:
        """(B, H, N, N) bool: ``mask_mod`` at every (b, h, q_idx, kv_idx) (all True without one)."""
        shape = (batch, heads, n, n)
        if self.mask_mod is None:
            return torch.ones(shape, dtype=torch.bool)
        m = torch.as_tensor(self.mask_mod(*self.indices(batch, heads, n, offset)))
        return m.to(torch.bool).expand(shape)

    def modded(self, s: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """``score_mod`` applied to every score of ``s`` (B, H, N, N) elementwise (``s`` itself without one)."""
        if self.score_mod is None:
            return s
        b, h, n, _ = s.shape
        return torch.as_tensor(self.score_mod(s, *self.indices(b, h, n, offset))).to(s.dtype).expand(s.shape)

    # -- the BlockMask flex is given --------------------------------------------------------------
    def mask_fn(self, hide_row: int | None, explicit: bool = False):
        """The mask_mod flex runs: the declared one, with ``hide_row`` hidden from every key (``explicit``:
        every key visible where none is declared, else None: no mask at all)."""
        if hide_row is None:
            return _every_key if self.mask_mod is None and explicit else self.mask_mod
        base = self.mask_mod

        def hidden(b, h, q_idx, kv_idx):
            seen = q_idx != hide_row
            return seen if base is None else seen & base(b, h, q_idx, kv_idx)
        return hidden

    def block_mask(self, batch: int, heads: int, n: int, variant: Variant, device):
        """The BlockMask of ``variant`` for (batch, heads, n) tokens (None: no mask at all), built once."""
        fn = self.mask_fn(variant.hide_row, variant.explicit)
        if fn is None:
            return None
        extent = n if variant.extent is None else variant.extent
        if extent < n:
            raise InvalidArgument(f"variant.extent: expected >= the sequence length {n}, got {extent}")
        key = (batch, heads, n, extent, variant.partial, variant.hide_row, fn is _every_key, str(device))
        if key not in self._masks:
            bm = flex_api().create_block_mask(fn, batch, heads, extent, extent, device=device,
                                          BLOCK_SIZE=self.block_size, separate_full_blocks=not variant.partial)
            # torch 2.13 refuses a BlockMask built for more tokens than it is used on (ValueError) and says to
            # 'adjust' it: the adjusted mask is what a user with one mask for several lengths runs
            self._masks[key] = bm._adjust(n, n) if extent > n else bm
        return self._masks[key]


def _every_key(b, h, q_idx, kv_idx):
    """A mask_mod that hides nothing (``Variant(explicit=True)``)."""
    return q_idx >= 0


def _no_backward(err: NotImplementedError) -> bool:
    return "backward" in str(err).lower()


def flex_core(mods: Mods, q, k, v, variant: Variant = PLAIN, attend: Callable | None = None):
    """flex_attention on per-head q, k, v (B, H, N, dh): the output (B, H, N, dh), or the LSE (B, H, N).

    The keys are scaled by p and the product by r (``projections.score_scales``, p r = 1/sqrt(dh)): the
    scores get the bits of ``projections.scores`` and no intermediate exceeds |S| (float16).
    ``attend``: the flex_attention to call with flex's own arguments (default: the eager one; the
    ``flex-compiled`` backend passes ``torch.compile(flex_attention)``), so both run the same call.
    """
    flex = flex_api()
    attend = flex.flex_attention if attend is None else attend
    b, h, n, dh = q.shape
    p, r = projections.score_scales(dh)
    bm = mods.block_mask(b, h, n, variant, q.device)
    try:
        with warnings.catch_warnings():
            # flex warns that eager mode materialises the scores: that is what it is asked to do here
            warnings.simplefilter("ignore", UserWarning)
            # return_lse is what this torch's compiled and eager paths both take; its deprecation notice
            # (FutureWarning, "use return_aux") is torch's, not a finding: it leaked into every flex run's output
            warnings.filterwarnings("ignore", message="return_lse is deprecated", category=FutureWarning)
            out = attend(q, k * p, v, score_mod=mods.score_mod, block_mask=bm, scale=r, return_lse=variant.lse)
    except NotImplementedError as err:
        if _no_backward(err):
            raise NotRunnableHere(f"FlexAttention has no {q.device.type.upper()} backward "
                                  f"(torch {torch.__version__}: {str(err).splitlines()[0][:120]})") from None
        raise
    return out[1] if variant.lse else out


def _body(mods: Mods):
    def flex_operator(xp, x, *, wq, bq, wk, bk, wv, bv, wo, heads, variant=PLAIN):
        """FlexAttention with the declared mods on the projected heads, then wo."""
        arguments.tokens(x)
        if not isinstance(variant, Variant):
            raise InvalidArgument(f"variant: expected a tokenlaw.operators.flex.Variant, got {variant!r}")
        q, k, v = projections.project_qkv(xp, x, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, heads=heads)
        o = flex_core(mods, q, k, v, variant)
        return o if variant.lse else projections.output(xp, o, wo)
    return flex_operator


def _reference(mods: Mods):
    def dense_reference(xp, x, *, wq, bq, wk, bk, wv, bv, wo, heads, variant=PLAIN):
        """Every score, score_mod elementwise, mask_mod as a boolean matrix, softmax; a row seeing nothing is 0."""
        b, n, d = x.shape
        dh = d // heads

        def split(t):
            return t.reshape(b, n, heads, dh).transpose(1, 2)
        q, k, v = split(x @ wq + bq), split(x @ wk + bk), split(x @ wv + bv)
        s = mods.modded(q @ k.transpose(-1, -2) / math.sqrt(dh))
        seen = mods.visible(b, heads, n)
        if variant.hide_row is not None:
            seen = seen.clone()
            seen[:, :, variant.hide_row] = False
        top = torch.where(seen, s, torch.full_like(s, -math.inf)).amax(-1, keepdim=True)
        e = torch.where(seen, torch.exp(s - torch.where(torch.isfinite(top), top, torch.zeros_like(top))),
                        torch.zeros_like(s))
        den = e.sum(-1, keepdim=True)
        if variant.lse:
            return torch.where(den[..., 0] > 0, torch.log(den[..., 0]) + top[..., 0],
                               torch.full_like(den[..., 0], -math.inf))
        w = torch.where(den > 0, e / torch.where(den > 0, den, torch.ones_like(den)), torch.zeros_like(e))
        return (w @ v).transpose(1, 2).reshape(b, n, d) @ wo
    return dense_reference


def _weights(mods: Mods):
    def flex_weights(xp, s, mask=None):
        """W(S) for scores (B, n, n) as one head: softmax of score_mod(S) over mask_mod's visible keys."""
        sm = mods.modded(s[:, None])
        seen = mods.visible(s.shape[0], 1, s.shape[-1])
        e = torch.where(seen, torch.exp(sm - sm.amax(-1, keepdim=True)), torch.zeros_like(sm))
        den = e.sum(-1, keepdim=True)
        return torch.where(den > 0, e / torch.where(den > 0, den, torch.ones_like(den)), torch.zeros_like(e))[:, 0]
    return flex_weights


def _check_mod(fn, name: str, arity: int):
    if fn is None:
        return
    if not callable(fn):
        raise DeclarationError(f"{name}: expected a function or None, got {fn!r}")
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return
    if len(params) != arity:
        raise DeclarationError(f"{name}: expected a function of {arity} arguments "
                               f"({'score, b, h, q_idx, kv_idx' if arity == 5 else 'b, h, q_idx, kv_idx'}), "
                               f"got {len(params)}")


def derived_claims(*, mask_mod, causal: bool, additive: bool, relative: bool) -> dict:
    """The claims a declaration's statements imply, each with its reason."""
    claims = {
        "mod_mask_respect": "mask_mod is the ground truth: a hidden (i, j) never reaches out_i",
        "block_layouts": "a BlockMask built longer, or with no full blocks, describes the same mask",
        "masked_row_lse": "flex's convention: a row that sees nothing gives 0 and LSE -inf",
        "gradcheck": "flex's backward differentiates the same smooth softmax",
    }
    if mask_mod is None:
        claims["permutation_equivariance"] = "no mask_mod and no position terms unless score_mod adds them"
    if causal:
        claims["causality"] = "declared causal: mask_mod hides every kv_idx > q_idx"
        claims["block_prefix"] = "declared causal: a prefix's output does not depend on the tokens after it"
    if additive:
        claims["score_shift_invariance"] = "declared additive: score_mod(s + c) = score_mod(s) + c, softmax cancels c"
    if relative:
        claims["relative_mods"] = "declared relative: the mods read q_idx and kv_idx only through q_idx - kv_idx"
    return claims


def declare_flex(name: str, *, score_mod: Callable | None = None, mask_mod: Callable | None = None,
                 causal: bool = False, additive: bool = False, relative: bool = False,
                 claims: dict | None = None, violates: dict | None = None, block_size: int = BLOCK_SIZE,
                 dtypes: tuple | None = None, module: str | None = None):
    """Declare a FlexAttention operator from its mods; returns the marked function (assign it in your module).

    ``causal`` / ``additive`` / ``relative``: what you state about the mods (module docstring); ``claims``
    / ``violates``: further contracts, or overrides, each with a one-line reason; ``block_size``: flex's
    tile (the block laws draw lengths around it); ``module``: the module that holds it (default: the
    caller's, where ``collect`` finds it).

    >>> op = declare_flex("full_flex", module="doctest")
    >>> op.__name__
    'full_flex'
    """
    _check_mod(score_mod, "score_mod", 5)
    _check_mod(mask_mod, "mask_mod", 4)
    for flag, value in (("causal", causal), ("additive", additive), ("relative", relative)):
        if not isinstance(value, bool):
            raise DeclarationError(f"{flag}: expected a bool, got {value!r}")
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 16 or block_size % 16:
        raise DeclarationError(f"block_size: expected a multiple of 16 (flex's tiles), got {block_size!r}")
    if causal and mask_mod is None:
        raise DeclarationError("causal=True: expected the mask_mod that makes it causal, got none")
    mods = Mods(score_mod, mask_mod, block_size, causal)
    stated = derived_claims(mask_mod=mask_mod, causal=causal, additive=additive, relative=relative)
    violates = dict(violates or {})
    stated = {**{k: v for k, v in stated.items() if k not in violates}, **dict(claims or {})}
    traits = {"token_mixing"} | ({"causal"} if causal else set()) | ({"score_normaliser"} if additive else set())
    fn = _body(mods)
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = module or inspect.currentframe().f_back.f_globals.get("__name__", "__main__")
    kept = tuple(dtypes) if dtypes is not None else Domain().dtypes
    domain = Domain(params=projections.attention_params, dtypes=kept,
                    limits={dt: lim for dt, lim in limits.SOFTMAX_SCORES.items() if dt in kept})
    return declare(name=name, domain=domain, traits=traits, claims=stated, violates=violates,
                   weights=_weights(mods) if additive else None, reference=_reference(mods), mods=mods)(fn)


__all__ = ["declare_flex", "Mods", "Variant", "PLAIN", "BLOCK_SIZE", "available", "flex_api", "flex_core"]
