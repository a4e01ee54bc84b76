"""Canary: pn whose causal mask is strictly lower triangular (j < t), in every precision alike."""
from tokenlaw.fuzz.mutants.source_edit import mutated_module, mutated_registry

REASON = "a token cannot see its own key: a semantic bug float64 shares, invisible to the float64 differential"
OPERATOR = "pn"
CAUGHT_BY = ("spec_reference",)


def registry(base):
    return mutated_registry(base, mutated_module("tokenlaw.operators.fir_attention", [
        ("    return xp.asarray(np.tril(np.ones((n, n))), like)", "    return xp.asarray(np.tril(np.ones((n, n)), -1), like)")]))
