"""Row-normaliser contracts on scores S -> weights W (docs/mathematics.md#normalisers, docs/mathematics.md#score-laws).

Every law judges the weights the case's backend applies (``Backend.weights``:
for the reference, :func:`tokenlaw.properties.applied.applied_weights` reads
them off ``op.fn``'s output), never the declared ``weights=`` function: a
body that normalises otherwise than it declares fails the law it breaks.
"""
from __future__ import annotations

import dataclasses

import torch

from tokenlaw.operators import projections
from tokenlaw.operators.fir import fir
from tokenlaw.operators.xp import TORCH

from . import backends
from . import statement as S
from . import verdict as V
from .applied import law_params
from .contract import AdversaryOptions, SHARED_AXES, SymbolicOptions, contract
from .judging import exact_zero, worst
from .tolerance import UNIT_ROUNDOFF

# Where the catalogue lists this module's laws (tokenlaw.properties.catalogue.laws_modules).
ORDER = 30

# A row whose largest thresholded score lies within this many roundoffs of D (relative to the row's score
# scale) of a rectified normaliser's threshold may change sides under rounding alone (as in the differential
# contract, differential_laws.THRESHOLD_ULPS): its weights may jump between a point mass and another, and no
# rounding-error bound exists there.  A score law sets such rows aside, on both sides, in every dtype.
THRESHOLD_ULPS = 64

_SCORE = dict(requires={"score_normaliser"}, needs={"weights"}, evaluated="weights")


def scores(case) -> torch.Tensor:
    """Drawn float64 scores (batch, n, n), spread like attention logits."""
    return case.random_like((case.batch, case.n, case.n), salt=21, scale=2.0 * case.scale)


def visibility(case):
    """Which keys each row may see (docs/mathematics.md#fir's definition, not the operator's helper):
    j <= t for a causal operator, its random mask, or none."""
    if "causal" in case.op.traits:
        tri = torch.tril(torch.ones(case.n, case.n, dtype=torch.float64))
        return tri.expand(case.batch, case.n, case.n)
    return case.mask


def weights(case, s, dtype=None, **override):
    """W(S) as the case's backend applies it (``Backend.weights``); ``override`` by part (``threshold=``)
    or by parameter name."""
    dtype = case.dtype if dtype is None else dtype
    params = {**law_params(case.op, case.runner.arguments(dtype=dtype)), **case.op.domain.roles.named(override)}
    params.pop("mask", None)
    with torch.no_grad():
        w = case.runner.implementation.weights(case.op, s, case.mask, dtype, **params)
    if w is None:
        raise backends.Unanswerable(f"the {case.backend} backend cannot say which weights it applies")
    return w


def _tau(case) -> float:
    """The case's threshold (the parameter its roles name), 0 for a normaliser without one."""
    return float(case.params.get(case.op.domain.roles.threshold, 0.0))


def weigher(case, dtype):
    """The statement's ``weights(s, **overrides)``: W in ``dtype``, as float64 values."""
    return lambda s, **overrides: weights(case, s, dtype, **overrides).double()


def rounded_weigher(case, dtype):
    """``weights(s, **overrides)`` computed in float64 on the scores, the overrides and the parameters rounded
    to ``dtype``: the inputs' own rounding, exactly (``statement.judge``'s ``make_rounded``)."""
    def run(s, **overrides):
        params = {k: (v.to(dtype).double() if torch.is_tensor(v) and v.is_floating_point() else v)
                  for k, v in law_params(case.op, case.runner.arguments(dtype=torch.float64)).items()}
        over = {k: float(torch.tensor(float(v), dtype=dtype)) if isinstance(v, (int, float)) else v
                for k, v in case.op.domain.roles.named(overrides).items()}
        params = {**params, **over}
        params.pop("mask", None)
        with torch.no_grad():
            w = case.runner.implementation.weights(case.op, s.to(dtype).double(), case.mask, torch.float64, **params)
        if w is None:
            raise backends.Unanswerable(f"the {case.backend} backend cannot say which weights it applies")
        return w.double()
    return run


