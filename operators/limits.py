"""The per-dtype limits on the fuzz tier's draws that operators declare (``Domain(limits=...)``), with their reasons.

A limit is declared only where the computation an operator's formula is written in cannot be held by
the dtype (an intermediate the formula names overflows, or is spaced so coarsely that what the formula
makes of it carries no correct digit: a score whose rounding alone moves exp(s) by a factor e, or the
inputs it depends on round to noise), never to hide a representable result that comes out wrong.  The
report prints each one on its rows and in its legend.
"""
from __future__ import annotations

import torch

from .registry import Limit

_HALF_MAX = torch.finfo(torch.float16).max
# Every attention operator forms the score matrix S = Q K^T / sqrt(dh) (docs/mathematics.md#scores), and a float16 array
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

# A softmax-type weight exp(s - M) turns a score's absolute rounding into the weight's relative error.
# float32 spaces numbers in [2^24, 2^25) 2 apart, so past |S| = 2^24 rounding a score (by up to 1) moves
# its weight by up to a factor e: the weights, and so the output, carry no correct digit.  Measured
# (tabular_otransformer closure, seed 781, n 24, d 5, bias scale 1e4): |S| = 1.67e8, spacing 16, the
# two largest scores of a row 2.9 apart, float32's score error 50 against float64; q, k, v of the old
# tokens are bit-identical with and without the inserted null (exactly 0 weight), but the 25-column
# score matmul rounds other entries than the 24-column one by 16, and both sides' float32 outputs sit
# 0.31 from float64 where the bfloat16-probed prediction (bfloat16's error saturates: a convex
# combination is off by at most the values' spread) says 0.03.  Below 2^24 the spacing is <= 1.
_F32_SPACED = 2.0 ** 24
FLOAT32_SCORES = {"float32": Limit(scores=_F32_SPACED, reason="float32 spaces scores past 2^24 two apart: "
                                                               "rounding one moves its weight exp(s - M) by up to "
                                                               "a factor e, no correct digit")}
# The hosts: float16's range limits and float32's spacing limit.  (The reason holds for every exp of a
# score; it is declared where the default check found it, the hosts, whose bias scale 1e4 puts every
# score of every block there.  Standalone oattention breaks null_source_insertion the same way, seed 32,
# n 31, bias scale 1e4: 1213 vs 3.06; not declared there, so its float32 rows still draw that regime.)
PRESENCE_HOST_LIMITS = {**FLOAT16_SCORES_NORM2, **FLOAT32_SCORES}
STANDARD_HOST_LIMITS = {**FLOAT16_SCORES, **FLOAT32_SCORES}

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


def both(first, second):
    """A predicate true where ``first`` and ``second`` are (two limits' predicates, combined)."""
    def inside_both(x, params):
        return bool(first(x, params)) and bool(second(x, params))
    inside_both.__qualname__ = f"{getattr(first, '__qualname__', 'first')} and {getattr(second, '__qualname__', 'second')}"
    return inside_both


def combined(*tables: dict) -> dict:
    """One {dtype: Limit} from several: per dtype the tightest value of each bound, the reasons joined."""
    out: dict = {}
    for table in tables:
        for dt, new in table.items():
            old = out.get(dt)
            if old is None:
                out[dt] = new
                continue
            tight = {f: min((v for v in (getattr(old, f), getattr(new, f)) if v is not None), default=None)
                     for f in ("scores", "norm2", "offset")}
            preds = [p for p in (old.predicate, new.predicate) if p is not None]
            out[dt] = Limit(**tight, predicate=preds[0] if len(preds) == 1 else both(*preds) if preds else None,
                            reason=f"{old.reason}; {new.reason}")
    return out


# The softmax hosts (standard_host*, tabular_standard): SDPA's offset limits and the hosts' float32 spacing.
SOFTMAX_HOST_LIMITS = combined(SOFTMAX_SCORES, FLOAT32_SCORES)
