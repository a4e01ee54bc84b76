"""The one error type tokenlaw raises for bad arguments and bad declarations."""


class InvalidArgument(ValueError):
    """An argument or declaration is invalid; the message names it and what was expected."""


class DeclarationError(InvalidArgument):
    """A declared operator or contract is inconsistent (raised by ``collect()``)."""


class NotRunnableHere(Exception):
    """The operator cannot evaluate what was asked on this machine (e.g. FlexAttention has no CPU backward).

    Not a bad argument and not a violation: the cell is reported *not runnable here*, with this message as
    its reason (``tokenlaw.properties.contract.Contract.judge``)."""
