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
import functools

import torch

from tokenlaw.operators import dtypes
from tokenlaw.operators.registry import OperatorSpec
from tokenlaw.operators.roles import Adjustments, has_scores

from . import backends
from .runner import LAYOUTS, CaseRunner, cast, lay_out

MASK_KINDS = ("random", "causal", "padding", "empty_row")

# Cases of another form, by the ``variant`` field their ``fields()`` carry: a stored counterexample of one
# rebuilds as that class (``properties/core_case.py`` registers "core", the q/k/v cases of the core laws).
VARIANTS: dict = {}

__all__ = ["Case", "CaseRunner", "cast", "lay_out", "LAYOUTS", "MASK_KINDS"]


@dataclasses.dataclass(frozen=True)
class Case:
    """One drawn example (frozen).  Fields are small so a shrunk case reads well.

    Its tensors are drawn from the fields on first use and kept (the case is
    frozen, so they never go stale); ``dataclasses.replace`` gives a new case
    that draws afresh.  ``case.runner`` runs the operator on it.
    """

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
    backend: str = backends.EAGER.name  # the backend's name (JSON-able); the runner resolves it
    near_null: tuple = ()   # rows scaled down to magnitude ``tiny`` (not exactly null)
    tiny: float = 0.0
    bias_scale: float = 1.0  # multiplies every projection bias (huge keys for null tokens)
    mask_kind: str = "random"  # random | causal | padding | empty_row (row pos % n sees nothing)
    tau: float | None = None      # overrides the drawn presence threshold (the domain's roles say which)
    eps_den: float | None = None  # overrides the drawn denominator epsilon
    heads: int | None = None      # overrides the drawn head count (must divide d)
    layout: str = "contiguous"    # contiguous | transposed | strided: how x is laid out in memory
    score_offset: float = 0.0     # != 0: every attention score sits near this value (roles.adjust)

    # -- drawn tensors (float64) --------------------------------------------
    def generator(self, salt: int = 0) -> torch.Generator:
        return torch.Generator().manual_seed(self.seed * 1_000_003 + salt)

    @functools.cached_property
    def params(self) -> dict:
        """The operator's float64 parameters, drawn, then adjusted as the domain's roles say."""
        p = self.op.domain.draw(self.generator(1), self.d, torch.float64)
        return self.op.domain.adjust(p, Adjustments(bias_scale=self.bias_scale, heads=self.heads, threshold=self.tau,
                                                    eps_den=self.eps_den, score_offset=self.score_offset))

    @functools.cached_property
    def applied_offset(self) -> float:
        """The row-wide score offset this case really applies: ``score_offset`` where the operator has attention
        scores for it to move (``roles.has_scores``), else 0 (the offset is drawn for every operator, and
        changes nothing in one without scores: its rounding at the offset is no part of the computation)."""
        if not self.score_offset:
            return 0.0
        return self.score_offset if has_scores(self.params, self.op.domain.roles) else 0.0

    @functools.cached_property
    def x_dense(self) -> torch.Tensor:
        """Tokens with no null row (every entry drawn)."""
        g = self.generator(2)
        x = torch.randn(self.batch, self.n, self.d, generator=g, dtype=torch.float64) * self.scale
        for i in self.near_null:
            row = x[:, i]
            x[:, i] = row / row.norm(dim=-1, keepdim=True) * self.tiny   # |h| = tiny exactly-ish
        return x

    @property
    def x(self) -> torch.Tensor:
        """Tokens with the rows in ``null`` set to exact zeros."""
        x = self.x_dense.clone()
        for i in self.null:
            x[:, i] = 0.0
        return x

    @functools.cached_property
    def mask(self):
        """A 0/1 (batch, n, n) mask with a visible diagonal, or None for unmasked operators."""
        if self.op.domain.mask == "none":
            return None
        return self._draw_mask()

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

    # -- running: a CaseRunner of its own --------------------------------------------
    @functools.cached_property
    def runner(self) -> CaseRunner:
        """Runs the operator on this example, on the case's backend (see :class:`CaseRunner`)."""
        return CaseRunner(self.op, self.dtype, self.backend, self.layout, self.params)

    def on_reference(self) -> "Case":
        """The same drawn example on the reference (eager) backend."""
        return dataclasses.replace(self, backend=backends.EAGER.name)

    # -- replay ----------------------------------------------------------------
    def fields(self) -> dict:
        """The drawn choices as JSON-able values: ``Case.from_fields(op, fields)`` rebuilds this case."""
        out = {}
        for f in dataclasses.fields(self):
            if f.name == "op":
                continue
            v = getattr(self, f.name)
            out[f.name] = dtypes.name(v) if f.name == "dtype" else list(v) if isinstance(v, tuple) else v
        return out

    @classmethod
    def from_fields(cls, op: OperatorSpec, fields: dict) -> "Case":
        kw = dict(fields)
        cls = VARIANTS.get(kw.get("variant"), cls)
        kw["dtype"] = dtypes.DTYPES[kw["dtype"]]
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
