"""A worked third-party backend for tokenlaw: see README.md and ``backend.py``."""
from .backend import EXAMPLE, EXAMPLE_WRONG, ExampleBackend, WrongExampleBackend

__all__ = ["EXAMPLE", "EXAMPLE_WRONG", "ExampleBackend", "WrongExampleBackend"]
