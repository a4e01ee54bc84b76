"""Universal contracts that compare computations: dtype D against float64, the code against docs/mathematics.md#universal-contracts, finiteness."""
from __future__ import annotations

import math

import torch

from tokenlaw.operators import dtypes, projections
from tokenlaw.operators.errors import InvalidArgument, NotRunnableHere
from tokenlaw.operators.xp import TORCH

from . import verdict as V
from .case import cast, lay_out
from .contract import AdversaryOptions, FuzzOptions, Gap, SHARED_AXES, contract
from .applied import law_params
from .judging import unresolved
from .tolerance import BOUND_FRACTION, FIRST_ORDER_LIMIT, PROBE, PROBES, RESAMPLE, RESAMPLES, TINY, UNIT_ROUNDOFF, usable
from .tolerance import differential as compare_differential

# Where the catalogue lists this module's laws (tokenlaw.properties.catalogue.laws_modules).
ORDER = 60


# A row whose largest thresholded score lies within this many units of D's roundoff (relative to the
# row's score scale) of a rectified normaliser's threshold may change sides under rounding alone: its
# mass may jump between 1 and 0, and no rounding-error bound exists there.
THRESHOLD_ULPS = 64



def _where(case) -> str:
    return f"{case.backend} {str(case.dtype).replace('torch.', '')}"


def _probes(reference_case, x=None) -> dict:
    """The eager operator in float32 (and, for a half format, the other half format): D's error probes
    (on the case's tokens, or on ``x``).  The eager float32 run itself is judged with half probes
    (:func:`_float32`)."""
    case = reference_case
    x = case.x if x is None else x
    probes = {torch.float32: case.runner.run(x, case.mask, dtype=torch.float32)}
    if case.dtype in dtypes.OTHER_HALF:
        other = dtypes.OTHER_HALF[case.dtype]
        # a bfloat16 input past float16's range (65504) is no input of float16: that probe is left out
        # (the float32 one stays); a raise there is an input float16 cannot hold, not D's error
        try:
            probe = case.runner.run(x, case.mask, dtype=other)
        except InvalidArgument:
            probe = None
        if probe is not None and bool(torch.isfinite(probe).all()) >= bool(torch.isfinite(probes[torch.float32]).all()):
            probes[other] = probe
    return probes


def _half_probes(reference_case, x, evaluated=None) -> dict:
    """{half format: the eager operator's output in it on ``x``}: float32's probes (tolerance.PROBES),
    each where the inputs fit it (``evaluated``: runs already made, by dtype)."""
    out = {}
    for p in PROBES[torch.float32]:
        if evaluated is not None and p in evaluated:
            out[p] = evaluated[p]
            continue
        try:
            out[p] = reference_case.runner.run(x, reference_case.mask, dtype=p)
        except InvalidArgument:     # the inputs overflow the half format: it is no probe of this input
            continue
    return out


# The half probes predict float32's error only where both are usable and tell the same first-order story:
# each one's normwise error scaled to float32 (u_32 / u_P) within a factor AGREEMENT of the other's.  First
# order in u makes the two proportional; a half format whose rounding saturated (bfloat16 rounding biases of
# 1e4 by 39 score units: its weights are noise, its error capped by the output's range, CPU bfloat16 matmuls
# rounding once after a float32 sum) falls far short of it, and scaling its error to float32 under-predicts.
# Found at seed 0 by the half cells' search: sdpa and entmax15 at bias scale 1e4 (float16 NaN, bfloat16 0.6 of
# its ulps where float32 erred 16 of its own), standard_host at n = d = 1 (float16 and bfloat16 predicting
# float32 errors 63-fold apart).  Elsewhere the example is inconclusive and counted.
AGREEMENT = 16.0


