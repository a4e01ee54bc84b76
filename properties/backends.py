"""The backend protocol: what the suite needs from an implementation of declared operators.

A backend runs declared operators.  The *eager* backend runs each operator's
own math (``op.fn`` with the torch namespace) and is the reference every other
backend is judged against (float64 eager).  Any other backend -- tokenlaw's
Triton kernels, a third party's kernel, a ``torch.compile``d or FlexAttention
version -- implements :class:`Backend` and registers it under the entry-point
group ``tokenlaw.backends``::

    [project.entry-points."tokenlaw.backends"]
    mykernels = "mypackage.backend:BACKEND"     # a Backend instance, or a class / factory returning one

``tokenlaw check --backend mykernels`` then judges every contract the
operators it implements declare, plus the implementation laws (agreement with
the float64 eager reference, NaN-padded buffers, determinism, gradients...),
with no edit to tokenlaw.  Contracts never ask a backend's *name*: they call
the methods below.
"""
from __future__ import annotations

import contextlib
from importlib.metadata import entry_points

from tokenlaw.operators import dtypes as _dtypes
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.xp import TORCH

from .applied import applied_weights

GROUP = "tokenlaw.backends"


class Unanswerable(Exception):
    """A contract asked the backend something it cannot say (``weights`` or ``transcendentals`` gave
    None): the cell is *not runnable here*, not violated."""

ALL_DTYPES = _dtypes.NAMES


class Backend:
    """One implementation of declared operators.  Subclass it and override what differs.

    ``name``       -- the ``--backend`` name (the entry point's name must match it);
    ``reference``  -- True only for the eager backend: its operator *is* the float64 reference;
    ``dtypes``     -- the dtypes it computes in (a cell in another dtype is *not runnable*, with the reason);
    ``max_n``      -- the longest sequence worth drawing (None: the contract's own bound), e.g. to keep an
                      interpreter fast while still crossing tile edges;
    ``autograd``   -- whether ``run`` is differentiable (gradient laws judge its backward).
    """

    name: str = ""
    reference: bool = False
    dtypes: tuple = _dtypes.LOW
    max_n: int | None = None
    autograd: bool = True

    def available(self) -> str | None:
        """None when the backend can run on this machine; else why not (refused up front, exit 2)."""
        return None

    def implements(self, op) -> str | None:
        """None when the backend runs ``op``; else why not (the operator's rows are then left out)."""
        return f"the {self.name} backend does not implement {op.name!r}"

    def not_runnable(self, dtype: str) -> str | None:
        """None when a cell in ``dtype`` can be judged here; else the reason it is *not runnable here*."""
        if dtype not in self.dtypes:
            return f"the {self.name} backend computes in {list(self.dtypes)}, not {dtype}"
        return None

    def run(self, op, x, **kwargs):
        """``op`` on ``x`` with the eager operator's keyword arguments (parameters, and ``mask`` if it takes one)."""
        raise NotImplementedError(f"{type(self).__name__}.run")

    def run_placed(self, op, x, place, **kwargs):
        """``run`` with every buffer the implementation reads passed through ``place`` first.

        ``place(t)`` returns a tensor equal to ``t`` stored elsewhere (e.g. inside a larger NaN-filled
        buffer: ``nan_padding``).  Default: ``x`` and every tensor argument; an implementation that
        computes intermediates (projections) before its kernel should place the kernel's own inputs.
        """
        placed = {k: place(v) if hasattr(v, "is_floating_point") and v.is_floating_point() else v
                  for k, v in kwargs.items()}
        return self.run(op, place(x), **placed)

    def weights(self, op, s, mask, dtype, **params):
        """The row weights W(S) (B, n, n) the implementation applies to scores ``s`` (float64, cast to
        ``dtype`` here) under ``mask`` (the operator's own mask argument, or None), or None when it cannot
        say.  Default: read them off ``run``'s output with the exact probe of
        ``tokenlaw.properties.applied`` (needs the standard projections as parameters)."""
        return applied_weights(op, TORCH, s.to(dtype), None if mask is None else mask.to(dtype),
                               run=lambda x, **kw: self.run(op, x, **kw), **params)

    def transcendentals(self, op, case) -> dict | None:
        """``{call: count}`` of exp/log/... the implementation evaluates on ``case``, or None when it cannot say."""
        return None

    def describe(self) -> dict:
        """What the backend declares about itself (for reports)."""
        return dict(name=self.name, dtypes=list(self.dtypes), max_n=self.max_n, autograd=self.autograd,
                    reference=self.reference)


class EagerBackend(Backend):
    """The operators' own math on torch: every dtype, autograd, the reference."""

    name = "eager"
    reference = True
    dtypes = ALL_DTYPES

    def implements(self, op) -> str | None:
        return None

    def run(self, op, x, **kwargs):
        return op.fn(TORCH, x, **kwargs)


EAGER = EagerBackend()


def _entry_points() -> dict:
    return {ep.name: ep for ep in entry_points(group=GROUP)}


_LOADED: dict = {}
_REGISTERED: dict = {}     # backends registered in-process (tests, notebooks): see register()


def names() -> list[str]:
    """Every backend name: eager, the installed plug-ins and any registered in this process."""
    others = (set(_entry_points()) | set(_REGISTERED)) - {EAGER.name}
    return [EAGER.name, *sorted(others)]


@contextlib.contextmanager
def register(backend: Backend):
    """Make ``backend`` known under its name for the duration of a ``with`` block, without an entry point
    (for tests and notebooks; a package registers through the entry-point group instead)."""
    if not isinstance(backend, Backend) or not backend.name:
        raise InvalidArgument(f"backend: expected a named tokenlaw Backend, got {backend!r}")
    if backend.name in names():
        raise InvalidArgument(f"backend: a backend named {backend.name!r} already exists")
    _REGISTERED[backend.name] = backend
    try:
        yield backend
    finally:
        del _REGISTERED[backend.name]


def get(name: str) -> Backend:
    """The backend called ``name`` (validated: an unknown name is an InvalidArgument naming the choices)."""
    if name == EAGER.name:
        return EAGER
    if name in _REGISTERED:
        return _REGISTERED[name]
    if name not in _LOADED:
        eps = _entry_points()
        if name not in eps:
            raise InvalidArgument(f"--backend: expected one of {names()}, got {name!r} (a plug-in registers "
                                  f"itself under the entry-point group {GROUP!r})")
        obj = eps[name].load()
        backend = obj() if isinstance(obj, type) or (callable(obj) and not isinstance(obj, Backend)) else obj
        if not isinstance(backend, Backend):
            raise InvalidArgument(f"--backend {name}: entry point {eps[name].value!r} gives "
                                  f"{type(backend).__name__}, not a tokenlaw Backend")
        if backend.name != name:
            raise InvalidArgument(f"--backend {name}: entry point {eps[name].value!r} names itself "
                                  f"{backend.name!r}")
        _LOADED[name] = backend
    return _LOADED[name]


def require(name: str) -> Backend:
    """``get(name)``, refused up front (InvalidArgument) when the backend cannot run on this machine."""
    backend = get(name)
    why = backend.available()
    if why:
        raise InvalidArgument(f"--backend {name}: {why}")
    return backend
