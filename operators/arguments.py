"""Up-front argument validation for the eager operators, modules, hosts and kernel entry points.

Every check raises :class:`~tokenlaw.operators.errors.InvalidArgument` naming
the argument and what was expected.  Nothing is broadcast, cast or truncated
silently: a scalar is a Python real or a 0-d tensor, a weight has exactly its
shape, the input's dtype and device, and every value is finite.  Symbolic
arrays (numpy object arrays, sympy / z3 terms) are shape-checked only: their
values are the solver's business.

The bad inputs every operator must reject are generated here too
(:func:`error_inputs`), from one valid call, in the spirit of PyTorch
OpInfo's ``error_inputs``; an operator adds its own through ``errors=`` in
its declaration.
"""
from __future__ import annotations

import contextlib
import contextvars
import math
import numbers
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np
import torch

from . import dtypes as _dtypes
from . import tree as _tree
from .errors import InvalidArgument

FLOAT_DTYPES = _dtypes.FLOATS

# Inside a composition (a host, a stack of modules) the hidden states handed
# from one component to the next are the model's own values, not the user's
# input: an fp16 overflow there is the model's behaviour, which the suite
# measures, not bad input.  The composition validates its input up front and
# runs its components under ``composed()``, which skips the value checks of
# hidden states (shapes, dtypes and devices are still checked).
_COMPOSED = contextvars.ContextVar("tokenlaw_composed", default=False)


def is_composed() -> bool:
    """Inside :func:`composed`: the values are a model's own hidden states (checked once, at its input)."""
    return _COMPOSED.get()


@contextlib.contextmanager
def composed():
    """Run components of an already-validated composition: hidden states skip the finiteness check."""
    token = _COMPOSED.set(True)
    try:
        yield
    finally:
        _COMPOSED.reset(token)


@contextlib.contextmanager
def within(path: str):
    """Name a component's parameters by their path in the composition: ``wq: ...`` -> ``blocks[0].attn.wq: ...``."""
    try:
        yield
    except InvalidArgument as err:
        raise InvalidArgument(f"{path}.{err}") from None


def is_symbolic(value) -> bool:
    """A numpy object array or a sympy / z3 term: the symbolic tier's values.

    A tracing wrapper marks itself with a class attribute ``__tokenlaw_symbolic__ = True``
    (the symbolic tier's ``Term``), so this layer needs no import of the tier.
    """
    if isinstance(value, np.ndarray):
        return value.dtype == object
    if getattr(type(value), "__tokenlaw_symbolic__", False):
        return True
    return type(value).__module__.split(".")[0] in ("sympy", "z3")


def _describe(value) -> str:
    if torch.is_tensor(value):
        return f"a tensor of shape {tuple(value.shape)} dtype {value.dtype}"
    if isinstance(value, np.ndarray):
        return f"a numpy array of shape {value.shape}"
    return f"{type(value).__name__} {value!r:.40}"


# From this many entries on, :func:`finite` asks the sum first: one pass with no temporary, against
# isfinite's bool tensor (measured, one thread: a 1024 x 1024 float64 probe weight 1.7 vs 18.6 ms; the score
# laws' probes check every weight of every call: 12 % of a sparsemax score-law cell).
_SUM_FIRST = 4096


def finite(t, name):
    """t (a concrete tensor on a real device) holds no NaN / inf.

    A sum of finite entries is finite unless it overflows, and a NaN or inf entry makes the sum NaN or inf
    (IEEE arithmetic has no way back to a finite value from either): a finite sum proves every entry finite,
    and any other sum falls through to the entrywise check, which decides.
    """
    if t.numel() >= _SUM_FIRST and bool(torch.isfinite(t.sum())):
        return
    if t.numel() and not bool(torch.isfinite(t).all()):
        bad = "NaN" if bool(torch.isnan(t).any()) else "inf"
        raise InvalidArgument(f"{name}: contains {bad}; inputs must be finite "
                              "(a NaN would spread to every token, masked or not)")


def device(t, name, like=None, like_name="x"):
    if t.device.type == "meta":
        raise InvalidArgument(f"{name}: a tensor on the meta device has no values; move it to a real device")
    if like is not None and torch.is_tensor(like) and t.device != like.device:
        raise InvalidArgument(f"{name}: device {t.device} differs from {like_name}'s {like.device}")


