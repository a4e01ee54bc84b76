"""Hypothesis strategies over an operator's declared domain, edges included.

A drawn :class:`~tokenlaw.properties.case.Case` is a few small integers and
floats; the tensors are generated from its seed.  A shrunk counterexample
therefore reads as "n=2, null=[0], seed=0" and replays from those numbers
alone.

Draw order and the benign-first ``sampled_from`` tuples make shrinking
meaningful: Hypothesis shrinks integers towards their lower bound and a
``sampled_from`` towards its first element, so a counterexample that does
not need an edge (a long sequence, a huge bias, a near-null row, a
non-contiguous layout) shrinks away from it, and one that keeps it shows
that the edge matters.

Edges reachable from :func:`cases`:

* null rows anywhere and near-null rows whose |h|^2 underflows in the
  dtype under test (magnitudes from :func:`tiny_magnitudes`);
* large magnitudes (token scale up to 100, or 8 in the half formats) so scores pass
  the point where a naive ``exp`` overflows (88 in float32, 11 in float16);
* huge projection biases, so a null token has a huge key (bias scale up
  to 1e4; 8 in float16 / bfloat16, whose 11 / 8 bits cannot resolve
  scores of 1e6);
* masks random / causal / padding / with a fully masked row;
* tau and eps_den drawn from the operator's declared domain (``Domain.scalar``):
  a positive tau over 1e-4..1e3, a real one (pn_fir_tau's threshold) over
  -8..8, a positive eps_den over 1e-12..10;
* n from 1, lengths that are not multiples of block sizes (up to 17),
  odd head dims (widths 3, 6 with 1, 2 heads), batch up to ``batch_max``;
* contiguous, transposed and strided memory layouts.
"""
from __future__ import annotations

import math

import torch
from hypothesis import strategies as st

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties import backends
from tokenlaw.properties.case import LAYOUTS, MASK_KINDS, Case

LONG_LENGTHS = (13, 17)          # not multiples of 16/32/64-token blocks
ODD_WIDTHS = (3, 6)              # head dims 3 (1 or 2 heads)


def tiny_magnitudes(dtype: torch.dtype) -> tuple:
    """Row norms |h| whose square is subnormal or underflows to 0 in ``dtype``.

    sqrt(smallest normal) is the largest norm with a subnormal |h|^2; the
    smaller ones push |h|^2 through the subnormal range to zero.
    """
    root = math.sqrt(torch.finfo(dtype).tiny)
    return tuple(root * 2.0 ** -k for k in (1, 4, 12))


def magnitudes(dtype: torch.dtype) -> tuple[tuple, tuple]:
    """(token scales, bias scales), benign first, large enough to overflow a naive exp in ``dtype``.

    The half formats stop where scores stay resolvable (|s| of a few hundred, spacing
    < 1/4) and far from its range (65504): beyond that every implementation
    returns noise and the case says nothing about the operator.
    """
    if dtype in (torch.float16, torch.bfloat16):
        return (1.0, 4.0, 8.0), (1.0, 4.0, 8.0)
    return (1.0, 10.0, 100.0), (1.0, 100.0, 1e4)


def score_offsets(dtype: torch.dtype) -> tuple:
    """Row-wide score offsets, benign (0) first: just past where exp overflows in ``dtype``.

    exp(-max) overflows once every score of a row is below -log(max) (-11.1 in
    float16, -88.7 in float32 / bfloat16, -709.8 in float64) and exp(max) above
    it; a power normaliser's x^10 overflows past max^(1/10) (3.03 in float16,
    7.1e3 in float32), each kept only where the dtype resolves it (not bfloat16's 7.8e3, nor float64's 1e30).
    """
    info = torch.finfo(dtype)
    edges = [1.1 * math.log(info.max), 1.1 * info.max ** 0.1]
    # only offsets the dtype still resolves to about one unit (|offset| * eps <= 1): past that
    # every score of the row is rounding noise (bfloat16 at 7.8e3 has spacing 32) and the case
    # says nothing about the operator
    edges = [e for e in edges if e * info.eps <= 1.0]
    return (0.0,) + tuple(sorted({sign * e for e in edges for sign in (-1.0, 1.0)}))


def eps_dens(dtype: torch.dtype) -> tuple:
    """eps_den values, the declared default range's end first: down to 1e-8 (below float16's normal range)."""
    return (1e-6, 1e-1, 1.0, 1e-3, 1e-5, 1.5e-5, 1e-8)


def _check_positive_int(value, name):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InvalidArgument(f"{name}: expected an int >= 1, got {value!r}")


def _check_choices(values, allowed, name):
    if not values or any(v not in allowed for v in values):
        raise InvalidArgument(f"{name}: expected a non-empty subset of {allowed}, got {values!r}")


def within(domain, *, exponents: tuple, span: float):
    """Values of a scalar parameter drawn from its declared domain (an Interval), or None when
    the operator has no such parameter.  Half-lines are drawn log-uniformly off their end
    (``end +- 10**k``, k in ``exponents``, and the end itself when it is closed), bounded
    intervals uniformly, all reals uniformly over [-span, span]: every draw lies in the domain."""
    if domain is None:
        return st.none()
    lo, hi = domain.lo, domain.hi
    if math.isfinite(lo) and math.isfinite(hi):
        return st.floats(lo, hi, exclude_min=domain.lo_open, exclude_max=domain.hi_open)
    if math.isfinite(lo) or math.isfinite(hi):
        end, sign = (lo, 1.0) if math.isfinite(lo) else (hi, -1.0)
        off = st.integers(*exponents).map(lambda k: end + sign * 10.0 ** k)
        closed = not (domain.lo_open if math.isfinite(lo) else domain.hi_open)
        return off.filter(lambda v: v in domain) | st.just(end) if closed else off.filter(lambda v: v in domain)
    return st.floats(-span, span, allow_nan=False, allow_infinity=False)


