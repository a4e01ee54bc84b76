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

**Traceability is checked, not assumed.**  Inside a trace every term is a
:class:`Term`: a thin wrapper that lets through only what the namespaces
model soundly -- ``+ - *``, unary minus, ``**`` with a small non-negative
integer literal, ``/`` by a non-zero Python number -- and raises
:class:`NotTraceable` (with the file:line of the operator code) on the
rest: Python ``/`` or ``//`` by a traced value, ``**`` with another exponent,
comparisons, ``bool()`` / ``if`` / ``float()`` on a traced value (a z3 ``==``
would be decided *structurally*), ``abs()``, and ``math``'s functions (they
need ``float()``).  numpy's ufuncs (``np.exp``) and ``torch.*`` on a traced
array fail inside the library with a TypeError; the prover reports that as
not traceable too, at the operator's line (``prover.untraceable``).
:func:`traced` wraps a law's inputs at the start of a trace; the namespace
unwraps terms for its scalar rules and wraps results.
"""
from __future__ import annotations

import fractions
import functools
import math
import os
import sys
import sysconfig
import traceback

import numpy as np

from tokenlaw.operators import tree
from tokenlaw.operators import xp as _xp_module
from tokenlaw.operators.xp import PRIMITIVES

_HERE = os.path.abspath(__file__)
_NUMPY = os.path.dirname(np.__file__)
_SYMBOLIC = os.path.dirname(_HERE) + os.sep
_TOKENLAW = os.path.dirname(os.path.dirname(_HERE)) + os.sep
_STDLIB = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep
_XP = os.path.abspath(_xp_module.__file__)      # Recording's wrapper: not the operator's line


class NotTraceable(Exception):
    """The operator's code does something the symbolic namespaces cannot model soundly.

    ``where`` is the file:line of the operator code that did it (the first frame
    outside this module and numpy), ``what`` the construct.
    """

    def __init__(self, what: str, where: str | None = None):
        self.what = what
        self.where = where or operator_line()
        super().__init__(f"not symbolically traceable: {what} at {self.where}")


def operator_line(frame=None) -> str:
    """file:line of the innermost caller outside this module and numpy."""
    f = frame or sys._getframe(1)
    while f is not None:
        name = os.path.abspath(f.f_code.co_filename)
        if name != _HERE and not name.startswith(_NUMPY):
            return f"{name}:{f.f_lineno}"
        f = f.f_back
    return "?"


def caller_line(frame=None) -> str:
    """file:line of the innermost caller outside ``tokenlaw/symbolic`` and numpy: the operator code
    that called an ``xp`` primitive (the namespaces' own modules call each other below it)."""
    f = frame or sys._getframe(1)
    while f is not None:
        name = os.path.abspath(f.f_code.co_filename)
        if not name.startswith(_SYMBOLIC) and not name.startswith(_NUMPY) and name != _XP:
            return f"{name}:{f.f_lineno}"
        f = f.f_back
    return "?"


def _number(v) -> bool:
    # Python's and numpy's own numbers only (sympy registers its numbers as numbers.Number: those are terms)
    return isinstance(v, (int, float, fractions.Fraction, np.number)) and not isinstance(v, (bool, np.bool_))


def raw(v):
    """The backend term inside a :class:`Term` (anything else unchanged)."""
    return v.t if isinstance(v, Term) else v


def _plain(v):
    v = raw(v)
    return v.item() if isinstance(v, np.number) else v


class Need:
    """A side condition attached to a term rather than to a fresh symbol (e.g. ``den != 0`` of a
    division whose numerator folded to 0): required where that term is selected by a
    ``where`` branch (``conditions``), or everywhere once the term is used any other way."""

    __slots__ = ("cond", "what", "conditions", "unguarded")

    def __init__(self, cond, what):
        self.cond, self.what, self.conditions, self.unguarded = cond, what, [], False


def _used(*vs):
    """Terms used other than as a where() branch: their needs become unconditional."""
    for v in vs:
        if isinstance(v, Term) and v.needs:
            for need in v.needs:
                need.unguarded = True


class Term:
    """A traced scalar term.  Allows only the Python operators with a sound model (module docstring)."""

    __slots__ = ("t", "needs")
    __tokenlaw_symbolic__ = True          # operators.arguments.is_symbolic: a traced value, validated by the tier

    def __init__(self, t, needs=()):
        self.t = t
        self.needs = needs

    def __repr__(self):
        return f"Term({self.t!r})"

    def __hash__(self):
        return hash(self.t)

    # -- sound: ring operations --------------------------------------------------
    def _op(self, other, fn):
        if isinstance(other, np.ndarray):
            return NotImplemented            # numpy broadcasts over the array's entries
        _used(self, other)
        return Term(fn(self.t, _plain(other)))

    def __add__(self, o):
        return self._op(o, lambda a, b: a + b)

    def __radd__(self, o):
        return self._op(o, lambda a, b: b + a)

    def __sub__(self, o):
        return self._op(o, lambda a, b: a - b)

    def __rsub__(self, o):
        return self._op(o, lambda a, b: b - a)

    def __mul__(self, o):
        return self._op(o, lambda a, b: a * b)

    def __rmul__(self, o):
        return self._op(o, lambda a, b: b * a)

    def __neg__(self):
        _used(self)
        return Term(-self.t)

    def __pos__(self):
        return self

    def __pow__(self, e):
        if isinstance(e, (int, np.integer)) and not isinstance(e, (bool, np.bool_)) and 0 <= int(e) <= 64:
            _used(self)
            return Term(self.t ** int(e))
        raise NotTraceable(f"Python ** with exponent {e!r} (only a literal integer 0..64 is modelled; "
                           "use repeated multiplication or xp.exp/xp.log)")

    def __truediv__(self, o):
        if isinstance(o, np.ndarray):
            return NotImplemented
        if _number(o) and o != 0:
            _used(self)
            return Term(self.t / _plain(o))  # exact real division by a non-zero constant
        raise NotTraceable("Python / by a traced value (z3's x/0 is an arbitrary total function; use xp.div)")

    # -- not modelled: raise at the operator's line --------------------------------
    def __rtruediv__(self, o):
        raise NotTraceable("Python / by a traced value (use xp.div)")

    def __floordiv__(self, o):
        raise NotTraceable("Python // on a traced value")

    __rfloordiv__ = __mod__ = __rmod__ = __divmod__ = __rdivmod__ = __floordiv__

    def __rpow__(self, o):
        raise NotTraceable("Python ** with a traced exponent (use xp.exp/xp.log)")

    def _compare(self, o):
        raise NotTraceable("a Python comparison on a traced value (z3 decides == structurally; use xp.gt/xp.lt/xp.eq "
                           "and xp.where, never an if)")

    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _compare

    def __bool__(self):
        raise NotTraceable("bool() / if / and / or on a traced value (use xp.where)")

    def __float__(self):
        raise NotTraceable("float() / math.* on a traced value (use the xp primitives)")

    __int__ = __index__ = __complex__ = __round__ = __trunc__ = __floor__ = __ceil__ = __float__

    def __abs__(self):
        raise NotTraceable("Python abs() on a traced value (use xp.abs)")


def wrap(v):
    """A backend term as a :class:`Term` (numbers and Terms unchanged)."""
    if isinstance(v, (Term, np.ndarray)) or _number(v) or isinstance(v, (bool, np.bool_)):
        return v
    return Term(v)


def untraced(arr):
    """The backend terms of a traced result (an object array of :class:`Term` -> of raw terms)."""
    arr = np.asarray(arr, dtype=object)
    out = np.empty(arr.shape, dtype=object)
    for idx in np.ndindex(*arr.shape):
        out[idx] = raw(arr[idx])
    return out


def traced(inputs):
    """Inputs of a trace: every term in these (nested) object arrays becomes a :class:`Term`."""
    return tree.map(_traced_array, inputs)


def _traced_array(leaf):
    if not isinstance(leaf, np.ndarray) or leaf.dtype != object:
        return leaf
    out = np.empty(leaf.shape, dtype=object)
    for idx in np.ndindex(*leaf.shape):
        out[idx] = wrap(leaf[idx])
    return out


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


def _kind(v) -> str:
    """A short name for the kind of a Python value, for messages (``list``, ``numpy.float32``, ``torch.Tensor``)."""
    t = type(v)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__.split('.')[0]}.{t.__name__}"


