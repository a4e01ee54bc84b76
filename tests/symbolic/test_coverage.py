"""Trace = eager (symbolic/coverage.py): each way a proof can cover other code than the eager run is
caught (a canary per way), and the code that runs the same path stays proved (the controls)."""
from __future__ import annotations

import textwrap
import types

import torch
import z3

from tokenlaw.operators.xp import TORCH
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import collect, default_registry
from tokenlaw.symbolic import coverage
from tokenlaw.symbolic.prover import build_problem, prove_cell
from tokenlaw.symbolic.z3_ns import Z3Namespace

HEADER = """
import torch
from tokenlaw.operators import arguments
from tokenlaw.operators.registry import Domain, declare

def params(gen, d_model, dtype=torch.float64):
    return {"tau": float(torch.empty(()).uniform_(0.5, 2.0, generator=gen))}
"""


def _op(body: str, name: str = "scratch"):
    """One token-local operator claiming zero absorption, compiled from source (a user's module)."""
    source = HEADER + textwrap.dedent(f"""
        @declare(name="{name}", domain=Domain(params=params, positive=("tau",)), traits={{"token_local"}},
                 claims={{"zero_absorption": "tau * x * x is 0 at x = 0"}})
        def {name}(xp, x, *, tau):
            arguments.tokens(x)
    """) + textwrap.indent(textwrap.dedent(body), "    ")
    mod = types.ModuleType(f"scratch_{name}")
    exec(compile(source, f"<scratch {name}>", "exec"), mod.__dict__)
    return collect(mod)[name]


def test_the_control_is_proved_and_tied():
    op = _op("return tau * x * x\n")
    v = prove_cell(op, "zero_absorption", timeout=5)
    assert v.status == V.Status.PROVED and v.evidence.trace_check.startswith("trace = eager"), v.detail


def test_a_line_only_the_trace_runs_is_named():
    # Harmless here (it adds 0), but the trace ran a line the eager code never runs: not tied.
    op = _op("""
        out = tau * x * x
        if not torch.is_tensor(x):
            out = out + 0 * x
        return out
    """)
    v = prove_cell(op, "zero_absorption", timeout=5)
    assert v.status == V.Status.TRACE_DIFFERS and "(trace only)" in v.detail, v.detail
    assert v.evidence.where.startswith("<scratch scratch>:"), v.extra


def test_a_value_off_by_one_millionth_is_caught():
    # One line, so the line sets agree; eagerly the output is scaled by 1 + 1e-6: far above rounding
    # (the bound is a few ulps, derived from the traced term), yet zero absorption still holds eagerly.
    op = _op("return tau * x * x * (1.000001 if torch.is_tensor(x) else 1.0)\n")
    v = prove_cell(op, "zero_absorption", timeout=5, n=2)
    assert v.status == V.Status.TRACE_DIFFERS and "traced value differs" in v.detail, v.detail


def test_a_random_point_the_code_rejects_is_a_domain_mismatch():
    # Declared tau > 0 (drawn in [0.5, 2]); the code rejects tau > 1 eagerly, and the claim holds: the
    # solver proves it, but the declaration promises points the code refuses.
    op = _op("""
        value = arguments.scalar_value(tau, "tau")
        if value is not None and value > 1.0:
            raise arguments.InvalidArgument(f"tau: must be <= 1, got {value}")
        return tau * x * x
    """)
    v = prove_cell(op, "zero_absorption", timeout=5)
    assert v.status == V.Status.DOMAIN_MISMATCH and "tau: must be <= 1" in v.detail, v.detail
    assert v.evidence.point["tau"] > 1.0 and V.outcome("claims", v) in V.FAILING, v.extra


def test_a_value_difference_carries_its_point():
    op = _op("return tau * x * x * (1.000001 if torch.is_tensor(x) else 1.0)\n")
    v = prove_cell(op, "zero_absorption", timeout=5, n=2)
    assert len(v.evidence.point["x"][0]) == 2 and v.evidence.point["tau"] > 0, v.extra


def test_a_shape_only_path_is_named_with_its_shape():
    op = _op("""
        out = tau * x * x
        if x.shape[1] == 130:
            out = out + 1.0
        return out
    """)
    v = prove_cell(op, "zero_absorption", timeout=5)
    assert v.status == V.Status.TRACE_DIFFERS and "n=130" in v.detail, v.detail


def test_a_line_skipped_at_larger_shapes_is_named():
    # The fix only runs at the trace's small shapes: eagerly, from 5 tokens on, f(0) = 1.
    op = _op("""
        out = tau * x * x + 1.0
        if x.shape[1] <= 4:
            out = out - 1.0
        return out
    """)
    v = prove_cell(op, "zero_absorption", timeout=5)
    assert v.status == V.Status.TRACE_DIFFERS and "n=5" in v.detail and "skips" in v.detail, v.detail


