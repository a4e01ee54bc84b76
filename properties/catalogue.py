"""The contract catalogue: mark with ``@contract``, collect into ``CONTRACTS``.

A contract is a small pure function ``law(case) -> Verdict`` whose
docstring's first line states the law.  Its options say whether it is exact
(bit-for-bit) or tolerance-based (``tokenlaw.properties.tolerance``), which
operator traits it needs, and in which dtypes it is judged.
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
from typing import Callable

MARK = "__tokenlaw_contract__"
ALL_DTYPES = ("float64", "float32", "float16", "bfloat16")


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

    @property
    def law(self) -> str:
        return (inspect.getdoc(self.fn) or "").splitlines()[0]

    def __call__(self, case):
        return self.fn(case)


class Gap(str):
    """A ``skip`` reason that is a gap in a declaration (e.g. no reference= given), not a design
    exclusion: the cell is reported *not runnable here*, never folded away as *not applicable by design*."""


def contract(*, exact: bool, requires=(), dtypes=ALL_DTYPES, needs=(), universal=False, skip=None, regimes=()):
    """Mark ``law(case) -> Verdict`` as a contract named after the function.

    ``universal`` contracts (e.g. the differential check) are planned for
    every operator without being listed in its claims; ``skip`` names the
    cells where the law cannot be judged (reported as not runnable); ``regimes``
    names the numerical regimes the fuzz tier must visit before its "holds"
    covers them (a cell that never visited one says so).
    """

    def mark(fn):
        setattr(fn, MARK, dict(exact=exact, requires=frozenset(requires), dtypes=tuple(dtypes),
                               needs=frozenset(needs), universal=universal, skip=skip, regimes=tuple(regimes)))
        return fn

    return mark


MODULES = (
    "tokenlaw.properties.null_laws",
    "tokenlaw.properties.sequence_laws",
    "tokenlaw.properties.score_laws",
    "tokenlaw.properties.filter_laws",
    "tokenlaw.properties.static_laws",
    "tokenlaw.properties.differential_laws",
    "tokenlaw.kernels.kernel_laws",
)


def collect_contracts(modules=MODULES) -> dict[str, Contract]:
    out: dict[str, Contract] = {}
    for name in modules:
        module = importlib.import_module(name)
        for fn in vars(module).values():
            opts = getattr(fn, MARK, None)
            if opts is None or fn.__module__ != module.__name__:
                continue
            if not (inspect.getdoc(fn) or "").strip():
                raise ValueError(f"{module.__file__}: contract {fn.__name__} has no one-line law in its docstring")
            if fn.__name__ in out:
                raise ValueError(f"{module.__file__}: contract {fn.__name__} declared twice")
            out[fn.__name__] = Contract(name=fn.__name__, fn=fn, **opts)
    return out


CONTRACTS = collect_contracts()