def _usable_halves(reference, probes: dict, a64, a32, keep) -> dict:
    """Both half probes, where they can predict float32's error on the kept rows, else {}: each is
    tolerance.usable (finite where float64 is, within the first-order regime, able to hold the values),
    rounds the row-wide score offset (case.score_offset) by at most ``FIRST_ORDER_LIMIT`` (past that its
    weights are a function of its rounding, judging.unresolved), and the two agree (``AGREEMENT``)."""
    scaled = {}
    for p, t in probes.items():
        if abs(reference.score_offset) * UNIT_ROUNDOFF[p] > FIRST_ORDER_LIMIT:
            return {}
        if not usable(t[keep].double(), a64[keep].double(), a32[keep].double(), p):
            return {}
        err = torch.nan_to_num((t[keep].double() - a64[keep].double()).abs(), nan=0.0, posinf=0.0)
        scaled[p] = (float(err.max()) if err.numel() else 0.0) * UNIT_ROUNDOFF[torch.float32] / UNIT_ROUNDOFF[p]
    if set(scaled) != set(PROBES[torch.float32]):
        return {}
    low, high = min(scaled.values()), max(scaled.values())
    if high > AGREEMENT * low:
        return {}
    return {p: probes[p] for p in scaled}


def set_aside(case, out64: torch.Tensor) -> tuple[torch.Tensor, dict]:
    """(kept output rows as a (B, N) bool mask, counts) away from non-finite and threshold rows.

    A row is set aside where ``out64`` (the float64 value the comparison trusts) is not finite, or
    where the operator's reference declares a discontinuity (``threshold_margin``) within
    ``THRESHOLD_ULPS`` roundoffs of D.
    """
    rows = out64.reshape(out64.shape[0], out64.shape[1], -1)
    finite = torch.isfinite(rows).all(-1)
    keep = finite.clone()
    near = torch.zeros_like(keep)
    margin = getattr(case.op.reference, "threshold_margin", None)
    if margin is not None:
        with torch.no_grad():
            rel = margin(TORCH, case.x, **case.runner.arguments(case.mask, torch.float64))
        near = rel <= THRESHOLD_ULPS * UNIT_ROUNDOFF[case.dtype]
        keep &= ~near
    return keep, {"rows": int(keep.numel()), "set_aside_threshold": int(near.sum()),
                  "set_aside_not_finite": int((~finite).sum())}


# A score that D rounds by a whole unit or more moves its weight exp(s - M) by a factor e: the weights carry no
# correct digit (operators/limits.py states the same for the limits an operator declares), and an output
# error first order in u -- what every probe's scaled error predicts -- is no model of D's (judging.unresolved
# says the same for scores near a row-wide offset; here they are large by their tokens and biases).  That
# holds for a normaliser that reads absolute score differences (softmax, sparsemax, a threshold tau); one
# homogeneous of degree 0 (W(2S) = W(S): pn, pn_fir_c) turns D's relative score error into a relative weight
# error whatever |S| is, and is left to the probes.  Tested on the case's own scores with the operator's
# declared weights (:func:`score_units`).  Found at seed 0: sm_fir in bfloat16 at bias scale 100 forms scores
# up to 1.0e4, rounded by up to 109 units (float16: 14, float32: 0.002); a row whose second score sits about
# 100 below its first got weight in bfloat16 only, an output error of 14.9 of 140 where float32 (1.1e-5) and
# float16 (0.086) agreed on a prediction of 0.7.  It is no rounding noise (inputs moved by bfloat16's
# roundoff move it by at most 0.23) and no bug of sm_fir.  A first try perturbed the weights at D's
# a-priori score error and compared the response with the probe's scaled one: pn_fir_c's rectification
# answers nonlinearly to any error that crosses 0, which flagged 16 of 60 of its bfloat16 cases, and the
# cell read vacuous.
SCORE_UNITS = 1.0


def case_scores(case) -> torch.Tensor | None:
    """The scores q.k / sqrt(dh) of the case's own tokens in float64, (B, H, n, n), where the operator's
    parameters hold one scored block at their top level (queries, keys and heads by their roles); None
    elsewhere (a host scores its hidden states, not x: its declared limits bound those).  The keys are the
    projected ones (an FIR operator filters them first: a score of the same magnitude)."""
    roles, params = case.op.domain.roles, case.params
    if not isinstance(params, dict) or not {*roles.query, *roles.key, roles.heads} <= set(params):
        return None
    with torch.no_grad():
        q, k, _ = projections.project_qkv(TORCH, case.x.double(), **roles.standard(params, output=False))
        return projections.scores(TORCH, q, k)


