"""Canary (tiny term behind ``getattr(x, "dtype", None)``): OAttention adds 1e-12 * sum(x) in float64.

The trace's object array has dtype object, so it returns OAttention; eagerly (float64) a null
receiver's output is 1e-12 * sum(x), not exactly 0.  One line, run by both sides.
"""
from ._build import oattention_plus_tiny_term

REASON = "a 1e-12 term added when x's dtype is float64 (getattr branch): a null receiver's output is not exactly 0"
OPERATOR = "oattention"
CAUGHT_BY = ("null_receiver",)

registry = oattention_plus_tiny_term("getattr(x, 'dtype', None) == torch.float64")
