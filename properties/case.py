"""A concrete input for one cell, and how to run the operator on it.

A :class:`Case` is everything a contract needs to judge one example: the
operator, the dtype under test, float64 tokens ``x`` (with null rows at
``null``), a 0/1 mask when the operator takes one, float64 parameters, and
the random choices a contract may use (a position, a permutation, a shift).
It is built deterministically from a handful of small integers and floats,
so Hypothesis shrinks it to a small counterexample and a seed replays it.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import torch

from tokenlaw.operators.registry import OperatorSpec
from tokenlaw.operators.xp import TORCH

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
    backend: str = "eager"  # "eager": op.fn with the torch namespace; else tokenlaw.kernels.implementation(op, backend)
    _cache: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)

    # -- drawn tensors (float64) --------------------------------------------
    def generator(self, salt: int = 0) -> torch.Generator:
        return torch.Generator().manual_seed(self.seed * 1_000_003 + salt)

    @property
    def params(self) -> dict:
        if "params" not in self._cache:
            self._cache["params"] = self.op.domain.params(self.generator(1), self.d, torch.float64)
        return self._cache["params"]

    @property
    def x_dense(self) -> torch.Tensor:
        """Tokens with no null row (every entry drawn)."""
        if "x" not in self._cache:
            g = self.generator(2)
            self._cache["x"] = torch.randn(self.batch, self.n, self.d, generator=g, dtype=torch.float64) * self.scale
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
            g = self.generator(3)
            m = (torch.rand(self.batch, self.n, self.n, generator=g, dtype=torch.float64) < self.mask_density).double()
            m[:, torch.arange(self.n), torch.arange(self.n)] = 1.0
            self._cache["mask"] = m
        return self._cache["mask"]

    def permutation(self, n=None) -> torch.Tensor:
        n = self.n if n is None else n
        return torch.randperm(n, generator=torch.Generator().manual_seed(self.perm_seed))

    def random_like(self, shape, salt=7, scale=1.0) -> torch.Tensor:
        return torch.randn(*shape, generator=self.generator(salt), dtype=torch.float64) * scale

    # -- running ---------------------------------------------------------------
    def run(self, x, mask=None, dtype=None, **overrides) -> torch.Tensor:
        """Run the operator on float64 inputs cast to ``dtype`` (default: the case's)."""
        dtype = self.dtype if dtype is None else dtype
        params = cast({**self.params, **overrides}, dtype)
        kwargs: dict[str, Any] = dict(params)
        if self.op.domain.mask != "none":
            kwargs["mask"] = None if mask is None else mask.to(dtype)
        with torch.no_grad():
            return self.call(x.to(dtype), **kwargs)

    def call(self, x, **kwargs):
        """The operator on the case's backend, on already-cast inputs."""
        if self.backend == "eager":
            return self.op.fn(TORCH, x, **kwargs)
        from tokenlaw.kernels import implementation

        return implementation(self.op, self.backend)(x, **kwargs)

    def layers(self, x, mask=None, dtype=None) -> list:
        dtype = self.dtype if dtype is None else dtype
        kwargs = dict(cast(self.params, dtype))
        with torch.no_grad():
            return self.op.layers(TORCH, x.to(dtype), None if mask is None else mask.to(dtype), **kwargs)

    def weight_params(self, dtype=None) -> dict:
        """The subset of parameters the operator's row normaliser takes (e.g. tau)."""
        import inspect

        names = inspect.signature(self.op.weights).parameters
        return {k: v for k, v in cast(self.params, dtype or self.dtype).items() if k in names and k not in ("xp", "s", "mask")}

    def describe(self) -> dict:
        """A JSON-able summary: the drawn choices plus the (small) float64 tensors."""
        d = dict(operator=self.op.name, dtype=dtype_name(self.dtype), seed=self.seed, batch=self.batch,
                 n=self.n, d=self.d, null=list(self.null), pos=self.pos, perm_seed=self.perm_seed,
                 shift=self.shift, mask_density=self.mask_density, scale=self.scale)
        if self.batch * self.n * self.d <= 64:
            d["x"] = self.x.tolist()
            if self.mask is not None:
                d["mask"] = self.mask.tolist()
        return d
