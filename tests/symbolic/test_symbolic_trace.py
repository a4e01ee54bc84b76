"""The symbolic namespaces trace the very operator code the eager tier runs.

* both namespaces provide every primitive of ``operators.xp.PRIMITIVES``;
* cross-validation: every registered operator traced with sympy (symbols for
  x, the drawn float64 parameters as exact numbers), evaluated exactly at a
  random point, matches the eager float64 output;
* changing an operator's eager definition changes its symbolic trace and its
  verdict, with no other edit.
"""
from __future__ import annotations

import numpy as np
import pytest
import sympy
import torch

from tokenlaw.operators import normalisers
from tokenlaw.properties.catalogue import default_registry
from tokenlaw.operators.xp import TORCH
from tokenlaw.properties import verdict as V
from tokenlaw.symbolic.inputs import draw_params
from tokenlaw.symbolic.objarray import NotTraceable, check_complete, objects, scalar, traced, untraced
from tokenlaw.symbolic.prover import prove_cell
from tokenlaw.symbolic.sympy_ns import SYMPY, evaluate
from tokenlaw.symbolic.z3_ns import Z3Namespace

REGISTRY = default_registry()
# Hosts are traced at one width (two blocks of everything); the OTransformer's
# sympy expression (Max / Piecewise of gated blocks) only stays small at n = 1.
SHAPES = {"otransformer": (1, 1), "standard_host": (2, 1), "oa_only_host": (2, 1)}


def test_namespaces_are_complete():
    assert check_complete(SYMPY) == []
    assert check_complete(Z3Namespace()) == []


def _sympy_params(p):
    if torch.is_tensor(p):
        return objects(tuple(p.shape), lambda i: sympy.Float(float(p[i]), 30))
    if isinstance(p, float):
        return scalar(sympy.Float(p, 30))
    if isinstance(p, dict):
        return {k: _sympy_params(v) for k, v in p.items()}
    if isinstance(p, (list, tuple)):
        return type(p)(_sympy_params(v) for v in p)
    return p


# (the two-block OTransformer used to be slow here, ~20 s symbolically; it now runs at the exact
# point, see _POINTWISE below, in a few seconds)
# The depth-1 hosts' symbolic traces take minutes on a slower 2-core machine (measured on an AMD EPYC:
# oa_only_host_l1 161 s, standard_host_l1 82 s, a quarter of the suite's worker time): their full symbolic
# trace runs with -m slow; in CI the same code is traced through the same sympy namespace at the exact
# rational points (test_sympy_point_trace_matches_eager_float64), which still checks every primitive's
# sympy semantics on them against eager float64.
_SLOW: set = {"oa_only_host_l1", "standard_host_l1",
              # ReLA's RMS norm over relu'd sums (a sqrt of a mean of squares of Piecewise terms) did not
              # fold within 120 s at (n, d) = (2, 2) when the zoo joined the default registry (2026-12-05)
              "rela"}
# reason: hosts of depth 3-4 and the tabular hosts grow sympy expressions beyond any test budget (a
# depth-3 trace ran for over 10 minutes); the depth-1 and depth-2 hosts cross-validate the same
# composition code, and the fuzz tier checks the deep hosts against the same contracts.
_TOO_LARGE = {op.name for op in REGISTRY if op.name.endswith(("_l3", "_l4")) or op.name.startswith("tabular_")}


