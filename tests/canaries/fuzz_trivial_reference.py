"""Canary: oattention at twice its value, declaring a reference that overflows (inf / inf) at every token but an exact null."""
from tokenlaw.fuzz.mutants.source_edit import mutated_module, mutated_registry
from tokenlaw.properties import verdict as V

REASON = ("twice the reference, which is finite only at exact nulls, where both sides are exactly 0: every "
          "comparison is trivial and judges no value, so spec_reference must read vacuous, never holds")
OPERATOR = "oattention"
CAUGHT_BY = ("spec_reference",)
OUTCOME = V.Outcome.VACUOUS          # nothing but 0 == 0 was ever compared: no evidence either way


def registry(base):
    return mutated_registry(base, mutated_module("tokenlaw.operators.oattention", [
        ("def oattention_params(",
         "def _finite_only_at_nulls(xp, x, mask=None, **params):\n"
         # 1e300, not 1e4: at 1e4 a drawn token with |x|^2 < 0.07 (one among n = 257, banded_find's long band)
         # kept the reference finite and the doubled output was rightly a violation, not the trivial case
         "    e = 1e300 * xp.sum(x * x, axis=-1, keepdims=True)     # exp(e) / exp(e) = inf / inf off a null token\n"
         "    return references.oattention_reference(xp, x, mask, **params) * xp.div(xp.exp(e), xp.exp(e))\n\n\n"
         "def oattention_params("),
        ("reference=references.oattention_reference,", "reference=_finite_only_at_nulls,"),
        ("    return projections.output(xp, o, wo)", "    return projections.output(xp, o, wo) * 2.0")]))