def score_units(case, keep=None) -> float:
    """max |S| u_D over the kept rows of the case's scores (:func:`case_scores`): D's rounding of its largest
    score, in score units; 0 where the operator declares no weights, has no top-level scores, D is float64,
    or its weights are homogeneous of degree 0 on these scores scaled to a largest |S| of 1 (W(2S) = W(S)
    to 1e-9: see above).
    ``keep``: the output rows the comparison kept, (B, n); the others are left out."""
    if case.op.weights is None or case.dtype == torch.float64:
        return 0.0
    s = case_scores(case)
    if s is None:
        return 0.0
    n = s.shape[-1]
    if "masked" in case.op.traits and case.mask is not None:
        mask = projections.head_mask(case.mask.double())
    elif "causal" in case.op.traits:
        mask = torch.ones(n, n, dtype=torch.float64).tril()[None, None]
    else:
        mask = None
    kept = law_params(case.op, case.params)
    kept.pop("mask", None)
    rows = torch.ones(s.shape[0], 1, n, 1, dtype=torch.bool)
    if keep is not None and tuple(keep.shape) == (s.shape[0], n):
        rows = keep[:, None, :, None]
    # tested at unit scale: on the case's own scores a saturated row (one-hot softmax or sparsemax at
    # |S| 1.2e4, seed 2) answers W(2S) = W(S) without being homogeneous
    top = float(torch.nan_to_num(s.abs(), nan=0.0, posinf=0.0).max())
    unit = s / top if top > 0 else s
    try:
        with torch.no_grad():
            w = case.op.weights(TORCH, unit, mask, **kept).double()
            w2 = case.op.weights(TORCH, 2.0 * unit, mask, **kept).double()
    except (InvalidArgument, TypeError, RuntimeError):
        return 0.0                                      # weights this measure cannot call: no claim either way
    moved = torch.nan_to_num((w2 - w).abs(), nan=0.0, posinf=0.0) * rows
    if not bool((moved > 1e-9).any()):
        return 0.0
    top = torch.nan_to_num(s.abs(), nan=0.0, posinf=0.0) * rows
    return float(top.max()) * UNIT_ROUNDOFF[case.dtype]


def _scores_unresolved(case, c, keep=None) -> str | None:
    """Why D's rounding of the scores leaves the weights outside the first-order model (:func:`score_units`
    past SCORE_UNITS), or None.  As in judging.unresolved: a finite discrepancy within twice the output's range
    decides nothing there; a non-finite value where float64 is finite, or a discrepancy past that range, is
    still judged."""
    if case.dtype == torch.float64 or not math.isfinite(c.discrepancy) or c.discrepancy > 2 * c.scale:
        return None
    units = score_units(case, keep)
    if units <= SCORE_UNITS:
        return None
    return (f"inconclusive, {str(case.dtype).replace('torch.', '')} rounds a score by up to {units:.2g} > "
            f"{SCORE_UNITS:g} unit, and the weights read absolute score differences: they carry no correct "
            f"digit, no first-order error model (|difference| = {c.discrepancy:.3g} is within the output's range "
            f"{c.scale:.3g})")


