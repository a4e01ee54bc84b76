"""The two backends this package registers under the entry-point group ``tokenlaw.backends``.

* ``example``       -- OAttention as a chunked online softmax (``oattention.py``) and pn_fir_tau as an
                       online power normalisation (``pn_fir_tau.py``), key blocks of 4, fp32 accumulation;
* ``example_wrong`` -- the same OAttention with one realistic bug: presence gates the values only, so the
                       denominator sums exp(s_ij) unweighted -- a null source's mass stays in it.
                       tokenlaw must reject it.

Everything tokenlaw's own Triton kernels declare about themselves, this backend declares through the same
interface, with no edit of tokenlaw:

* its binding table (``binds``): which operators it runs, and which function of this package runs each;
* the environment its runs depend on (``run_env``): ``TOKENLAW_EXAMPLE_BLOCK``, the key block size, read
  once when this package is imported (``env_fixed_by``); a report records it when set, and ``tokenlaw gate``
  sets it again before re-running that report's run;
* its provenance: tokenlaw's default, the hashes of this package's ``*.py`` and each binding's own file;
* its own seeded bugs (``mutants``, ``mutants.py``), killed by ``tokenlaw mutate --backend example``.
"""
from __future__ import annotations

import functools
import os

import torch

from tokenlaw import Backend, InvalidArgument

from . import mutants
from .common import CountTranscendentals
from .oattention import oattention_layer
from .pn_fir_tau import pn_fir_tau_layer

BLOCK_ENV = "TOKENLAW_EXAMPLE_BLOCK"


def _block(environ=os.environ) -> int:
    """The key block size: ``TOKENLAW_EXAMPLE_BLOCK`` (a positive int) when set, else 4."""
    text = environ.get(BLOCK_ENV, "4")
    if not text.isdigit() or int(text) < 1:
        raise InvalidArgument(f"{BLOCK_ENV}: expected a positive integer, got {text!r}")
    return int(text)


class ExampleBackend(Backend):
    """Blocked online attention in plain torch: float32 accumulation, differentiable by autograd."""

    name = "example"
    dtypes = ("float32", "float16", "bfloat16")
    max_n = 16                 # four key blocks (of 4): nulls, masks and maxima land on block edges
    autograd = True
    block = _block()           # read once, at import: a run's report records it (run_env)
    run_env = (BLOCK_ENV,)
    env_fixed_by = (__package__,)

    def layers(self) -> dict:
        """{operator name: layer with the eager operator's signature (minus xp)}."""
        return {"oattention": functools.partial(oattention_layer, block=self.block),
                "pn_fir_tau": functools.partial(pn_fir_tau_layer, block=self.block)}

    def binds(self) -> dict:
        """{operator name: the function of this package that runs it} (recorded in tokenlaw's reports)."""
        return {name: layer.func.__name__ for name, layer in self.layers().items()}

    def mutants(self) -> tuple:
        return mutants.catalogue(ExampleBackend, self.name)

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

    def mutants(self) -> tuple:
        return ()              # this backend *is* a seeded bug (tests/test_example_backend.py rejects it)


EXAMPLE = ExampleBackend()
EXAMPLE_WRONG = WrongExampleBackend()