def tokens(x, name="x", *, d_model=None, like=None, like_name="x"):
    """x must be a finite floating tensor of shape (batch, tokens, features).

    With ``like``: the same dtype, device and (batch, tokens) as ``like``.
    """
    if not (torch.is_tensor(x) or isinstance(x, np.ndarray)):
        raise InvalidArgument(f"{name}: expected a tensor of shape (batch, tokens, features), got {_describe(x)}")
    if x.ndim != 3:
        raise InvalidArgument(f"{name}: expected 3 dims (batch, tokens, features), got shape {tuple(x.shape)}")
    if x.shape[1] < 1 or x.shape[2] < 1:
        raise InvalidArgument(f"{name}: needs at least one token and one feature, got shape {tuple(x.shape)}")
    if d_model is not None and x.shape[2] != d_model:
        raise InvalidArgument(f"{name}: expected {d_model} features, got {x.shape[2]}")
    if like is not None and tuple(x.shape[:2]) != tuple(like.shape[:2]):
        raise InvalidArgument(f"{name}: expected (batch, tokens) = {tuple(like.shape[:2])} like {like_name}, "
                              f"got {tuple(x.shape[:2])}")
    if torch.is_tensor(x):
        if x.dtype not in FLOAT_DTYPES:
            raise InvalidArgument(f"{name}: expected a floating dtype {[str(d) for d in FLOAT_DTYPES]}, got {x.dtype}")
        if torch.is_tensor(like) and x.dtype != like.dtype:
            raise InvalidArgument(f"{name}: dtype {x.dtype} differs from {like_name}'s {like.dtype} (no silent casts)")
        device(x, name, like, like_name)
        if not _COMPOSED.get():
            finite(x, name)
    return x


MASK_INT_DTYPES = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


def found_value(t, bad) -> str:
    """'got 0.1 at [0, 2, 1] (3 entries are neither 0 nor 1)': the first offending entry of ``t`` and how many."""
    where = [int(i) for i in torch.nonzero(bad)[0]]
    count = int(bad.sum())
    return (f"got {t[tuple(where)].item()!r} at {where}"
            + (f" ({count} entries are neither 0 nor 1)" if count > 1 else ""))


def mask(m, x, name="mask"):
    """m must be (tokens, tokens) or (1|batch, tokens, tokens) with entries exactly 0 or 1.

    bool, every integer dtype and every floating dtype are accepted alike
    (1 = visible); the mask is returned in x's dtype.  A 0.1 is refused: a
    forward that treats non-zero as visible and a backward that multiplies
    by the mask would disagree.
    """
    if m is None:
        return None
    b, n = x.shape[0], x.shape[1]
    if not (torch.is_tensor(m) or isinstance(m, np.ndarray)):
        raise InvalidArgument(f"{name}: expected a 0/1 tensor, got {_describe(m)}")
    if tuple(m.shape) not in ((n, n), (b, n, n), (1, n, n)):
        raise InvalidArgument(
            f"{name}: expected shape ({n}, {n}) or ({b}, {n}, {n}) for x of shape {tuple(x.shape)}, got {tuple(m.shape)}")
    if isinstance(m, np.ndarray) and not is_symbolic(m):
        raise InvalidArgument(f"{name}: expected a torch tensor, got a numpy array (use torch.as_tensor)")
    if torch.is_tensor(m):
        device(m, name, x)
        if m.dtype == torch.bool:
            return m.to(x.dtype)
        if not m.is_floating_point() and m.dtype not in MASK_INT_DTYPES:
            raise InvalidArgument(f"{name}: expected bool or 0/1 entries of an integer or floating dtype, got dtype {m.dtype}")
        bad = ~((m == 0) | (m == 1))
        if bool(bad.any()):
            raise InvalidArgument(f"{name}: entries must be 0 or 1 exactly (1 = visible), " + found_value(m, bad))
        return m.to(x.dtype)
    return m


def scalar_value(value, name) -> float | None:
    """The float of a Python real or 0-d floating tensor; None for a symbolic value; else an error."""
    if torch.is_tensor(value):
        if value.ndim != 0:
            raise InvalidArgument(f"{name}: expected a scalar (a Python float or 0-d tensor), got a tensor of shape "
                                  f"{tuple(value.shape)} (never broadcast)")
        if not value.is_floating_point():
            raise InvalidArgument(f"{name}: expected a floating scalar, got dtype {value.dtype}")
        device(value, name)
        return float(value.detach())
    if isinstance(value, bool):
        raise InvalidArgument(f"{name}: expected a real number, got the bool {value!r}")
    if isinstance(value, numbers.Real):
        return float(value)
    if is_symbolic(value):
        return None
    raise InvalidArgument(f"{name}: expected a real scalar (a Python float or 0-d tensor), got {_describe(value)}")


