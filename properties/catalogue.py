"""The contract catalogue: the laws marked with ``@contract`` (``contract.py``) in the ``*_laws`` modules of
this package and in the modules installed plug-ins register under the ``tokenlaw.contracts`` entry-point
group -- found like operators, never listed by hand -- collected into ``CONTRACTS``; and the operator
registry validated against it (``collect``, ``default_registry``)."""
from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
from importlib.metadata import entry_points

from tokenlaw.operators import registry

from .contract import ALL_DTYPES, MARK, Contract, Gap, contract  # noqa: F401  (re-exported)

LAWS_SUFFIX = "_laws"


def laws_modules(package: str = __package__) -> tuple[str, ...]:
    """The modules of ``package`` that hold contracts: every ``*_laws`` module, ordered by its ``ORDER``
    (where the catalogue, ``tokenlaw list`` and the reports list its laws; none: last), then by name."""
    pkg = importlib.import_module(package)
    names = [info.name for info in pkgutil.iter_modules(pkg.__path__, pkg.__name__ + ".")
             if info.name.rsplit(".", 1)[-1].endswith(LAWS_SUFFIX)]
    return tuple(sorted(names, key=lambda name: (getattr(importlib.import_module(name), "ORDER", float("inf")),
                                                 name)))


ENTRY_POINTS = "tokenlaw.contracts"


def contract_modules() -> tuple[str, ...]:
    """Where the catalogue's contracts are declared: this package's ``*_laws`` modules, then the modules
    installed plug-ins register under the ``tokenlaw.contracts`` entry-point group (as operators are found)."""
    return laws_modules() + tuple(ep.value for ep in entry_points(group=ENTRY_POINTS))


def collect_contracts(*targets) -> dict[str, Contract]:
    """The contracts marked in ``targets`` (modules or their names; none: :func:`contract_modules`).

    A law without a one-line docstring, or a name declared twice, is a declaration error naming the file."""
    out: dict[str, Contract] = {}
    for target in targets or contract_modules():
        module = importlib.import_module(target) if isinstance(target, str) else target
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


def with_user_contracts(*modules) -> dict[str, Contract]:
    """A fresh catalogue: :data:`CONTRACTS` plus the contracts marked in the user's ``modules`` (``--operators``).

    Nothing global is changed; a user's contract named like one of the catalogue's is a declaration
    error naming its file (as any contract declared twice)."""
    out = dict(CONTRACTS)
    for name, c in collect_contracts(*modules).items() if modules else ():
        if name in out and out[name].fn is not c.fn:
            raise ValueError(f"{c.fn.__code__.co_filename}: contract {name} declared twice "
                             f"(tokenlaw's catalogue has one of that name)")
        out[name] = c
    return out


def collect(*targets, contracts=None):
    """``tokenlaw.operators.registry.collect`` validated against ``contracts`` (default: this catalogue): the
    registry of the operators declared in ``targets`` (modules, packages or their names; none: tokenlaw's
    own and installed plug-ins), which carries those contracts (``Registry.contracts``)."""
    targets = targets or ("tokenlaw.operators", "tokenlaw.operators.zoo", *registry.entry_point_modules())
    return registry.collect(*targets, contracts=CONTRACTS if contracts is None else contracts)


@functools.cache
def default_registry() -> registry.Registry:
    """The registry of tokenlaw's own operators and installed plug-ins (collected once)."""
    return collect()