def cases(op, dtype, *, n_max: int | None = None, batch_max: int = 2, scales=None, bias_scales=None,
          long_lengths=LONG_LENGTHS, widths=None, mask_kinds=MASK_KINDS, layouts=LAYOUTS,
          near_null: bool = True, wide_params: bool = True, offsets: bool = True, eps_draws: bool = True,
          backend: str = backends.EAGER.name):
    """Strategy of Cases for ``op`` in ``dtype`` on ``backend`` (keyword-only bounds, validated).

    >>> from tokenlaw.properties.catalogue import default_registry
    >>> strategy = cases(default_registry()["oattention"], torch.float16, n_max=4)
    """
    if dtype not in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
        raise InvalidArgument(f"dtype: expected a floating torch dtype, got {dtype!r}")
    longest = backends.get(backend).max_n     # e.g. long enough to cross a kernel's tile edges
    if n_max is None and longest is not None:
        n_max = max(op.domain.n_max, longest)
    n_max = op.domain.n_max if n_max is None else n_max
    _check_positive_int(n_max, "n_max")
    _check_positive_int(batch_max, "batch_max")
    default_scales, default_biases = magnitudes(dtype)
    scales = default_scales if scales is None else tuple(scales)
    bias_scales = default_biases if bias_scales is None else tuple(bias_scales)
    for name, values in (("scales", scales), ("bias_scales", bias_scales)):
        if not values or any(not (isinstance(s, (int, float)) and s > 0 and math.isfinite(s)) for s in values):
            raise InvalidArgument(f"{name}: expected positive finite magnitudes, got {values!r}")
    if any(not isinstance(n, int) or n < 1 for n in long_lengths):
        raise InvalidArgument(f"long_lengths: expected ints >= 1, got {long_lengths!r}")
    widths = tuple(op.domain.d_model) + ODD_WIDTHS if widths is None else tuple(widths)
    if not widths or any(not isinstance(w, int) or w < 1 for w in widths):
        raise InvalidArgument(f"widths: expected ints >= 1, got {widths!r}")
    _check_choices(tuple(mask_kinds), MASK_KINDS, "mask_kinds")
    _check_choices(tuple(layouts), LAYOUTS, "layouts")
    lengths = tuple(n for n in long_lengths if n > n_max)
    masked = op.domain.mask != "none"
    tau_domain, eps_domain = op.domain.scalar("tau"), op.domain.scalar("eps_den")
    tinies = tiny_magnitudes(dtype)
    offsets_ = score_offsets(dtype) if offsets else (0.0,)

    @st.composite
    def build(draw):
        # one draw in ten is a long length; 0 (short) is where shrinking goes
        if lengths and draw(st.integers(0, 9)) == 9:
            n = draw(st.sampled_from(lengths))
        else:
            n = draw(st.integers(1, n_max))
        null = tuple(draw(st.lists(st.integers(0, n - 1), max_size=n, unique=True)))
        d = draw(st.sampled_from(widths))
        heads = draw(st.sampled_from((None,) + tuple(h for h in (1, 2) if d % h == 0)))
        near = ()
        if near_null:
            near = tuple(draw(st.lists(st.integers(0, n - 1).filter(lambda i: i not in null),
                                       max_size=2, unique=True)))
        tau = eps_den = None
        if wide_params and draw(st.booleans()):
            tau = draw(within(tau_domain, exponents=(-4, 3), span=8.0))
            far = tuple(v for v in (30.0, -30.0, 1e3, -1e3) if tau_domain is not None and v in tau_domain)
            if far and tau_domain.lo == -math.inf and draw(st.integers(0, 3)) == 3:
                tau = draw(st.sampled_from(far))     # far outside the score range: every row silent, or none
            eps_den = draw(within(eps_domain, exponents=(-12, 1), span=8.0))
        elif eps_draws and eps_domain is not None and draw(st.booleans()):
            eps_den = draw(st.sampled_from(tuple(v for v in eps_dens(dtype) if v in eps_domain)))
        # one draw in two pins every score of a row just past an overflow edge of the dtype
        offset = draw(st.sampled_from(offsets_[1:])) if len(offsets_) > 1 and draw(st.booleans()) else 0.0
        return Case(
            op=op, dtype=dtype, n=n, null=null,
            batch=draw(st.integers(1, batch_max)),
            d=d,
            seed=draw(st.integers(0, 2 ** 16)),
            pos=draw(st.integers(0, n)),
            perm_seed=draw(st.integers(0, 10_000)),
            shift=draw(st.floats(-5.0, 5.0, allow_nan=False, allow_infinity=False)),
            mask_density=draw(st.sampled_from((1.0, 0.6, 0.3))),
            scale=draw(st.sampled_from(scales)),
            near_null=near,
            tiny=draw(st.sampled_from(tinies)) if near else 0.0,
            bias_scale=draw(st.sampled_from(bias_scales)),
            mask_kind=draw(st.sampled_from(tuple(mask_kinds))) if masked else "random",
            tau=tau, eps_den=eps_den, heads=heads,
            layout=draw(st.sampled_from(tuple(layouts))),
            backend=backend, score_offset=offset,
        )

    return build()
