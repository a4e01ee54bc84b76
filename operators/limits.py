"""The per-dtype limits on the fuzz tier's draws that operators declare (``Domain(limits=...)``), with their reasons.

A limit is declared only where the computation an operator's formula is written in cannot be held by
the dtype (an intermediate the formula names overflows, or the inputs it depends on round to noise),
never to hide a representable result that comes out wrong.  The report prints each one on its rows and in its legend.
"""
from __future__ import annotations

import torch

from .registry import Limit

_HALF_MAX = torch.finfo(torch.float16).max
# Every attention operator forms the score matrix S = Q K^T / sqrt(dh) (SPEC), and a float16 array
# holds no |S| above 65504: past it the scores the formula is written in do not exist in the dtype
# (they are inf, and inf - inf or 0 * inf is NaN downstream).  Likewise presence
# rho = |h|^2 / (tau + |h|^2) is written in |h|^2, which float16 cannot hold past 65504 (|h| > 256).
FLOAT16_SCORES = {"float16": Limit(scores=_HALF_MAX, reason="the score matrix S = QK^T/sqrt(dh) is not "
                                                              "representable in float16 past 65504")}
FLOAT16_NORM2 = {"float16": Limit(norm2=_HALF_MAX, reason="presence rho = |h|^2/(tau + |h|^2) is written in "
                                                            "|h|^2, not representable in float16 past 65504")}
FLOAT16_SCORES_NORM2 = {"float16": Limit(scores=_HALF_MAX, norm2=_HALF_MAX,
                                         reason="the scores S = QK^T/sqrt(dh) and presence's |h|^2 are not "
                                                "representable in float16 past 65504")}


def _resolution(dtype: torch.dtype) -> float:
    """1 / eps of ``dtype`` (2^10 float16, 2^7 bfloat16, 2^23 float32, 2^52 float64): the largest |c| at
    which the dtype's spacing, at most eps |c|, is still one score unit."""
    return 1.0 / torch.finfo(dtype).eps


# A softmax row depends on its scores only through their differences s_j - max_k s_k (shift
# invariance).  With every score of a row near an offset c, those differences are O(1) (the drawn
# scores spread like N(0, (2 scale)^2)), while S itself is stored with spacing up to eps |c|: once
# eps |c| > 1 the differences are lost to the rounding of S (float32 at c = -2^34: spacing 2048;
# bfloat16 at c = -65536: spacing 512), the weights are a function of rounding noise, and neither a
# law nor a float32-probe prediction of the error says anything about the operator.  So a softmax
# operator's offsets stop where the spacing at c reaches one unit, |c| <= 1 / eps.
_OFFSET_REASON = "a softmax row depends only on score differences, lost to the dtype's spacing eps |c| past |c| = 1/eps"
SOFTMAX_OFFSETS = {dt: Limit(offset=_resolution(getattr(torch, dt)), reason=_OFFSET_REASON)
                   for dt in ("bfloat16", "float32", "float64")}
SOFTMAX_SCORES = {**SOFTMAX_OFFSETS,
                  "float16": Limit(scores=_HALF_MAX, offset=_resolution(torch.float16),
                                   reason="S = QK^T/sqrt(dh) is not representable in float16 past 65504, and a softmax "
                                          "row's score differences are lost to float16's spacing past |c| = 1024")}
