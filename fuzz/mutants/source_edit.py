"""Mutate the code that ships: load a copy of an operator module with one edit, build a registry copy.

A seeded bug is an *edit of the shipping source*, never a separate
re-implementation: :func:`mutated_module` reads a module's source, replaces
exact snippets (each must occur exactly once, so a refactor that removes
one fails loudly instead of silently testing nothing), and executes the
result as a fresh module object under the module's own name -- nothing in
``sys.modules`` changes.  Relative imports of names listed in ``imports``
(for example the ``normalisers`` module or the ``presence`` function) are
bound to the given objects instead, so a mutated helper reaches the
operators that call it.  :func:`mutated_registry` collects the operators
declared in the mutated modules and returns a *new* registry in which
they replace their namesakes; the registry it was given is not touched.
:class:`SourceEdit` is one such edit, the ``mutate`` of an eager
:class:`~tokenlaw.properties.mutants.Mutant`.

>>> from tokenlaw.properties.catalogue import default_registry
>>> reg = default_registry()
>>> mod = mutated_module("tokenlaw.operators.presence", [("tau + sq)", "tau + sq + tau)")])
>>> bad = mutated_registry(reg, mod)
>>> bad["presence"].fn is reg["presence"].fn
False
"""
from __future__ import annotations

import ast
import dataclasses
import importlib.util
import types

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.registry import Registry
from tokenlaw.properties.catalogue import collect


def _source(name: str) -> tuple[str, str]:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin:
        raise InvalidArgument(f"module: {name!r} not found")
    with open(spec.origin, encoding="utf-8") as fh:
        return fh.read(), spec.origin


def edit_source(source: str, edits, where: str = "<source>") -> str:
    """Apply (old, new) replacements; each ``old`` must occur exactly once."""
    for old, new in edits:
        count = source.count(old)
        if count != 1:
            raise InvalidArgument(f"mutation of {where}: snippet occurs {count} times (expected once): {old!r}")
        source = source.replace(old, new)
    return source


class _BindImports(ast.NodeTransformer):
    """Drop the relative imports of the names in ``bound`` (they are pre-seeded in the module's globals)."""

    def __init__(self, bound):
        self.bound = bound

    def visit_ImportFrom(self, node):
        if not node.level:
            return node
        kept = [a for a in node.names if (a.asname or a.name) not in self.bound]
        if not kept:
            return None
        node.names = kept
        return node


def mutated_module(name: str, edits=(), imports=None) -> types.ModuleType:
    """A fresh copy of module ``name`` with ``edits`` applied and ``imports`` bound (see module doc)."""
    source, origin = _source(name)
    source = edit_source(source, edits, origin)
    tree = _BindImports(set(imports or {})).visit(ast.parse(source, origin))
    ast.fix_missing_locations(tree)
    module = types.ModuleType(name)
    module.__file__ = origin
    module.__package__ = name.rpartition(".")[0]
    module.__dict__.update(imports or {})
    exec(compile(tree, f"{origin} (mutated copy)", "exec"), module.__dict__)
    return module


def mutated_registry(base: Registry, *modules) -> Registry:
    """A new registry: ``base`` with every operator declared in ``modules`` replaced by the mutated one."""
    fresh = collect(*modules)
    return Registry([fresh[s.name] if s.name in fresh else s for s in base], base.contracts)


OPERATORS = "tokenlaw.operators."


@dataclasses.dataclass(frozen=True)
class SourceEdit:
    """Edit one shipping operator module and return the registry copy that uses it.

    module: the module edited (under ``tokenlaw.operators``); edits: (old, new) snippet pairs, each old occurring
    exactly once; users: (module, names) reloaded with those names bound from the mutated module (a name the
    mutated module defines is that object, e.g. ``presence``, ``TAPS``; else the mutated module itself).
    """

    module: str
    edits: tuple
    users: tuple = ()

    def __call__(self, registry: Registry) -> Registry:
        """A new registry with the mutated operators (``registry`` itself is not touched)."""
        mutated = mutated_module(OPERATORS + self.module, self.edits)
        modules = [mutated]
        for user, names in self.users:
            binds = {n: getattr(mutated, n) if hasattr(mutated, n) else mutated for n in names}
            modules.append(mutated_module(OPERATORS + user, (), binds))
        return mutated_registry(registry, *modules)
