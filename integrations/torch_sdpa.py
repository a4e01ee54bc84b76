"""torch's SDPA implementations as backends of the ``sdpa`` operator: ``tokenlaw check --backend sdpa-math``.

``torch.nn.functional.scaled_dot_product_attention`` dispatches to one of
several implementations; ``torch.nn.attention.sdpa_kernel`` pins one.  Each is
a backend here, judged on every contract ``sdpa`` declares plus the
implementation laws (agreement with the float64 eager operator, forward and
backward, NaN-padded buffers, determinism...):

* ``sdpa-math``      -- SDPBackend.MATH, the composite reference (CPU and GPU);
* ``sdpa-flash``     -- SDPBackend.FLASH_ATTENTION (CPU's flash kernel, or the GPU one);
* ``sdpa-efficient`` -- SDPBackend.EFFICIENT_ATTENTION (CUDA only);
* ``sdpa-cudnn``     -- SDPBackend.CUDNN_ATTENTION (CUDA only).

The projections are the operator's own (``operators/projections.py``); the
backend runs only the attention core, on the device its kernel needs, with
the mask as a boolean ``attn_mask`` (True: may attend).  A kernel this
machine lacks makes every cell *not runnable here*, with the reason, rather
than refusing the run: the report then says what was not judged, and why.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from tokenlaw.operators import dtypes as _dtypes
from tokenlaw.operators import projections
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.xp import TORCH
from tokenlaw.properties.backends import Backend

try:        # sdpa_kernel / SDPBackend: torch >= 2.3
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError:          # pragma: no cover - older torch
    SDPBackend = sdpa_kernel = None

OPERATOR = "sdpa"


class SdpaBackend(Backend):
    """One SDPA implementation, pinned with ``sdpa_kernel``."""

    autograd = True
    dtypes = _dtypes.NAMES           # float64 too where the kernel has it (math, CPU flash): judged against float64
    # torch's documented convention since 2.5: a row whose boolean attn_mask is all False gives 0, where the
    # formula's 0/0 is NaN (docs/flex.md)
    masked_row = {OPERATOR: 0.0}
    backend_claims = {OPERATOR: {"finite": "a fully masked row gives 0, not the formula's 0/0 (torch >= 2.5), so "
                                           "every output is finite"}}
    # measured (docs/flex.md): at a saturated row (n = 2, bias scale 10) torch's float32 backward errs 3.5e-6
    # where the eager operator's autograd, which also differentiates through its row max, errs 100 times less
    standard_backward = {OPERATOR: "softmax's backward from the saved P, dS = P (dP - sum_j P dP), the row max "
                                   "a constant"}

    def __init__(self, name: str, kernel: str, *, cuda_only: bool, what: str):
        self.name = name
        self.kernel = kernel              # the SDPBackend member's name
        self.cuda_only = cuda_only
        self.what = what

    def available(self) -> str | None:
        if sdpa_kernel is None:
            return "torch.nn.attention.sdpa_kernel needs torch >= 2.3 (pip install -U torch)"
        return None

    def binds(self) -> dict[str, str]:
        return {OPERATOR: f"scaled_dot_product_attention[{self.kernel}]"}

    def implements(self, op) -> str | None:
        if op.name == OPERATOR:
            return None
        return f"the {self.name} backend runs torch's scaled_dot_product_attention for {OPERATOR!r}, not {op.name!r}"

    def device(self) -> torch.device:
        return torch.device("cuda" if self.cuda_only or torch.cuda.is_available() and self.kernel != "MATH"
                            else "cpu")

    def not_runnable(self, dtype: str) -> str | None:
        if self.cuda_only and not torch.cuda.is_available():
            return (f"not runnable here: {self.what} ({self.kernel}) has no CPU kernel and this machine has no "
                    f"CUDA device (torch.cuda.is_available() is False)")
        return super().not_runnable(dtype)

    def run(self, op, x, mask=None, **params):
        """The operator's projections, then SDPA's core under ``sdpa_kernel(SDPBackend.<kernel>)``, then wo."""
        why = self.implements(op)
        if why:
            raise InvalidArgument(f"op: {why}")
        q, k, v = projections.project_qkv(TORCH, x, wq=params["wq"], bq=params["bq"], wk=params["wk"],
                                          bk=params["bk"], wv=params["wv"], bv=params["bv"], heads=params["heads"])
        return projections.output(TORCH, self.core(q, k, v, projections.head_mask(mask)), params["wo"])

    def core(self, q, k, v, mask):
        """softmax(q k^T / sqrt(dh)) v by the pinned kernel, on its device, back on q's."""
        dev = self.device()
        attn = None if mask is None else (mask > 0).to(dev)
        with sdpa_kernel(getattr(SDPBackend, self.kernel)):
            o = F.scaled_dot_product_attention(q.to(dev), k.to(dev), v.to(dev), attn_mask=attn)
        return o.to(q.device)

    def describe(self) -> dict:
        return {**super().describe(), "kernel": self.kernel, "device": str(self.device()),
                "torch": torch.__version__}


SDPA_MATH = SdpaBackend("sdpa-math", "MATH", cuda_only=False, what="the composite math implementation")
SDPA_FLASH = SdpaBackend("sdpa-flash", "FLASH_ATTENTION", cuda_only=False, what="flash attention")
SDPA_EFFICIENT = SdpaBackend("sdpa-efficient", "EFFICIENT_ATTENTION", cuda_only=True,
                             what="memory-efficient attention")
SDPA_CUDNN = SdpaBackend("sdpa-cudnn", "CUDNN_ATTENTION", cuda_only=True, what="cuDNN attention")
BACKENDS = (SDPA_MATH, SDPA_FLASH, SDPA_EFFICIENT, SDPA_CUDNN)
