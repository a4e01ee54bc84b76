"""How to run an operator on a drawn example: cast, lay out, look the backend up, call.

A :class:`CaseRunner` is what a contract calls to evaluate the operator: the
example's float64 inputs are cast to the dtype under test, laid out in the
example's memory layout, and handed to the backend the example names (eager
PyTorch, the Triton kernels, a third party's plug-in).  It holds no drawn
state of its own beyond the parameters it was given:
:class:`~tokenlaw.properties.case.Case` draws, the runner runs.

>>> from tokenlaw.properties.catalogue import default_registry
>>> from tokenlaw.properties.case import Case
>>> case = Case(default_registry()["oattention"], torch.float32)
>>> case.runner.run(case.x, case.mask).dtype
torch.float32
"""
from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import torch

from tokenlaw.operators import tree
from tokenlaw.operators.registry import OperatorSpec
from tokenlaw.operators.xp import TORCH

from . import backends

LAYOUTS = ("contiguous", "transposed", "strided")
_WEIGHT_INPUTS = ("xp", "s", "mask")     # the row normaliser's own inputs, not parameters


def cast(value, dtype):
    """Cast every floating tensor inside nested dicts/lists to dtype."""
    return tree.map(lambda v: v.to(dtype) if torch.is_tensor(v) and v.is_floating_point() else v, value)


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


@dataclasses.dataclass(frozen=True)
class CaseRunner:
    """Runs ``op`` with float64 ``params`` in ``dtype`` on the backend named ``backend``, inputs laid out as ``layout``."""

    op: OperatorSpec
    dtype: torch.dtype
    backend: str
    layout: str
    params: Any = dataclasses.field(repr=False)
    _cast: dict = dataclasses.field(default_factory=dict, init=False, repr=False, compare=False)
    # (dtype name, non-finite entries, entries) of every call whose output was not finite, in call order: a law's
    # violation on such an example is reported as a non-finite output first (``contract.non_finite_first``)
    non_finite: list = dataclasses.field(default_factory=list, init=False, repr=False, compare=False)

    def params_in(self, dtype: torch.dtype) -> Any:
        """``params`` cast to ``dtype``, cast once per runner and dtype (a host has ~30 leaves, a contract
        evaluates it many times).  Callers copy before they add to it; the leaves are shared, read-only."""
        if dtype not in self._cast:
            self._cast[dtype] = cast(self.params, dtype)
        return self._cast[dtype]

    @property
    def implementation(self) -> backends.Backend:
        """The backend the runner calls (``backends.get(self.backend)``)."""
        return backends.get(self.backend)

    def arguments(self, mask=None, dtype=None, **overrides) -> dict[str, Any]:
        """The operator's keyword arguments in ``dtype``: its parameters, plus the mask if it takes one."""
        dtype = self.dtype if dtype is None else dtype
        kwargs: dict[str, Any] = {**self.params_in(dtype), **cast(overrides, dtype)}
        if self.op.domain.mask != "none":
            kwargs["mask"] = None if mask is None else mask.to(dtype)
        return kwargs

    def run(self, x, mask=None, dtype=None, **overrides) -> torch.Tensor:
        """Run the operator on float64 inputs cast to ``dtype`` (default: the runner's)."""
        dtype = self.dtype if dtype is None else dtype
        kwargs = self.arguments(mask, dtype, **overrides)
        if kwargs.get("mask") is not None:
            kwargs["mask"] = lay_out(kwargs["mask"], self.layout)
        with torch.no_grad():
            return self.call(lay_out(x.to(dtype), self.layout), **kwargs)

    def call(self, x, **kwargs):
        """The operator on the runner's backend, on already-cast inputs (a non-finite output is noted in
        :attr:`non_finite`)."""
        out = self.implementation.run(self.op, x, **kwargs)
        bad = total = 0
        for _, t in tree.leaves(out):
            if torch.is_tensor(t) and t.is_floating_point():
                bad, total = bad + int((~torch.isfinite(t.detach())).sum()), total + t.numel()
        if bad:
            self.non_finite.append((str(x.dtype).replace("torch.", ""), bad, total))
        return out

    def layers(self, x, mask=None, dtype=None) -> list:
        """A host's layer states, on eager PyTorch (``op.layers``), in ``dtype``."""
        dtype = self.dtype if dtype is None else dtype
        kwargs = dict(self.params_in(dtype))
        with torch.no_grad():
            return self.op.layers(TORCH, lay_out(x.to(dtype), self.layout),
                                  None if mask is None else lay_out(mask.to(dtype), self.layout), **kwargs)

    def layers_and_output(self, x, mask=None, dtype=None) -> list:
        """``layers`` with the operator's own output (``run``) appended as the last entry.

        Where the operator's ``fn`` is by construction the last state of these very layers (a host built by
        ``operators.hosts``, marked ``fn.last_state_of is op.layers``) and runs on the eager backend, that
        state is the output bit for bit (the same calls on the same cast inputs), so it is not computed a
        second time; any other ``fn`` (a hand-written host, another backend) is run."""
        states = self.layers(x, mask, dtype)
        if self.implementation.reference and getattr(self.op.fn, "last_state_of", None) is self.op.layers:
            return states + [states[-1]]
        return states + [self.run(x, mask, dtype=dtype)]

    def weight_params(self, dtype=None) -> dict:
        """The subset of parameters the operator's row normaliser takes (e.g. its threshold)."""
        names = inspect.signature(self.op.weights).parameters
        return {k: v for k, v in self.params_in(dtype or self.dtype).items()
                if k in names and k not in _WEIGHT_INPUTS}
