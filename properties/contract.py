"""A contract: mark a law with ``@contract``; ``tokenlaw.properties.catalogue`` collects them into ``CONTRACTS``.

A contract is a small pure function ``law(case) -> Verdict`` whose
docstring's first line states the law.  Its options say whether it is exact
(bit-for-bit) or tolerance-based (``tokenlaw.properties.tolerance``), which
operator traits it needs, in which dtypes it is judged -- and every other
fact a tier needs about it, declared here once instead of in name-keyed
tables of each tier:

* ``evaluated`` -- what the law looks at, hence whether it says anything about
  a backend other than the reference (``tokenlaw.properties.plan``):
  ``"output"`` (the backend's ``run``), ``"weights"`` (the row weights the
  backend applies, ``Backend.weights``), ``"autograd"`` (gradients through
  the backend's ``run``), ``"trace"`` (what the implementation evaluates,
  ``Backend.transcendentals``) or ``"reference"`` (the operator's own eager
  code only: ``unjudged`` says why it cannot be judged on another backend);
* ``form`` -- ``form(op) -> reason or None``: the operator cannot be judged
  on a non-reference backend (e.g. no parameter to reach the law through);
* ``implementation`` -- the law is claimed by *every* non-reference backend
  for every operator it implements; the string is the reason (why an
  implementation of a declared operator must obey it);
* ``fuzz`` -- bounds on the fuzz tier's drawn domain (keywords of
  ``tokenlaw.fuzz.strategies.cases``), each for a stated reason;
* ``symbolic`` -- the prover's shapes: ``dict(shape=(n, d), host_shape=(n, d))``,
  or ``dict(none="reason")`` for a law with no real-arithmetic statement.
"""
from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable

from tokenlaw.operators import dtypes as _dtypes

from . import verdict as V
from .backends import Unanswerable

MARK = "__tokenlaw_contract__"
ALL_DTYPES = _dtypes.NAMES


@dataclasses.dataclass(frozen=True)
class Contract:
    name: str
    fn: Callable
    exact: bool
    requires: frozenset
    dtypes: tuple = ALL_DTYPES
    needs: frozenset = frozenset()   # OperatorSpec attributes that must be set: weights, layers, reference
    universal: bool = False          # claimed by every operator that does not declare it otherwise
    skip: Callable | None = None     # skip(op, dtype_name, backend) -> reason the cell cannot run, or None
    regimes: tuple = ()              # numerical regimes (tokenlaw.fuzz.regimes) a search must visit to judge it
    evaluated: str = "output"        # output | weights | autograd | trace | reference (see the module docstring)
    unjudged: str = ""               # evaluated="reference": why another backend's implementation is not judged
    form: Callable | None = None     # form(op) -> why op cannot be judged on a non-reference backend, or None
    implementation: str = ""         # non-empty: claimed by every non-reference backend, for this reason
    fuzz: Any = ()                   # keyword bounds for the fuzz tier's strategy (as a sorted tuple of items)
    symbolic: Any = ()               # the prover's shapes / no-form reason (as a sorted tuple of items)

    @property
    def fuzz_bounds(self) -> dict:
        return dict(self.fuzz)

    @property
    def symbolic_options(self) -> dict:
        return dict(self.symbolic)

    @property
    def law(self) -> str:
        return (inspect.getdoc(self.fn) or "").splitlines()[0]

    def __call__(self, case):
        return self.fn(case)

    def judge(self, case) -> "V.Verdict":
        """The verdict on ``case``; an implementation that crashes on a valid input is *raised* (failing), and a
        backend that cannot answer what the law asks (e.g. which weights it applies) makes it not runnable."""
        try:
            return self.fn(case)
        except Unanswerable as err:
            return V.Verdict(V.NOT_RUNNABLE, detail=str(err))
        except Exception as err:  # noqa: BLE001 (a crash on a valid input is a finding: 'operator raised')
            op = getattr(case, "op", None)
            return V.raised(err, getattr(op, "source", None))


class Gap(str):
    """A ``skip`` reason that is a gap in a declaration (e.g. no reference= given), not a design
    exclusion: the cell is reported *not runnable here*, never folded away as *not applicable by design*."""


EVALUATED = ("output", "weights", "autograd", "trace", "reference")
_SYMBOLIC_KEYS = frozenset({"shape", "host_shape", "none"})


def contract(*, exact: bool, requires=(), dtypes=ALL_DTYPES, needs=(), universal=False, skip=None, regimes=(),
             evaluated="output", unjudged="", form=None, implementation="", fuzz=None, symbolic=None):
    """Mark ``law(case) -> Verdict`` as a contract named after the function.

    ``universal`` contracts (e.g. the differential check) are planned for
    every operator without being listed in its claims; ``skip`` names the
    cells where the law cannot be judged (reported as not runnable); ``regimes``
    names the numerical regimes the fuzz tier must visit before its "holds"
    covers them (a cell that never visited one says so).  ``evaluated``,
    ``unjudged``, ``form``, ``implementation``, ``fuzz`` and ``symbolic``: see
    the module docstring.  ``skip(op, dtype_name, backend)`` gets the
    :class:`~tokenlaw.properties.backends.Backend` the cell runs on.
    """
    if evaluated not in EVALUATED:
        raise ValueError(f"evaluated: expected one of {EVALUATED}, got {evaluated!r}")
    if evaluated == "reference" and not unjudged:
        raise ValueError("evaluated='reference' needs unjudged= (why another backend is not judged)")
    if set(symbolic or {}) - _SYMBOLIC_KEYS:
        raise ValueError(f"symbolic: expected keys among {sorted(_SYMBOLIC_KEYS)}, got {sorted(symbolic)}")

    def mark(fn):
        setattr(fn, MARK, dict(exact=exact, requires=frozenset(requires), dtypes=tuple(dtypes),
                               needs=frozenset(needs), universal=universal, skip=skip, regimes=tuple(regimes),
                               evaluated=evaluated, unjudged=unjudged, form=form, implementation=implementation,
                               fuzz=tuple(sorted((fuzz or {}).items())),
                               symbolic=tuple(sorted((symbolic or {}).items()))))
        return fn

    return mark