def literal(value):
    """A constant the operator code wrote (a number, a nested list or tuple of numbers, a numpy scalar or array,
    a tensor) as Python numbers in nested lists, or a traced term unchanged; :class:`NotTraceable` at the
    operator's line for what the reals cannot hold (inf, NaN, a complex number) or no array is (None, a
    string).  Every value the eager ``xp`` turns into a tensor gets here before any backend sees it:
    z3's ``RealVal`` parses ``str(value)`` and fails on a list, ``inf`` or ``nan`` ("parser error")."""
    if isinstance(value, (Term, np.ndarray)) and not (isinstance(value, np.ndarray) and value.dtype != object):
        return value
    if hasattr(value, "detach") and hasattr(value, "tolist"):          # a tensor constant (torch not imported here)
        value = value.detach().cpu().tolist()
    elif isinstance(value, (np.ndarray, np.generic)):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return tree.map(_literal_leaf, value, sequence=list)
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, fractions.Fraction)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotTraceable(f"the constant {value!r} (the reals have no inf or NaN; a bound the operator relies "
                               "on is a domain limit)", caller_line())
        return value
    if isinstance(value, complex):
        raise NotTraceable(f"the complex constant {value!r} (the symbolic tier models real numbers)", caller_line())
    if value is None or isinstance(value, (str, bytes, dict, set)):
        raise NotTraceable(f"a {_kind(value)} value {value!r:.60} where an array or number is expected",
                           caller_line())
    return value                                                      # a backend term (sympy, z3)


