"""A concrete input for one cell, and how to run the operator on it.

A :class:`Case` is everything a contract needs to judge one example: the
operator, the dtype under test, float64 tokens ``x`` (with null rows at
``null``), a 0/1 mask when the operator takes one, float64 parameters, and
the random choices a contract may use (a position, a permutation, a shift).
It is built deterministically from a handful of small integers and floats,
so Hypothesis shrinks it to a small counterexample and a seed replays it.

Edge cases are fields too, each with a benign default (so a case that does
not need one shrinks to it): near-null rows (``near_null`` at magnitude
``tiny``, chosen so that |h|^2 underflows in the dtype under test), huge
projection biases (``bias_scale``: a null token then has a huge key),
``mask_kind`` (random / causal / padding / empty_row), overrides of the
presence ``tau`` and ``eps_den``, an explicit ``heads`` count and a memory
``layout`` (contiguous / transposed / strided: same values, other strides).
"""
from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import torch

from tokenlaw.operators.registry import OperatorSpec
from tokenlaw.operators.xp import TORCH

from . import backends

DTYPES = {"float64": torch.float64, "float32": torch.float32,
          "float16": torch.float16, "bfloat16": torch.bfloat16}


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def cast(value, dtype):
    """Cast every floating tensor inside nested dicts/lists to dtype."""
    if torch.is_tensor(value):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, dict):
        return {k: cast(v, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(cast(v, dtype) for v in value)
    return value


@dataclasses.dataclass
class Case:
    """One drawn example.  Fields are small so a shrunk case reads well."""

    op: OperatorSpec
    dtype: torch.dtype
    seed: int = 0
    batch: int = 1
    n: int = 3
    d: int = 4
    null: tuple = ()
    pos: int = 0            # a token position a contract may use (insertion point, probe)
    perm_seed: int = 0      # permutation choice
    shift: float = 1.0      # per-row score shift / scaling a contract may use
    mask_density: float = 1.0
    scale: float = 1.0
    backend: str = backends.EAGER.name  # the backend's name (JSON-able); Case.implementation resolves it
    near_null: tuple = ()   # rows scaled down to magnitude ``tiny`` (not exactly null)
    tiny: float = 0.0
    bias_scale: float = 1.0  # multiplies every projection bias bq, bk, bv (huge keys for null tokens)
    mask_kind: str = "random"  # random | causal | padding | empty_row (row pos % n sees nothing)
    tau: float | None = None      # overrides the drawn tau (presence tau, or pn_fir_tau's threshold)
    eps_den: float | None = None  # overrides the drawn eps_den
    heads: int | None = None      # overrides the drawn head count (must divide d)
    layout: str = "contiguous"    # contiguous | transposed | strided: how x is laid out in memory
    score_offset: float = 0.0     # != 0: every attention score sits near this value (see _offset_scores)
    _cache: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)

    # -- drawn tensors (float64) --------------------------------------------
    def generator(self, salt: int = 0) -> torch.Generator:
        return torch.Generator().manual_seed(self.seed * 1_000_003 + salt)

    @property
    def params(self) -> dict:
        if "params" not in self._cache:
            p = self.op.domain.draw(self.generator(1), self.d, torch.float64)
            p = _override(p, bias_scale=self.bias_scale, heads=self.heads, tau=self.tau, eps_den=self.eps_den)
            self._cache["params"] = _offset_scores(p, self.score_offset)
        return self._cache["params"]

    @property
    def x_dense(self) -> torch.Tensor:
        """Tokens with no null row (every entry drawn)."""
        if "x" not in self._cache:
            g = self.generator(2)
            x = torch.randn(self.batch, self.n, self.d, generator=g, dtype=torch.float64) * self.scale
            for i in self.near_null:
                row = x[:, i]
                x[:, i] = row / row.norm(dim=-1, keepdim=True) * self.tiny   # |h| = tiny exactly-ish
            self._cache["x"] = x
        return self._cache["x"]

    @property
    def x(self) -> torch.Tensor:
        """Tokens with the rows in ``null`` set to exact zeros."""
        x = self.x_dense.clone()
        for i in self.null:
            x[:, i] = 0.0
        return x

    @property
    def mask(self):
        """A 0/1 (batch, n, n) mask with a visible diagonal, or None for unmasked operators."""
        if self.op.domain.mask == "none":
            return None
        if "mask" not in self._cache:
            self._cache["mask"] = self._draw_mask()
        return self._cache["mask"]

    def _draw_mask(self) -> torch.Tensor:
        b, n, g = self.batch, self.n, self.generator(3)
        eye = torch.arange(n)
        if self.mask_kind == "causal":
            return torch.tril(torch.ones(n, n, dtype=torch.float64)).expand(b, n, n).contiguous()
        if self.mask_kind == "padding":
            # keys j >= length_b are padding, invisible to every query of batch b
            length = torch.randint(1, n + 1, (b, 1, 1), generator=g)
            return (torch.arange(n)[None, None, :] < length).double().expand(b, n, n).contiguous()
        m = (torch.rand(b, n, n, generator=g, dtype=torch.float64) < self.mask_density).double()
        m[:, eye, eye] = 1.0
        if self.mask_kind == "empty_row":
            m[:, self.pos % n] = 0.0      # a fully masked row: its output must be 0, not NaN
        return m

    def permutation(self, n=None) -> torch.Tensor:
        n = self.n if n is None else n
        return torch.randperm(n, generator=torch.Generator().manual_seed(self.perm_seed))

    def random_like(self, shape, salt=7, scale=1.0) -> torch.Tensor:
        return torch.randn(*shape, generator=self.generator(salt), dtype=torch.float64) * scale

    # -- running ---------------------------------------------------------------
    def arguments(self, mask=None, dtype=None, **overrides) -> dict[str, Any]:
        """The operator's keyword arguments in ``dtype``: its parameters, plus the mask if it takes one."""
        dtype = self.dtype if dtype is None else dtype
        kwargs: dict[str, Any] = dict(cast({**self.params, **overrides}, dtype))
        if self.op.domain.mask != "none":
            kwargs["mask"] = None if mask is None else mask.to(dtype)
        return kwargs

    def run(self, x, mask=None, dtype=None, **overrides) -> torch.Tensor:
        """Run the operator on float64 inputs cast to ``dtype`` (default: the case's)."""
        dtype = self.dtype if dtype is None else dtype
        kwargs = self.arguments(mask, dtype, **overrides)
        if kwargs.get("mask") is not None:
            kwargs["mask"] = lay_out(kwargs["mask"], self.layout)
        with torch.no_grad():
            return self.call(lay_out(x.to(dtype), self.layout), **kwargs)

    @property
    def implementation(self) -> backends.Backend:
        """The backend the case runs on (``backends.get(self.backend)``)."""
        return backends.get(self.backend)

    def on_reference(self) -> "Case":
        """The same drawn example on the reference (eager) backend."""
        return dataclasses.replace(self, backend=backends.EAGER.name, _cache={})

    def call(self, x, **kwargs):
        """The operator on the case's backend, on already-cast inputs."""
        return self.implementation.run(self.op, x, **kwargs)

    def layers(self, x, mask=None, dtype=None) -> list:
        dtype = self.dtype if dtype is None else dtype
        kwargs = dict(cast(self.params, dtype))
        with torch.no_grad():
            return self.op.layers(TORCH, lay_out(x.to(dtype), self.layout),
                                  None if mask is None else lay_out(mask.to(dtype), self.layout), **kwargs)

    def weight_params(self, dtype=None) -> dict:
        """The subset of parameters the operator's row normaliser takes (e.g. tau)."""

        names = inspect.signature(self.op.weights).parameters
        return {k: v for k, v in cast(self.params, dtype or self.dtype).items() if k in names and k not in ("xp", "s", "mask")}

    def fields(self) -> dict:
        """The drawn choices as JSON-able values: ``Case.from_fields(op, fields)`` rebuilds this case."""
        out = {}
        for f in dataclasses.fields(self):
            if f.name in ("op", "_cache"):
                continue
            v = getattr(self, f.name)
            out[f.name] = dtype_name(v) if f.name == "dtype" else list(v) if isinstance(v, tuple) else v
        return out

    @classmethod
    def from_fields(cls, op: OperatorSpec, fields: dict) -> "Case":
        kw = dict(fields)
        kw["dtype"] = DTYPES[kw["dtype"]]
        for name in ("null", "near_null"):
            if name in kw:
                kw[name] = tuple(kw[name])
        return cls(op=op, **kw)

    def describe(self) -> dict:
        """A JSON-able summary: the drawn choices plus the (small) float64 tensors."""
        d = dict(operator=self.op.name, **self.fields())
        if self.batch * self.n * self.d <= 64:
            d["x"] = self.x.tolist()
            if self.mask is not None:
                d["mask"] = self.mask.tolist()
        return d


LAYOUTS = ("contiguous", "transposed", "strided")
MASK_KINDS = ("random", "causal", "padding", "empty_row")


def lay_out(t: torch.Tensor, layout: str) -> torch.Tensor:
    """The same values as ``t`` in another memory layout (non-contiguous for all but "contiguous").

    "transposed": stored with the last two axes swapped (column-major rows);
    "strided": every other element of a buffer twice as wide.
    """
    if layout == "contiguous" or t.ndim < 2:
        return t
    if layout == "transposed":
        return t.transpose(-1, -2).contiguous().transpose(-1, -2)
    if layout == "strided":
        buf = torch.zeros(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype)
        buf[..., ::2] = t
        return buf[..., ::2]
    raise ValueError(f"layout: expected one of {LAYOUTS}, got {layout!r}")


_BIASES = ("bq", "bk", "bv")


def _override(params, *, bias_scale, heads, tau, eps_den):
    """Apply a case's overrides at every nesting level (hosts keep per-block dicts)."""
    if isinstance(params, list):
        return [_override(p, bias_scale=bias_scale, heads=heads, tau=tau, eps_den=eps_den) for p in params]
    if not isinstance(params, dict):
        return params
    out = {}
    for k, v in params.items():
        if k in _BIASES and bias_scale != 1.0:
            v = v * bias_scale
        elif k == "heads" and heads is not None:
            v = heads
        elif k == "tau" and tau is not None:
            v = tau
        elif k == "eps_den" and eps_den is not None:
            v = eps_den
        else:
            v = _override(v, bias_scale=bias_scale, heads=heads, tau=tau, eps_den=eps_den)
        out[k] = v
    return out


_SPREAD = 1.0 / 16     # what is left of the drawn projections when the scores are pinned at an offset


def _offset_scores(params, offset: float):
    """Pin every attention score near ``offset``: s_ij = offset + O(spread) at every nesting level.

    The drawn q, k projections (weights and biases) are scaled by 1/16 and a
    constant a (resp. sign(offset) a) is added to every entry of bq (bk) with
    sqrt(dh) a^2 = |offset|, so <q_i, k_j> / sqrt(dh) = offset plus a small
    token-dependent part: all scores of a row are strongly negative (or
    positive) together, the regime where exp(-max) and exp(max) overflow.
    """
    if not offset:
        return params
    if isinstance(params, list):
        return [_offset_scores(p, offset) for p in params]
    if not isinstance(params, dict):
        return params
    if not {"wq", "bq", "wk", "bk", "heads"} <= set(params):
        return {k: _offset_scores(v, offset) for k, v in params.items()}
    dh = params["bq"].shape[-1] // params["heads"]
    a = (abs(offset) / dh ** 0.5) ** 0.5
    sign = 1.0 if offset > 0 else -1.0
    out = dict(params)
    out["wq"], out["wk"] = params["wq"] * _SPREAD, params["wk"] * _SPREAD
    out["bq"] = params["bq"] * _SPREAD + a
    out["bk"] = params["bk"] * _SPREAD + sign * a
    return out