def count(value, name: str) -> int:
    """``value`` as a count of at least one (processes, workers): an int that is not a bool."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InvalidArgument(f"{name}: expected an int >= 1, got {value!r}")
    return value


def positive(value, name):
    """A strictly positive finite scalar (tau, eps_den, eps...)."""
    v = scalar_value(value, name)
    if v is not None and not (v > 0 and math.isfinite(v)):
        raise InvalidArgument(f"{name}: must be > 0 and finite, got {v}")
    return value


def finite_scalar(value, name):
    """Any finite real scalar (e.g. pn_fir_tau's learnable threshold)."""
    v = scalar_value(value, name)
    if v is not None and not math.isfinite(v):
        raise InvalidArgument(f"{name}: must be finite, got {v}")
    return value


def heads(h, d_model, name="heads"):
    if not isinstance(h, int) or isinstance(h, bool) or h < 1:
        raise InvalidArgument(f"{name}: expected a positive int, got {h!r}")
    if d_model % h:
        raise InvalidArgument(f"{name}: {h} does not divide the model width {d_model}")
    return h


def weight(w, shape, name, like=None):
    """A finite projection matrix or bias of exactly ``shape``: never broadcast.

    With ``like`` (the operator's input): the same dtype and device.  Inside :func:`composed` the values
    are not re-checked: the composition validated its whole tree at its input (``tree``, ``check_parameters``).
    """
    if w is None:
        return None
    if not (torch.is_tensor(w) or isinstance(w, np.ndarray)):
        raise InvalidArgument(f"{name}: expected a tensor of shape {tuple(shape)}, got {_describe(w)}")
    if tuple(w.shape) != tuple(shape):
        raise InvalidArgument(f"{name}: expected shape {tuple(shape)}, got {tuple(w.shape)}")
    if torch.is_tensor(w):
        if torch.is_tensor(like) and w.dtype != like.dtype:
            raise InvalidArgument(f"{name}: dtype {w.dtype} differs from x's {like.dtype} (no silent casts)")
        device(w, name, like)
        if not _COMPOSED.get():      # a composition checked its whole parameter tree once (tree())
            finite(w, name)
    return w


def tree(value, name, like):
    """Every tensor in a nested dict / list of parameters (a host's blocks) is finite, of x's dtype and device.

    Names follow the path: ``blocks[0].attn.wq``.
    """
    tensors = []
    for key_path, leaf in _tree.leaves(value):
        if torch.is_tensor(leaf) and leaf.ndim > 0:
            tensors.append((key_path, leaf))
        elif torch.is_tensor(leaf) or isinstance(leaf, float):
            finite_scalar(leaf, _tree.path_name(key_path, name))
    ref = like if torch.is_tensor(like) else None
    for key_path, leaf in tensors:           # dtype and device leaf by leaf; the values in one pass below
        if leaf.device.type == "meta" or (ref is not None and (leaf.dtype != ref.dtype or leaf.device != ref.device)):
            token = _COMPOSED.set(True)      # weight() names the leaf and says what differs
            try:
                weight(leaf, leaf.shape, _tree.path_name(key_path, name), like)
            finally:
                _COMPOSED.reset(token)
    if not _COMPOSED.get() and tensors and not _all_finite([t for _, t in tensors]):
        for key_path, leaf in tensors:   # name the first leaf that is not finite, as weight() would
            finite(leaf, _tree.path_name(key_path, name))
    return value


def _all_finite(tensors) -> bool:
    """Every entry of every tensor is finite: one isfinite over their concatenation (a host has ~30 leaves)."""
    real = [t for t in tensors if t.numel()]
    if len({t.device for t in real}) > 1:
        return all(bool(torch.isfinite(t).all()) for t in real)
    return not real or bool(torch.isfinite(torch.cat([t.reshape(-1) for t in real])).all())


# -- the near-null threshold of a dtype -----------------------------------------------------

def null_threshold(dtype: torch.dtype) -> float:
    """Largest |h_i| whose square rounds to exactly 0 in ``dtype`` (round to nearest).

    A token every entry of which is below this has squared norm exactly 0 and
    so presence exactly 0: it *is* a null token in that dtype.  This is half
    the smallest subnormal's square root: float64 ~1.5e-162, float32
    ~2.6e-23, bfloat16 ~6.8e-21, float16 ~1.7e-4.  (With tau > 1, presence
    |h|^2 / (tau + |h|^2) underflows a little earlier.)
    """
    fi = torch.finfo(dtype)
    smallest_subnormal = math.log2(fi.smallest_normal) + math.log2(fi.eps)
    return 2.0 ** ((smallest_subnormal - 1) / 2)


# -- generated bad inputs (OpInfo's error_inputs) -------------------------------------------

class ErrorInput(NamedTuple):
    """One bad call: ``mutate(kwargs) -> kwargs``, the argument the error must name, a label for the test id."""

    label: str
    mutate: Callable[[dict], dict]
    argument: str


def _setter(key_path, make: Callable[[Any], Any]):
    def mutate(kwargs):
        return _tree.replace(kwargs, key_path, make(_tree.get(kwargs, key_path)))
    return mutate


def _poison(value, fill):
    t = value.clone()
    t.reshape(-1)[0] = fill
    return t


def _other_dtype(dtype):
    return torch.float32 if dtype == torch.float64 else torch.float64


def error_inputs(kwargs: dict, *, tokens=("x", "carrier"), scalars=("tau", "eps_den", "eps"),
                 any_float=(), like="x", typed=False) -> Iterator[ErrorInput]:
    """Bad variants of one valid call ``fn(**kwargs)``, each naming the argument its error must name.

    Generated for every operator from its domain's valid parameters (and for
    every kernel entry point from a valid call):

    * token tensors (``x``, a ``carrier``): NaN, +inf, -inf, an int dtype, 2 dims, the meta device;
    * every other tensor, however deeply nested: NaN, inf, another dtype (another float dtype
      than ``kwargs[like]``'s; an int dtype for names in ``any_float``), the meta device, an extra
      leading dim of size 1 (a numel-preserving broadcast);
    * every real scalar named in ``scalars``: NaN, inf, a (1, 1, 1, 1) tensor, a bool, a string,
      a list, a numpy array, an integer tensor (with ``typed``, only the values: a torch custom
      op's schema rejects a wrong Python type before any Python code of ours runs, and on the meta
      device it runs its shape-only fake implementation, as every torch custom op does);
    * a ``mask``: entries 0.1, NaN, an int8 2, an int16 -1, a wrong shape, a numpy array, the
      meta device.
    """
    ref = kwargs[like]
    for label, make in (("nan", lambda t: _poison(t, float("nan"))), ("inf", lambda t: _poison(t, float("inf"))),
                        ("neginf", lambda t: _poison(t, float("-inf"))), ("int", lambda t: t.to(torch.int64)),
                        ("2d", lambda t: t[0]), ("meta", lambda t: t.to("meta"))):
        for name in tokens:
            if torch.is_tensor(kwargs.get(name)):
                yield ErrorInput(f"{name}-{label}", _setter([name], make), name)
    rest = {k: v for k, v in kwargs.items() if k not in (*tokens, "mask")}
    for path, leaf in _tree.leaves(rest):
        name = _tree.path_name(path)
        if torch.is_tensor(leaf) and leaf.ndim > 0:
            other = torch.int32 if path[-1] in any_float else _other_dtype(ref.dtype)
            yield ErrorInput(f"{name}-nan", _setter(path, lambda t: _poison(t, float("nan"))), name)
            yield ErrorInput(f"{name}-inf", _setter(path, lambda t: _poison(t, float("inf"))), name)
            yield ErrorInput(f"{name}-dtype", _setter(path, lambda t, other=other: t.to(other)), name)
            if not typed:   # a custom op on meta tensors runs its fake (shape-only) implementation by design
                yield ErrorInput(f"{name}-meta", _setter(path, lambda t: t.to("meta")), name)
            yield ErrorInput(f"{name}-unsqueezed", _setter(path, lambda t: t[None]), name)
        elif path[-1] in scalars and isinstance(leaf, numbers.Real) or torch.is_tensor(leaf) and leaf.ndim == 0:
            v = float(leaf)
            wrap = (lambda u: torch.tensor(u)) if torch.is_tensor(leaf) else (lambda u: u)
            for label, bad in (("nan", wrap(float("nan"))), ("inf", wrap(float("inf"))),
                               ("tensor1111", torch.full((1, 1, 1, 1), v)),
                               ("bool", True), ("str", "1"), ("list", [v]),
                               ("numpy", np.array([v])), ("inttensor", torch.tensor(1))):
                if typed and type(bad) is not type(leaf):     # the schema's type (float or Tensor) only
                    continue
                yield ErrorInput(f"{name}-{label}", _setter(path, lambda _, bad=bad: bad), name)
    if "mask" in kwargs:
        b, n = ref.shape[0], ref.shape[-2]
        for label, bad in (("fraction", torch.full((n, n), 0.1)),
                           ("nan", torch.full((n, n), float("nan"))),
                           ("int8-2", torch.full((n, n), 2, dtype=torch.int8)),
                           ("int16-neg", torch.full((n, n), -1, dtype=torch.int16)),
                           ("shape", torch.ones(b, n, n + 1)),
                           ("numpy", np.ones((n, n))),
                           ("meta", torch.ones(n, n, device="meta"))):
            if typed and not (torch.is_tensor(bad) and bad.device.type != "meta"):
                continue
            yield ErrorInput(f"mask-{label}", _setter(["mask"], lambda _, bad=bad: bad), "mask")