def _library(filename: str) -> bool:
    """A frame of an installed library (numpy, sympy, z3, torch) or of the standard library, not tokenlaw's."""
    path = os.path.abspath(filename)
    return not path.startswith(_TOKENLAW) and (path.startswith(_STDLIB) or "-packages" + os.sep in path)


def _term_only(v):
    """A traced entry, a number, or a backend term; :class:`NotTraceable` for a value that is not one."""
    v = literal(v)
    if isinstance(v, list):
        raise NotTraceable("a nested list where one number is expected (use xp.asarray(list, like) for an array)",
                           caller_line())
    return v


def _entry(name, fn):
    """The primitive ``fn`` as an ``xp`` entry point: an exception raised inside the symbolic namespaces
    (not in the operator code a thunk calls back into) becomes :class:`NotTraceable` at the operator's
    line, naming the primitive and its arguments' kinds, so a trace never ends in a backend's own error
    (issue 47: a nested list reached ``z3.RealVal``, and the whole prove run exited 70)."""
    @functools.wraps(fn)
    def entry(self, *args, **kwargs):
        try:
            return fn(self, *args, **kwargs)
        except NotTraceable:
            raise
        except Exception as err:  # noqa: BLE001 -- classified below, re-raised otherwise
            frames = [f for f in traceback.extract_tb(err.__traceback__) if not _library(f.filename)]
            if frames and not os.path.abspath(frames[-1].filename).startswith(_SYMBOLIC):
                raise                      # raised by operator code a thunk ran: prover.untraceable names its line
            kinds = ", ".join([_kind(a) for a in args] + [f"{k}={_kind(v)}" for k, v in kwargs.items()])
            raise NotTraceable(f"xp.{name}({kinds}): the {self.name} namespace cannot model these arguments "
                               f"({type(err).__name__}: {str(err)[:120]})", caller_line()) from err
    entry.__tokenlaw_entry__ = True
    return entry


