"""``torch.compile(flex_attention)`` as a backend of the FlexAttention operators: ``--backend flex-compiled``.

An operator declared with ``tokenlaw.operators.flex.declare_flex`` runs flex's
eager body (the reference backend); what a model ships is usually the compiled
one, whose kernel inductor generates from the same mods.  This backend runs
that: the operator's own projections, then ``flex_core`` with the *compiled*
``flex_attention`` (built once per process), with the same BlockMask, scale
and variant as the eager body, then wo.  It is judged on every contract the
operator declares plus the implementation laws (agreement with the float64
eager operator, NaN-padded buffers, determinism...).

What it implements: exactly the operators that carry a ``Mods`` pair (those
``declare_flex`` made); any other is refused by ``implements`` with the
reason, before anything is compiled.

What it cannot run here (torch 2.13 on CPU), each a cell *not runnable here*
with torch's own reason, never a pass:

* float64: inductor's CPU FlexAttention computes in float32, float16 and
  bfloat16 only, so ``dtypes`` are those three (the tolerance model's float64
  side of a law is the eager operator, as for the Triton backend);
* gradients: flex has no CPU backward (``NotImplementedError``, as eager);
* ``return_lse``: inductor on CPU "only supports inference and return_lse is
  not supported yet" (the LSE half of ``masked_row_lse``).

The function is compiled with ``dynamic=True``, yet dynamo still compiles a
graph per dtype, per size-1 batch or head axis, per BlockMask layout (full
blocks or none, an adjusted mask's strides) and per length band: the smoke
check of ``causal_flex`` recompiled ``flex_attention`` 144 times (docs/flex.md).
Past dynamo's recompile limit (8) it would silently run flex *eagerly*, and
this backend would judge the eager code under the compiled name.  Each call
raises the limit to :data:`RECOMPILE_LIMIT` and makes a hit an error
(``fail_on_recompile_limit_hit``), reported as not runnable here.  A call that
needs no gradient runs under ``no_grad`` (grad mode is one of dynamo's guards).
"""
from __future__ import annotations

import functools

import torch

from tokenlaw.operators import arguments, flex, projections
from tokenlaw.operators.errors import InvalidArgument, NotRunnableHere
from tokenlaw.operators.xp import TORCH
from tokenlaw.properties.backends import Backend

NAME = "flex-compiled"
RECOMPILE_LIMIT = 256       # the smoke check of causal_flex recompiled flex_attention 144 times


# {device type: torch's refusal of return_lse there}, from the first compile that failed on it: each later
# LSE call would compile again only to fail again (a compile attempt each, counted against the limit)
_NO_LSE: dict = {}


@functools.cache
def compiled():
    """``torch.compile(flex_attention)``, made once per process (the compile itself happens at the first call)."""
    return torch.compile(flex.flex_api().flex_attention, dynamic=True)


def _unsupported_lse(err: Exception) -> bool:
    return "return_lse" in str(err)


def _line(err: Exception, word: str) -> str:
    """The first line of torch's message that names ``word`` (its first line if none): the reason to quote."""
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()] or [type(err).__name__]
    return next((ln for ln in lines if word in ln), lines[0])[:200]


def _recompile_limit(err: Exception) -> bool:
    return isinstance(err, torch._dynamo.exc.FailOnRecompileLimitHit)


class FlexCompiledBackend(Backend):
    """The declared mods through ``torch.compile(flex_attention)``; inference only on CPU."""

    name = NAME
    dtypes = ("float32", "bfloat16", "float16")      # inductor's CPU flex kernel has no float64
    autograd = True        # flex's backward where it exists (CUDA); on CPU each gradient cell says why not
    recompile_limit = RECOMPILE_LIMIT

    def available(self) -> str | None:
        return flex.available()

    def implements(self, op) -> str | None:
        if isinstance(op.mods, flex.Mods):
            return None
        return (f"the {self.name} backend runs torch.compile(flex_attention) for operators declared with "
                f"tokenlaw.operators.flex.declare_flex (their score_mod / mask_mod), and {op.name!r} is not one")

    def not_runnable(self, dtype: str) -> str | None:
        if dtype == "float64":
            return (f"not runnable here: torch.compile(flex_attention) on CPU computes in float32, float16 and "
                    f"bfloat16 only (torch {torch.__version__}: inductor's CPU FlexAttention refuses float64)")
        return super().not_runnable(dtype)

    def run(self, op, x, variant=flex.PLAIN, **params):
        """The operator's projections, flex_core with the compiled flex_attention, then wo."""
        why = self.implements(op)
        if why:
            raise InvalidArgument(f"op: {why}")
        arguments.tokens(x)
        if not isinstance(variant, flex.Variant):
            raise InvalidArgument(f"variant: expected a tokenlaw.operators.flex.Variant, got {variant!r}")
        if x.dtype == torch.float64:
            # the reference precision (the tolerance model's float64 side): the eager operator, as the
            # Triton backend does; no float64 cell of this backend is judged (``not_runnable``)
            return op.fn(TORCH, x, variant=variant, **params)
        q, k, v = projections.project_qkv(TORCH, x, wq=params["wq"], bq=params["bq"], wk=params["wk"],
                                          bk=params["bk"], wv=params["wv"], bv=params["bv"], heads=params["heads"])
        # grad mode is part of dynamo's guards: a call that needs no gradient runs under no_grad whatever the
        # caller's mode, so the inference graph is compiled once, not once per mode
        needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
        if variant.lse and q.device.type in _NO_LSE:
            raise NotRunnableHere(_NO_LSE[q.device.type])     # refused once already: no new compile to fail
        with torch._dynamo.config.patch(recompile_limit=self.recompile_limit,
                                        accumulated_recompile_limit=4 * self.recompile_limit,
                                        fail_on_recompile_limit_hit=True), \
                torch.set_grad_enabled(needs_grad):
            try:
                o = flex.flex_core(op.mods, q, k, v, variant, attend=compiled())
            except NotRunnableHere:
                raise
            except Exception as err:        # inductor's LoweringException arrives wrapped (InductorError)
                first = _line(err, "return_lse" if _unsupported_lse(err) else "limit")
                if _unsupported_lse(err):
                    _NO_LSE[q.device.type] = (f"torch.compile(flex_attention) on {q.device.type.upper()} has no "
                                              f"return_lse (torch {torch.__version__}: {first})")
                    raise NotRunnableHere(_NO_LSE[q.device.type]) from None
                if _recompile_limit(err):
                    raise NotRunnableHere(f"torch.compile hit its recompile limit ({self.recompile_limit}): past it "
                                          f"dynamo would run flex eagerly, not compiled ({first})") from None
                raise
        return o if variant.lse else projections.output(TORCH, o, params["wo"])

    def describe(self) -> dict:
        return {**super().describe(), "compiled": "torch.compile(flex_attention)", "torch": torch.__version__}


FLEX_COMPILED = FlexCompiledBackend()