def test_an_eager_failure_at_a_swept_shape_is_not_a_crash():
    op = _op("""
        if x.shape[0] == 4:
            raise RuntimeError("batch stride bug")
        return tau * x * x
    """)
    v = prove_cell(op, "zero_absorption", timeout=5)
    assert v.status == V.Status.TRACE_DIFFERS and "batch=4" in v.detail and "RuntimeError" in v.detail, v.detail


def test_the_sweep_reaches_the_shapes_the_issue_names():
    shapes = coverage.sweep_shapes()
    assert {(1, n, 2, 1) for n in range(1, 21)} | {(1, 130, 2, 1)} <= set(shapes)
    assert {d for _, _, d, _ in shapes} >= {1, 2, 3, 5, 7, 11, 13, 127, 128}
    assert {b for b, _, _, _ in shapes} == {1, 2, 3, 4}
    assert all(d % h == 0 for _, _, d, h in shapes)


def test_validation_lines_are_not_counted_but_operator_lines_are():
    op = default_registry()["oattention"]
    counted = coverage.counted_files(op)
    assert counted(op.fn.__code__.co_filename)
    from tokenlaw.operators import arguments, presence, xp
    assert counted(presence.__file__)
    assert not counted(arguments.__file__) and not counted(xp.__file__)


def test_the_evaluator_reads_fresh_symbols_as_their_definitions():
    ns = Z3Namespace()
    a, b = z3.Real("a"), z3.Real("b")
    q = ns.s_div(ns.s_exp(a), ns.s_sqrt(b))
    value = coverage.Evaluator(ns, {"a": 0.5, "b": 2.0})(q)
    assert abs(value - torch.exp(torch.tensor(0.5)).item() / 2 ** 0.5) < 1e-7


def test_the_traced_values_of_a_shipping_operator_equal_eager():
    op = default_registry()["ostandardize"]
    problem = build_problem(op, "null_receiver")
    found, summary = coverage.check(op, problem)
    assert found is None and "3 random points" in summary, (found, summary)
    # and the eager function really is what was compared (a sanity check of the harness)
    x = torch.zeros(1, 2, 2, dtype=torch.float64)
    assert float(op.fn(TORCH, x, tau=1.0, eps=1e-5).abs().max()) == 0.0


def test_a_tiny_term_on_one_line_is_caught_where_the_law_still_holds():
    # Issue 43, class 8: 1e-12 relative, behind a type test on one line: the line sets agree and zero
    # absorption holds eagerly, but the values are not the traced term's (a 1e-9 tolerance missed it).
    op = _op("return tau * x * x * (1 + 1e-12 if isinstance(x, torch.Tensor) else 1)\n")
    v = prove_cell(op, "zero_absorption", timeout=5, n=2)
    assert v.status == V.Status.TRACE_DIFFERS and "traced value differs" in v.detail, v.detail
    assert "float64 rounding bound of the traced term" in v.detail, v.detail


def test_reassociated_arithmetic_stays_tied():
    # The control: the eager code sums and multiplies in another order than z3's normal form; the
    # derived rounding bound admits that, and the check reports how close it came.
    op = _op("return (x * tau + x * x * tau) - x * tau * (1 - x) - x * x * tau + tau * x * x\n")
    v = prove_cell(op, "zero_absorption", timeout=5, n=2)
    assert v.status == V.Status.PROVED, v.detail
    assert "worst |diff| / bound" in v.evidence.trace_check, v.extra


def test_the_rounding_bound_is_derived_from_the_operations():
    ns = Z3Namespace()
    a, b, c = z3.Real("a"), z3.Real("b"), z3.Real("c")
    ev = coverage.Evaluator(ns, {"a": 0.1, "b": 0.2, "c": 3.0})
    assert ev.bounded(a * 0 + b * 0) == (0.0, 0.0)                   # an exact 0: equal bit for bit
    value, err = ev.bounded(z3.Sum(a, b, c))
    assert err == coverage._gamma(2) * (0.1 + 0.2 + 3.0)          # any order of a 3-term sum
    value, err = ev.bounded((a + b) + c)                           # two nested sums: each its own rounding
    assert err == coverage._gamma(1) * (0.1 + 0.2) + coverage._gamma(1) * (0.30000000000000004 + 3.0)
    assert ev.bounded(c * 2)[1] > 0 and ev.bounded(z3.If(a > b, c, c * 0))[1] == 0.0   # a decided If: its branch


def test_values_are_compared_at_a_second_traced_shape():
    # Right at the proof's shape (n = 2), wrong (1e-12) at n = 3 on one line both sides run.
    op = _op("return tau * x * x + (1e-12 if x.shape[1] == 3 else 0.0)\n")
    v = prove_cell(op, "zero_absorption", timeout=5, n=2)
    assert v.status == V.Status.TRACE_DIFFERS and "at n=3" in v.detail and "law fails" in v.detail, v.detail
