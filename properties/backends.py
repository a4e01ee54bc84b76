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

A backend owns everything about itself, so a plug-in gets what tokenlaw's own
Triton kernels get through the same interface: its binding table
(:meth:`Backend.binds`: which operators it implements and what it runs for
each), the environment its runs depend on (:attr:`Backend.run_env`, recorded in
the report and set again by the gate), its provenance (:meth:`Backend.provenance`:
hashes of its own source files, recorded in every report), its seeded bugs
(:meth:`Backend.mutants`: ``tokenlaw mutate --backend NAME``) and optionally a
benchmark (:attr:`Backend.benchmark`: ``tokenlaw bench --backend NAME``).
Operators carry no backend's names.
"""
from __future__ import annotations

import contextlib
from importlib.metadata import entry_points

from tokenlaw.operators import dtypes as _dtypes
from tokenlaw.operators.errors import InvalidArgument, NotRunnableHere
from tokenlaw.operators.xp import TORCH

from . import provenance
from .applied import applied_weights

GROUP = "tokenlaw.backends"


class Unanswerable(NotRunnableHere):
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
    ``autograd``   -- whether ``run`` is differentiable (gradient laws judge its backward);
    ``run_env``    -- environment variables that decide how it runs (read when it is first imported): a run
                      records those that are set in its report's meta ``env``, and the gate sets them again
                      before it re-runs that run;
    ``env_fixed_by`` -- modules whose import fixes those variables (the gate refuses to re-run a recorded
                      environment once one of them is loaded);
    ``benchmark``  -- a :class:`Benchmark`, or None when it has none;
    ``masked_row`` -- {operator name: value}: a fully masked row's output where the implementation's
                      convention differs from the operator's formula (torch's SDPA gives 0 where the
                      formula's 0/0 is NaN); ``eager_agreement`` holds those entries, and only those, to it
                      exactly;
    ``backend_claims`` -- {operator name: {contract: reason}}: contracts the operator declares it violates
                      that this implementation claims instead, each with its reason (its convention for a
                      fully masked row makes ``finite`` hold); the plan judges them as claims on this backend.
    ``standard_backward`` -- {operator name: reason}: operators whose backward here is the textbook one of a
                      max-shifted softmax (dS = P (dP - sum P dP) from the saved P, the shift a constant),
                      where the eager operator's autograd also differentiates through the row max (terms
                      that cancel in the reals, not in rounding).  ``gradient_agreement`` then adds a probe:
                      the eager operator with its row max held constant, used only where its float64
                      gradient equals the operator's (implementation_laws.held_shift_probe).
    """

    name: str = ""
    reference: bool = False
    dtypes: tuple = _dtypes.LOW
    max_n: int | None = None
    autograd: bool = True
    run_env: tuple = ()
    env_fixed_by: tuple = ()
    benchmark: "Benchmark | None" = None
    masked_row: dict = {}
    backend_claims: dict = {}
    standard_backward: dict = {}

    def available(self) -> str | None:
        """None when the backend can run on this machine; else why not (refused up front, exit 2)."""
        return None

    def binds(self) -> dict[str, str]:
        """The binding table: {operator name: the name of what the backend runs for it}.

        Default: none.  The names are recorded in reports (:meth:`provenance`), so the gate can tell
        which operators' cells a change to the backend's sources concerns.
        """
        return {}

    def implements(self, op) -> str | None:
        """None when the backend runs ``op``; else why not (the operator's rows are then left out).
        Default: the operators of the binding table (:meth:`binds`)."""
        if op.name in self.binds():
            return None
        return f"the {self.name} backend does not implement {op.name!r}"

    def sources(self) -> dict[str, str]:
        """{"<folder>/<file>.py": sha256} of the backend's own sources.  Default: every Python file of the
        folder of the module that defines the backend's class."""
        return provenance.source_hashes(provenance.module_folder(type(self).__module__))

    def provenance(self, registry) -> dict:
        """What a report records about the backend: ``sources`` (:meth:`sources`) and ``binds``
        ({binding: {"operators": [...], "source": its own file or None}} over ``registry``)."""
        folder = provenance.module_folder(type(self).__module__)
        return {"sources": self.sources(), "binds": provenance.binding_sources(self.binds(), registry, folder)}

    def mutants(self) -> tuple:
        """The backend's seeded bugs (:class:`~tokenlaw.properties.mutants.Mutant` s whose ``backend`` is
        this one's name): what ``tokenlaw mutate --backend NAME`` must kill.  Default: none."""
        return ()

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


class Benchmark:
    """A backend's optional benchmark (``tokenlaw bench --backend NAME``).  Subclass it and override all three.

    A benchmark measures; it never estimates: where it cannot measure, :meth:`prepare` says why and the
    command exits 3 with that reason.
    """

    def prepare(self, smoke: bool) -> str | None:
        """Get ready to run (``smoke``: tiny shapes that test the harness, not a benchmark); None when it can
        run here, else why not."""
        return "this backend's benchmark does not say how to run"

    def run(self, *, smoke: bool, skip_eager_above: int) -> dict:
        """The measurements, JSON-ready (``skip_eager_above``: no O(N^2) reference beyond this N)."""
        raise NotImplementedError(f"{type(self).__name__}.run")

    def table(self, results: dict) -> str:
        """``results`` as text for the terminal."""
        raise NotImplementedError(f"{type(self).__name__}.table")


class EagerBackend(Backend):
    """The operators' own math on torch: every dtype, autograd, the reference."""

    name = "eager"
    reference = True
    dtypes = ALL_DTYPES

    def implements(self, op) -> str | None:
        return None

    def sources(self) -> dict[str, str]:
        return {}          # the operators themselves: the reference, not a plug-in

    def provenance(self, registry) -> dict:
        return {"sources": {}, "binds": {}}

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
