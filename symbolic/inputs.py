"""Symbolic inputs and parameters, their domain premises, and their values in a model.

:class:`Symbols` makes object arrays of fresh z3 reals (``x[0,1,0]``...),
remembers every one of them with the premises of its domain, and turns a z3
model back into float64 tensors (the same names, the same shapes) for the
eager replay.

Parameters come from the operator's own ``Domain.params`` (so their shapes
and nesting are the declared ones) and are made either

* ``symbolic``: every weight, bias and scalar a fresh real.  A scalar's
  premises are its declared domain (``Domain(positive=("tau",), ...)``) and
  only that, so a model of the premises is an input the operator declares
  valid; taps get the FIR's declared domain ``w_k > 0, sum_k w_k = 1``; or
* ``concrete``: the drawn float64 values rounded to rationals with
  denominator 100 (weights only; scalars stay symbolic).
"""
from __future__ import annotations

import inspect
import itertools
import math

import numpy as np
import torch
import z3

from tokenlaw.operators import tree
from tokenlaw.operators.errors import DeclarationError

from .objarray import objects, scalar


def to_float(v) -> float:
    """A z3 numeral (rational or algebraic) as the nearest float."""
    if z3.is_rational_value(v):
        return v.numerator_as_long() / v.denominator_as_long()
    if z3.is_algebraic_value(v):
        return float(v.approx(20).as_decimal(20).rstrip("?"))
    if z3.is_true(v) or z3.is_false(v):
        return float(z3.is_true(v))
    raise ValueError(f"not a numeral: {v}")


class Symbols:
    """Fresh z3 reals with their premises; ``values(model)`` reads them back as tensors."""

    def __init__(self):
        self.arrays: dict = {}        # name -> object array of z3 Reals (or a scalar)
        self.premises: list = []      # (BoolRef, description)
        self.finite: dict = {}        # name -> candidate concrete values (enumerated, not solved for)

    def real(self, name: str):
        """One scalar symbol, as a 0-d object array (broadcasts like a number)."""
        v = z3.Real(name)
        self.arrays[name] = v
        return scalar(v)

    def array(self, name: str, shape) -> np.ndarray:
        arr = objects(tuple(shape), lambda idx: z3.Real(f"{name}[{','.join(map(str, idx))}]"))
        self.arrays[name] = arr
        return arr

    def bits(self, name: str, shape, *, diagonal=True) -> np.ndarray:
        """A 0/1 mask, enumerated: every 0/1 array of ``shape`` (with m_ii = 1 when ``diagonal``,
        the domain of Case.mask) is a separate query, so the solver never splits on mask bits."""
        m = self.array(name, shape)
        free = [idx for idx in np.ndindex(*shape) if not (diagonal and idx[-1] == idx[-2])]
        candidates = []
        for bits in itertools.product((0, 1), repeat=len(free)):
            a = np.ones(shape, dtype=object)
            for idx, b in zip(free, bits):
                a[idx] = b
            candidates.append(a)
        self.finite[name] = candidates
        return m

    def choice(self, name: str, count: int):
        """An index 0..count-1, enumerated like a mask (e.g. which row / pair a law looks at)."""
        s = self.real(name)
        self.finite[name] = list(range(count))
        return s

    def assignments(self):
        """Every combination of the enumerated inputs that satisfies the premises: (values, premises)."""
        names = list(self.finite)
        for combo in itertools.product(*(self.finite[k] for k in names)):
            subst = []
            for k, val in zip(names, combo):
                arr = self.arrays[k]
                if isinstance(arr, np.ndarray):
                    subst += [(arr[idx], z3.RealVal(int(val[idx]))) for idx in np.ndindex(*arr.shape)]
                else:
                    subst.append((arr, z3.RealVal(int(val))))
            premises = []
            for p, why in self.premises:
                q = z3.simplify(z3.substitute(p, *subst)) if subst else p
                if z3.is_false(q):
                    break
                if not z3.is_true(q):
                    premises.append((q, why))
            else:
                yield dict(zip(names, combo)), premises

    def premise(self, cond, why: str):
        self.premises.append((cond, why))

    def values(self, model) -> dict:
        """{name: float64 tensor or float} of every symbol in the model (unset ones complete to 0)."""
        out = {}
        for name, arr in self.arrays.items():
            if isinstance(arr, np.ndarray):
                vals = np.vectorize(lambda t: to_float(model.eval(t, model_completion=True)), otypes=[float])(arr)
                out[name] = torch.as_tensor(vals, dtype=torch.float64)
            else:
                out[name] = to_float(model.eval(arr, model_completion=True))
        return out


