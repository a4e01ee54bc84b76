"""Canary: sm_fir whose declared reference (the formula of docs/mathematics.md#fir) is NaN everywhere (the operator itself is the shipping one)."""
from tokenlaw.fuzz.mutants.source_edit import mutated_module, mutated_registry
from tokenlaw.properties import verdict as V

REASON = ("the reference is never finite: spec_reference sets every row of every example aside and judges "
          "nothing, so the row must read vacuous, never holds")
OPERATOR = "sm_fir"
CAUGHT_BY = ("spec_reference",)
OUTCOME = V.Outcome.VACUOUS          # not an UNEXPECTED violation: nothing was judged either way


def registry(base):
    return mutated_registry(base, mutated_module("tokenlaw.operators.fir_attention", [
        ('@declare(name="sm_fir"',
         'def _never_finite(xp, x, **params):\n'
         '    return references.sm_fir_reference(xp, x, **params) * float("nan")\n\n\n'
         '@declare(name="sm_fir"'),
        ("reference=references.sm_fir_reference,", "reference=_never_finite,")]))
