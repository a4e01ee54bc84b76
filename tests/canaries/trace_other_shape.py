"""Canary (one-line branch at another shape): OAttention adds 1e-12 * sum(x) only when x has 3 tokens.

null_receiver is traced at n = 2: the trace and the eager code run the same lines at every shape
(the branch is one line), and at n = 2 they agree, so only values compared at another shape see it.
"""
from ._build import oattention_plus_tiny_term

REASON = "a 1e-12 term added only at n = 3 (one line): the trace at n = 2 is right, the operator is not"
OPERATOR = "oattention"
CAUGHT_BY = ("null_receiver",)

registry = oattention_plus_tiny_term('x.shape[1] == 3')
