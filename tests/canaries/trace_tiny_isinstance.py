"""Canary (tiny term behind ``isinstance(x, torch.Tensor)``): OAttention adds 1e-12 * sum(x) for real tensors.

The trace (an object array) returns OAttention; eagerly a null receiver's output is 1e-12 * sum(x),
not exactly 0.  One line, run by both sides: only an exact value comparison sees it.
"""
from ._build import oattention_plus_tiny_term

REASON = "a 1e-12 term added for real tensors (isinstance branch): a null receiver's output is not exactly 0"
OPERATOR = "oattention"
CAUGHT_BY = ("null_receiver",)

registry = oattention_plus_tiny_term('isinstance(x, torch.Tensor)')
