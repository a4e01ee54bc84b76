"""The array namespace every operator's math is written against.

An operator is written once as ``f(xp, x, ...)``.  ``xp`` supplies the few
primitives the math needs; everything else (``@``, ``+``, ``*``, ``/``,
indexing) is the array type's own operator.  Three backends implement the
namespace:

* :data:`TORCH` -- eager PyTorch tensors (all dtypes, autograd);
* ``tokenlaw.symbolic.sympy_ns`` -- numpy object arrays of sympy expressions;
* ``tokenlaw.symbolic.z3_ns`` -- numpy object arrays of z3 terms.

Rules the operator code follows so every backend can trace it:

* masks are multiplicative (weights times 0/1) or go through :meth:`where`,
  never ``-inf`` additions;
* every division goes through :meth:`div` so symbolic backends can guard it;
* reductions take ``axis`` and ``keepdims`` explicitly;
* no branch on the array *type* (``torch.is_tensor``, ``isinstance(v, float)``): where
  floating point needs a different step than exact reals, that step is a primitive
  each backend implements (:meth:`TorchNamespace.log_full`,
  :meth:`TorchNamespace.denominator_floor`, :meth:`TorchNamespace.centred`), and so is a step whose
  chain-rule gradient overflows where the function's own does not (:meth:`TorchNamespace.norm_ratio`), or whose
  fast float algorithm is another formula than its definition (:meth:`TorchNamespace.excess`), so the
  symbolic trace and the eager run execute the same lines of operator code (``symbolic/coverage.py``
  checks it).

:class:`Recording` wraps any namespace and counts which primitives were
called: the zero-transcendental contract reads that count.
"""
from __future__ import annotations

import collections
import contextlib
import math
from typing import Any

import torch

# Primitives a namespace must provide.  ``exp``/``log`` are the
# transcendental ones; the rest are algebraic or piecewise.
PRIMITIVES = (
    "exp", "log", "sqrt", "div", "maximum", "minimum", "relu", "where",
    "sum", "max", "min", "mean", "matmul", "swapaxes", "reshape",
    "concat", "zeros_like", "ones_like", "full_like", "abs", "gt", "eq",
    "asarray", "lt", "logical_and", "tanh", "erf", "log_full", "denominator_floor", "centred",
    "unless_overflow", "excess", "cumsum", "tril", "arange", "norm_ratio",
)
TRANSCENDENTAL = frozenset({"exp", "log", "tanh", "erf", "log_full"})


# Depth of :func:`one_term_products` blocks: inside one, TorchNamespace.matmul takes the gather of
# :func:`one_term_product` wherever it gives the product's exact bits.
_SELECTIONS = [0]


@contextlib.contextmanager
def one_term_products():
    """Inside the block, an eager ``matmul`` whose every output entry has at most one nonzero term is formed
    by a gather and one multiply per entry (:func:`one_term_product`): the same bits as the BLAS product.

    The exact weight probes (``tokenlaw.properties.applied``) run an operator on tokens and projections
    that are one-hot or zero except in one block: at n = 257 the probe's width is 1024, and its four
    1024 x 1024 projections were most of a score-law cell's CPU in MKL's reproducible (SSE2) GEMM.
    """
    _SELECTIONS[0] += 1
    try:
        yield
    finally:
        _SELECTIONS[0] -= 1


# The fewest multiply-adds (batch x M x K x N) for which TorchNamespace.matmul takes one_term_product: below,
# MKL's reproducible GEMM is faster than the checks (measured: about 8 float64 multiply-adds per ns)
ONE_TERM_FROM = 1 << 20


