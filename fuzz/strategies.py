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

Edges reachable from :func:`cases` (``docs/fuzz.md`` has the table per dtype):

* shapes where code branches: n by length band (:data:`LENGTH_BANDS`: 1,
  2..8, 9..32, 33..64, 65..128, 129..256, 257..:data:`LONGEST` = 260, past two
  128-token blocks plus one), the band index drawn first at its
  :data:`BAND_WEIGHTS` share (Hypothesis adds its own preference for the
  smallest index, measured in docs/fuzz.md), half of a band's draws on a tile
  or block edge (:data:`LENGTH_EDGES`); every band a cell can reach
  (:func:`reachable_bands`) is drawn in it at least once, and every block edge
  (:data:`BLOCK_EDGES`: 64, 65, 128, 129, 256, 257) exactly
  (:func:`banded_find`); widths d by class (:data:`WIDTH_WEIGHTS`: the
  declared ones, 5 or 7, the other small odd and prime :data:`ODD_WIDTHS`, a
  prime past 64, any width 1..:data:`D_MAX`) unless ``Domain.fixed_width``;
  batch 1..4; every head count dividing d;
* null rows anywhere and near-null rows (up to two, or in one draw in four
  every non-null row) whose |h|^2 is drawn log-uniformly over the dtype's
  whole normal exponent range (2^emin..1), or subnormal, or underflowing to 0
  (:func:`tiny_magnitudes`);
  and, with ``near_null_tokens`` (``differential``), a near-null token's norm 2^e
  over the dtype's exponents down to its smallest subnormal (:func:`token_exponents`);
* the combined extremes in one case (one draw in eight): the smallest listed
  eps_den with every score of a row at log(eps_den), past exp's overflow edge;
  and as an explicit edge (:data:`EXTREMES`) with everything else benign, which
  :func:`banded_find` draws after the search in every cell it applies to; likewise
  the explicit edges batch 4 (:data:`BATCH`), a token scale of 1e3 where it fits the
  declared limit (:data:`MAGNITUDE`) and, for a contract that asks, one near-null row
  (:data:`NEAR_NULL`);
