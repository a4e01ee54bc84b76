"""Every ``xp`` entry point, fed every kind of Python value the eager namespace accepts, traces or is
``not symbolically traceable``: never a backend's own error (issue 47: ``xp.asarray(<nested list>, like)``
reached ``z3.RealVal``, "Z3Exception: parser error", and ``tokenlaw prove`` exited 70).

The sweep is generated from ``operators.xp.PRIMITIVES`` and the eager namespace's signatures: each argument
of each primitive in turn takes each value kind below (the others keep an ordinary array / axis / shape);
where eager torch accepts the call, the z3 and the sympy namespaces must return an array of eager's shape or
raise :class:`NotTraceable` naming a line.  A namespace with an unprotected entry point fails it (last test).
"""
from __future__ import annotations

import inspect
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import sympy
import torch
import z3

from tokenlaw.operators.xp import PRIMITIVES, TORCH
from tokenlaw.symbolic.objarray import NotTraceable, objects, scalar, traced
from tokenlaw.symbolic.sympy_ns import SympyNamespace
from tokenlaw.symbolic.z3_ns import Z3Namespace

SHAPE = (2, 3)
EAGER = torch.tensor([[0.5, -1.0, 2.0], [0.25, 3.0, -0.75]], dtype=torch.float64)


def _symbols(ns):
    make = (lambda i: z3.Real(f"a{i}")) if ns.name == "z3" else (lambda i: sympy.Symbol(f"a{i}"))
    return traced(objects(SHAPE, lambda idx: make("_".join(map(str, idx)))))


# value kinds: (eager value, symbolic value or None for "the same Python object")
KINDS = {
    "int": (2, None), "negative int": (-1, None), "zero": (0, None), "float": (0.5, None), "bool": (True, None),
    "inf": (math.inf, None), "nan": (math.nan, None), "complex": (1j, None),
    "list": ([0.5, 1.0, 2.0], None), "nested list": ([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]], None),
    "nested int list": ([[1, 0, 0], [1, 1, 0]], None), "bool list": ([[True, False, True], [False, True, True]], None),
    "tuple": ((1.0, 2.0, 3.0), None), "nested tuple": (((1, 0, 0), (1, 1, 0)), None), "empty list": ([], None),
    "ragged list": ([[1.0], [1.0, 2.0]], None), "list with inf": ([[1.0, math.inf, 0.0]], None),
    "numpy float32": (np.float32(0.1), None), "numpy float64": (np.float64(0.25), None),
    "numpy int64": (np.int64(3), None), "numpy bool": (np.bool_(True), None), "numpy float16 inf": (np.float16("inf"), None),
    "numpy array": (np.ones(SHAPE), None), "numpy int array": (np.arange(3), None),
    "numpy bool array": (np.array([[True, False, True], [False, True, True]]), None),
    "tensor float32": (torch.ones(SHAPE, dtype=torch.float32), None), "tensor int64": (torch.arange(3), None),
    "tensor bool": (torch.tensor([[True, False, True], [False, True, True]]), None),
    "tensor 0-d": (torch.tensor(2.0, dtype=torch.float64), None), "tensor nan": (torch.tensor([math.nan] * 3), None),
    "None": (None, None), "str": ("a", None),
    "the traced array": ("ARRAY", "ARRAY"), "a traced 0-d": ("SCALAR", "SCALAR"),
}


def _default(name, base, cond):
    """The ordinary value of an argument, by name (eager and symbolic alike)."""
    table = {"axis": -1, "keepdims": False, "shape": (3, 2), "power": 1, "n": 3, "k": 0, "value": 0.5,
             "cond": cond, "fits": cond, "xs": [base, base]}
    if name in ("plain", "general"):
        return lambda: base
    return table.get(name, base)


def _value(kind, ns, base):
    eager, symbolic = KINDS[kind]
    v = eager if ns is None else (eager if symbolic is None else symbolic)
    if v == "ARRAY" if isinstance(v, str) else False:
        return base
    if v == "SCALAR" if isinstance(v, str) else False:
        return EAGER[0, 0].clone() if ns is None else scalar(base[0, 0])
    return v


