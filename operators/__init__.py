"""Operator declarations: one operator (or small family) per module.

``collect(contracts=...)`` walks this package (and installed plug-ins) and
returns the registry (``tokenlaw.properties.catalogue.collect`` and
``default_registry`` pass the contract catalogue); :func:`declare` marks an
operator function.
"""
from tokenlaw.process import cpu_paths

cpu_paths.pin()     # before any tensor arithmetic: bounds and verdicts must not depend on the CPU (cpu_paths.py)

from .errors import DeclarationError, InvalidArgument
from .registry import Domain, Limit, OperatorSpec, Registry, collect, declare
from .xp import TORCH

__all__ = ["DeclarationError", "InvalidArgument", "Domain", "Limit", "OperatorSpec", "Registry",
           "collect", "declare", "TORCH"]
