"""The sympy namespace: operators traced to exact sympy expressions.

Every primitive is exact: ``exp``/``erf``/``sqrt`` are sympy's own functions,
``where`` is a ``Piecewise``, ``max``/``min`` are ``Max``/``Min`` and ``div``
is exact rational division.  Python floats written in the operator code
(``0.5``, ``1/sqrt(2)``, the FIR taps) enter as sympy ``Float``s of the same
value.  Used for cross-validation (trace, evaluate at random points, compare
with eager float64) and to re-check a z3 model with the real ``exp``.

Example::

    >>> import numpy as np, sympy
    >>> from tokenlaw.operators.normalisers import softmax
    >>> s = np.array([[sympy.Symbol('a'), sympy.Symbol('b')]], dtype=object)
    >>> w = softmax(SYMPY, s)
    >>> sympy.simplify(w[0, 0] + w[0, 1])
    1
"""
from __future__ import annotations

import fractions

import sympy

from .objarray import ObjectNamespace


class SympyNamespace(ObjectNamespace):
    """Exact sympy semantics for every primitive in ``xp.PRIMITIVES``."""

    name = "sympy"

    def const(self, v):
        if isinstance(v, (bool,)) or type(v).__name__ == "bool_":
            return sympy.true if v else sympy.false
        if isinstance(v, fractions.Fraction):
            return sympy.Rational(v.numerator, v.denominator)
        return sympy.sympify(v)

    def rational(self, p, q):
        return sympy.Rational(p, q)

    def s_exp(self, t):
        return sympy.exp(t)

    def s_log(self, t):
        return sympy.log(t)

    def s_sqrt(self, t):
        return sympy.sqrt(t)

    def s_tanh(self, t):
        return sympy.tanh(t)

    def s_erf(self, t):
        return sympy.erf(t)

    def s_abs(self, t):
        return sympy.Abs(t)

    def s_div(self, a, b):
        return a / b

    def s_max(self, a, b):
        return sympy.Max(a, b)

    def s_min(self, a, b):
        return sympy.Min(a, b)

    def s_not(self, c):
        return sympy.Not(c)

    def s_where(self, c, a, b):
        if c is sympy.true:
            return a
        if c is sympy.false:
            return b
        return sympy.Piecewise((a, c), (b, True))

    def s_gt(self, a, b):
        return sympy.Gt(a, b)

    def s_lt(self, a, b):
        return sympy.Lt(a, b)

    def s_eq(self, a, b):
        return sympy.Eq(a, b)

    def s_and(self, a, b):
        return sympy.And(a, b)


SYMPY = SympyNamespace()


def evaluate(expr, env: dict, _memo=None):
    """Evaluate a traced sympy expression at a point, exactly, taking only the selected
    branch of every Piecewise (an unselected branch may divide by zero, as in the code's
    own guarded divisions).  ``env`` maps symbols to sympy numbers (Rationals for exactness)."""
    memo = {} if _memo is None else _memo
    if expr in memo:
        return memo[expr]
    if expr in env:
        out = env[expr]
    elif not expr.args or expr.is_Number:
        out = expr
    elif isinstance(expr, sympy.Piecewise):
        out = sympy.nan
        for value, cond in expr.args:
            if cond is sympy.true or bool(evaluate(cond, env, memo)):
                out = evaluate(value, env, memo)
                break
    else:
        out = expr.func(*(evaluate(a, env, memo) for a in expr.args))
    memo[expr] = out
    return out
