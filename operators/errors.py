"""The one error type tokenlaw raises for bad arguments and bad declarations."""


class InvalidArgument(ValueError):
    """An argument or declaration is invalid; the message names it and what was expected."""


class DeclarationError(InvalidArgument):
    """A declared operator or contract is inconsistent (raised by ``collect()``)."""
