"""Operator declarations: one operator (or small family) per module.

``collect()`` walks this package (and installed plug-ins) and returns the
registry; :func:`declare` marks an operator function.
"""
from .errors import DeclarationError, InvalidArgument
from .registry import Domain, OperatorSpec, Registry, collect, declare, default_registry
from .xp import TORCH

__all__ = ["DeclarationError", "InvalidArgument", "Domain", "OperatorSpec", "Registry",
           "collect", "declare", "default_registry", "TORCH"]
