"""The two backends this package registers under the entry-point group ``tokenlaw.backends``.

* ``example``       -- OAttention as a chunked online softmax (``oattention.py``) and pn_fir_tau as an
                       online power normalisation (``pn_fir_tau.py``), key blocks of 4, fp32 accumulation;
* ``example_wrong`` -- the same OAttention with one realistic bug: presence gates the values only, so the
                       denominator sums exp(s_ij) unweighted -- a null source's mass stays in it.
                       tokenlaw must reject it.
"""
from __future__ import annotations

import functools

import torch

from tokenlaw.properties.backends import Backend

from .common import CountTranscendentals
from .oattention import oattention_layer
from .pn_fir_tau import pn_fir_tau_layer


class ExampleBackend(Backend):
    """Blocked online attention in plain torch: float32 accumulation, differentiable by autograd."""

    name = "example"
    dtypes = ("float32", "float16", "bfloat16")
    max_n = 16                 # four key blocks: nulls, masks and maxima land on block edges
    autograd = True
    block = 4

    def layers(self) -> dict:
        """{operator name: layer with the eager operator's signature (minus xp)}."""
        return {"oattention": functools.partial(oattention_layer, block=self.block),
                "pn_fir_tau": functools.partial(pn_fir_tau_layer, block=self.block)}

    def implements(self, op) -> str | None:
        if op.name in self.layers():
            return None
        return f"the {self.name} backend implements only {sorted(self.layers())}; {op.name!r} has no kernel here"

    def _layer(self, op):
        reason = self.implements(op)
        if reason:
            raise NotImplementedError(reason)
        return self.layers()[op.name]

    def run(self, op, x, **kwargs):
        return self._layer(op)(x, **kwargs)

    def run_placed(self, op, x, place, **kwargs):
        """``run`` with the inputs *and* the attention core's own buffers (q, k, v, presence, mask) placed."""
        placed = {k: place(v) if torch.is_tensor(v) and v.is_floating_point() else v for k, v in kwargs.items()}
        return self._layer(op)(place(x), **placed, place=place)

    def transcendentals(self, op, case) -> dict:
        """Every torch exp/log/tanh/... call this implementation evaluates on the case's input (float32)."""
        with torch.no_grad(), CountTranscendentals() as counter:
            self.run(op, case.x.to(torch.float32), **case.runner.arguments(case.mask, torch.float32))
        return dict(counter.calls)

    def describe(self) -> dict:
        return {**super().describe(), "block": self.block,
                "implementation": "blocked online attention in torch, fp32 accumulation"}


class WrongExampleBackend(ExampleBackend):
    """The seeded bug: presence gates the numerator (p_j v_j) only; the denominator is plain softmax mass."""

    name = "example_wrong"

    def layers(self) -> dict:
        return {"oattention": functools.partial(oattention_layer, block=self.block, values_only_gate=True)}


EXAMPLE = ExampleBackend()
EXAMPLE_WRONG = WrongExampleBackend()