def _judge(case, c, counts, what, keep=None) -> V.Verdict:
    kept = f"{counts['rows'] - counts['set_aside_threshold'] - counts['set_aside_not_finite']}/{counts['rows']} rows"
    aside = ""
    if counts["set_aside_threshold"] or counts["set_aside_not_finite"]:
        aside = (f"; set aside {counts['set_aside_threshold']} row(s) at the threshold, "
                 f"{counts['set_aside_not_finite']} with a non-finite float64 value")
    if c is None:
        return V.holds(0.0, 0.0, f"{what}: inconclusive, no row left to compare{aside}",
                       extra={"ratio": 0.0, **counts}, inconclusive=True)
    if c.range_flushed:
        return V.holds(0.0, 0.0, f"{what}: inconclusive, |difference| = {c.discrepancy:.3g} past the bound "
                       f"{c.bound:.3g}, but the output is float64's with the near-null token(s) "
                       f"{list(case.near_null)} flushed to 0, within the bound predicted there: below "
                       f"{str(case.dtype).replace('torch.', '')}'s range, no rounding model decides (differential_laws.flushed){aside}",
                       extra={"ratio": 0.0, "range_flushed": True, **counts}, inconclusive=True)
    why = unresolved(case, c.discrepancy, c.scale) or _scores_unresolved(case, c, keep)
    if why:
        return V.holds(0.0, 0.0, f"{what}: {why}{aside}", extra={"ratio": 0.0, **counts}, inconclusive=True)
    if c.bound_relative > BOUND_FRACTION:
        # The bound is a first-order (linear in u) prediction: it is only valid
        # while the predicted error is small against the output.  Beyond that
        # (fp16 scores of magnitude ~100 perturb softmax weights by e^0.1) the
        # example says nothing either way, and is not counted as evidence.
        return V.holds(0.0, 0.0, f"{what}: inconclusive, predicted (or input-rounding) relative error {c.bound_relative:.2g} "
                       f"> {BOUND_FRACTION:.3g} is outside the first-order error model{aside}",
                       extra={"ratio": 0.0, **counts}, inconclusive=True)
    resampled = f"; probes sampled on {c.resampled} nearby inputs too" if c.resampled else ""
    # A comparison whose every compared entry is exactly 0 on both sides (only null rows left) judged no
    # value: it is flagged, and the engine does not count it as a judged example (docs/fuzz.md)
    trivial = {"trivial": True} if c.trivial and c.ok else {}
    only_zeros = "; every compared entry is exactly 0 on both sides: trivially judged" if trivial else ""
    biased = {"bias_ratio": c.bias_ratio} if c.bias_bound > 0 else {}
    if c.ratio <= 1.0 and c.bias_ratio > 1.0:
        # every entry within its normwise bound, but D is coherently off: a systematic relative bias past the
        # bound its final rounding, its inputs' rounding and the probes' own biases allow (tolerance.bias_bound)
        return V.Verdict(V.Status.VIOLATED, c.bias, c.bias_bound,
                         f"{what}: systematic relative bias <D - float64, float64> / |float64|^2 = {c.bias:.3g} vs "
                         f"its bound {c.bias_bound:.3g} (final rounding, input rounding, probes' biases; each entry "
                         f"within its normwise bound, worst {c.ratio:.2g} of it; {kept} compared{aside}{resampled})",
                         extra={"ratio": c.bias_ratio, "max_discrepancy": c.max_discrepancy, "least_bound": c.least_bound,
                                **biased, **counts})
    return V.Verdict(V.Status.HOLDS if c.ok else V.Status.VIOLATED, c.discrepancy, c.bound,
                     f"{what}: |difference| = {c.discrepancy:.3g} vs predicted bound {c.bound:.3g} at {c.index} "
                     f"(max anywhere {c.max_discrepancy:.3g}; {kept} compared{aside}{resampled}{only_zeros})",
                     extra={"ratio": c.ratio, "max_discrepancy": c.max_discrepancy, "least_bound": c.least_bound,
                            **biased, **counts, **trivial})


def _compare_rows(a, b, probes, keep, dtype, *, input_rounding=None, ref_probes=None, resample=None, case=None,
                  shift=None):
    """tolerance.differential on the kept rows.  ``resample(x)``: (b64, probes, ref_probes) of the same
    comparison on tokens x; where the first bound fails, the probes' error is sampled again on tokens near
    the ``case``'s (:func:`nearby`) and the verdict rests on all the samples."""
    if not bool(keep.any()):
        return None

    def rows(d):
        return {p: t[keep] for p, t in (d or {}).items()} or None

    whole = (a, b, probes)
    a, b, probes, ref_probes = a[keep], b[keep], rows(probes), rows(ref_probes)
    input_rounding = None if input_rounding is None else input_rounding[keep]
    # shift: (signed input shift, second-moment term) of input_parts: D's systematic bias is judged too
    bias = shift is not None
    signed, second = (None, None) if shift is None else (t if t is None else t[keep] for t in shift)

    def judged(samples=()):
        return compare_differential(a, b, probes, dtype, input_rounding=input_rounding, ref_probes=ref_probes,
                                    resamples=tuple((b64[keep], rows(p), rows(r)) for b64, p, r in samples),
                                    bias=bias, input_shift=signed, second_moment=second)

    c = judged()
    if c.ok or resample is None:
        return c
    # the bound only grows with more samples: a passing example would pass with them, so they are run only here
    tokens = nearby(case, dtype)
    c = judged(tuple(resample(x) for x in tokens))
    c.resampled = len(tokens)
    if not c.ok and case.near_null:
        # D may be the float64 output of the same tokens with the near-null ones flushed to 0 (flushed), in
        # each batch element on its own (the token is one per element, and so is where its products underflow)
        f64, f_probes, _ = resample(flushed(case))
        c.range_flushed = all(
            any(compare_differential(whole[0][i][keep[i]], out[i][keep[i]], {p: t[i][keep[i]] for p, t in by.items()},
                                     dtype).ok for out, by in ((whole[1], whole[2]), (f64, f_probes)))
            for i in range(keep.shape[0]) if bool(keep[i].any()))
    return c