def one_term_product(a, b, least: int = 0):
    """``a @ b`` (with :meth:`TorchNamespace.matmul`'s float32 product of half operands) when each column of
    ``b`` has at most one nonzero entry, formed without a GEMM; None where that is not known to give the
    product's exact bits (then the caller multiplies as usual), or where the GEMM has fewer than ``least``
    multiply-adds (batch x M x K x N).

    Each output entry is then one product ``a_ir b_rc`` (correctly rounded once, in any summation order:
    a half product is exact in float32 and rounded once to the half format, as the float32 GEMM's is) plus
    terms ``a_ir' * 0``.  Those are exact zeros, so the sum is that product, except for what the zeros
    themselves decide, which is checked, not assumed:

    * a non-finite entry of ``a`` makes its zero terms NaN: not taken (nor a non-finite entry of ``b``);
    * the sign of a zero sum: IEEE gives -0 only when every term is -0, so the product is taken only when
      every row of ``a`` has two entries with the sign bit clear and every zero of ``b`` is +0 (then each
      entry has a +0 term, and a zero result is +0 in every order: the gather's -0 is made +0);
    * autograd: not taken where an operand requires grad (the gather's gradient would miss b's zeros).

    tests/operators/test_one_term_product.py compares it with the GEMM bit for bit.
    """
    if (a.dim() < 2 or b.dim() < 2 or a.dtype != b.dtype or not a.is_floating_point() or a.requires_grad
            or b.requires_grad or b.device != a.device or a.shape[-1] != b.shape[-2] or a.shape[-1] < 2):
        return None
    if least and math.prod(torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])) * a.shape[-2] * b.shape[-2] * \
            b.shape[-1] < least:
        return None          # a GEMM this small costs less than the checks
    columns = _one_term_columns(b)
    if columns is None:
        return None
    index, values = columns
    if not _left_usable(a):
        return None
    half = a.dtype in (torch.float16, torch.bfloat16)
    wide = a.float() if half else a
    values = values.float() if half else values
    m, n = a.shape[-2], b.shape[-1]
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    if b.dim() == 2:
        picked = wide[..., index]
    else:
        picked = torch.gather(wide.expand(*batch, m, a.shape[-1]), -1,
                              index.expand(*batch, n).unsqueeze(-2).expand(*batch, m, n))
    out = picked * values.unsqueeze(-2)
    out = torch.where(out == 0, torch.zeros((), dtype=out.dtype), out)      # a zero sum is +0 (see above)
    out = out.expand(*batch, m, n) if out.shape[:-2] != batch else out
    return out.to(a.dtype) if half else out


# The last right operands :func:`_one_term_columns` read (a probe passes the same projections call after call):
# key -> (the tensor, held so its id is not reused, and what was read).  A score law's probe runs in the dtype
# under test and in float64 (and float32 for a half dtype): three sets of four projections plus two fresh
# operands (k^T, v) a call.  With 8 kept, every projection was read again: sm_fir simplex float32 at seed 0
# read its 1024 x 1024 projections 648 times, 600 of them hits with 32 kept.
_COLUMNS: collections.OrderedDict = collections.OrderedDict()
_COLUMNS_KEPT = 32


def _one_term_columns(b):
    """(index, values): the row of each column's nonzero entry of ``b`` (..., K, N) and that entry (0 and 0
    for a zero column), when every column has at most one nonzero, every entry is finite and every zero
    is +0; else None.  Remembered for the last few tensors, by identity and version (an in-place change
    reads again)."""
    key = (id(b), b._version, b.data_ptr(), tuple(b.shape), b.stride(), b.dtype)
    hit = _COLUMNS.get(key)
    if hit is not None and hit[0] is b:
        _COLUMNS.move_to_end(key)
        return hit[1]
    result = None
    k, n = b.shape[-2], b.shape[-1]
    columns = b.numel() // k if b.numel() else 0
    # at most one nonzero (NaN and inf count) per column: first the total, then where they are (no
    # reduction across the strided row axis: an argmax down a 1024 x 1024 column took 9 ms)
    if columns and int(torch.count_nonzero(b)) <= columns:
        where = torch.nonzero(b.reshape(-1, k, n)).unbind(-1)                # (matrix, row, column) of each
        flat = where[0] * n + where[2]
        if int(torch.bincount(flat, minlength=columns).max()) <= 1:
            index = torch.zeros(columns, dtype=torch.long, device=b.device)
            values = torch.zeros(columns, dtype=b.dtype, device=b.device)
            index[flat] = where[1]
            values[flat] = b.reshape(-1, k, n)[where]
            # finite (a zero is), and no -0: the only sign bits set are the negative nonzero entries'
            if bool(torch.isfinite(values).all()) and int(torch.signbit(b).sum()) == int((values < 0).sum()):
                result = (index.reshape(*b.shape[:-2], n), values.reshape(*b.shape[:-2], n))
    _COLUMNS[key] = (b, result)
    while len(_COLUMNS) > _COLUMNS_KEPT:
        _COLUMNS.popitem(last=False)
    return result


# The last left operands :func:`_left_usable` read: key -> (the tensor, held so its id is not reused, the answer).
# A probe multiplies one token tensor by its three projections in turn: two of the three reads were repeats.
_LEFT: collections.OrderedDict = collections.OrderedDict()
_LEFT_KEPT = 8


