"""The per-dtype limits on the fuzz tier's draws that operators declare (``Domain(limits=...)``), with their reasons.

A limit is declared only where the computation an operator's formula is written in cannot be held by
the dtype (an intermediate the formula names overflows), never to hide a representable result that
comes out wrong.  The report prints each one on its rows and in its legend.
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