def _call(ns, prim, slot, kind):
    """Run ``prim`` with argument ``slot`` set to the value ``kind`` in namespace ns (None: eager torch)."""
    xp = TORCH if ns is None else ns
    base = EAGER.clone() if ns is None else _symbols(ns)
    cond = xp.gt(base, 0)
    names = [p for p in inspect.signature(getattr(TORCH, prim)).parameters]
    args = {name: _default(name, base, cond) for name in names}
    args[slot] = _value(kind, ns, base)
    return getattr(xp, prim)(**args)


CASES = [(prim, slot, kind) for prim in PRIMITIVES for slot in inspect.signature(getattr(TORCH, prim)).parameters
         for kind in KINDS]


def sweep(namespaces):
    """[(case, namespace, what went wrong)] over every case eager accepts, and the count of such cases."""
    wrong, accepted = [], 0
    for prim, slot, kind in CASES:
        try:
            expected = _call(None, prim, slot, kind)
        except Exception:  # noqa: BLE001 -- eager rejects the call: nothing for the symbolic tier to model
            continue
        accepted += 1
        for ns in namespaces:
            try:
                got = _call(ns(), prim, slot, kind)
            except NotTraceable as err:
                if ":" not in err.where:
                    wrong.append(((prim, slot, kind), ns.__name__, f"not traceable without a line: {err}"))
                continue
            except Exception as err:  # noqa: BLE001 -- the finding this test exists for
                wrong.append(((prim, slot, kind), ns.__name__, f"{type(err).__name__}: {str(err)[:100]}"))
                continue
            if torch.is_tensor(expected) and np.shape(got) != tuple(expected.shape):
                wrong.append(((prim, slot, kind), ns.__name__, f"shape {np.shape(got)} vs eager {tuple(expected.shape)}"))
    return wrong, accepted


def test_every_entry_point_with_every_value_kind_traces_or_is_not_traceable():
    wrong, accepted = sweep([Z3Namespace, SympyNamespace])
    assert accepted > 300, accepted                  # the sweep judged something: eager accepts many cases
    assert {p for p, _, _ in CASES} == set(PRIMITIVES)
    assert wrong == []


def test_nested_list_mask_is_modelled_not_refused():
    """The issue's mask: a nested Python list through xp.asarray is an array of constants of its shape."""
    ns = Z3Namespace()
    m = ns.asarray([[1.0 if j <= i else 0.0 for j in range(3)] for i in range(3)], None)
    assert m.shape == (3, 3) and [str(t.t if hasattr(t, "t") else t) for t in m[0]] == ["1", "0", "0"]


def test_tril_cumsum_arange_agree_with_eager():
    from tokenlaw.symbolic.sympy_ns import evaluate
    ns = SympyNamespace()
    sym = _symbols(ns)
    env = {sympy.Symbol(f"a{i}_{j}"): sympy.Rational(EAGER[i, j].item()) for i in range(2) for j in range(3)}
    for prim, args in (("cumsum", dict(axis=-1)), ("cumsum", dict(axis=0)), ("tril", dict(k=0)), ("tril", dict(k=-1))):
        got = getattr(ns, prim)(sym, **args)
        want = getattr(TORCH, prim)(EAGER, **args)
        vals = np.array([[float(evaluate(sympy.sympify(getattr(t, "t", t)), env)) for t in row] for row in got])
        assert np.allclose(vals, want.numpy(), rtol=0, atol=1e-12), (prim, args)
    assert [int(str(getattr(t, "t", t))) for t in ns.arange(4, None)] == TORCH.arange(4, EAGER).tolist()


def test_the_sweep_finds_an_unprotected_entry_point():
    """Attack: a namespace whose asarray hands the value to z3.RealVal (as before issue 47) fails the sweep."""
    class Unprotected(Z3Namespace):
        pass

    Unprotected.asarray = lambda self, value, like=None: scalar(z3.RealVal(value))    # set after the class: no entry
    wrong, _ = sweep([Unprotected])
    assert any(case[0] == "asarray" and "Z3Exception" in what for case, _, what in wrong), wrong[:3]
