"""Canary: OAttention with the pre-fix denominator eps_den * exp(-M) (the shipping module, one line reverted)."""
from tokenlaw.fuzz.mutants.source_edit import mutated_module, mutated_registry

REASON = ("eps_den * exp(-M) overflows float16 once every score of a row is below -11 and eps_den <= 1.5e-5: "
          "the output collapses to 0 and the gradient to NaN")
OPERATOR = "oattention"
FIXED = "    den = xp.exp(log_eps - top) + xp.sum(e, axis=-1, keepdims=True)"
UNFIXED = "    den = eps_den * xp.exp(-top) + xp.sum(e, axis=-1, keepdims=True)"


def registry(base):
    return mutated_registry(base, mutated_module("tokenlaw.operators.oattention", [(FIXED, UNFIXED)]))


CAUGHT_BY = ("differential",)