# Known limit, reported rather than hidden: for the two-block hosts, sympy's Piecewise folds the
# second block's conditions (which contain the first block's where()s) through simplify_logic, which
# probes them numerically and raises "argument 'zoo' is not comparable" (log of a folded branch at
# 0).  For exactly these operators the trace is built at the exact rational point instead: the same
# sympy namespace runs the same code with exact arithmetic, so it still cross-validates every
# primitive's sympy semantics against eager float64, but the expression is not symbolic in x.  (The
# z3 tier traces these hosts symbolically; its refutations replay on the eager code.)
_POINTWISE = {"oa_only_host", "otransformer"}
# Reported rather than hidden: with issue 19's overflow fallbacks (ONorm's and presence's where(finite(...)),
# exact in the reals) the one-block OTransformer's sympy trace did not fold within minutes (its depth-2 twin is
# traced at a point above).  Its sympy semantics are the same primitives' as otransformer's; its z3 trace is
# tied to eager float64 (same lines, same values at random points: symbolic/coverage.py).
_OPEN: dict = {"otransformer_l1": "sympy trace with the overflow fallbacks takes minutes to fold (issue 19): "
                                  "covered by the z3 trace = eager check"}


def _param(name):
    if name in _OPEN:
        return pytest.param(name, marks=pytest.mark.skip(reason=_OPEN[name]))
    if name in _TOO_LARGE:
        return pytest.param(name, marks=pytest.mark.skip(reason="sympy trace of a depth-3/4 or tabular host "
                                                                 "is too large to evaluate in a test"))
    return pytest.param(name, marks=pytest.mark.slow) if name in _SLOW else name


def _trace(fn, *args, **kwargs):
    """fn through SYMPY with traced inputs (so an untraceable construct raises), raw terms out."""
    return untraced(fn(SYMPY, *traced(list(args)), **traced(kwargs)))