* score magnitudes over the dtype's whole exponent range: token scale up to
  100 and bias scale up to 1e4 in every dtype, and row-wide score offsets at
  the overflow edges of exp and x^10 or log-uniform +-2^k up to max/2 (float64:
  float32's, see :func:`offset_exponents`) (:func:`score_offsets`);
* masks random / causal / padding / with a fully masked row;
* tau and eps_den drawn from the operator's declared domain (``Domain.scalar``)
  across the dtype's decades (:func:`decades`; float64 over float32's, which its
  float32 probe holds): a positive tau or eps_den as 10^k, k from the smallest
  normal's decade to the largest finite's; a real
  tau (pn_fir_tau's threshold) over -8..8, or one draw in two far outside
  the scores, +-10^k (k uniform) up to the dtype's largest finite (:func:`far_magnitudes`);
* contiguous, transposed and strided memory layouts.

The one thing left out is what the operator's ``Domain.limits`` declares for
a dtype (the score magnitudes past ``Limit.scores``), with its reason, which
the report prints.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import random

import torch
from hypothesis import find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from tokenlaw.operators import dtypes
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties import backends
from tokenlaw.operators.dtypes import name as dtype_name
from tokenlaw.properties.case import LAYOUTS, MASK_KINDS, Case
from .composite import composite
from .core_strategies import core_cases
from .regimes import LENGTH_BANDS, band_label, scored

# A score whose rounding in the dtype passes this (|S| u_D, judging.unresolved's criterion for a score offset)
# leaves an attention row's weights a function of the dtype's rounding, not a perturbation of the exact ones.
FIRST_ORDER_LIMIT = 1 / 16

# The longest n drawn: past two 128-token blocks plus one (2 * 128 + 1 = 257: a FlexAttention-style kernel's
# blocks, the compiled Triton tiles' 64 twice over), with a few tokens to spare.  tests/fuzz/test_fuzz_strategies.py
# ties it to the kernels' declared tiles and blocks.
LONGEST = 260
MEDIUM = 32                      # the top of the middle band: crosses 8- and 16-token tiles
# The length bands every cell that takes a length draws (docs/fuzz.md): (lo, hi), shortest first, hi None:
# unbounded (drawn up to LONGEST, or a backend's / contract's smaller declared top).  The same bands as the
# engine's drawn counts (fuzz.engine.LENGTH_BANDS on the engine branch): one 8-token tile, 32, 64, one
# 128-token block, two blocks, past two blocks.
# LENGTH_BANDS and band_label live in fuzz.regimes (below the engine and the strategies alike).
# How often each band is drawn, in fortieths (the band index is drawn first, benign first: shrinking
# lowers the band, then n within it).  The long bands are rare because they are dear (a case costs
# O(batch n^2 d)): their presence in every cell is guaranteed by :func:`banded_find` (examples of its own
# for a band the search missed), not by their share.  Measured shares: docs/fuzz.md, checked by
# tests/fuzz/test_fuzz_strategies.py.
BAND_WEIGHTS = (2, 18, 12, 4, 2, 1, 1)
# Lengths on a tile or block edge, drawn for half of a band's draws (the other half: any length in the band).
# Past LONG_COST tokens a case's batch and width are drawn small (batch 1..2, width classes up to 32):
# the long bands check what the length does; wide and batched cases are drawn at the shorter lengths.
LONG_COST = 32
LENGTH_EDGES = (7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 192, 255, 256, 257)
# The block edges: n on either side of a 64-token tile's and a 128-token block's end, where a kernel starts
# its second and third block (the adversary's length edges, fuzz.mutants.conditional.BLOCK_EDGES).  Every cell that
# reaches one draws it (:func:`reachable_lengths`): banded_find gives each one the search and the band fill
# never drew one example of its own, exactly at that length (``cases(band="n=256")``).  Drawn at random, an
# exact length in the 129..256 band has a share of about 1 in 5000 per example.
BLOCK_EDGES = (64, 65, 128, 129, 256, 257)
D_MAX = 128                      # the widest head dim a kernel declares (kernels.capabilities.HEAD_DIM_MAX)
# small odd and prime widths, drawn often (6: head dim 3 at 2 heads), and primes past 64 (a width that no
# power-of-two tile divides)
ODD_WIDTHS = (1, 2, 3, 5, 6, 7, 11, 13, 67, 127)
BATCH_MAX = 4
MAGNITUDES = (1.0, 10.0, 30.0, 100.0)   # token scales: scores ~ scale^2, past exp's overflow in every dtype
BIAS_SCALES = (1.0, 10.0, 100.0, 1e4)   # projection bias scales: a null token gets a key ~ 1e4


def tiny_magnitudes(dtype: torch.dtype) -> tuple:
    """Row norms |h| whose square is subnormal or underflows to 0 in ``dtype``.

    sqrt(smallest normal) is the largest norm with a subnormal |h|^2; the
    smaller ones push |h|^2 through the subnormal range to zero.
    """
    root = math.sqrt(torch.finfo(dtype).tiny)
    return tuple(root * 2.0 ** -k for k in (1, 4, 12))


def magnitudes(dtype: torch.dtype, limit=None, d: int = 1) -> tuple[tuple, tuple]:
    """(token scales, bias scales), benign first: the same in every dtype, past where a naive exp overflows.

    ``limit`` (a :class:`~tokenlaw.operators.registry.Limit` the operator declares for ``dtype``)
    keeps only the scales whose nominal score and |h|^2 at width ``d`` stay within it.
    """
    return fitting(MAGNITUDES, limit, d), fitting(BIAS_SCALES, limit, d, bias=True)


def nominal_score(scale: float, d: int) -> float:
    """The score magnitude a token (or bias) scale gives at width d: 4 sigma of scale^2 sqrt(d)
    (q.k / sqrt(dh) of two d-vectors with entries ~ scale, at one head)."""
    return 4.0 * scale * scale * math.sqrt(d)


def nominal_norm2(scale: float, d: int) -> float:
    """The squared norm |h|^2 of a token with d entries ~ N(0, scale^2): twice its mean scale^2 d."""
    return 2.0 * scale * scale * d


def fitting(scales: tuple, limit, d: int, *, bias: bool = False, host: bool = False) -> tuple:
    """The scales within ``limit`` at width ``d``: :func:`nominal_score` within ``limit.scores`` and,
    for token scales, :func:`nominal_norm2` within ``limit.norm2`` (all without a limit; the smallest
    when none fits).  In a host (``host``) the value bias enters the residual stream that the next
    block's presence and scores read, so a bias scale must fit both, and with a margin of 4 in scale
    per block boundary (16 in magnitude) for what the stream gains over the blocks."""
    if limit is None:
        return tuple(scales)
    margin = 16.0 if host else 1.0

    def fits(s):
        ok = limit.scores is None or margin * nominal_score(s, d) <= limit.scores
        needs_norm = not bias or host
        return ok and (not needs_norm or limit.norm2 is None or margin * nominal_norm2(s, d) <= limit.norm2)

    return tuple(s for s in scales if fits(s)) or (min(scales),)


def near_null_exponents(dtype: torch.dtype) -> tuple[int, int]:
    """(lo, hi) of the binary exponent e of a near-null row's |h|^2 = 2^e: the dtype's whole normal
    range, from its smallest normal (2^-14 in float16, 2^-126 in float32) up to 1."""
    return int(math.log2(torch.finfo(dtype).tiny)), 0


def token_exponents(dtype: torch.dtype) -> tuple[int, int]:
    """(lo, hi) of the binary exponent e of a near-null token's norm |x_i| = 2^e where the whole dtype's
    exponent range is drawn (``cases(near_null_tokens=True)``: ``differential``): from its smallest
    subnormal (2^-24 in float16, 2^-133 in bfloat16, 2^-149 in float32, float32's for float64) up to 1, so
    the token's entries are normal, subnormal or flushed to 0 when rounded to the dtype.

    >>> token_exponents(torch.float16), token_exponents(torch.bfloat16), token_exponents(torch.float32)
    ((-24, 0), (-133, 0), (-149, 0))
    """
    info = torch.finfo(torch.float32 if dtype == torch.float64 else dtype)
    return int(math.log2(info.smallest_normal * info.eps)), 0


def offset_exponents(dtype: torch.dtype, limit=None) -> tuple[int, int]:
    """(lo, hi) of k for the log-uniform score offsets +-2^k: from 1/4 up to half the dtype's largest
    finite (2^14 in float16, 2^126 in float32 / bfloat16), or to ``limit.scores`` / ``limit.offset``.  float64 stops at
    float32's 2^126: a float64 cell's bound is measured with a float32 probe (properties/tolerance.py),
    which must hold the offset's projection biases."""
    probe = torch.float32 if dtype == torch.float64 else dtype
    hi = math.frexp(torch.finfo(probe).max)[1] - 2          # floor(log2(max)) - 1
    for cap in (() if limit is None else (limit.scores, limit.offset)):
        if cap is not None:
            hi = min(hi, int(math.floor(math.log2(cap))))
    return -2, max(hi, -2)


def decades(dtype: torch.dtype) -> tuple[int, int]:
    """(lo, hi) of k for a positive scalar drawn as 10^k: the smallest normal's decade to the largest
    finite's (-4..4 in float16, -37..38 in float32 / bfloat16).  float64 draws float32's decades: its
    cells' bounds are measured with a float32 probe (properties/tolerance.py), in which a tau below
    1e-45 is 0 and the probe measures another operator."""
    info = torch.finfo(torch.float32 if dtype == torch.float64 else dtype)
    return math.ceil(math.log10(info.tiny)), math.floor(math.log10(info.max))


def far_magnitudes(dtype: torch.dtype) -> tuple:
    """|tau| of a real threshold far outside the scores: 10^k for k = 1 up to the dtype's largest
    finite decade, then that largest finite itself (65504 in float16: S - tau is then past the
    dtype's range for any positive score); float64 as float32, its probe.  A tau past the largest
    finite is no input of the dtype (the score laws build S from tau in it)."""
    info = torch.finfo(torch.float32 if dtype == torch.float64 else dtype)
    return tuple(10.0 ** k for k in range(1, math.floor(math.log10(info.max)) + 1)) + (float(info.max),)


def score_offsets(dtype: torch.dtype, limit=None) -> tuple:
    """Row-wide score offsets, benign (0) first: just past where exp overflows in ``dtype``.

    exp(-max) overflows once every score of a row is below -log(max) (-11.1 in
    float16, -88.7 in float32 / bfloat16, -709.8 in float64) and exp(max) above
    it; a power normaliser's x^10 overflows past max^(1/10) (3.03 in float16,
    7.1e3 in float32 and bfloat16, 1.8e30 in float64).  An operator's ``limit`` drops
    the edges past ``limit.scores`` and ``limit.offset``.
    """
    info = torch.finfo(dtype)
    edges = [1.1 * math.log(info.max), 1.1 * info.max ** 0.1]
    for cap in (() if limit is None else (limit.scores, limit.offset)):
        if cap is not None:
            edges = [e for e in edges if e <= cap]
    return (0.0,) + tuple(sorted({sign * e for e in edges for sign in (-1.0, 1.0)}))


def eps_dens(dtype: torch.dtype) -> tuple:
    """eps_den values, the declared default range's end first: down to 1e-8 (below float16's normal
    range), then a dozen of the dtype's decades spread over all of them, small and large (:func:`decades`)."""
    lo, hi = decades(dtype)
    spread = set(range(lo, hi + 1, max(1, (hi - lo) // 12))) | {lo, hi}
    return (1e-6, 1e-1, 1.0, 1e-3, 1e-5, 1.5e-5, 1e-8) + tuple(
        10.0 ** k for k in sorted(spread - {-8, -6, -5, -3, -1, 0}, key=lambda k: (abs(k), k)))


# The explicit edges of a cell (:func:`reachable_edges`): points of the domain where several extremes meet,
# which the seeded search reaches only by luck.  ``extremes``: the combined extremes of :func:`combined_extremes`
# with everything else benign (no null or near-null row, the smallest token and bias scales, n <= 8), where
# a defect there is not hidden behind an example the error model cannot judge.  banded_find gives each edge
# FILL examples of its own (``cases(band=edge)``) whenever the search found nothing.
EXTREMES = "extremes"
# ``batch``: the largest batch (``batch_max``, 4) at short lengths, everything else benign: Hypothesis draws a
# batch in 1..4 towards 1 (measured: 89 of 106 examples at batch 1, one at batch 4, presence spec_reference
# float64 seed 0), so a kernel wrong only on a batch of 4 went unseen by every reference comparison.
BATCH = "batch"
# ``near_null``: one near-null row of norm 2^e, e in NEAR_NULL_EDGE, everything else benign, for a contract that
# draws no near-null rows otherwise (``near_null_edge=True``: spec_reference).  |h|^2 = 2^2e stays a normal
# number in float32 (>= 2^-60), so its float32 probe rounds the row as it rounds any other; the search's
# near-null draws, whose |h|^2 goes down to the dtype's subnormals, stay out of such a contract.
NEAR_NULL = "near_null"
NEAR_NULL_EDGE = (-30, -14)       # every entry of such a row is below 1e-4 (2^-14 = 6.1e-5)
# ``magnitude``: the token scale LARGE (a decade past the drawn MAGNITUDES: max |x| > 1e3), everything else
# benign, where it fits the operator's declared limit in the dtype (:func:`large_widths`); elsewhere a draw
# there is outside the domain, not a finding.
MAGNITUDE = "magnitude"
LARGE = 1e3
# ``empty_row``: a masked operator's fully masked row, everything else benign, in every cell whose mask draws
# include one (issue 43, the standing adversary: at seed 0 no spec_reference or unmasked cell of the softmax
# hosts drew the search's ``empty_row`` mask in 111 examples -- Hypothesis draws the last of a
# ``sampled_from`` rarely and repeats what it drew -- so a host wrong only when some query sees no key held
# everywhere).  Mask kind ``empty_row`` (row pos % n sees no key) at n >= 2.  (A softmax host of depth 2 or
# more is NaN on every row there, its declared violation of ``finite``: the NaN row's values reach every
# row through the next block's weights @ V, 0 x NaN = NaN, even where the mask hides them.)
EMPTY_ROW = "empty_row"
# ``wide``: a width past 16 (d in WIDE_FROM..the cell's top), everything else benign, in every cell that draws
# its widths (not ``fixed_width``, no contract ``widths``) and reaches one: Hypothesis draws the width class
# and the width within it towards the smallest (measured at seed 0: onorm_ln's spec_reference float64 cell
# drew no d >= 17 in 111 examples, its float32 differential 2 in 545 calls), so a defect only at wide
# tokens was judged by no reference comparison.
WIDE = "wide"
WIDE_FROM = 17
EDGES = (EXTREMES, BATCH, NEAR_NULL, MAGNITUDE, EMPTY_ROW, WIDE)
EDGE_LENGTH = 8           # the longest n of an explicit edge's examples
# The edges about one row beside others (a near-null row, a fully masked row) draw n >= 2: at n = 1 the row
# is the whole input, which the search draws anyway (n = 1 is its simplest length), and a change to the
# other rows, or to what they see, has nowhere to show.
BESIDE = (NEAR_NULL, EMPTY_ROW)


def combined_extremes(op, dtype, *, eps_draws: bool = True, offsets: bool = True) -> tuple | None:
    """(eps_den, score offset) where the extremes of an eps_den and a score offset meet in ``dtype``: the
    smallest listed eps_den (:func:`eps_dens`) in the operator's domain with every score of a row at
    log(eps_den) (float16: eps_den 1e-8, below its subnormals, and scores near -18.4, past exp's overflow
    edge), where eps_den exp(-M) is as large as the row's own mass; None where the operator has no eps_den,
    the bounds draw no eps_den list or no offset, or its declared limit keeps scores below -log(eps_den).

    >>> from tokenlaw.properties.catalogue import default_registry
    >>> eps, offset = combined_extremes(default_registry()["oattention"], torch.float16)
    >>> eps, round(offset, 2)
    (1e-08, -18.42)
    """
    eps_domain = op.domain.scalar(op.domain.roles.eps_den)
    if eps_domain is None or not eps_draws or not offsets:
        return None
    pool = tuple(v for v in eps_dens(dtype) if v in eps_domain)
    if not pool:
        return None
    low = math.log(min(pool))
    limit = op.domain.limit(dtype_name(dtype))
    caps = () if limit is None else tuple(c for c in (limit.scores, limit.offset) if c is not None)
    return (min(pool), low) if all(-low <= c for c in caps) else None


def large_widths(op, dtype, *, scales=None, widths=None) -> tuple:
    """The widths at which the token scale :data:`LARGE` fits the operator's declared limit in ``dtype``
    (:func:`fitting`, strictly: no fallback to the smallest scale), among the widths the cell draws (``widths``,
    the declared ones when ``fixed_width``, else 1..D_MAX or the domain's ``d_max``); () where none does, or where
    the contract bounds the token scales (``scales``: it declares the magnitudes it can judge).  For an
    operator with attention scores, also where the dtype resolves the nominal score (4e6 sqrt(d) at this scale)
    to within :data:`FIRST_ORDER_LIMIT` of a unit, the criterion judging.unresolved applies to a score offset: in
    float16, bfloat16 and float32 such scores are rounded by 0.5 to 3e4 units, the weights are a function of
    the dtype's rounding, and no comparison can judge them (measured: entmax15 and sparsemax package_agreement
    in bfloat16 at d = 1, seed 0, 0.75 against a bound of 0.0625).  So sdpa draws it in float64 only.

    >>> from tokenlaw.properties.catalogue import default_registry
    >>> reg = default_registry()
    >>> large_widths(reg["presence"], torch.float16), len(large_widths(reg["presence"], torch.float32))
    ((), 128)
    >>> large_widths(reg["sdpa"], torch.float32), len(large_widths(reg["sdpa"], torch.float64))
    ((), 128)
    """
    if scales is not None:
        return ()
    limit = op.domain.limit(dtype_name(dtype))
    host = "host" in op.traits
    if widths is not None:
        pool = tuple(widths)
    elif op.domain.fixed_width:
        pool = tuple(op.domain.d_model)
    else:
        pool = tuple(range(1, (D_MAX if op.domain.d_max is None else min(D_MAX, op.domain.d_max)) + 1))
    u = dtypes.UNIT_ROUNDOFF[dtype]
    resolved = (lambda d: nominal_score(LARGE, d) * u <= FIRST_ORDER_LIMIT) if scored(op) else (lambda d: True)
    return tuple(d for d in pool if LARGE in fitting((1.0, LARGE), limit, d, host=host) and resolved(d))


def reachable_edges(op, dtype, *, eps_draws: bool = True, offsets: bool = True, core: str | None = None,
                    batch_max: int = BATCH_MAX, near_null: bool = True, near_null_edge: bool = False,
                    scales=None, widths=None, mask_kinds=MASK_KINDS, **_bounds) -> tuple:
    """The explicit edges (:data:`EDGES`) a cell with these bounds (a contract's ``fuzz_bounds``) has (a q/k/v
    core case has none): the combined extremes where :func:`combined_extremes` applies; the largest batch where
    it is 3 or more; a near-null row where the contract asks for one (``near_null_edge``) and draws none itself;
    the token scale :data:`LARGE` where it fits (:func:`large_widths`); a fully masked row where the operator
    takes a mask and the cell's mask kinds include ``empty_row``; a width past 16 where the cell draws one
    (:func:`wide_widths`)."""
    if core is not None:
        return ()
    out = ()
    if combined_extremes(op, dtype, eps_draws=eps_draws, offsets=offsets) is not None:
        out += (EXTREMES,)
    if batch_max >= 3:
        out += (BATCH,)
    if near_null_edge and not near_null:
        out += (NEAR_NULL,)
    if large_widths(op, dtype, scales=scales, widths=widths):
        out += (MAGNITUDE,)
    if op.domain.mask != "none" and "empty_row" in tuple(mask_kinds):
        out += (EMPTY_ROW,)
    if wide_widths(op, widths):
        out += (WIDE,)
    return out


def wide_widths(op, widths=None) -> tuple:
    """(lo, hi): the widths past 16 the explicit edge :data:`WIDE` draws for ``op`` (a cell drawing its own
    widths, up to D_MAX or the domain's ``d_max``), or () where the cell draws none there (``fixed_width``, a
    contract's own ``widths``, ``d_max`` < :data:`WIDE_FROM`)."""
    if widths is not None or op.domain.fixed_width:
        return ()
    top = D_MAX if op.domain.d_max is None else min(D_MAX, op.domain.d_max)
    return (WIDE_FROM, top) if top >= WIDE_FROM else ()


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


class _Outside:
    """The predicate ``i not in null`` as an object: Hypothesis parses a lambda's source for the bounds it
    implies each time a filter is built (a tenth of a case's drawing time); it leaves an object alone."""

    def __init__(self, null):
        self.null = null

    def __call__(self, i):
        return i not in self.null


def _cache(make):
    """``make`` memoised on its (hashable) arguments: one strategy object per n, d or (n, null)."""
    return functools.lru_cache(maxsize=None)(make)


def divisors(d: int) -> tuple:
    """Every head count that divides width ``d``."""
    return tuple(h for h in range(1, d + 1) if d % h == 0)


def length_band(n: int) -> str:
    """The label of the band of :data:`LENGTH_BANDS` holding length ``n``.

    >>> length_band(1), length_band(33), length_band(129), length_band(300)
    ('1', '33..64', '129..256', '257+')
    """
    _check_positive_int(n, "n")
    return next(band_label(b) for b in LENGTH_BANDS if n >= b[0] and (b[1] is None or n <= b[1]))


def _top(n_long: int, backend: str) -> int:
    longest = backends.get(backend).max_n
    top = LONGEST if longest is None else longest
    return top if n_long is None else n_long


def reachable_bands(*, n_max: int = 6, n_long: int | None = None, only_lengths=None,
                    backend: str = backends.EAGER.name, **_bounds) -> tuple:
    """The labels of the length bands a cell with these bounds (``cases``' keywords: a contract's
    ``fuzz_bounds``) draws from; the others it cannot reach (a backend's ``max_n``, a contract's
    ``n_long`` or ``only_lengths``), and a report says so rather than calling them missed.

    >>> reachable_bands()[-1], reachable_bands(n_long=12)
    ('257+', ('1', '2..8', '9..32'))
    """
    if only_lengths is not None:
        return tuple(dict.fromkeys(length_band(n) for n in sorted(only_lengths)))
    top = _top(n_long, backend)
    if not top:
        return tuple(dict.fromkeys(length_band(n) for n in range(1, n_max + 1)))
    return tuple(band_label(b) for b in LENGTH_BANDS if b[0] <= top)


def length_label(n: int) -> str:
    """How :func:`cases` (``band=``) and a report name a block edge of :data:`BLOCK_EDGES`: ``n=256``."""
    return f"n={n}"


def _length_edge(label) -> int | None:
    """The length a :func:`length_label` names, or None for any other label."""
    if isinstance(label, str) and label.startswith("n=") and label[2:].isdigit():
        return int(label[2:])
    return None


def reachable_lengths(*, n_max: int = 6, n_long: int | None = None, only_lengths=None,
                      backend: str = backends.EAGER.name, **_bounds) -> tuple:
    """The block edges (:data:`BLOCK_EDGES`) a cell with these bounds reaches: those up to its longest n; none
    where a contract lists its own lengths (``only_lengths``) or draws only short ones (``n_long=0``).

    >>> reachable_lengths(), reachable_lengths(n_long=130), reachable_lengths(n_long=0)
    ((64, 65, 128, 129, 256, 257), (64, 65, 128, 129), ())
    """
    if only_lengths is not None:
        return ()
    top = _top(n_long, backend)
    return tuple(n for n in BLOCK_EDGES if top and n <= top)


def missed_bands(counts: dict, reachable: tuple) -> tuple:
    """The reachable bands a cell drew no example in (``counts``: {band label: examples})."""
    return tuple(b for b in reachable if not counts.get(b))


def _within(lo: int, hi: int):
    """n in lo..hi: half any length (shrinks towards lo), half a tile or block edge in the band (or hi)."""
    if lo == hi:
        return st.just(lo)
    edges = tuple(sorted({n for n in LENGTH_EDGES + (hi,) if lo <= n <= hi}))
    return st.integers(lo, hi) | st.sampled_from(edges)


def _banded(top: int, band: str | None = None):
    """n over the bands of :data:`LENGTH_BANDS` up to ``top``, each at its :data:`BAND_WEIGHTS` share
    (only in ``band``, by label, when given: :func:`banded_find`'s one example in a band the search missed).

    The band is drawn first, as an integer mapped monotonically to bands (0: n = 1, where it shrinks), so
    a counterexample that does not need a long sequence shrinks to a shorter band, then within it."""
    bands = [(lo, top if hi is None else min(hi, top)) for lo, hi in LENGTH_BANDS if lo <= top]
    weights = BAND_WEIGHTS[:len(bands)]
    if band == PAST_ONE:
        bands, weights = bands[1:], weights[1:]
        band = None
    if band is not None:
        lo, hi = next(b for b in bands if length_band(b[0]) == band)
        return _within(lo, hi)
    strategies = [_within(lo, hi) for lo, hi in bands]
    bounds = [sum(weights[:t + 1]) for t in range(len(weights))]
    pick = st.integers(0, bounds[-1] - 1).map(lambda i: next(t for t, b in enumerate(bounds) if i < b))
    return pick.flatmap(lambda t: strategies[t])


def lengths(op, *, n_max: int, n_long: int, band: str | None = None):
    """Strategy of sequence lengths: the bands of :data:`LENGTH_BANDS` up to ``n_long`` (see :func:`_banded`);
    only 1..n_max when ``n_long`` is 0."""
    if not n_long:
        short = [n for n in range(1, n_max + 1) if band is None or length_band(n) == band or (band == PAST_ONE and n > 1)]
        return st.integers(short[0], short[-1])
    return _banded(n_long, band)


FILL = 2      # examples banded_find gives a band the seeded search never drew
# The label of the lengths past 1 (``cases(band=PAST_ONE)``: every band but n = 1, each at its share): the
# engine's judged top-up draws there when the search's n = 1 examples judged nothing (fuzz.engine._top_up).
PAST_ONE = "2+"


def fill_size(label: str) -> int:
    """The examples banded_find (or the engine's regime fill) gives what ``label`` names: one at a block edge
    (:func:`length_label`), :data:`FILL` for a band, an explicit edge or a regime."""
    return 1 if _length_edge(label) is not None else FILL


def banded_find(strategy_in, is_violation, cfg, seed: int, reachable: tuple, edges: tuple = (), lengths: tuple = ()):
    """``hypothesis.find`` over ``strategy_in(None)``, then one example in each reachable band it drew none in,
    then one at each block edge of ``lengths`` (:func:`reachable_lengths`) not drawn yet, then each explicit edge
    of ``edges`` (:func:`reachable_edges`).

    The seeded search draws each band at its :data:`BAND_WEIGHTS` share, which is no guarantee: Hypothesis
    favours the smallest choices (measured: n = 1 at 2-3x its share), and over 100 examples a tenth-share
    band goes undrawn in about one cell in twenty.  So when the search finds nothing, every band of
    ``reachable`` (:func:`reachable_bands`) it never drew gets :data:`FILL` examples of its own (``strategy_in(label)``,
    the same seed; shrunk within the band if it violates): the default check draws every length band in
    every cell that takes a length.  The search's own draws are untouched (a seed draws what it drew).
    Before that, each block edge (``lengths``: n = 64, 65, 128, 129, 256, 257 where the cell reaches them) the
    search never drew gets one example of its own, at exactly that length (``strategy_in("n=256")``:
    Hypothesis' first, simplest example there, batch 1 at the declared width), and a band that holds one is
    then drawn: its block edges are its fill (the long bands' fill costs what it did, two examples a band, at
    the lengths where a kernel's blocks end).  The default check draws every block edge in every cell that
    takes a length.  Each explicit edge (``edges``) then gets :data:`FILL` examples of its own (``strategy_in(edge)``), drawn
    whatever the search drew: the search may pass by an edge's point, but with other extremes beside it.
    Raises NoSuchExample when nothing violated, like ``find``."""
    drawn, lengths_drawn = set(), set()

    def judged(case):
        drawn.add(length_band(case.n))
        lengths_drawn.add(case.n)
        return is_violation(case)

    try:
        return find(strategy_in(None), judged, settings=cfg, random=random.Random(seed))
    except NoSuchExample:
        for band in reachable:
            # the band's block edges first, one example each; a band with none (1, 2..8, 9..32) the search
            # missed gets FILL examples anywhere in it
            for n in (n for n in lengths if length_band(n) == band and n not in lengths_drawn):
                try:
                    return find(strategy_in(length_label(n)), judged, settings=settings(cfg, max_examples=1),
                                random=random.Random(seed))
                except NoSuchExample:
                    pass
            if band not in drawn:
                try:
                    return find(strategy_in(band), judged, settings=settings(cfg, max_examples=FILL),
                                random=random.Random(seed))
                except NoSuchExample:
                    pass
        for edge in edges:
            try:
                return find(strategy_in(edge), judged, settings=settings(cfg, max_examples=FILL),
                            random=random.Random(seed))
            except NoSuchExample:
                pass
        raise


# How a width is drawn, by class (drawn first, the declared widths first, where it shrinks), in twentieths:
# the declared d_model, 5 or 7 (the smallest odd primes past a power-of-two tile of 4), the other small
# odd and prime ODD_WIDTHS, a prime past 64 (67, 127: no power-of-two tile divides it), any width.
WIDTH_WEIGHTS = (7, 4, 3, 2, 4)
PRIME_WIDTHS = (67, 127)


def widths_of(op, widths=None, *, top: int | None = None):
    """Strategy of model widths, by class (:data:`WIDTH_WEIGHTS`): the declared ``d_model``, 5 or 7, the
    other small odd and prime :data:`ODD_WIDTHS`, a prime past 64, any width 1..D_MAX (1..``Domain.d_max``
    when the operator declares one, 1..``top`` when given: a class with no width under it is not drawn);
    only ``d_model`` when the operator's domain is ``fixed_width``, only ``widths`` when given."""
    if widths is not None:
        return st.sampled_from(widths)
    declared = st.sampled_from(tuple(op.domain.d_model))
    if op.domain.fixed_width:
        return declared
    top = min(D_MAX if op.domain.d_max is None else min(D_MAX, op.domain.d_max), top or D_MAX)
    small = tuple(w for w in (5, 7) if w <= top)
    others = tuple(w for w in ODD_WIDTHS if w <= top and w not in (5, 7) + PRIME_WIDTHS)
    wide = tuple(w for w in PRIME_WIDTHS if w <= top)
    pools = (tuple(op.domain.d_model), small, others, wide)
    classes = [(w, st.sampled_from(p)) for w, p in zip(WIDTH_WEIGHTS, pools) if p] + [(WIDTH_WEIGHTS[-1],
                                                                                       st.integers(1, top))]
    bounds = [sum(w for w, _ in classes[:t + 1]) for t in range(len(classes))]
    pick = st.integers(0, bounds[-1] - 1).map(lambda i: next(t for t, b in enumerate(bounds) if i < b))
    return pick.flatmap(lambda t: classes[t][1])


def cases(op, dtype, *, n_max: int | None = None, n_long: int | None = None, batch_max: int = BATCH_MAX,
          scales=None, bias_scales=None, widths=None, mask_kinds=MASK_KINDS, layouts=LAYOUTS,
          near_null: bool = True, wide_params: bool = True, offsets: bool = True, eps_draws: bool = True,
          only_lengths=None, backend: str = backends.EAGER.name, band: str | None = None,
          core: str | None = None, near_null_tokens: bool = False, near_null_edge: bool = False):
    """Strategy of Cases for ``op`` in ``dtype`` on ``backend`` (keyword-only bounds, validated).

    n_max:  top of the frequent short lengths (default ``op.domain.n_max``);
    n_long: top of the rarer long ones (default :data:`LONGEST`, or the backend's declared
            ``max_n``; 0 draws only 1..n_max);
    only_lengths: the only lengths drawn, shortest first (where it shrinks), e.g. a block law's lengths around
            a tile edge; they replace the bands above;
    band:   only lengths in this band of :data:`LENGTH_BANDS` (its label, one of :func:`reachable_bands`), or
            an explicit edge (:data:`EDGES`, one of :func:`reachable_edges`): that edge's cases, or a block
            edge's :func:`length_label` (``"n=256"``, one of :func:`reachable_lengths`): n exactly that; or
            :data:`PAST_ONE` (``"2+"``): every band but n = 1, each at its share (the engine's judged top-up);
    near_null_tokens: a near-null row's norm is drawn as 2^e over the dtype's whole exponent range down to
            its smallest subnormal (:func:`token_exponents`), not |h|^2 over its normal range;
    near_null_edge: with ``near_null=False``, the explicit edge :data:`NEAR_NULL` (one near-null row whose
            |h|^2 is normal in float32) is drawn all the same.

    >>> from tokenlaw.properties.catalogue import default_registry
    >>> strategy = cases(default_registry()["oattention"], torch.float16, n_max=4)

    core:   a law at the attention core: q/k/v cases of that form instead (``fuzz/core_strategies.py``).
    """
    if core is not None:
        return core_cases(op, dtype, form=core, backend=backend)
    if dtype not in dtypes.FLOATS:
        raise InvalidArgument(f"dtype: expected a floating torch dtype, got {dtype!r}")
    n_max = op.domain.n_max if n_max is None else n_max
    _check_positive_int(n_max, "n_max")
    if n_long is None:
        n_long = _top(None, backend)    # LONGEST, or a backend's declared longest worth drawing (an interpreter)
    if not isinstance(n_long, int) or isinstance(n_long, bool) or n_long < 0:
        raise InvalidArgument(f"n_long: expected an int >= 0, got {n_long!r}")
    n_max = min(n_max, n_long) if n_long else n_max
    exact_n = _length_edge(band)
    if exact_n is not None:
        if exact_n not in reachable_lengths(n_max=n_max, n_long=n_long, only_lengths=only_lengths, backend=backend):
            raise InvalidArgument(f"band: the block edge {band!r} is not reached here (block edges here: "
                                  f"{tuple(map(length_label, reachable_lengths(n_long=n_long, only_lengths=only_lengths, backend=backend)))})")
        band = None
    edge = band if band in EDGES else None
    if edge is not None:
        here = reachable_edges(op, dtype, eps_draws=eps_draws, offsets=offsets, batch_max=batch_max,
                               near_null=near_null, near_null_edge=near_null_edge, scales=scales, widths=widths,
                               mask_kinds=mask_kinds)
        if edge not in here:
            raise InvalidArgument(f"band: the edge {edge!r} does not apply to {op.name} in {dtype_name(dtype)} "
                                  f"(edges here: {here})")
        band = None
    _check_positive_int(batch_max, "batch_max")
    limit = op.domain.limit(dtype_name(dtype))
    scales = MAGNITUDES if scales is None else tuple(scales)
    bias_scales = BIAS_SCALES if bias_scales is None else tuple(bias_scales)
    for name, values in (("scales", scales), ("bias_scales", bias_scales)):
        if not values or any(not (isinstance(s, (int, float)) and s > 0 and math.isfinite(s)) for s in values):
            raise InvalidArgument(f"{name}: expected positive finite magnitudes, got {values!r}")
    if widths is not None:
        widths = tuple(widths)
        if not widths or any(not isinstance(w, int) or isinstance(w, bool) or w < 1 for w in widths):
            raise InvalidArgument(f"widths: expected ints >= 1, got {widths!r}")
    _check_choices(tuple(mask_kinds), MASK_KINDS, "mask_kinds")
    _check_choices(tuple(layouts), LAYOUTS, "layouts")
    masked = op.domain.mask != "none"
    host = "host" in op.traits
    tau_domain, eps_domain = op.domain.scalar(op.domain.roles.threshold), op.domain.scalar(op.domain.roles.eps_den)
    tinies = tiny_magnitudes(dtype)
    e_lo, e_hi = near_null_exponents(dtype)
    # |h| of a near-null row: |h|^2 = 2^e log-uniform over the normal range, else subnormal / zero
    tiny_draws = st.integers(e_lo, e_hi).map(lambda e: 2.0 ** (e / 2)) | st.sampled_from(tinies)
    if near_null_tokens:
        # |x_i| = 2^e, e uniform over the dtype's exponents down to its smallest subnormal: entries normal,
        # subnormal or flushed to 0 in the dtype (differential: a kernel that flushes or drops them)
        tiny_draws = st.integers(*token_exponents(dtype)).map(lambda e: 2.0 ** e)
    offsets_ = score_offsets(dtype, limit) if offsets else (0.0,)
    k_lo, k_hi = offset_exponents(dtype, limit)
    log_offsets = st.tuples(st.sampled_from((-1.0, 1.0)), st.integers(k_lo, k_hi)).map(lambda t: t[0] * 2.0 ** t[1])
    tens = decades(dtype)
    far_taus = far_magnitudes(dtype)
    widths_ = widths_of(op, widths)
    long_widths = widths_of(op, widths, top=32)
    if only_lengths is not None:
        if not only_lengths or any(not isinstance(n, int) or isinstance(n, bool) or n < 1 for n in only_lengths):
            raise InvalidArgument(f"only_lengths: expected ints >= 1, got {only_lengths!r}")
        listed = tuple(n for n in sorted(set(only_lengths))
                       if band is None or length_band(n) == band or (band == PAST_ONE and n > 1))
        if not listed:
            raise InvalidArgument(f"band: expected one of {reachable_bands(only_lengths=only_lengths)}, got {band!r}")
        n_draws = st.sampled_from(listed)
    else:
        if band is not None and band not in reachable_bands(n_max=n_max, n_long=n_long, backend=backend) + (
                (PAST_ONE,) if max(n_long, n_max) > 1 else ()):
            raise InvalidArgument(f"band: expected one of {reachable_bands(n_max=n_max, n_long=n_long, backend=backend)}, "
                                  f"got {band!r}")
        n_draws = lengths(op, n_max=n_max, n_long=n_long, band=band)
    if edge is not None:
        n_top = min(EDGE_LENGTH, n_long or n_max)
        n_draws = st.integers(min(2, n_top) if edge in BESIDE else 1, n_top)
    if exact_n is not None:
        n_draws = st.just(exact_n)

    # Every strategy a draw uses is built once here (per n or d where it depends on them), not inside
    # ``build``: constructing and validating a fresh strategy per draw was most of a cheap cell's time
    # (measured: 4.3 ms of Hypothesis bookkeeping per case).  The choices drawn are the same, in the same
    # order, so a seed draws the same cases as before.
    per_n = _cache(lambda n: (st.lists(st.integers(0, n - 1), max_size=n, unique=True), st.integers(0, n)))
    per_d = _cache(lambda d: (st.sampled_from((None,) + divisors(d)),
                              st.sampled_from(fitting(scales, limit, d, host=host)),
                              st.sampled_from(fitting(bias_scales, limit, d, bias=True, host=host))))
    near_of = _cache(lambda n, null: st.lists(st.integers(0, n - 1).filter(_Outside(null)), max_size=2, unique=True))
    quarter, coin = st.integers(0, 3), st.booleans()
    tau_draws = within(tau_domain, exponents=tens, span=8.0)
    eps_within = within(eps_domain, exponents=tens, span=8.0)
    far_sign, far_draws = st.sampled_from((1.0, -1.0)), st.sampled_from(far_taus)
    eps_listed = (st.sampled_from(tuple(v for v in eps_dens(dtype) if v in eps_domain))
                  if eps_draws and eps_domain is not None else None)
    pinned_offsets = st.sampled_from(offsets_[1:]) if len(offsets_) > 1 else None
    # the combined extremes (one draw in eight, where both apply): the smallest listed eps_den with every
    # score of a row at log(eps_den) (float16: eps_den 1e-8 below its subnormals, scores near -18.4, past
    # exp's overflow edge), where eps_den exp(-M) is as large as the row's own mass: an eps_den rounded to the
    # dtype, or exp(-M) formed alone, is wrong there by a factor of about two
    corner = combined_extremes(op, dtype, eps_draws=eps_draws, offsets=offsets)
    corners = st.integers(0, 7)
    near_null_edge_exponents = st.integers(*NEAR_NULL_EDGE)
    wide_draws = st.integers(*(wide_widths(op, widths) or (1, 1)))
    batches, seeds, perm_seeds = st.integers(1, batch_max), st.integers(0, 2 ** 16), st.integers(0, 10_000)
    long_batches = st.integers(1, min(2, batch_max))
    shifts = st.floats(-5.0, 5.0, allow_nan=False, allow_infinity=False)
    densities = st.sampled_from((1.0, 0.6, 0.3))
    mask_draws, layout_draws = st.sampled_from(tuple(mask_kinds)), st.sampled_from(tuple(layouts))

    def build(draw):
        n = draw(n_draws)
        nulls, positions = per_n(n)
        null = tuple(draw(nulls))
        d = draw(widths_ if n <= LONG_COST else long_widths)
        head_draws, scale_draws, bias_draws = per_d(d)
        heads = draw(head_draws)
        near = ()
        if near_null and not near_null_tokens:
            if draw(quarter) == 3:
                # one draw in four: every non-null token is near-null, so the near-null rows are the
                # whole output and a relative error in them (a cancelling presence) is not hidden
                # beside O(1) rows
                near = tuple(i for i in range(n) if i not in null)
            else:
                near = tuple(draw(near_of(n, null)))
        tau = eps_den = None
        if wide_params and draw(coin):
            tau = draw(tau_draws)
            if tau_domain is not None and tau_domain.lo == -math.inf and draw(coin):
                # far outside the score range: every row silent, or none (S - tau past the dtype's range)
                tau = draw(far_sign) * draw(far_draws)
            eps_den = draw(eps_within)
        elif eps_listed is not None and draw(coin):
            eps_den = draw(eps_listed)
        # one draw in four pins every score of a row just past an overflow edge of the dtype, one in
        # four at +-2^k across its exponent range
        offset, pin = 0.0, draw(quarter) if offsets else 0
        if pin == 2 and pinned_offsets is not None:
            offset = draw(pinned_offsets)
        elif pin == 3:
            offset = draw(log_offsets)
        if corner is not None and draw(corners) == 7:
            eps_den, offset = corner
        case = Case(
            op=op, dtype=dtype, n=n, null=null,
            batch=draw(batches if n <= LONG_COST else long_batches),
            d=d,
            seed=draw(seeds),
            pos=draw(positions),
            perm_seed=draw(perm_seeds),
            shift=draw(shifts),
            mask_density=draw(densities),
            scale=draw(scale_draws),
            near_null=near,
            tiny=draw(tiny_draws) if near else 0.0,
            bias_scale=draw(bias_draws),
            mask_kind=draw(mask_draws) if masked else "random",
            tau=tau, eps_den=eps_den, heads=heads,
            layout=draw(layout_draws),
            backend=backend, score_offset=offset,
        )
        if near_null and near_null_tokens and edge is None:
            # differential's near-null rows, drawn last: every earlier choice is drawn as without them, so
            # the cell draws the same shapes, scales and offsets as before they joined it
            # (three draws in four: one near-null row beside rows of ordinary norm.  Not every row: with every
            # token near null, q and k are their biases, every score of a row the same up to rounding, and no
            # probe in another format predicts float32's rounding of that level -- sdpa bfloat16, seed 0)
            free, pick = tuple(i for i in range(n) if i not in null), draw(quarter)
            near = (free[draw(positions) % len(free)],) if pick and free else ()
            case = dataclasses.replace(case, near_null=near, tiny=draw(tiny_draws) if near else 0.0)
        if edge is None:
            return case
        # an explicit edge (drawn as any case, so the draws keep their order): the edge's own fields, and
        # everything else benign (no null or near-null row, no tau, eps_den or score offset override)
        benign = dict(null=(), near_null=(), tiny=0.0, tau=None, eps_den=None, score_offset=0.0)
        if edge == EXTREMES:
            # the combined extremes, at the smallest fitting scales
            eps_den, offset = corner
            return dataclasses.replace(case, **dict(benign, eps_den=eps_den, score_offset=offset),
                                       scale=fitting(scales, limit, d, host=host)[0],
                                       bias_scale=fitting(bias_scales, limit, d, bias=True, host=host)[0])
        if edge == BATCH:
            return dataclasses.replace(case, **benign, batch=batch_max)
        if edge == NEAR_NULL:
            # one near-null row beside ordinary ones, at a drawn position (its exponent drawn last); the
            # simplest draw (pos 0) puts it second, after an ordinary token a later query sees (placed first,
            # a change to what sees token 0 would meet a near-null key, whose weight is near 0 in a presence)
            return dataclasses.replace(case, **dict(benign, near_null=((case.pos + 1) % n,),
                                                    tiny=2.0 ** draw(near_null_edge_exponents)))
        if edge == EMPTY_ROW:
            return dataclasses.replace(case, **benign, mask_kind="empty_row")
        if edge == WIDE:
            # a width past 16 at the smallest fitting scales (a scale drawn for a narrow width may not fit a
            # wide one's declared limit), its head count drawn from the wide width's divisors
            wide = draw(wide_draws)
            return dataclasses.replace(case, **benign, d=wide, heads=draw(per_d(wide)[0]),
                                       scale=fitting(scales, limit, wide, host=host)[0],
                                       bias_scale=fitting(bias_scales, limit, wide, bias=True, host=host)[0])
        # MAGNITUDE: the token scale LARGE at a width where it fits (the widest fitting one below the drawn
        # width, with the head count that width's parameters declare), the smallest bias scale
        fit = large_widths(op, dtype, scales=None, widths=widths)
        wide = max((w for w in fit if w <= d), default=fit[0])
        return dataclasses.replace(case, **benign, scale=LARGE, d=wide, heads=case.heads if wide == d else None,
                                   bias_scale=fitting(bias_scales, limit, wide, bias=True, host=host)[0])

    return composite(build)
