"""The two backends this package registers under the entry-point group ``tokenlaw.backends``.

* ``example``       -- OAttention as a chunked online softmax (``oattention.py``), key blocks of 4;
* ``example_wrong`` -- the same code with one realistic bug: presence gates the values only, so a null
                       source's exp(s_ij) stays in the softmax denominator.  tokenlaw must reject it.
"""
from __future__ import annotations

import collections

import torch

from tokenlaw.properties.backends import Backend

from .oattention import Math, oattention_layer

IMPLEMENTED = ("oattention",)


class ExampleBackend(Backend):
    """Chunked online-softmax OAttention in plain torch: float32 accumulation, differentiable by autograd."""

    name = "example"
    dtypes = ("float32", "float16", "bfloat16")
    max_n = 16                 # four key blocks: nulls, masks and maxima land on block edges
    autograd = True
    block = 4
    values_only_gate = False

    def implements(self, op) -> str | None:
        if op.name in IMPLEMENTED:
            return None
        return f"the {self.name} backend implements only {list(IMPLEMENTED)}; {op.name!r} has no kernel here"

    def run(self, op, x, **kwargs):
        reason = self.implements(op)
        if reason:
            raise NotImplementedError(reason)
        return oattention_layer(x, **kwargs, block=self.block, values_only_gate=self.values_only_gate)

    def run_placed(self, op, x, place, **kwargs):
        """``run`` with the inputs *and* the attention core's own buffers (q, k, v, presence, mask) placed."""
        placed = {k: place(v) if torch.is_tensor(v) and v.is_floating_point() else v for k, v in kwargs.items()}
        return oattention_layer(place(x), **placed, block=self.block, values_only_gate=self.values_only_gate,
                                place=place)

    def transcendentals(self, op, case) -> dict:
        """Every exp/log call this implementation makes on the case's input (float32)."""
        counter = collections.Counter()
        x = case.x.to(torch.float32)
        with torch.no_grad():
            oattention_layer(x, **case.arguments(case.mask, torch.float32), block=self.block,
                             values_only_gate=self.values_only_gate, math_ops=Math(counter))
        return dict(counter)

    def describe(self) -> dict:
        return {**super().describe(), "block": self.block,
                "implementation": "chunked online softmax in torch, fp32 accumulation"}


class WrongExampleBackend(ExampleBackend):
    """The seeded bug: presence gates the numerator (p_j v_j) only; the denominator is plain softmax mass."""

    name = "example_wrong"
    values_only_gate = True


EXAMPLE = ExampleBackend()
EXAMPLE_WRONG = WrongExampleBackend()