# -- statements (both tiers: see tokenlaw.properties.statement) ---------------------------

def shift_invariant(xp, weights, s, c):
    """W(S + c 1) = W(S) for per-row constants c."""
    return [S.equal(weights(s + c), weights(s), "W(S + c 1) vs W(S)")]


def tau_covariant(xp, weights, s, c, threshold):
    """W(S + c, tau + c) = W(S, tau) (tau: the parameter that plays the threshold)."""
    return [S.equal(weights(s + c, threshold=threshold + c), weights(s, threshold=threshold),
                    "W(S + c, tau + c) vs W(S, tau)")]


def distribution(xp, weights, s, rows, upper):
    """W >= 0 (exactly) and the row masses of ``rows`` equal 1 (upper "eq") or are at most 1 ("le")."""
    w = weights(s)[rows]
    mass = xp.sum(w, axis=-1)
    one = xp.ones_like(mass)
    return [S.at_most(xp.zeros_like(w), w, "W >= 0 (most negative weight)", exact=True),
            S.equal(mass, one, "row mass vs 1") if upper == "eq" else S.at_most(mass, one, "row mass above 1")]


def silent(xp, weights, s, v):
    """W(S) = 0 and W v = 0 exactly (for S with no positive S - tau)."""
    w = weights(s)
    return [S.zero(w, "weights of rows with no positive S - tau"), S.zero(xp.matmul(w, v), "outputs of those rows")]


def real_mass(xp, run, x, mask, rows, upper, ones):
    """The row masses of the operator's own rows at x's shape and tokens: every value vector the all-ones
    vector (``ones``: the overrides value weight 0, value bias 1, output weight I), so out_i = sum_j W_ij
    in each head's coordinates; equal to 1 (upper "eq") or at most 1 ("le") on ``rows``.  Each mass sums
    twice over the n keys in the dtype's own arithmetic (the weights' normaliser, then W V): 2 n terms
    (``tolerance.accumulation``: a half probe of float32 sums in float32 and cannot show those sums)."""
    mass = run(x, mask, **ones)[rows]
    one = xp.ones_like(mass)
    terms = (2 * x.shape[1], 0)          # the constant 1 sums nothing
    return [S.equal(mass, one, "row mass of the real rows (values = 1) vs 1", terms=terms) if upper == "eq"
            else S.at_most(mass, one, "row mass of the real rows (values = 1) above 1", terms=terms)]


# -- contracts (the fuzz tier's choices of the statements' inputs) ------------------------

def unit_values(case, scale: float = 1.0) -> dict | str:
    """The overrides that make every value vector ``scale`` times all-ones and the output projection the
    identity (so the output is each head's row mass times ``scale``), or why the operator has none."""
    roles = case.op.domain.roles
    (wv, bv), wo = roles.value, roles.output
    p = case.params
    if not all(isinstance(p.get(k), torch.Tensor) for k in (wv, bv, wo)):
        return f"the operator has no value projection {wv}, {bv} and output weight {wo} to set"
    if p[wo].ndim != 2 or p[wo].shape[0] != p[wo].shape[1]:
        return f"its output weight {wo} is not square"
    return {wv: torch.zeros_like(p[wv]), bv: torch.full_like(p[bv], scale), wo: torch.eye(p[wo].shape[0],
                                                                                       dtype=p[wo].dtype)}