class ObjectNamespace:
    """Base of the sympy and z3 namespaces; subclasses define the scalar rules.

    Scalar hooks: ``const(value)``, ``s_exp``, ``s_log``, ``s_sqrt``, ``s_tanh``,
    ``s_erf``, ``s_abs``, ``s_div(a, b)``, ``s_max(a, b)``, ``s_min(a, b)``,
    ``s_where(c, a, b)``, ``s_gt``, ``s_lt``, ``s_eq``, ``s_and``.
    """

    name = "object"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _entries(cls)

    # -- lifting -------------------------------------------------------------
    def _arr(self, x) -> np.ndarray:
        """An object array of x: an array unchanged, a number or term as a 0-d array, a nested list (or a
        numpy array, a tensor) of numbers as an array of constants of its shape."""
        if isinstance(x, np.ndarray) and x.dtype == object:
            return x
        x = literal(x)
        if isinstance(x, list):
            shaped = np.array(x, dtype=object)          # a ragged list: numpy raises, the entry point reports it
            if any(isinstance(v, list) for v in shaped.flat):
                raise NotTraceable("a ragged nested list (rows of different lengths)", caller_line())
            return objects(shaped.shape, lambda idx: wrap(self._term(shaped[idx])))
        return scalar(wrap(self.const(x) if isinstance(x, (int, float, fractions.Fraction)) else x))

    def _map(self, fn, *xs):
        arrays = [self._arr(x) for x in xs]
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        arrays = [np.broadcast_to(a, shape) for a in arrays]
        out = np.empty(shape, dtype=object)
        for idx in np.ndindex(*shape):
            out[idx] = wrap(fn(*(self._term(a[idx]) for a in arrays)))
        return out

    def _term(self, v):
        """The backend term of an entry (unwrapped; numbers as constants)."""
        _used(v)
        v = _term_only(raw(v))
        return self.const(v) if isinstance(v, (int, float, bool, fractions.Fraction)) else v

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

    def log_full(self, like, value):
        """log(value) broadcast like ``like`` (value: a number or a 0-d array of one term)."""
        return self.log(self.full_like(like, 1.0) * self._arr(_numbers(literal(value))))

    def denominator_floor(self, t):
        """The identity: exact reals do not underflow (the eager floor only moves values
        below ~1e-154 in float64; ``operators.xp.TorchNamespace.denominator_floor``)."""
        return t

    def centred(self, x, axis):
        """x - mean(x): one pass (the eager second pass removes a rounding exact reals do not make;
        ``operators.xp.TorchNamespace.centred``)."""
        x = self._arr(x)
        return x - self.mean(x, axis=axis, keepdims=True)

    def excess(self, z, m, power):
        """e_j = sum_l m_l (z_l - z_j)_+^power along the last axis, term by term: the definition (the eager
        namespace sums the same terms grouped by one sort, ``operators.xp.TorchNamespace.excess``)."""
        z, m = self._arr(z), self._arr(m)
        cols = []
        for j in range(z.shape[-1]):
            above = self.relu(z - z[..., j:j + 1]) * m
            cols.append(self.sum(above * above if power == 2 else above, axis=-1, keepdims=True))
        return self.concat(cols, axis=-1)

    def norm_ratio(self, h, tau):
        """|h|^2 / (tau + |h|^2) over the last axis, kept: the formula (the eager namespace gives it a
        backward that never overflows at a null token, ``operators.xp.TorchNamespace.norm_ratio``)."""
        h = self._arr(h)
        sq = self.sum(h * h, axis=-1, keepdims=True)
        return self.div(sq, tau + sq)

    def unless_overflow(self, fits, plain, general):
        """``plain()`` where ``fits`` folded to true in every entry (exact reals do not overflow),
        else ``general()``, whose fallback branch the ``where`` guards (``TorchNamespace.unless_overflow``)."""
        if all(str(raw(c)) == "True" for c in self._arr(fits).flat):
            return plain()
        return general()

    def maximum(self, a, b):
        return self._map(self.s_max, a, b)

    def minimum(self, a, b):
        return self._map(self.s_min, a, b)

    def relu(self, x):
        return self._map(lambda t: self.s_max(t, self.const(0)), x)

    def where(self, cond, a, b):
        # a branch's needs bind only where it is selected (cond for a, not cond for b)
        arrays = [self._arr(x) for x in (cond, a, b)]
        shape = np.broadcast_shapes(*(x.shape for x in arrays))
        c, a, b = (np.broadcast_to(x, shape) for x in arrays)
        out = np.empty(shape, dtype=object)
        for idx in np.ndindex(*shape):
            ci = self._term(c[idx])
            for branch, sel in ((a[idx], ci), (b[idx], None)):
                for need in getattr(branch, "needs", ()):
                    need.conditions.append(ci if sel is not None else self.s_not(ci))
            out[idx] = wrap(self.s_where(ci, self._term(raw(a[idx])), self._term(raw(b[idx]))))
        return out

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
            out[idx] = wrap(acc)
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

    def cumsum(self, x, axis):
        """Running sums along ``axis``, each the sum of the terms before it (``TorchNamespace.cumsum``)."""
        moved = np.moveaxis(self._arr(x), axis, -1)
        out = np.empty(moved.shape, dtype=object)
        for idx in np.ndindex(*moved.shape[:-1]):
            acc = None
            for j in range(moved.shape[-1]):
                t = self._term(moved[idx + (j,)])
                acc = t if acc is None else acc + t
                out[idx + (j,)] = wrap(acc)
        return np.moveaxis(out, -1, axis)

    def tril(self, x, k=0):
        """x with the constant 0 above the k-th diagonal of its last two axes (``TorchNamespace.tril``)."""
        x = self._arr(x)
        if x.ndim < 2:
            raise NotTraceable(f"xp.tril of a {x.ndim}-d array (it needs 2 axes, as torch.tril does)", caller_line())
        k = literal(k)
        if not isinstance(k, int) or isinstance(k, bool):
            raise NotTraceable(f"xp.tril's diagonal k = {k!r} (a Python int is modelled)", caller_line())
        rows, cols = x.shape[-2:]
        above = np.arange(cols)[None, :] > np.arange(rows)[:, None] + k
        out = x.copy()
        out[..., above] = wrap(self.const(0))
        return out

    def arange(self, n, like=None):
        """The constants 0, 1, ..., n - 1 (``n`` a Python int: a shape; ``TorchNamespace.arange``)."""
        n = literal(n)
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise NotTraceable(f"xp.arange({n!r}) (a Python int >= 0, a shape, is modelled; a traced or "
                               "fractional length is not)", caller_line())
        return objects((n,), lambda idx: wrap(self.const(idx[0])))

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
        out.fill(wrap(self._term(value)))
        return out

    def zeros_like(self, x):
        return self.full_like(x, 0)

    def ones_like(self, x):
        return self.full_like(x, 1)

    def asarray(self, value, like=None):
        """``value`` as an array of terms: a number, a nested list or tuple of numbers, a numpy array or scalar,
        a tensor (its values; bools become 0 / 1, as the eager namespace casts them to ``like``'s dtype)."""
        if isinstance(value, np.ndarray) and value.dtype == object:
            return value
        value = literal(value)
        return self._arr(_numbers(value))


def _numbers(v):
    """Bools as 0 / 1 through nested lists (asarray casts to ``like``'s dtype, a float)."""
    return tree.map(lambda u: int(u) if isinstance(u, bool) else u, v, sequence=list)


def _literal_leaf(value):
    """One entry of a constant's nested lists, as :func:`literal` takes it (an array there: its entries)."""
    if hasattr(value, "detach") and hasattr(value, "tolist") or isinstance(value, (np.ndarray, np.generic)):
        value = value.detach().cpu().tolist() if hasattr(value, "detach") else value.tolist()
        return tree.map(literal, value, sequence=list) if isinstance(value, (list, tuple)) else literal(value)
    return literal(value)


def _entries(cls):
    """Every primitive ``cls`` defines becomes an entry point (:func:`_entry`)."""
    for name in PRIMITIVES:
        fn = cls.__dict__.get(name)
        if callable(fn) and not getattr(fn, "__tokenlaw_entry__", False):
            setattr(cls, name, _entry(name, fn))


_entries(ObjectNamespace)


def check_complete(ns) -> list:
    """Names in ``PRIMITIVES`` the namespace does not provide (the meta-test wants [])."""
    return [p for p in PRIMITIVES if not callable(getattr(ns, p, None))]