def flushed(case) -> torch.Tensor:
    """The case's tokens with its near-null rows (``case.near_null``) set to exact zeros.

    A near-null token enters some intermediates only through products of its entries (|h|^2, a presence
    times a value, each layer of a host multiplying again), and where such a product passes below D's
    range D computes the operator of the flushed tokens: tabular_otransformer in float32 at a token of
    norm 2^-21 (its |h|^2 = 2^-42 is normal, but the hidden state a layer later is of order 1e-26, and its
    |h|^2 underflows) equals float64's output with that token flushed to 5e-6, 0.44 from float64's own,
    where scores biased by 100 still give the token weight; scaling the token by 1.001 moves float64's
    output by 9e-7.  A violation that D's output explains this way, within the bound predicted at the
    flushed tokens, is no evidence either way: the example is inconclusive (counted in its regimes,
    near_null_tokens among them), never a pass.  A kernel that drops or zeroes a token the flushed
    evaluation keeps (SDPA's output row of a near-null token is its bias query's attention, not 0) is
    still a violation."""
    x = case.x.clone()
    x[:, list(case.near_null)] = 0.0
    return x


def nearby(case, dtype) -> list:
    """tolerance.RESAMPLES tokens near the case's: each entry times 1 + RESAMPLE u_P r (r standard normal,
    P the first probe of ``dtype``); null tokens stay exactly null."""
    delta = RESAMPLE * UNIT_ROUNDOFF[PROBE[dtype]]
    return [case.x * (1.0 + delta * case.random_like(case.x.shape, salt=61 + k)) for k in range(RESAMPLES)]



def input_rounding(reference_case, a64, dtype=None) -> torch.Tensor | None:
    """|F_64(x, params rounded to D) - F_64(x, params)|: D's input rounding, evaluated exactly in float64
    (D: ``dtype``, else the case's), plus D's resolution of a token's squared norm where it is below D's
    smallest normal (:func:`second_moment_rounding`)."""
    parts = input_parts(reference_case, a64, dtype)
    if parts is None:
        return None
    shift, second = parts
    return shift.abs() if second is None else shift.abs() + second


def input_parts(reference_case, a64, dtype=None) -> tuple | None:
    """(F_64(x, params rounded to D) - F_64(x, params), signed; second_moment_rounding or None): the two parts
    of :func:`input_rounding` (None for float64)."""
    case = reference_case
    dtype = case.dtype if dtype is None else dtype
    if dtype == torch.float64:
        return None
    rounded = cast(cast(case.params, dtype), torch.float64)
    x = case.x.to(dtype).double()
    shift = case.runner.run(x, case.mask, dtype=torch.float64, **rounded).double() - a64.double()
    return shift, second_moment_rounding(case, a64, dtype)


def second_moment_rounding(reference_case, a64, dtype) -> torch.Tensor | None:
    """|F_64(x') - F_64(x)| over the two x' where each token whose squared norm |x_i|^2 (over the last axis,
    of the token rounded to D) is below D's smallest normal has that squared norm moved down and up by
    d * tiny_D (D's smallest subnormal, once per summed square), by scaling the token; None where no token
    is there (the usual case: nothing is run).

    A product of two entries is D's first quantity past its range: a token of norm 2^-76 is exact in
    float32, but its |x|^2 = 2^-152 underflows to 0 there, and a presence |x|^2 / (tau + |x|^2) is then 0
    where float64 has 7e-46; with biased scores 104 units above its row's (bias scale 100) that token still
    carries weight in float64, and float32 moved the row by 0.30 of 151 (otransformer, seed 0).  Below the
    smallest normal D resolves |x|^2 only to an absolute spacing, which no probe's relative error scales to
    (the half formats underflow as well, or earlier): like the inputs' rounding, that part of D's error is
    computed outright in float64 and added to the bound, and past BOUND_FRACTION of the output's scale the
    example is inconclusive (``Comparison.input_relative``).  An operator that reads a token only linearly
    (q = W x + b) moves by about |W x|: a kernel that drops or zeroes such a token's own row is still seen."""
    case = reference_case
    x = case.x.double()
    if x.ndim < 2 or x.shape[-1] == 0:
        return None
    sq = (x.to(dtype).double() ** 2).sum(-1, keepdim=True)
    low = (sq > 0) & (sq < torch.finfo(dtype).smallest_normal)
    if not bool(low.any()):
        return None
    delta = x.shape[-1] * TINY[dtype]
    safe = torch.where(low, sq, torch.ones_like(sq))
    worst = torch.zeros_like(a64.double())
    for moved in ((safe - delta).clamp(min=0.0), safe + delta):
        factor = torch.where(low, (moved / safe).sqrt(), torch.ones_like(sq))
        out = case.runner.run(x * factor, case.mask, dtype=torch.float64).double()
        worst = torch.maximum(worst, torch.nan_to_num((out - a64.double()).abs(), nan=0.0, posinf=0.0))
    return worst


