"""The contract catalogue: the laws of ``MODULES``, marked with ``@contract`` (``contract.py``), collected into
``CONTRACTS``; and the operator registry validated against it (``collect``, ``default_registry``)."""
from __future__ import annotations

import functools
import importlib
import inspect

from tokenlaw.operators import registry

from .contract import ALL_DTYPES, MARK, Contract, Gap, contract  # noqa: F401  (re-exported)

MODULES = (
    "tokenlaw.properties.null_laws",
    "tokenlaw.properties.sequence_laws",
    "tokenlaw.properties.score_laws",
    "tokenlaw.properties.filter_laws",
    "tokenlaw.properties.static_laws",
    "tokenlaw.properties.differential_laws",
    "tokenlaw.properties.implementation_laws",
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


def collect(*targets):
    """``tokenlaw.operators.registry.collect`` validated against this catalogue: the registry of the operators
    declared in ``targets`` (modules, packages or their names; none: tokenlaw's own and installed plug-ins)."""
    targets = targets or ("tokenlaw.operators", *registry.entry_point_modules())
    return registry.collect(*targets, contracts=CONTRACTS)


@functools.cache
def default_registry() -> registry.Registry:
    """The registry of tokenlaw's own operators and installed plug-ins (collected once)."""
    return collect()
