"""tokenlaw's error types, under one root: ``except tokenlaw.errors.TokenlawError`` catches every one of them.

This module imports nothing (no torch, no CPU-path pinning), so a plug-in or a
command line can name an error class without loading the array stack:

>>> from tokenlaw.errors import InvalidArgument, TokenlawError
>>> issubclass(InvalidArgument, TokenlawError) and issubclass(InvalidArgument, ValueError)
True
"""


class TokenlawError(Exception):
    """The root of every error tokenlaw raises on purpose (a bug of tokenlaw's own raises anything else)."""


class InvalidArgument(TokenlawError, ValueError):
    """An argument or declaration is invalid; the message names it and what was expected."""


class DeclarationError(InvalidArgument):
    """A declared operator or contract is inconsistent (raised by ``collect()``)."""


class NotRunnableHere(TokenlawError):
    """The operator cannot evaluate what was asked on this machine (e.g. FlexAttention has no CPU backward).

    Not a bad argument and not a violation: the cell is reported *not runnable here*, with this message as
    its reason (``tokenlaw.properties.contract.Contract.judge``)."""


__all__ = ["TokenlawError", "InvalidArgument", "DeclarationError", "NotRunnableHere"]
