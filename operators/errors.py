"""The error types, under their historical path: they live in :mod:`tokenlaw.errors` (which loads no torch)."""
from tokenlaw.errors import DeclarationError, InvalidArgument, NotRunnableHere, TokenlawError

__all__ = ["TokenlawError", "InvalidArgument", "DeclarationError", "NotRunnableHere"]