def draw_params(op, d: int, seed: int = 0) -> dict:
    """The operator's declared parameters at width d (float64), from its Domain."""
    if op.domain.params is None:
        return {}
    return op.domain.params(torch.Generator().manual_seed(seed), d, torch.float64)


def domain_premises(op, key: str, term, name: str) -> list:
    """[(premise, why)] on the symbol of scalar parameter ``key``: its declared domain, nothing else.

    A scalar the declaration does not cover is a declaration error (``collect()`` rejects
    it for registered operators), never a guess."""
    iv = op.domain.scalar(key)
    if iv is None:
        raise DeclarationError(f"operator {op.name!r}: scalar parameter {key!r} has no declared domain")
    why = f"{iv.text(name)} (declared domain of {key})"
    out = []
    if math.isfinite(iv.lo):
        out.append((term > iv.lo if iv.lo_open else term >= iv.lo, why))
    if math.isfinite(iv.hi):
        out.append((term < iv.hi if iv.hi_open else term <= iv.hi, why))
    return out


def symbolic_params(op, sym: Symbols, d: int, *, mode: str = "symbolic", seed: int = 0, prefix: str = "") -> dict:
    """The operator's parameters as z3 terms (see the module docstring for the two modes)."""
    drawn = draw_params(op, d, seed)

    def leaf(path, v):
        name = tree.dotted(path, prefix)
        if torch.is_tensor(v):
            if mode == "concrete":
                return objects(tuple(v.shape), lambda idx: z3.Q(round(float(v[idx]) * 100), 100))
            return sym.array(name, v.shape)
        if isinstance(v, float):
            s = sym.real(name)
            for cond, why in domain_premises(op, path[-1], s[()], name):
                sym.premise(cond, why)
            return s
        return v

    params = tree.map_with_path(leaf, drawn)
    # The FIR operator's taps are its parameter (symbols on their declared domain); an
    # attention over FIR keys keeps its fixed taps (its `taps=` exists for the weights probe).
    own = op.domain.roles.taps
    taps = inspect.signature(op.fn).parameters.get(own)
    if taps is not None and own not in params and "filter" in op.traits:
        params[own] = symbolic_taps(sym, len(taps.default), prefix, own)
    return params


def symbolic_taps(sym: Symbols, count: int, prefix: str, name: str) -> tuple:
    """FIR taps as symbols with the declared domain: every w_k > 0 and sum_k w_k = 1 (named ``name``.k,
    the parameter's own name, as the replay reads them back)."""
    taps = tuple(sym.real(f"{prefix}{name}.{k}") for k in range(count))
    for t in taps:
        sym.premise(t[()] > 0, "taps > 0")
    sym.premise(z3.Sum([t[()] for t in taps]) == 1, "taps sum to 1")
    return taps


def concrete(params, values: dict, prefix: str = ""):
    """Symbolic params -> float64 tensors / floats for the eager replay, reading symbols from ``values``."""

    def leaf(path, v):
        name = tree.dotted(path, prefix)
        if isinstance(v, np.ndarray):
            if name in values:
                return values[name]
            if v.ndim == 0:
                return to_float(z3.simplify(v[()]))
            return torch.as_tensor(np.vectorize(lambda t: to_float(z3.simplify(t)), otypes=[float])(v),
                                   dtype=torch.float64)
        return v

    return tree.map_with_path(leaf, params)