@pytest.mark.parametrize("name", [_param(op.name) for op in REGISTRY])
def test_sympy_trace_matches_eager_float64(name):
    op = REGISTRY[name]
    n, d = SHAPES.get(name, (2, 2))
    params = draw_params(op, d, seed=3)
    xs = objects((1, n, d), lambda i: sympy.Symbol(f"x{i[1]}_{i[2]}", real=True))
    kwargs = dict(_sympy_params(params))
    eager_kwargs = dict(params)
    if op.domain.mask != "none":
        kwargs["mask"] = eager_kwargs["mask"] = None
    try:
        trace = _trace(op.fn, xs, **kwargs)
    except (ValueError, NotTraceable) as err:    # sympy's simplifier, inside xp.where: NotTraceable naming it
        assert name in _POINTWISE and "not comparable" in str(err), (name, err)
        trace = None
    else:
        assert all(isinstance(e, sympy.Basic) for e in trace.flat)
        assert any(e.free_symbols for e in trace.flat), "the trace must be symbolic in x"
    for seed in (0, 1):
        x = torch.randn(1, n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        env = {xs[(0,) + i]: sympy.Rational(float(x[(0,) + i])) for i in np.ndindex(n, d)}
        memo: dict = {}
        try:
            if trace is None:
                raise TypeError("no symbolic trace (see _POINTWISE)")
            exact = np.vectorize(lambda e: float(sympy.N(evaluate(e, env, memo), 30)), otypes=[float])(trace)
        except TypeError:
            # sympy rewrote a guarded branch into a condition that compares 0/0 (pn's
            # power normaliser): trace the same code at the exact rational point instead
            point = objects((1, n, d), lambda i: env[xs[i]])
            exact = np.vectorize(lambda e: float(sympy.N(e, 30)), otypes=[float])(_trace(op.fn, point, **kwargs))
        eager = op.fn(TORCH, x, **eager_kwargs).numpy()
        # float64 eager vs the exact value: a few hundred roundings of 2**-53 at most
        assert np.allclose(exact, eager, rtol=1e-9, atol=1e-12), (name, np.abs(exact - eager).max())


@pytest.mark.parametrize("name", sorted(_SLOW))
def test_sympy_point_trace_matches_eager_float64(name):
    """The slow hosts' code through the sympy namespace at exact rational points, against eager float64."""
    op = REGISTRY[name]
    n, d = SHAPES.get(name, (2, 2))
    params = draw_params(op, d, seed=3)
    kwargs, eager_kwargs = dict(_sympy_params(params)), dict(params)
    if op.domain.mask != "none":
        kwargs["mask"] = eager_kwargs["mask"] = None
    for seed in (0, 1):
        x = torch.randn(1, n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        point = objects((1, n, d), lambda i: sympy.Rational(float(x[i])))
        exact = np.vectorize(lambda e: float(sympy.N(e, 30)), otypes=[float])(_trace(op.fn, point, **kwargs))
        eager = op.fn(TORCH, x, **eager_kwargs).numpy()
        assert np.allclose(exact, eager, rtol=1e-9, atol=1e-12), (name, np.abs(exact - eager).max())


def test_changing_the_eager_definition_changes_the_trace_and_the_verdict(monkeypatch):
    op = REGISTRY["pn_fir_tau"]
    s = objects((1, 2, 2), lambda i: sympy.Symbol(f"s{i[1]}{i[2]}", real=True))
    tau = scalar(sympy.Symbol("tau", real=True))
    before = _trace(op.weights, s, None, tau=tau)
    assert prove_cell(op, "sub_simplex", timeout=5).status == V.Status.PROVED

    # a gate that can exceed 1: only normalisers.silence_gate is edited
    monkeypatch.setattr(normalisers, "silence_gate", lambda xp, peak: xp.div(peak + peak, 1.0 + peak))
    after = _trace(op.weights, s, None, tau=tau)
    point = {sym: sympy.Rational(k + 1, 2) for k, sym in enumerate(s.flat)}
    point[tau[()]] = sympy.Integer(0)
    assert any(evaluate(a, point) != evaluate(b, point) for a, b in zip(before.flat, after.flat))
    v = prove_cell(op, "sub_simplex", timeout=5)
    assert v.status == V.Status.REFUTED, v.detail
    assert v.discrepancy > v.bound          # and it replayed on the patched eager code


# -- traceability: what a Term lets through, what it reports (with the operator's line) -------------

import math  # noqa: E402

_X = lambda: traced(objects((1, 2, 1), lambda i: sympy.Symbol(f"t{i[1]}", real=True)))  # noqa: E731


@pytest.mark.parametrize("construct,code", [
    ("Python / by a traced value", lambda x: x[:, :1] / x[:, 1:]),
    ("Python / by a traced value", lambda x: 1.0 / x),
    ("Python //", lambda x: x // 2),
    ("Python ** with exponent 0.5", lambda x: x ** 0.5),
    ("Python ** with exponent -1", lambda x: x ** -1),
    ("Python ** with a traced exponent", lambda x: 2.0 ** x),
    ("comparison", lambda x: x > 0),
    ("comparison", lambda x: 1 if x[0, 0, 0] == 0 else 0),
    ("bool()", lambda x: bool(x[0, 0, 0])),
    ("float() / math.*", lambda x: math.exp(x[0, 0, 0])),
    ("abs()", lambda x: abs(x)),
])
def test_untraceable_constructs_raise_at_the_operator_line(construct, code):
    with pytest.raises(NotTraceable) as err:
        code(_X())
    assert construct.split()[0] in str(err.value)
    assert err.value.where.startswith(__file__), err.value.where


def test_sound_python_operators_trace():
    x = _X()
    out = untraced(x * x - x + 2 * x ** 3 + x / 4 - (-x))
    t0 = sympy.Symbol("t0", real=True)
    assert sympy.simplify(out[0, 0, 0] - (t0 * t0 - t0 + 2 * t0 ** 3 + t0 / 4 + t0)) == 0


@pytest.mark.parametrize("code", [lambda x: np.exp(x), lambda x: torch.relu(x)], ids=["numpy.exp", "torch.relu"])
def test_library_calls_on_traced_arrays_are_reported_not_traceable(code):
    from tokenlaw.symbolic.prover import untraceable

    with pytest.raises(TypeError) as err:
        code(_X())
    v = untraceable(None, None, err.value, 0.0)
    assert v is not None and v.status == V.Status.NOT_TRACEABLE and f"{__file__}:" in v.detail, v