def _left_usable(a) -> bool:
    """Every entry of ``a`` is finite and every row has two entries with the sign bit clear (what
    :func:`one_term_product` asks of its left operand).  Remembered for the last few tensors, by identity and
    version (an in-place change reads again), like :func:`_one_term_columns`."""
    key = (id(a), a._version, a.data_ptr(), tuple(a.shape), a.stride(), a.dtype)
    hit = _LEFT.get(key)
    if hit is not None and hit[0] is a:
        _LEFT.move_to_end(key)
        return hit[1]
    usable = bool(torch.isfinite(a).all()) and not bool(((~torch.signbit(a)).sum(-1) < 2).any())
    _LEFT[key] = (a, usable)
    while len(_LEFT) > _LEFT_KEPT:
        _LEFT.popitem(last=False)
    return usable


_HALF = (torch.float16, torch.bfloat16)


class TorchNamespace:
    """Eager backend: thin aliases onto torch so autograd and dtypes just work."""

    name = "torch"

    def exp(self, x):
        return torch.exp(x)

    def log(self, x):
        return torch.log(x)

    def tanh(self, x):
        return torch.tanh(x)

    def erf(self, x):
        return torch.erf(x)

    def sqrt(self, x):
        return torch.sqrt(x)

    def abs(self, x):
        return torch.abs(x)

    def div(self, a, b):
        return a / b

    def maximum(self, a, b):
        return torch.maximum(a, self._like(b, a))

    def minimum(self, a, b):
        return torch.minimum(a, self._like(b, a))

    def relu(self, x):
        return torch.relu(x)

    def where(self, cond, a, b):
        ref = a if torch.is_tensor(a) else b
        return torch.where(cond, self._like(a, ref), self._like(b, ref))

    def gt(self, a, b):
        return a > b

    def lt(self, a, b):
        return a < b

    def eq(self, a, b):
        return a == b

    def logical_and(self, a, b):
        return torch.logical_and(a, b)

    def sum(self, x, axis, keepdims=False):
        return torch.sum(x, dim=axis, keepdim=keepdims)

    def mean(self, x, axis, keepdims=False):
        return torch.mean(x, dim=axis, keepdim=keepdims)

    def max(self, x, axis, keepdims=False):
        return torch.amax(x, dim=axis, keepdim=keepdims)

    def min(self, x, axis, keepdims=False):
        return torch.amin(x, dim=axis, keepdim=keepdims)

    def matmul(self, a, b):
        """a @ b; on the CPU, float16 / bfloat16 operands are multiplied in float32 and rounded once.

        That is the tensor-core model (float32 accumulation, one rounding of the result), and it is the
        same on every x86 CPU: torch's own CPU half GEMM is not.  It takes oneDNN where the CPU has
        AVX-512 (a check of the CPU itself, not of ``ONEDNN_MAX_CPU_ISA``) and ATen's fallback GEMM
        elsewhere, which differ: ``tokenlaw gate`` on an AVX2-only AMD EPYC found
        oa_only_host_l4-differential-bfloat16's bound 13.7 against 0.649 recorded on an AVX-512 Intel
        machine, same seed, same inputs, same pinned float32 paths (issue 19).  The float32 product runs
        on the paths ``cpu_paths`` pins (MKL's reproducible mode).
        """
        if a.is_cpu:        # (0.3 us a call against 1.7 us for device.type; 260 000 calls in 30 host cells)
            if _SELECTIONS[0]:
                out = one_term_product(a, b, ONE_TERM_FROM)
                if out is not None:
                    return out
            if a.dtype in _HALF and a.dtype == b.dtype:
                return (a.float() @ b.float()).to(a.dtype)
        return a @ b

    def swapaxes(self, x, a, b):
        return torch.transpose(x, a, b)

    def reshape(self, x, shape):
        return torch.reshape(x, tuple(shape))

    def concat(self, xs, axis):
        return torch.cat(list(xs), dim=axis)

    def zeros_like(self, x):
        return torch.zeros_like(x)

    def ones_like(self, x):
        return torch.ones_like(x)

    def full_like(self, x, value):
        return torch.full_like(x, value)

    def log_full(self, like, value):
        """log(value) broadcast to an array like ``like``.

        A Python number's log is taken in float64 before it meets the array's dtype:
        eps_den = 1e-8 is zero in float16 (1e-6 is subnormal, off by 2%), and rounding
        it before the log would drop the eps_den term from every row whose scores sit
        near log(eps_den).  A tensor scalar goes through torch.log in its own dtype.
        """
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return torch.full_like(like, math.log(value))
        return torch.log(torch.full_like(like, 1.0) * value)

    def denominator_floor(self, t):
        """t floored at the smallest denominator it is safe to divide by in its dtype.

        The backward of a / t scales by 1 / t^2: a subnormal t overflows it to inf,
        and inf * 0 = NaN reaches tokens whose gradient should be 0.  The floor is
        sqrt(smallest normal) (~1.5e-154 in float64, ~1e-19 in float32/bfloat16),
        float16's own smallest normal (its sqrt, 8e-3, would change ordinary values).
        Exact reals (the symbolic namespaces) do not underflow: there it is the identity.
        """
        tiny = torch.finfo(t.dtype).tiny
        floor = tiny if t.dtype == torch.float16 else tiny ** 0.5
        return torch.maximum(t, torch.as_tensor(floor, dtype=t.dtype, device=t.device))

    def centred(self, x, axis):
        """x - mean(x) along ``axis``, with the mean's rounding taken back out (two passes).

        The mean is rounded to x's dtype before it is subtracted: that loses u |mean| of every
        centred value, all of them where the spread is below u |mean| (a bfloat16 residual state
        [6.0, 5.969] has mean 5.984, which rounds to 6.0 or 5.969: one centred value is 0 and a
        LayerNorm at d = 2 returns [0, -1.4] for [0.98, -0.98]).  x - fl(mean) is exact there
        (Sterbenz: x and the mean within a factor 2), so a second pass c - mean(c) removes the
        rounding.  In the reals mean(c) = 0: the symbolic namespaces take one pass.
        """
        c = x - self.mean(x, axis=axis, keepdims=True)
        return c - self.mean(c, axis=axis, keepdims=True)

    def unless_overflow(self, fits, plain, general):
        """``plain()`` when every entry of ``fits`` is true, else ``general()`` (both thunks).

        ``fits`` is :func:`spread.finite` of an intermediate: true in the reals, false only where
        floating point overflowed.  ``general()`` must equal ``plain()`` wherever ``fits`` holds (it
        is the plain formula with a rescaled fallback ``where`` it does not), so the choice changes
        no bit of a finite result; it only spares the fallback's work (a quarter of a host's forward)
        on the inputs that never need it.  The symbolic namespaces take ``plain()`` when ``fits``
        folds to true, the trace of the line eager runs at every finite magnitude.
        """
        return plain() if bool(fits.all()) else general()

    def excess(self, z, m, power):
        """e_j = sum_l m_l (z_l - z_j)_+^power for every key j of the last axis (power 1 or 2; m >= 0).

        The symbolic namespaces take the definition term by term (an (N, N) slab a row,
        ``symbolic.objarray.ObjectNamespace.excess``).  Here one sort a row: with the keys in
        descending order z_(0) >= z_(1) >= ..., gaps g_r = z_(r-1) - z_(r) >= 0 (g_0 = 0) and
        M_r = sum_{l<r} m_(l) (the weight above position r), every z_(l) - z_(r) with l < r is a sum of
        the gaps between them, so

            E1_r = E1_{r-1} + g_r M_r,     E2_r = E2_{r-1} + 2 g_r E1_{r-1} + g_r^2 M_r,

        equal to the definition in the reals (tied keys: g = 0, the same excess, in any order).  Every
        term is >= 0: no cancellation, O(N log N) a row instead of O(N^2) in N Python steps (the zoo's
        sparsemax and entmax-1.5 ran their permutation cells at N up to 130 in minutes).  Only comparisons
        read it (``support.inside``), so nothing is differentiated: the inputs are detached.  It is summed
        in float32 for float16 / bfloat16 (their running sums of 0/1 weights are exact only to 2048 / 256)
        and returned in that dtype, so a key's side of the threshold is not decided by a half-precision
        rounding of its excess.  An overflowed sum is +inf (0 * inf, a tie after it, would be NaN): the
        excess only grows along the order, so every key after it is above any threshold too.
        """
        work = torch.float32 if z.dtype in (torch.float16, torch.bfloat16) else z.dtype
        z = z.detach().to(work)
        m = torch.broadcast_to(torch.as_tensor(m, device=z.device).detach().to(work), z.shape)
        zs, order = torch.sort(z, dim=-1, descending=True, stable=True)
        ms = torch.gather(m, -1, order)
        start = torch.zeros_like(zs[..., :1])
        gap = torch.cat([start, zs[..., :-1] - zs[..., 1:]], dim=-1)
        above = torch.cat([start, torch.cumsum(ms, dim=-1)[..., :-1]], dim=-1)
        e = torch.cumsum(gap * above, dim=-1)
        if power == 2:
            before = torch.cat([start, e[..., :-1]], dim=-1)
            e = torch.cumsum(gap * (2.0 * before + gap * above), dim=-1)
        e = torch.nan_to_num(e, nan=math.inf, posinf=math.inf)
        return torch.empty_like(e).scatter_(-1, order, e)

    def norm_ratio(self, h, tau):
        """|h|^2 / (tau + |h|^2) over the last axis, kept (..., 1): presence's ratio, with its own backward.

        The forward is the formula, |h|^2 summed by this namespace's :meth:`sum`, bit for bit.  Autograd
        would differentiate it through s = |h|^2: dr/ds = tau / (tau + s)^2 is 1 / tau at a null token,
        which overflows float32 once tau < ~1e-35 and the upstream gradient is past ~3e3 (a tau of 1e-35
        is in the drawn domain, ``fuzz.strategies.decades``), and inf * ds/dh = inf * 2h = NaN at h = 0,
        where the true gradient is exactly 0 (fuzzer counterexample: oattention, null_gradient, float32,
        seed 2).  The backward here takes the gradient in h as one bounded product,

            dr/dh = (2h / (tau + s)) * (tau / (tau + s)),   |2h| / (tau + s) <= 1 / sqrt(tau),  tau / (tau + s) <= 1,

        exactly 0 at h = 0 for any finite upstream gradient, and without the cancellation of autograd's
        1/t - r/t where r is near 1.  The symbolic namespaces trace the formula itself.
        """
        return _NormRatio.apply(h, tau, self.sum)

    def asarray(self, value, like):
        """A constant with ``like``'s dtype and device (a number, a nested list of numbers, an array)."""
        return torch.as_tensor(value, dtype=like.dtype, device=like.device)

    def cumsum(self, x, axis):
        """Running sums along ``axis``: out[..., j] = x[..., 0] + ... + x[..., j] (causal prefix sums)."""
        return torch.cumsum(x, dim=axis)

    def tril(self, x, k=0):
        """x with every entry above the k-th diagonal of its last two axes set to 0 (j > i + k)."""
        return torch.tril(x, diagonal=k)

    def arange(self, n, like):
        """0, 1, ..., n - 1 with ``like``'s dtype and device (``n`` a Python int: a shape, never a traced value)."""
        return torch.arange(n, dtype=like.dtype, device=like.device)

    @staticmethod
    def _like(v, ref):
        if torch.is_tensor(v):
            return v
        return torch.as_tensor(v, dtype=ref.dtype, device=ref.device)


