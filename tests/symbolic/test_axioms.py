"""The transcendental axioms and refinements are true facts: every instance holds at the real function values.

An axiom that is false would let z3 prove anything about the functions it constrains; one that is
missing lets z3's models give the functions values no real input produces, counterexamples that do
not replay (sigmoid_attn's sub_simplex did, before E6: ``exp(-|t|)`` above 1).
"""
from __future__ import annotations

import math

import pytest
import z3

from tokenlaw.orchestration import runs
from tokenlaw.properties.plan import contracts_of
from tokenlaw.symbolic.prover import prove_cell
from tokenlaw.symbolic.z3_ns import Z3Namespace

REAL = {"exp": math.exp, "log": math.log, "erf": math.erf, "tanh": math.tanh}
# Away from 0 and from each other by far more than float64 rounding, and small enough that erf and
# tanh of every argument stay below 1 in float64 (erf(7.5) rounds to 1.0), so a strict inequality between
# true values is not lost when those values are rounded to doubles.
POINTS = [-2.0, -1.1, -0.4, -0.01, 0.01, 0.3, 1.7, 2.2]


def _instances():
    x = z3.Real("x")
    ns = Z3Namespace()
    args = {"exp": [x, -x, 2 * x, x - 1, -x * x], "erf": [x, -x, x / 2], "tanh": [x, 3 * x],
            "log": [x * x + 1, x * x + z3.RealVal("0.5"), 2 * x * x + 3]}
    for kind, terms in args.items():
        for t in terms:
            ns._apply(kind, t)
    return x, ns


@pytest.mark.parametrize("value", POINTS)
def test_every_axiom_instance_holds_at_the_real_function_values(value):
    x, ns = _instances()
    at = {x: z3.RealVal(value)}
    subst = [(x, z3.RealVal(value))]
    for kind, apps in ns._apps.items():
        for arg, sym in apps.values():
            a = z3.simplify(z3.substitute(arg, *subst))
            real = REAL[kind](float(a.as_fraction()))
            subst.append((sym, z3.RealVal(real)))
    assert at and len(subst) > 10
    for axiom, _keys in ns.axioms() + ns.refinements():
        holds = z3.simplify(z3.substitute(axiom, *subst))
        assert z3.is_true(holds), f"false at x = {value}: {axiom}"


def test_a_false_axiom_would_be_caught():
    """The check above is not blind: exp(a) >= 1 + 2a (false for small a > 0) fails at a real value."""
    x = z3.Real("x")
    e = z3.Real("e")
    wrong = e >= 1 + 2 * x
    assert not z3.is_true(z3.simplify(z3.substitute(wrong, (x, z3.RealVal(0.3)), (e, z3.RealVal(math.exp(0.3))))))


def test_sigmoid_sub_simplex_is_refuted_with_a_counterexample_that_replays():
    """Before E6 z3's three models put exp(-|t|) above 1 and none replayed (MISMATCH)."""
    reg = runs.registry(("tokenlaw.operators.zoo",))
    v = prove_cell(reg["sigmoid_attn"], contracts_of(reg)["sub_simplex"], timeout=5)
    assert v.status.value == "refuted" and not v.mismatch, v.detail
    assert "replayed on the eager float64 code" in v.detail
