"""A published implementation of an operator's row map, declared beside it (``@declare(external=...)``).

The ``package_agreement`` contract compares the operator's own ``xp`` code
with it.  The package is optional: :meth:`External.load` returns None when it
is not installed, and the contract's cell is then *not runnable here* with
:attr:`External.missing` as its reason; the operator itself never needs it.

    >>> External("entmax", "sparsemax", "pip install entmax==1.3").missing
    'entmax not installed (pip install entmax==1.3)'
"""
from __future__ import annotations

import dataclasses
import importlib

from .errors import DeclarationError


@dataclasses.dataclass(frozen=True)
class External:
    """``package.function(scores, dim=-1)``: the row map as a third party ships it.

    package:  the importable module (``entmax``);
    function: its attribute that maps a score tensor to weights along the last axis;
    install:  the one command that installs it (shown when it is missing).
    """

    package: str
    function: str
    install: str

    def __post_init__(self):
        for name in ("package", "function", "install"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip() or "\n" in value:
                raise DeclarationError(f"External.{name}: expected a one-line non-empty string, got {value!r}")

    @property
    def missing(self) -> str:
        """The reason a cell that needs the package cannot run without it."""
        return f"{self.package} not installed ({self.install})"

    def load(self):
        """The package's function, or None when the package is not installed."""
        try:
            module = importlib.import_module(self.package)
        except ImportError:         # absent, or hidden (sys.modules[package] = None): the same answer
            return None
        return getattr(module, self.function)
