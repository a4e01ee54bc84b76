"""Which operators a run selects when the user brings their own module.

``tokenlaw --operators MOD check`` is about the user's operators: it checks
the operators ``MOD`` declares and no built-in, unless the user names
operators (``--operator``, built-in or not) or asks for the built-ins too
(``--with-builtins``, added by ``argtypes.add_with_builtins``).  Shared by
``check``, ``prove`` and ``verify`` so the three select the same rows.
"""
from __future__ import annotations

from tokenlaw.orchestration import runs


def operators(args) -> tuple | None:
    """The ``--operator`` names, or the user's modules' operators, or None (every operator)."""
    if args.operator:
        return tuple(args.operator)
    modules = getattr(args, "operators_module", None)
    if modules and not getattr(args, "with_builtins", False):
        return runs.user_operators(modules)
    return None