def real_rows(case, rows, upper) -> V.Verdict | None:
    """The row-mass law on the operator's own rows, at the case's shape and tokens (issue 43, class 3): the
    probe of ``applied`` has tokens of norm >= 1 and a width >= 2n, so a body whose mass depends on the
    tokens, or that takes another path when n > d, passed it.  Read through value-linearity: with every
    value vector all-ones, out_i = sum_j W_ij.  Applies where the output is linear in the values, checked
    on the case: values 2 * ones must give exactly twice the output (a power of two: exact in every
    dtype); an operator that normalises its output (rela) is not, and only the probe judges it (None)."""
    ones, twos = unit_values(case), unit_values(case, 2.0)
    if isinstance(ones, str):
        return None
    x, mask = case.x, case.mask
    one = case.runner.run(x, mask, **ones).double()
    two = case.runner.run(x, mask, **twos).double()
    finite = torch.isfinite(one) & torch.isfinite(two)
    if not torch.equal(torch.where(finite, 2 * one, 0 * one), torch.where(finite, two, 0 * two)):
        return None

    def make(case_, dtype):
        # the statement's run in the case's dtype is ``one`` (the same call, made above): not made twice
        run = S.runner(case_, dtype)
        if dtype != case.dtype:
            return run
        return S.Runner(lambda x_, mask_, **o: one if x_ is x and mask_ is mask and o.keys() == ones.keys()
                        and all(o[k] is ones[k] for k in o) else run(x_, mask_, **o), run.reference)
    verdict = S.judge(case, lambda xp, run: real_mass(xp, run, x, mask, rows, upper, ones), make)
    return dataclasses.replace(verdict, detail=f"real rows (n = {case.n}, d = {case.d}, the case's tokens): "
                                               + verdict.detail)


def with_real_rows(case, probe: V.Verdict, rows, upper) -> V.Verdict:
    """The probe's verdict and the real rows' (:func:`real_rows`), the first violation deciding."""
    real = real_rows(case, rows, upper)
    if real is None:
        return dataclasses.replace(probe, detail=probe.detail + "; real rows not read (output not linear in "
                                                                "the values, or no value projection)")
    if real.violated:
        return real
    decisive = worst(probe, real)
    other = real if decisive is probe else probe
    return dataclasses.replace(decisive, detail=f"{decisive.detail}; and {other.detail}")


def at_threshold(case, *ss) -> torch.Tensor | None:
    """(batch, n) bool: rows at a rectified normaliser's threshold in any of the score matrices ``ss``
    (the reference's ``threshold_scores``), or None for an operator without a threshold."""
    shifted = getattr(case.op.reference, "threshold_scores", None)
    if shifted is None:
        return None
    m = visibility(case)
    m = torch.ones_like(ss[0]) if m is None else m.to(torch.float64)
    threshold = case.op.domain.roles.threshold
    extra = {threshold: _tau(case)} if threshold in shifted.__code__.co_varnames else {}
    near = torch.zeros(ss[0].shape[:2], dtype=torch.bool)
    for s in ss:
        sp = shifted(TORCH, s, m, **extra)
        top = torch.where(m > 0, sp, sp.min() - 1.0).amax(-1)
        scale = (s.abs() * m).amax(-1) + (sp.abs() * m).amax(-1)
        rel = top.abs() / torch.where(scale > 0, scale, torch.ones_like(scale))
        near |= rel <= THRESHOLD_ULPS * UNIT_ROUNDOFF[case.dtype]
    return near


@contract(exact=False, **_SCORE,
          symbolic=SymbolicOptions(shape=(3, 0), over="scores", statement=shift_invariant, inputs=(("c", "row"),),
                                   says=lambda at: "W(S + c_t 1) = W(S) for any per-row constants c_t"))
def score_shift_invariance(case):
    """W(S + c 1) = W(S) for a constant c added to each row."""
    s = scores(case)
    c = case.shift * case.random_like((case.batch, case.n, 1), salt=22).clamp(-1, 1)
    near = at_threshold(case, s, s + c)
    make, make_rounded = weigher, rounded_weigher
    if near is not None and bool(near.any()):
        keep = (~near).to(torch.float64)[..., None]

        def kept(build):                         # the set-aside rows read 0 on both sides, in every dtype
            def make_(case_, dtype):
                w = build(case_, dtype)
                return lambda s_, **o: w(s_, **o) * keep
            return make_
        make, make_rounded = kept(weigher), kept(rounded_weigher)
    verdict = S.judge(case, lambda xp, w: shift_invariant(xp, w, s, c), make, make_rounded)
    verdict = dataclasses.replace(verdict, detail=f"row shifts up to {float(c.abs().max()):.3g}: " + verdict.detail)
    if near is not None and bool(near.any()):
        verdict = dataclasses.replace(
            verdict, detail=verdict.detail + f"; set aside {int(near.sum())} of {near.numel()} rows at the threshold",
            extra={**verdict.extra, "set_aside_threshold": int(near.sum())},
            inconclusive=verdict.inconclusive or bool(near.all()))
    return verdict