_NUMERICAL = ("scores_low", "scores_high", "power_overflow", "eps_den_small", "long_row")


def _float32(reference, a32, a64, keep, evaluated=None):
    """(Comparison or None, why) of the eager float32 output ``a32`` against float64 on the kept rows, its
    error predicted from the eager operator in the half formats (tolerance.PROBES: float16, bfloat16)
    scaled by u_32 / u_P, plus float32's own input rounding computed outright.  None where no half
    probe is usable (tolerance.usable: a half format overflowed, or left its first-order regime):
    nothing predicts float32's error there.  ``evaluated``: half-format runs already made, by dtype."""
    halves = _usable_halves(reference, _half_probes(reference, reference.x, evaluated), a64, a32, keep)
    if not halves:
        return None, ("inconclusive, no half-format probe within its first-order regime predicts float32's "
                      f"error (score offset {reference.score_offset:.3g})")

    def resample(x):
        probes = _half_probes(reference, x)
        return reference.runner.run(x, reference.mask, dtype=torch.float64), {p: probes[p] for p in halves if p in probes}, None

    c = _compare_rows(a32, a64, halves, keep, torch.float32,
                      input_rounding=input_rounding(reference, a64, torch.float32), resample=resample, case=reference)
    return c, ""


def _probe_disagrees(case, reference, probes, a64, keep, counts, first):
    """The half cell's verdict where its float32 probe left the first-order regime (``first``: that
    example's Comparison): if the float32 probe is itself further from float64 than the half formats
    predict float32 errs (:func:`_float32`), the probe that disagrees is evidence against the operator's
    float32 path, a violation; else None (the example stays inconclusive)."""
    a32 = probes.get(torch.float32)
    if a32 is None:
        return None
    evaluated = {p: t for p, t in probes.items() if p != torch.float32}
    if case.runner.implementation.reference:
        evaluated[case.dtype] = case.runner.run(case.x, case.mask)
    c, _ = _float32(reference, a32, a64, keep, evaluated)
    if c is None or c.ok or c.predicted_relative > FIRST_ORDER_LIMIT or c.range_flushed:
        return None
    return V.Verdict(V.Status.VIOLATED, c.discrepancy, c.bound,
                     f"{_where(case)} vs float64: the eager float32 probe predicts a relative error of "
                     f"{first.predicted_relative:.2g} (outside the first-order model), but it is itself wrong: "
                     f"|float32 - float64| = {c.discrepancy:.3g} vs the bound {c.bound:.3g} the half formats "
                     f"predict for float32 at {c.index} (max anywhere {c.max_discrepancy:.3g})",
                     extra={"ratio": c.ratio, "max_discrepancy": c.max_discrepancy, "probe_violated": "float32",
                            **counts})


# fuzz: near-null rows are drawn (issue 43, class 5): a token's norm 2^e over the dtype's whole exponent
# range, down to its smallest subnormal (strategies.cases(near_null_tokens=True)), counted as their own
# regime (near_null_tokens); D's rounding of such a token is in the bound outright (input_rounding) and
# the probes measure the rest.  tau is not drawn wide (presence tau over 1e-4..1e3 makes subnormal
# intermediates no probe in another format sees: the metamorphic contracts bound those by their own
# measured error).  eps_den is still drawn down to 1e-8 (strategies.eps_dens): the stabilised denominator
# never forms 1 / eps_den, so a small eps_den must stay accurate.
# Every dtype's eager path is judged: eager float32 against float64 with the half formats as its probes
# (_float32), and a half cell whose float32 probe disagrees with float64 beyond what the half formats
# predict reports that as a violation (_probe_disagrees), not as an inconclusive example.
@contract(exact=False, dtypes=dtypes.LOW, universal=True,
          regimes=_NUMERICAL + ("near_null_tokens",), fuzz=FuzzOptions(near_null_tokens=True, wide_params=False),
          adversary=AdversaryOptions(rank=1, sees=frozenset({"drop_key"}),
                                    scale_blind=SHARED_AXES - {"dtype"}))
