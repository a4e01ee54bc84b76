"""The array half of a symbolic namespace: numpy object arrays of terms.

The operators are written against ``xp`` (``tokenlaw.operators.xp``).  A
symbolic backend only has to say what a *scalar* term does (``exp`` of one
term, the larger of two terms, ``If``...); this base class lifts those scalar
rules to numpy object arrays and implements the structural primitives
(reductions with ``axis``/``keepdims``, ``matmul``, ``reshape``, ``concat``,
constants) once for every backend.  numpy's own ``+ - * @`` and indexing
already work element by element on object arrays.

Scalars (tau, eps_den, a tap) are passed to the operator as 0-d object
arrays (:func:`scalar`): a bare sympy or z3 term on the left of ``+`` would
try to swallow the whole array instead of broadcasting.
"""
from __future__ import annotations

import numpy as np

from tokenlaw.operators.xp import PRIMITIVES


def scalar(term) -> np.ndarray:
    """A 0-d object array holding one term, so it broadcasts like a number."""
    out = np.empty((), dtype=object)
    out[()] = term
    return out


def objects(shape, make) -> np.ndarray:
    """An object array of ``shape`` whose entry at index ``idx`` is ``make(idx)``."""
    out = np.empty(shape, dtype=object)
    for idx in np.ndindex(*shape):
        out[idx] = make(idx)
    return out


class ObjectNamespace:
    """Base of the sympy and z3 namespaces; subclasses define the scalar rules.

    Scalar hooks: ``const(value)``, ``s_exp``, ``s_log``, ``s_sqrt``, ``s_tanh``,
    ``s_erf``, ``s_abs``, ``s_div(a, b)``, ``s_max(a, b)``, ``s_min(a, b)``,
    ``s_where(c, a, b)``, ``s_gt``, ``s_lt``, ``s_eq``, ``s_and``.
    """

    name = "object"

    # -- lifting -------------------------------------------------------------
    def _arr(self, x) -> np.ndarray:
        if isinstance(x, np.ndarray):
            return x
        return scalar(self.const(x) if isinstance(x, (int, float)) else x)

    def _map(self, fn, *xs):
        arrays = [self._arr(x) for x in xs]
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        arrays = [np.broadcast_to(a, shape) for a in arrays]
        out = np.empty(shape, dtype=object)
        for idx in np.ndindex(*shape):
            out[idx] = fn(*(self._term(a[idx]) for a in arrays))
        return out

    def _term(self, v):
        return self.const(v) if isinstance(v, (int, float, bool, np.number, np.bool_)) else v

    # -- elementwise primitives ---------------------------------------------
    def exp(self, x):
        return self._map(self.s_exp, x)

    def log(self, x):
        return self._map(self.s_log, x)

    def sqrt(self, x):
        return self._map(self.s_sqrt, x)

    def tanh(self, x):
        return self._map(self.s_tanh, x)

    def erf(self, x):
        return self._map(self.s_erf, x)

    def abs(self, x):
        return self._map(self.s_abs, x)

    def div(self, a, b):
        return self._map(self.s_div, a, b)

    def maximum(self, a, b):
        return self._map(self.s_max, a, b)

    def minimum(self, a, b):
        return self._map(self.s_min, a, b)

    def relu(self, x):
        return self._map(lambda t: self.s_max(t, self.const(0)), x)

    def where(self, cond, a, b):
        return self._map(self.s_where, cond, a, b)

    def gt(self, a, b):
        return self._map(self.s_gt, a, b)

    def lt(self, a, b):
        return self._map(self.s_lt, a, b)

    def eq(self, a, b):
        return self._map(self.s_eq, a, b)

    def logical_and(self, a, b):
        return self._map(self.s_and, a, b)

    # -- reductions ------------------------------------------------------------
    def _ordered(self, items):
        """The order a commutative, associative reduction (max, min) folds its terms in:
        the code's own order here; a backend may choose a canonical one."""
        return items

    def _reduce(self, pair, x, axis, keepdims, any_order=False):
        x = self._arr(x)
        moved = np.moveaxis(x, axis, -1)
        out = np.empty(moved.shape[:-1], dtype=object)
        for idx in np.ndindex(*out.shape):
            items = [self._term(t) for t in moved[idx]]
            if any_order:
                items = self._ordered(items)
            acc = items[0]
            for item in items[1:]:
                acc = pair(acc, item)
            out[idx] = acc
        if keepdims:
            out = np.expand_dims(out, axis)
        return out

    def sum(self, x, axis, keepdims=False):
        return self._reduce(lambda a, b: a + b, x, axis, keepdims)

    def mean(self, x, axis, keepdims=False):
        count = self._arr(x).shape[axis]
        return self.sum(x, axis, keepdims) * self.rational(1, count)

    def max(self, x, axis, keepdims=False):
        return self._reduce(self.s_max, x, axis, keepdims, any_order=True)

    def min(self, x, axis, keepdims=False):
        return self._reduce(self.s_min, x, axis, keepdims, any_order=True)

    # -- structure -------------------------------------------------------------
    def matmul(self, a, b):
        return np.matmul(self._arr(a), self._arr(b))

    def swapaxes(self, x, a, b):
        return np.swapaxes(x, a, b)

    def reshape(self, x, shape):
        return np.reshape(x, tuple(shape))

    def concat(self, xs, axis):
        return np.concatenate(list(xs), axis=axis)

    def full_like(self, x, value):
        out = np.empty(self._arr(x).shape, dtype=object)
        out.fill(self._term(value))
        return out

    def zeros_like(self, x):
        return self.full_like(x, 0)

    def ones_like(self, x):
        return self.full_like(x, 1)

    def asarray(self, value, like=None):
        return self._arr(self._term(value))


def check_complete(ns) -> list:
    """Names in ``PRIMITIVES`` the namespace does not provide (the meta-test wants [])."""
    return [p for p in PRIMITIVES if not callable(getattr(ns, p, None))]