@contract(exact=False, **_SCORE,
          symbolic=SymbolicOptions(shape=(3, 0), over="scores", statement=tau_covariant, inputs=(("c", "real"),),
                                   says=lambda at: "W(S + c, tau + c) = W(S, tau) for every real c"))
def tau_covariance(case):
    """W(S + c, tau + c) = W(S, tau) for every constant c."""
    s, c, tau = scores(case), case.shift, _tau(case)
    verdict = S.judge(case, lambda xp, w: tau_covariant(xp, w, s, c, tau), weigher, rounded_weigher)
    return dataclasses.replace(verdict, detail=f"shift c = {c:.3g} of scores and tau: " + verdict.detail)


def max_negative(w) -> float:
    """Largest -w_ij (0 when none is negative); NaN if any weight is NaN."""
    if w.numel() == 0:
        return 0.0
    return float((-w.double()).clamp(min=0).max())


@contract(exact=False, **_SCORE,
          symbolic=SymbolicOptions(shape=(3, 0), over="scores", statement=distribution,
                                   at=lambda at: [dict(rows=slice(None), upper="eq")],
                                   real_rows=lambda xp, run, x, mask, ones: real_mass(xp, run, x, mask, slice(None),
                                                                                      "eq", ones),
                                   says=lambda at: "W >= 0 and every row sums to 1 (the probe's rows and the "
                                                   "operator's own at any tokens of width 1)"),
          adversary=AdversaryOptions(rank=6, sees=frozenset({"drop_key"})))
def simplex(case):
    """W >= 0 and every row sums to 1."""
    # A row with no visible key has no distribution to sum to 1 (softmax makes it 0/0):
    # the law is about rows that see something.
    m = visibility(case)
    seen = slice(None) if m is None else (m.sum(-1) > 0)
    s = scores(case)
    probe = S.judge(case, lambda xp, w: distribution(xp, w, s, seen, "eq"), weigher)
    return with_real_rows(case, probe, seen, "eq")


@contract(exact=False, **_SCORE,
          symbolic=SymbolicOptions(shape=(3, 0), over="scores", statement=distribution,
                                   at=lambda at: [dict(rows=slice(None), upper="le")],
                                   real_rows=lambda xp, run, x, mask, ones: real_mass(xp, run, x, mask, slice(None),
                                                                                      "le", ones),
                                   says=lambda at: "W >= 0 and every row sums to <= 1 (the probe's rows and the "
                                                   "operator's own at any tokens of width 1)"),
          adversary=AdversaryOptions(rank=7))
def sub_simplex(case):
    """W >= 0 and every row sums to at most 1."""
    s = scores(case)
    probe = S.judge(case, lambda xp, w: distribution(xp, w, s, slice(None), "le"), weigher)
    return with_real_rows(case, probe, slice(None), "le")


def _through_tau(op) -> str | None:
    if op.domain.scalar(op.domain.roles.threshold) is None:
        return "the operator has no threshold tau to silence a row through its implementation"
    return None


def silence_through_tau(case) -> V.Verdict:
    """silence on the operator's inputs: with tau above every score, the output is exactly 0.

    An implementation need not take scores (a fused kernel takes q, k, v), so
    the premise "all S - tau <= 0" is met by raising tau above the largest
    FIR score of the case (computed in float64) by a margin of 10% plus 0.1,
    far more than any dtype's score rounding.
    """
    q, k, _ = projections.project_qkv(TORCH, case.x, **case.op.domain.roles.standard(case.params, output=False))
    top = float(projections.scores(TORCH, q, fir(TORCH, k)).abs().max())
    tau = 1.1 * top + 0.1
    out = case.runner.run(case.x, case.mask, **case.op.domain.roles.named(dict(threshold=tau)))
    return exact_zero(out, f"output with tau = {tau:.3g} above every score (|S| <= {top:.3g})")