def differential(case):
    """The implementation in dtype D matches the float64 reference within D's predicted rounding error."""
    # All runs take the same float64 inputs and round them to their own
    # dtype, so the float32 probe measures this input's conditioning (input
    # rounding included) and its error, scaled by u_D / u_32, predicts D's.
    reference = case.on_reference()
    a_d = case.runner.run(case.x, case.mask)
    a_64 = reference.runner.run(case.x, case.mask, dtype=torch.float64)
    keep, counts = set_aside(case, a_64)
    if case.dtype == torch.float32 and case.runner.implementation.reference:
        if not bool(keep.any()):
            return _judge(case, None, counts, f"{_where(case)} vs float64")
        c, why = _float32(reference, a_d, a_64, keep)
        if c is None:
            return V.holds(0.0, 0.0, f"{_where(case)} vs float64: {why}", extra={"ratio": 0.0, **counts},
                           inconclusive=True)
        return _judge(case, c, counts, f"{_where(case)} vs float64 (predicted from the half formats)")
    probes = _probes(reference)
    parts = input_parts(reference, a_64)
    rounding = None if parts is None else (parts[0].abs() if parts[1] is None else parts[0].abs() + parts[1])
    c = _compare_rows(a_d, a_64, probes, keep, case.dtype, input_rounding=rounding,
                      resample=lambda x: (reference.runner.run(x, case.mask, dtype=torch.float64), _probes(reference, x), None),
                      case=case, shift=parts)
    if c is not None and c.predicted_relative > FIRST_ORDER_LIMIT and case.dtype in dtypes.OTHER_HALF:
        caught = _probe_disagrees(case, reference, probes, a_64, keep, counts, c)
        if caught is not None:
            return caught
    return _judge(case, c, counts, f"{_where(case)} vs float64", keep)


def _no_reference(op, dtype, backend):
    if op.reference is None:
        return Gap("the operator declares no reference= (a second, plain implementation of the same formula, "
                   "written independently of the operator's code: @declare(..., reference=my_formula) runs this "
                   "cell)")
    return None


# float64 on the eager backend (eager D is tied to the reference through `differential`, D against
# eager float64); another backend runs it in the dtypes it computes in (properties.plan plans those).
# fuzz: no near-null rows: a presence whose |h|^2 is subnormal has a few significant bits, which
# 1 / sqrt(eps) in a standardisation amplifies far past any rounding bound; those rows are judged
# exactly by the null contracts.
@contract(exact=False, dtypes=(dtypes.REFERENCE,), universal=True, skip=_no_reference, regimes=_NUMERICAL + ("tau_far",),
          fuzz=FuzzOptions(near_null=False, near_null_edge=True),
          adversary=AdversaryOptions(rank=0, sees=frozenset({"drop_key"})))
def spec_reference(case):
    """The operator equals its independent reference written from its formula (float64 reference)."""
    # The reference is the formula as written (no stabilisation): rows where it is not
    # finite are set aside and counted, as are rows at a declared discontinuity.
    with torch.no_grad():
        r64 = case.op.reference(TORCH, case.x, **case.runner.arguments(case.mask, torch.float64))
    a_d = case.runner.run(case.x, case.mask)
    if tuple(a_d.shape) != tuple(r64.shape):
        return V.violated(float("inf"), 0.0, f"output shape {tuple(a_d.shape)} vs reference {tuple(r64.shape)}")
    keep, counts = set_aside(case, r64)
    eager = case.on_reference()
    # Both sides round: the operator's error is predicted from its float32 probe, the
    # reference's (it is float64 too) from the reference run in float32 where that is finite.
    with torch.no_grad():
        r32 = case.op.reference(TORCH, case.x.float(), **case.runner.arguments(case.mask, torch.float32))
    def resample(x):
        with torch.no_grad():
            b64 = case.op.reference(TORCH, x, **case.runner.arguments(case.mask, torch.float64))
            b32 = case.op.reference(TORCH, x.float(), **case.runner.arguments(case.mask, torch.float32))
        return b64, _probes(eager, x), {torch.float32: b32}

    c = _compare_rows(a_d, r64, _probes(eager), keep, case.dtype, input_rounding=input_rounding(eager, r64),
                      ref_probes={torch.float32: r32}, resample=resample, case=case)
    return _judge(case, c, counts, f"{_where(case)} vs the independent reference")