TORCH = TorchNamespace()


class _NormRatio(torch.autograd.Function):
    """r = s / (tau + s), s = |h|^2 over h's last axis: :meth:`TorchNamespace.norm_ratio`."""

    @staticmethod
    def forward(ctx, h, tau, total):
        s = total(h * h, axis=-1, keepdims=True)
        ctx.save_for_backward(h, tau if torch.is_tensor(tau) else None)
        ctx.tau = None if torch.is_tensor(tau) else tau
        return s / (tau + s)

    @staticmethod
    def backward(ctx, g):
        h, tau_t = ctx.saved_tensors
        tau = ctx.tau if tau_t is None else tau_t
        # recomputed here (not saved): under create_graph it is a function of h, so a second derivative
        # sees every path
        s = torch.sum(h * h, dim=-1, keepdim=True)
        t = tau + s
        dh = (g * (2.0 * h / t)) * (tau / t) if ctx.needs_input_grad[0] else None
        # dr/dtau = -s / (tau + s)^2 = -r / t, summed back to tau's own shape (a tensor tau only)
        dtau = None
        if tau_t is not None and ctx.needs_input_grad[1]:
            dtau = (-(g * (s / t)) / t).sum_to_size(tau_t.shape)
        return dh, dtau, None


class Recording:
    """Wrap a namespace and count every primitive the traced code calls.

    >>> rec = Recording(TORCH)
    >>> _ = rec.exp(torch.zeros(2))
    >>> rec.calls["exp"]
    1
    """

    def __init__(self, inner: Any):
        self.inner = inner
        self.name = f"recording({inner.name})"
        self.calls: collections.Counter = collections.Counter()

    def __getattr__(self, attr):
        target = getattr(self.inner, attr)
        if attr not in PRIMITIVES:
            return target

        def counted(*args, **kwargs):
            self.calls[attr] += 1
            return target(*args, **kwargs)

        return counted

    @property
    def transcendental_calls(self) -> dict:
        return {k: v for k, v in self.calls.items() if k in TRANSCENDENTAL}