@contract(exact=True, form=_through_tau, **{**_SCORE, "evaluated": "output"},
          symbolic=SymbolicOptions(shape=(3, 0), over="scores", statement=silent, inputs=(("v", "row"),),
                                   bounds=lambda v: [(v["s"], v["params"].get(v["roles"].threshold), "S - tau <= 0 everywhere")],
                                   says=lambda at: "every S_tj - tau <= 0 => W = 0 and W v = 0 (tau = 0 when the "
                                                   "normaliser has none)"),
          adversary=AdversaryOptions(scale_blind=SHARED_AXES))
def silence(case):
    """All S'_tj = S_tj - tau <= 0 implies row mass 0 and output exactly 0."""
    # The reference is judged on its applied weights (scores chosen at and below tau, the
    # boundary included); another implementation through its inputs (silence_through_tau).
    if not case.runner.implementation.reference:
        return silence_through_tau(case)
    tau = _tau(case)
    # at and below tau, within the dtype's finite range: tau = -65504 in float16 leaves only
    # S = tau (a score below it rounds to -inf, no input of the dtype); S - tau <= 0 still holds
    s = (tau - scores(case).abs()).clamp(min=-torch.finfo(case.dtype).max)
    s[..., 0] = tau                                   # the boundary S' = 0 is silent too
    v = case.random_like((case.batch, case.n, case.d), salt=23)
    probe = S.judge(case, lambda xp, w: silent(xp, w, s, v), weigher)
    if _through_tau(case.op) is not None:
        return probe
    # the real rows too: the case's own tokens, tau above every score they make (issue 43, class 3)
    return worst(probe, silence_through_tau(case))


PREMISE_RESOLUTION = 16     # gate_below_one: the scores' rounding at |tau| must stay 1/16 of a peak's range


@contract(exact=True, **_SCORE)
def gate_below_one(case):
    """Rows whose largest rectified score m_t = max_j (S_tj - tau)+ is at most 1 have mass strictly below 1."""
    # A gate g with g < 1 for every finite m stays well below 1 at m <= 1 in
    # every dtype (docs/mathematics.md#pn-fir-tau's m / (1 + m) gives at most 1/2), so strictness is
    # judged exactly here; a gate that saturates at moderate peaks fails.
    tau = _tau(case)
    if PREMISE_RESOLUTION * UNIT_ROUNDOFF[case.dtype] * abs(tau) > 1.0:
        # The premise needs S - tau in [0, 1] while S sits at |tau|: past |tau| = 1 / (16 u) the scores'
        # own rounding there (a dot product of length D errs by ~ sqrt(D) u |S|) moves a peak by more than
        # its whole range, so no implementation in this dtype can be held to it (Triton float32 at
        # tau = 1e21, the baseline's smoke run: S - tau came out 6.5e13, mass 1).  Not judged.
        return V.holds(0.0, 0.0, f"inconclusive: |tau| = {abs(tau):.3g} puts the scores where {case.dtype} cannot "
                       f"resolve a peak in [0, 1] (|tau| > 1 / (16 u) = {1 / (16 * UNIT_ROUNDOFF[case.dtype]):.3g})",
                       inconclusive=True)
    s = tau + scores(case).abs().clamp(max=1.0) * torch.sign(scores(case))   # rectified peaks in [0, 1]
    w = weights(case, s).double()
    m = visibility(case)
    mass = w.sum(-1)
    visible = torch.ones_like(mass, dtype=torch.bool) if m is None else m.sum(-1) > 0
    top = float(mass[visible].max()) if bool(visible.any()) else 0.0
    if top != top:
        return V.violated(float("nan"), 1.0, "a row mass is NaN at peaks <= 1")
    return V.Verdict(V.Status.VIOLATED if top >= 1.0 else V.Status.HOLDS, top, 1.0,
                     f"largest row mass {top:.6g} at peaks <= 1 (must stay strictly below 1)")