def _loss_grad(case, x, dtype):
    """(output, d/dx of sum(output * g)) in ``dtype`` on the case's backend; grad None without autograd."""
    kwargs = case.runner.arguments(case.mask, dtype)
    if kwargs.get("mask") is not None:
        kwargs["mask"] = lay_out(kwargs["mask"], case.layout)
    xin = lay_out(x.to(dtype), case.layout).detach().requires_grad_(True)
    try:
        out = case.runner.call(xin, **kwargs)
    except NotRunnableHere:             # no backward on this machine (FlexAttention on CPU): outputs only
        with torch.no_grad():
            return case.runner.call(xin.detach(), **kwargs), None
    if not out.requires_grad:
        return out.detach(), None
    g = case.random_like(out.shape, salt=41).to(out.dtype)
    (grad,) = torch.autograd.grad((out * g).sum(), xin)
    return out.detach(), grad


def _non_finite(t, t64, dtype) -> int:
    """Entries of t that are not finite where the float64 value is finite and representable in dtype."""
    big = torch.finfo(dtype).max / 2
    ok64 = torch.isfinite(t64) & (t64.abs() < big)
    return int((ok64 & ~torch.isfinite(t)).sum())


# A uniform scale by 1 + 1e-2 (the adversary's ``scale``) turns no finite value infinite short of float64's
# largest; in the low dtypes _non_finite counts only entries whose float64 value is below half the dtype's largest:
# finite is blind to such a scale on every axis (AdversaryOptions.scale_blind).
@contract(exact=True, universal=True, regimes=_NUMERICAL + ("near_null",),
          adversary=AdversaryOptions(scale_blind=SHARED_AXES))
def finite(case):
    """Finite inputs in the declared domain give finite outputs and finite gradients."""
    # Outputs are judged in every dtype; gradients in float64 and float32, on inputs without
    # near-null rows (see the comment below and docs/fuzz.md).
    # D is evaluated first; float64 only when D (or float64 itself) has something to explain.
    eager = case.on_reference()
    out, grad = _loss_grad(case, case.x, case.dtype)
    bad, half = {}, {}
    in_d = f"{_where(case)} "
    if case.dtype == torch.float64 and case.runner.implementation.reference:
        bad[in_d + "output"] = int((~torch.isfinite(out)).sum())
        if grad is not None:
            (half if case.near_null else bad)[in_d + "gradient"] = int((~torch.isfinite(grad)).sum())
    elif not (bool(torch.isfinite(out).all()) and (grad is None or bool(torch.isfinite(grad).all()))):
        out64, grad64 = _loss_grad(eager, case.x, torch.float64)
        bad["float64 output"] = int((~torch.isfinite(out64)).sum())
        bad[in_d + "output"] = _non_finite(out.double(), out64, case.dtype)
        if grad is not None and grad64 is not None:
            bad["float64 gradient"] = int((~torch.isfinite(grad64)).sum())
            # The gradient contracts are float64 ones (docs/mathematics.md#gradients): half-precision backward passes are
            # reported (extra["unjudged_gradient"]) but not judged, and so are backward passes through
            # a near-null row (|h|^2 subnormal: the presence has a few significant bits); both
            # are listed in docs/fuzz.md as defects found, not hidden ones.
            target = half if case.dtype in dtypes.OTHER_HALF or case.near_null else bad
            target[in_d + "gradient"] = _non_finite(grad.double(), grad64, case.dtype)
    n = sum(bad.values())
    return V.judge(n, 0, "non-finite entries for finite inputs: "
                   + (", ".join(f"{k} {v}" for k, v in bad.items()) or "none")
                   + "".join(f"; not judged: {k} {v}" for k, v in half.items()),
                   extra={"unjudged_gradient": sum(half.values())})
