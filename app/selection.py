"""Which operators a run selects when the user brings their own module.

``tokenlaw --operators MOD check`` is about the user's operators: it checks
the operators ``MOD`` declares and no built-in, unless the user names
operators (``--operator``, built-in or not) or asks for the built-ins too
(``--with-builtins``).  Shared by ``check``, ``prove`` and ``verify`` so the
three select the same rows.
"""
from __future__ import annotations

from tokenlaw.orchestration import runs

WITH_BUILTINS_HELP = ("with --operators MODULE: also run tokenlaw's built-in operators (by default only the "
                      "module's own operators run, unless --operator names others)")


def add_flag(parser) -> None:
    """The ``--with-builtins`` flag of a command that selects operators."""
    parser.add_argument("--with-builtins", action="store_true", help=WITH_BUILTINS_HELP)


def operators(args) -> tuple | None:
    """The ``--operator`` names, or the user's modules' operators, or None (every operator)."""
    if args.operator:
        return tuple(args.operator)
    modules = getattr(args, "operators_module", None)
    if modules and not getattr(args, "with_builtins", False):
        return runs.user_operators(modules)
    return None
