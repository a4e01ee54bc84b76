"""Canary (class 6, an a-priori bound past its leaf): an SDPA backend whose backward sets dS = 0 on every
saturated row (largest weight above 0.99), as a kernel that skips the softmax backward there would.

At a saturated row the standard backward's a-priori bound on d/dwq and d/dwk was 10^2 to 10^190 times
those leaves' own scale, so the zeroed dS passed, and ``gradient_agreement`` held in float32 and bfloat16.
An example whose bound exceeds tolerance.BOUND_FRACTION of the leaf's scale now decides nothing for that
leaf (inconclusive, counted), and the leaves whose bound is within their scale see the missing dS: at seed 0
d/dx, in float32 (with the rule off that leaf sees it too: the rule's own effect is the leaf-level test in
tests/integrations/test_torch_sdpa.py).
The symbolic tier states no gradient law (gradient_agreement is an implementation law of a backend,
judged on concrete autograd runs only): this canary is the fuzz tier's alone.
"""
import torch

from tokenlaw.integrations import torch_sdpa

REASON = "the backward sets dS = 0 on saturated rows (largest weight > 0.99); no symbolic tier: no gradient law there"
OPERATOR = "sdpa"
CAUGHT_BY = ("gradient_agreement",)
# float32 is where it is caught at seed 0 (d/dx off 20 times its bound); in bfloat16 the same search holds:
# the saturated rows' leaves are inconclusive there (their bound past BOUND_FRACTION) and the others pass
DTYPES = ("float32",)
SATURATED = 0.99


class _ZeroSaturatedBackward(torch.autograd.Function):
    """softmax(q k^T / sqrt(dh)) v; the backward is the textbook one, dS = P (dP - rowsum(dO O)), except
    that dS is 0 on a saturated row."""

    @staticmethod
    def forward(ctx, q, k, v, mask):
        s = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        p = torch.softmax(s, dim=-1).nan_to_num(0.0)
        o = p @ v
        ctx.save_for_backward(q, k, v, p, o)
        return o

    @staticmethod
    def backward(ctx, d_o):
        q, k, v, p, o = ctx.saved_tensors
        d_s = p * (d_o @ v.transpose(-1, -2) - (d_o * o).sum(-1, keepdim=True)) * q.shape[-1] ** -0.5
        d_s = torch.where(p.amax(-1, keepdim=True) > SATURATED, torch.zeros_like(d_s), d_s)     # the defect
        return d_s @ k, d_s.transpose(-1, -2) @ q, p.transpose(-1, -2) @ d_o, None


class ZeroSaturated(torch_sdpa.SdpaBackend):
    def __init__(self):
        super().__init__("canary-zero-saturated-ds", "MATH", cuda_only=False, what="dS = 0 on saturated rows")

    def core(self, q, k, v, mask):
        return _ZeroSaturatedBackward.apply(q, k, v, None if mask is None else mask > 0)


BACKEND = ZeroSaturated()


def registry(base):
    return base
