"""Canary (tiny term behind a branch on ``x.shape``): OAttention adds 1e-12 * sum(x) when x.shape is a torch.Size.

Traced, x is an object array whose shape is a plain tuple, so the trace returns OAttention; eagerly
every output moves by about 1e-12, and a null receiver's output is no longer exactly 0.  One line, run
by both sides: only an exact value comparison sees it (a fixed 1e-9 relative tolerance did not).
"""
from ._build import oattention_plus_tiny_term

REASON = "a 1e-12 term added when x.shape is a torch.Size (eager only): a null receiver's output is not exactly 0"
OPERATOR = "oattention"
CAUGHT_BY = ("null_receiver",)

registry = oattention_plus_tiny_term('isinstance(x.shape, torch.Size)')
