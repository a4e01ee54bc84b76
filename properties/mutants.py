"""A seeded bug (a *mutant*), the one type for every tier: eager mutants (``fuzz/mutants/seeded.py``) and a
backend's own (``Backend.mutants()``, e.g. the Triton backend's ``kernels/mutants.py``).

A mutant never changes shared state.  An eager mutant's ``mutate(registry)``
returns a *new* registry in which its operators are the mutated ones (an edit
of the shipping source loaded as a fresh module under its own name); the
registry it is given, and every module, stay as they are.  A kernel mutant's
``patch()`` is a context manager, active only around the rows that judge it,
in which the backend launches a mutated copy of one kernel.

``tokenlaw mutate`` runs the declared rows of ``operators`` on
``mutant.apply(registry)`` inside ``mutant.patch()``: the mutant is *killed*
when some row no longer matches its declaration.
"""
from __future__ import annotations

import contextlib
import dataclasses
from typing import Callable

from tokenlaw.operators.errors import InvalidArgument

from .backends import EAGER


@dataclasses.dataclass(frozen=True)
class Mutant:
    """One seeded bug: which operators' rows must catch it, on which backend, and how it is made."""

    name: str
    operators: tuple          # operator names whose declared cells are run against the mutant
    description: str
    backend: str = EAGER.name  # the backend whose rows judge it
    mutate: Callable | None = None      # registry -> a mutated *copy* (None: the registry is used as is)
    patch: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext   # scoped kernel swap

    def __post_init__(self):
        if not self.name or not isinstance(self.operators, tuple) or not self.operators:
            raise InvalidArgument(f"mutant: expected a name and a non-empty tuple of operators, got "
                                  f"{self.name!r}, {self.operators!r}")

    def apply(self, registry):
        """The registry this mutant's rows run on: ``mutate``'s copy, or ``registry`` itself (never changed)."""
        return registry if self.mutate is None else self.mutate(registry)


@dataclasses.dataclass(frozen=True)
class MutantResult:
    """What ``tokenlaw mutate`` found about one mutant: the rows it ran and the ones that no longer match."""

    name: str
    backend: str
    description: str
    operators: tuple
    killers: list            # row ids (operator-contract) that caught the mutant
    replays: dict            # row id -> replay id of the killing counterexample
    rows: int
    seconds: float

    @property
    def killed(self) -> bool:
        return bool(self.killers)


def select(mutants, *, backend: str | None = None) -> tuple:
    """The mutants of ``backend`` (all when None), in catalogue order."""
    return tuple(m for m in mutants if backend is None or m.backend == backend)
