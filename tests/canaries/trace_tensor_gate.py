"""Canary (type branch on one line): OAttention whose receiver gate is 1 when `torch.is_tensor(x)`.

`p_rcv = ones if torch.is_tensor(x) else p_rcv` is one source line, executed by the trace and
by the eager code alike, so only the values can tell: the traced output of a null receiver is 0
(p_i = 0), the eager one is its attention output.  The symbolic tier must not call it proved.
"""
from ._build import edited

REASON = "the receiver gate is 1 for real tensors (a one-line is_tensor branch): eagerly a null receiver attends"
OPERATOR = "oattention"
CAUGHT_BY = ("null_receiver", "null_source_insertion")
LINE = "    p_rcv = p[:, None]                                                   # (B, 1, N, 1)\n"

registry = edited("oattention", (LINE, LINE + "    p_rcv = xp.ones_like(p_rcv) if torch.is_tensor(x) else p_rcv\n"))
