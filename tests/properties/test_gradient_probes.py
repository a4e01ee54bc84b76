"""gradient_agreement's probes must be able to hold the case's inputs.

The law predicts a half dtype's gradient error from eager probes in float32 and in the other half
format.  A bfloat16 case may draw inputs float16 cannot hold (scores pinned at -8.6e9 need query
biases of 6.6e4; pn_fir_tau's tau = 1e5): rounded to float16 they are inf, the eager operator rightly
refuses them, and that refusal was scored as the implementation raising (the example backend's
bf16 rows, ``bq: contains inf``).  Such a probe is now left out, said in the verdict, and float32's
predicts -- which still catches a backend whose gradients are wrong.
"""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import torch

from tokenlaw.properties import backends
from tokenlaw.properties import verdict as V
from tokenlaw.properties.case import Case
from tokenlaw.properties.catalogue import CONTRACTS, default_registry
from tokenlaw.properties.implementation_laws import representable

EXAMPLE_SRC = Path(__file__).resolve().parents[2] / "examples" / "my_backend"
sys.path.insert(0, str(EXAMPLE_SRC))
from tokenlaw_example_backend.backend import ExampleBackend  # noqa: E402

sys.path.remove(str(EXAMPLE_SRC))

OP = default_registry()["oattention"]
# the example backend's failing draw: one token, scores pinned at -2^33 (float16 cannot hold its biases)
CASE = dict(dtype=torch.bfloat16, seed=0, n=1, d=4, score_offset=-8589934592.0)
# live outputs and a tau float16 cannot hold: the float32 probe alone must still catch a wrong backend
LIVE = dict(dtype=torch.bfloat16, seed=0, n=3, d=4, tau=1e5)


class ScaledGradients(ExampleBackend):
    """The example backend with its output (hence every gradient) 1.5 times too large."""

    name = "example_scaled"

    def run(self, op, x, **kwargs):
        return super().run(op, x, **kwargs) * 1.5


@contextlib.contextmanager
def registered(*items):
    with contextlib.ExitStack() as stack:
        for b in items:
            if b.name not in backends.names():
                stack.enter_context(backends.register(b))
        yield


def test_representable_sees_an_input_a_dtype_overflows():
    case = Case(OP, **CASE)
    assert representable(case, torch.float32) and not representable(case, torch.float16)
    assert representable(Case(OP, torch.bfloat16, seed=0, n=2, d=4), torch.float16)


def test_a_probe_that_overflows_the_inputs_is_left_out_not_scored_as_a_crash():
    with registered(ExampleBackend()):
        v = CONTRACTS["gradient_agreement"].judge(Case(OP, backend="example", **CASE))
    assert v.status == V.Status.HOLDS and "no float16 probe (the inputs overflow it)" in v.detail, v.detail


def test_wrong_gradients_are_still_caught_without_that_probe():
    assert not representable(Case(OP, **LIVE), torch.float16)
    with registered(ScaledGradients(), ExampleBackend()):
        right = CONTRACTS["gradient_agreement"].judge(Case(OP, backend="example", **LIVE))
        wrong = CONTRACTS["gradient_agreement"].judge(Case(OP, backend="example_scaled", **LIVE))
    assert right.status == V.Status.HOLDS and "no float16 probe" in right.detail, right.detail
    assert wrong.status == V.Status.VIOLATED and wrong.discrepancy > wrong.bound, wrong.detail
