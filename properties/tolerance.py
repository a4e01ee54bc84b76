"""The one tolerance model for every tolerance-based contract.

A contract compares two computations that agree in exact arithmetic when
the law holds, e.g. ``a = F(insert_null(x))[old]`` and ``b = F(x)``.  Each
side is evaluated in the dtype under test ``D``, in float64 (the reference)
and in a *probe* precision ``P``.  If the law holds in the reals,

    |a_D - b_D| <= err_D(a) + err_D(b)

where ``err_D`` is each side's own rounding error in D.  We never use the
*measured* ``|a_D - a_64|`` for that: a bug that only shows in D (a null
token's key overflowing fp16 and underflowing everybody's weight, say) would
then inflate its own bound and pass.  Instead the error in D is predicted
from an independent run of the same computation in the probe precision P,
scaled by the ratio of unit roundoffs:

    err_D(v) ~ K * (u_D / u_P) * max(|v_P - v_64|, r_P * |v_64|, max_anywhere |v_P - v_64|)
             + K * u_D * max_anywhere |v_64| + K * 64 * tiny_D

with ``K = 8``, ``r_P`` the tensor's worst relative error in P (one entry's
error can be small by luck), the ``max_anywhere`` terms making the estimate
normwise (reductions round intermediates as large as the tensor's largest
entry, and low-precision formats often accumulate internally in float32, so
their errors are not entrywise copies of float32's), ``tiny_D`` the smallest
subnormal of D (an absolute floor for underflow), and P = float32 for D in {float64, float16,
bfloat16}.  For D = float32 (which must not be its own probe) P is float16, the half format
nearer to it (3 bits fewer to extrapolate than bfloat16's), and bfloat16 wherever float16 cannot
stand in for it (:func:`usable`: float16 overflowed where float64 is finite, or erred by more than
``FIRST_ORDER_LIMIT`` normwise; bfloat16 is then evaluated too, see :func:`evaluate`).  The
first choice was bfloat16 alone; both halves round a product once after summing in float32, so
neither sees float32's own accumulation error, but bfloat16's single rounding hides it more: at
n = 130 keys, scores in the hundreds, float32 erred by 64 of its ulps where bfloat16 erred by 1.5 of
its own (predicting 24) and float16 by 4.6 (predicting 74; docs/fuzz.md, seed 2).  The bound is

    bound = err_D(a) + err_D(b) + accumulation(a) + accumulation(b) + input_rounding(a) + input_rounding(b)
            + allowance

**Reductions the probe does not round in D's steps.**  A half-precision probe of float32 sums in float32
and rounds once, so its error contains none of float32's own accumulation: where a value sums ``terms``
entries in the dtype under test (a row mass: the weights' normaliser and the product W V, each over the n
keys), a side whose probe is coarser than D adds the classic worst-case bound of a sum of ``terms``
non-negative terms (Higham, *Accuracy and Stability of Numerical Algorithms*, ch. 3; any order, blocking
or FMA), ``gamma(terms, u_D) * max_anywhere |v_64|``, gamma(k, u) = k u / (1 - k u) (the style of
``properties/softmax_backward.py``'s a-priori steps).  A probe at least as fine as D (float32 for a half,
or for float64) made the same sums in its own precision, and its scaled error already predicts them: no
term is added there.  Seed 1 (issue 43): the real-row mass of sdpa at n = 166 erred by 18 units of
float32's roundoff, sparsemax's at n = 129 by 24, against the 16 of a bound that did not grow with n.

**The inputs' own rounding.**  A probe's error contains its rounding of the law's inputs, which can be far
smaller than D's by luck: float32 at scores of 340 rounds each by up to 2e-5, while float16 rounded 338.79
and 336.54 to a difference off by 0.0016 of a spacing of 0.25 (seed 1, sdpa score shift, float32: the
prediction came out at half of float32's error).  A nonlinear law amplifies that luck: sparsemax in
bfloat16 ties two scores 1.16 apart (spacing 2 at 340) and moves a weight by 0.5 where float32's scores
are 1e-5 off.  Where the statement can say what its inputs are (``input_rounding`` of :func:`compare`:
``statement.judge``'s ``make_rounded``), that part of D's error is computed outright in float64,
|F_64(round_D(inputs)) - F_64(inputs)| per side, and added, as ``differential`` does.  A side that moves
by more than ``BOUND_FRACTION`` of its scale under that rounding alone decides nothing: an example whose
discrepancy is within such a bound is inconclusive (``judging.compared``), never a pass; one past it is
violated as always.  The same holds in :func:`differential`: where rounding the inputs to D moves the
output by more than ``BOUND_FRACTION`` of its scale, the example is inconclusive (``bound_relative``).  Seed 1
(issue 43): ``oa_only_host`` in bfloat16 at bias scale 100 forms block-1 scores of 33 as the cancellation of
products of about 3e4 (biases bq, bk near 200); bfloat16 made one -20.5, below log(eps_den), and the row's
update vanished (62 against a prediction of 39), while float32's score error of 0.005 at a saturated row
predicted nothing; rounding the inputs alone already moved the output by 145 of its 254.

``allowance`` is an analytic term a contract adds for a law that is a limit
(e.g. tau -> 0), stated where used.  The bound never contains
``|a_64 - b_64|`` or ``|a_D - a_64|``: a violation is detected as soon as it
exceeds the rounding error the computation is predicted to make.

Exact contracts do not use this module: they compare bit-for-bit.

**Differential checks** (:func:`differential`) compare the implementation in
``D`` with the float64 reference on the same float64 inputs (each run rounds
them to its own dtype).  Here the triangle bound above would contain the
very discrepancy under test, so the bound is a prediction of D's error from
the float32 run's measured error on the same inputs, scaled by the ratio of
unit roundoffs (rounding error, of the inputs and of every intermediate, is
first-order linear in ``u``), plus a few ULPs of the value and an absolute
floor at D's smallest normal number (results that underflow):

    bound = K * max_P (u_D/u_P) * err_P + K * u_D * |a_64| + K * tiny_D,
    err_P = max(|a_P - a_64|, r_P * |a_64|, max_anywhere |a_P - a_64|)

over the probes P: float32, and for a half-precision D also the other
half format (float16 for bfloat16 and vice versa), whose error is much
closer to D's than float32's: extrapolating 3 bits is steadier than 13,
and a float32 run on a small tensor can be exact by luck.
The last term makes the estimate normwise: an entry that cancels (small
output from large intermediates) rounded intermediates as large as any
other entry's, and its own float32 error may be small by luck.  If the
probes are *exactly* right everywhere the estimate is 0 and D must be
exact too (to K ULPs): a D that returns rounding noise where float32 and
float64 agree exactly is reported.

The float32 run is always the eager float32 evaluation of the operator, so
for a kernel backend every dtype is checked; for the eager backend the
float32 cell would compare the probe with itself, and is not run.

**Systematic bias** (``bias=True`` of :func:`differential`, the ``differential`` contract's half cells).  The
normwise bound above is a worst case per entry with a safety factor K; a *coherent* error of a low dtype, the
whole output scaled by 1 + c, stays inside it up to c = K u_D times the conditioning (a 1 % scale is 20 float16
roundoffs, 0.2-1.0 of that bound: issue 43's adversary gaps).  Rounding errors are mostly incoherent, and
their projection on the output averages out; a scale does not.  So D's systematic relative bias is judged too:

    beta_D = <a_D - a_64, a_64> / <a_64, a_64>        (over the kept entries; a scale by 1 + c adds c)

against a bound with three parts.  Write a_D = fl_D(y), y the exact result of D's last operation on its own
(rounded) operands, and split y - a_64 = s + e with s = F_64(round_D(inputs)) - F_64(inputs):

- *final rounding*, rigorous: |fl(y)_i - y_i| <= u_D |y_i| in D's normal range and |y_i| <= |a_D,i| / (1 - u_D);
  an entry with |a_D,i| <= tiny (D's smallest normal) may be a subnormal or flushed result, off by at most
  tiny; so its part of |beta_D| is at most
  (u_D / (1 - u_D) <|a_D|, |a_64|> + tiny sum_{|a_D,i| <= tiny} |a_64,i|) / <a_64, a_64>  (about u_D);
- *the inputs' rounding*, computed: |<s, a_64>| / <a_64, a_64> exactly in float64 (D's own rounded inputs), plus
  <m, |a_64|> / <a_64, a_64> for the squared-norm resolution m below D's range (:func:`input_rounding`'s second
  part), an absolute bound;
- *D's other roundings* e, **predicted, not proved**: K max_P,s (u_D / u_P) |beta_P,s| over the probes P and
  over the case's tokens and the ``RESAMPLES`` nearby inputs s (each sample's beta against its own float64).
  The assumptions are the normwise bound's: first order in u (e scales with u, coherent part included: an
  operator that rounds one row-wide scalar, a norm's rms, biases every entry of that row alike, in D and in
  the probe alike), the probe at least as fine as D (so it makes D's sums; the bias is only judged where
  D's first probe is finer, i.e. D is float16 or bfloat16 -- float32, whose half probes sum in float32 and
  round once, shows none of float32's own accumulation, and its worst case gamma(2 n, u_32) would pass
  a 1e-6 scale from n = 8 on), and statistical: the probe's bias is a sample of its rounding and can be
  small by luck (a single row rounded once): a violation is reported only after all 1 + RESAMPLES samples
  fell short of D's bias by more than the factor K = 8.

Where the bias bound exceeds ``BOUND_FRACTION`` (or float64's output is 0) the bias decides nothing and the
normwise comparison judges alone, as before.  The criterion only ever adds a violation: it cannot turn a
failing example into a pass; an assumption that fails (a probe whose coherent error is far below D's) reads
as a violation of a correct operator, which the registry's own runs at seeds 0-4 would show (none did:
docs/fuzz.md).  A legitimately coherent rounding (every row the same vector, rounded the same way) is
covered by the rigorous final-rounding part: tests/properties/test_tolerance_bias.py.

A probe's error is one sample of its rounding, and a tensor can hold a single one (every row one scalar
times a fixed vector): before a differential example is judged violated, its probes are sampled again on
``RESAMPLES`` nearby inputs and the largest prediction counts (``resamples`` of :func:`differential`).
"""
from __future__ import annotations

import dataclasses
import math

import torch

from tokenlaw.operators import dtypes, tree
from tokenlaw.operators.errors import InvalidArgument

K = 8.0
# The bound is first order in u: valid only while a rounding error is small against the output.  A probe
# whose own normwise error passes this fraction of the output's scale has left its linear regime (bfloat16
# at a score offset of 7844 rounds every score by up to 16 units: the weights are noise, its error is capped
# by the output's range and no longer grows with u), so scaling it by u_D / u_P predicts nothing.
FIRST_ORDER_LIMIT = 1 / 16
# A bound that a contract *predicts* or states *a priori* (the probes' scaled error, softmax_backward's
# worst-case bound of a standard backward's own steps) decides an example only while it is small against
# what it bounds: a bound of more than BOUND_FRACTION of the compared tensor's own scale (its largest
# |float64 entry|) would pass a wrong value of that tensor's whole size -- a backward that sets dS = 0 on a
# saturated row moves the gradient by at most its own scale, and the a-priori bound there was 1e2 to 1e190
# times it -- and it is past the first-order regime in which the bound was derived (FIRST_ORDER_LIMIT: the
# same sixteenth).  Such an example is inconclusive (counted, never a pass): Comparison.bound_relative.
BOUND_FRACTION = FIRST_ORDER_LIMIT
# A probe's error is one sample of its rounding.  Where an output is one scalar times a fixed vector (every
# row of a case whose sources all carry presence 1e-33, say) the whole tensor holds a single sample, and a
# float32 run that erred by 1.2 of its ulps on the drawn tokens erred by 6 to 83 on tokens 1e-5 away while
# float64 erred by 4 to 35 of its own (docs/fuzz.md item 9): one lucky sample under-predicts 20-fold.
# Before a differential example is judged violated its probes run again on RESAMPLES nearby inputs: each
# token scaled by 1 + RESAMPLE * u_P * r, r standard normal (null tokens stay null, signs stay), which
# moves every rounding of the probe P and leaves the conditioning as it was.
RESAMPLES = 3
RESAMPLE = 16.0
TINY_FLOOR = 64          # underflowed terms an output may accumulate, times the smallest subnormal
# The probes of each D, in order of preference: float32, except for float32 itself, whose probe is
# float16 and, where float16 is not usable, bfloat16 (see above).  PROBE is the first choice.
PROBES = {dt: (torch.float16, torch.bfloat16) if dt == torch.float32 else (torch.float32,) for dt in dtypes.FLOATS}
PROBE = {dt: probes[0] for dt, probes in PROBES.items()}
TINY = {dt: torch.finfo(dt).smallest_normal * torch.finfo(dt).eps for dt in dtypes.FLOATS}
UNIT_ROUNDOFF = dtypes.UNIT_ROUNDOFF


@dataclasses.dataclass
class Comparison:
    discrepancy: float     # |a_D - b_D| at the worst index
    bound: float           # the bound at the worst index
    ratio: float           # max_i discrepancy_i / bound_i (the worst index)
    index: tuple | None    # where the worst ratio sits
    max_discrepancy: float  # max_i |a_D - b_D| anywhere
    predicted_relative: float = 0.0  # differential only: largest predicted error / largest |reference|
    probe_relative: float = 0.0      # compare only: the probes' largest normwise error / largest |float64 value|
    scale: float = 0.0               # the largest finite |float64 value| (compare: of either side)
    least_bound: float = 0.0         # the smallest bound of any entry: its normwise part, the same wherever the
                                     # worst ratio sits (the gate compares it on one example)
    resampled: int = 0               # differential only: nearby inputs the probes were sampled on too (RESAMPLES)
    trivial: bool = False            # every compared entry is exactly 0 on both sides (e.g. only null rows were
                                     # left): the comparison happened where every candidate agrees, so it judged
                                     # no value (a law about values reads it as not judged: fuzz.engine)
    input_relative: float = 0.0      # compare and differential: the largest input-rounding term / scale (the
                                     # inputs' own rounding to D moves a side that much: past BOUND_FRACTION
                                     # nothing is decided)
    a_priori_relative: float = 0.0   # differential only: largest a-priori bound / scale (inf: an infinite bound,
                                     # or a bound on a tensor that is 0 everywhere)
    bias: float = 0.0                # differential with bias=True: |beta_D|, D's systematic relative bias against
                                     # float64, <a_D - a_64, a_64> / <a_64, a_64> (:func:`bias_bound`)
    bias_bound: float = 0.0          # its derived bound (0: not judged -- no scale, or the bound past BOUND_FRACTION)
    range_flushed: bool = False      # differential only: a failing comparison whose D value is, within the bound,
                                     # the float64 value with the near-null tokens flushed to 0: below D's range,
                                     # inconclusive (properties.differential_laws.flushed)

    @property
    def bound_relative(self) -> float:
        """The largest predicted or a-priori part of the bound against the tensor's own scale: past
        ``BOUND_FRACTION`` the example decides nothing (inconclusive, never a pass)."""
        return max(self.predicted_relative, self.a_priori_relative, self.input_relative)

    @property
    def bias_ratio(self) -> float:
        """|beta_D| / its bound where the bias was judged (:func:`bias_bound`), else 0."""
        if self.bias_bound <= 0.0:
            return 0.0
        return self.bias / self.bias_bound

    @property
    def ok(self) -> bool:
        return self.ratio <= 1.0 and self.bias_ratio <= 1.0


def _probe_error(vP, v64, normal: float = 0.0):
    """Elementwise probe-precision error, floored by the tensor's worst relative error over the entries
    at least ``normal`` (the probe's smallest normal number: below it the probe rounds to an absolute
    spacing, and float16 flushing a near-null row's 1e-15 to 0 is no relative error of 1 that float32
    would make on every other entry; the normwise term still counts that absolute error)."""
    err = (vP - v64).abs()
    finite = torch.isfinite(err) & (v64.abs() > 0) & (v64.abs() >= normal)
    rel = float((err[finite] / v64.abs()[finite]).max()) if bool(finite.any()) else 0.0
    return torch.maximum(err, rel * v64.abs())


def _normwise(err):
    """The largest finite error anywhere in the tensor, as a tensor of err's shape."""
    finite = torch.isfinite(err)
    worst = float(err[finite].max()) if bool(finite.any()) else 0.0
    return torch.full_like(err, worst)


def usable(vP, v64, vD=None, probe: torch.dtype | None = None) -> bool:
    """A probe's value can predict D's error: finite wherever float64 is, within its first-order regime
    (normwise relative error at most ``FIRST_ORDER_LIMIT``), and able to hold the values at all: the
    largest |entry| of float64's value and of D's (``vD``) is 0 or at least the probe's smallest normal.
    float16 overflowing a score offset, or flushing a presence of 1e-19 to 0 (it then agrees with
    float64's exact 0 by luck while float32 computes 1e-19 and rounds it), gives no picture of D's rounding.
    ``probe``: the probe's dtype (the values may come as float64, as a statement's runner returns them)."""
    normal = torch.finfo(vP.dtype if probe is None else probe).smallest_normal
    vP, v64 = vP.double(), torch.as_tensor(v64).double()
    if not bool(torch.isfinite(vP[torch.isfinite(v64)]).all()):
        return False
    for v in (v64, vD):
        top = _largest(v) if v is not None else 0.0
        if 0.0 < top < normal:
            return False
    return _relative(vP, v64) <= FIRST_ORDER_LIMIT


def _tensors(value) -> list:
    """The tensors a probe must predict in a value: each tensor leaf of its tree (a tensor, a list /
    tuple / dict of them), and the lhs / rhs of each claim leaf (an exact claim's are judged bit for bit,
    with no probe)."""
    out = []
    for _, leaf in tree.leaves(value):
        if torch.is_tensor(leaf):
            out.append(leaf)
        elif not getattr(leaf, "exact", False):
            out += [t for t in (getattr(leaf, "lhs", None), getattr(leaf, "rhs", None)) if torch.is_tensor(t)]
    return out


def evaluate(f, dtype: torch.dtype, evaluated=None) -> dict:
    """{dt: f(dt)} over D, float64 and D's probes: the first probe, and the next ones only while a tensor
    of the last is not :func:`usable` against float64 (float32's bfloat16, evaluated where float16 is not).

    ``evaluated``: values already computed, by dtype (reused, not recomputed)."""
    out = dict(evaluated or {})
    for dt in (dtype, torch.float64):
        if dt not in out:
            out[dt] = f(dt)
    probes = [p for p in PROBES[dtype] if p != dtype]
    for probe in probes:
        if probe not in out:
            try:
                out[probe] = f(probe)
            except InvalidArgument:
                # the inputs do not fit the probe's range (a float32 case's bias of 1e5 is inf in
                # float16, which the operator rightly refuses): the next probe stands in; the last raises
                if probe == probes[-1]:
                    raise
                continue
        if probe == probes[-1] or all(usable(p, r, d, probe) for p, r, d in zip(_tensors(out[probe]), _tensors(out[torch.float64]),
                                                                         _tensors(out[dtype]))):
            break
    return out


def probe_of(v: dict, dtype: torch.dtype) -> torch.dtype:
    """The probe that predicts D's error for this value: the first of ``PROBES[dtype]`` that was evaluated
    and is :func:`usable`, else the last one evaluated."""
    present = [p for p in PROBES[dtype] if p in v and p != dtype]
    if not present:
        raise KeyError(f"no probe of {dtype} among the evaluated dtypes {sorted(map(str, v))}")
    for p in present[:-1]:          # only float32's float16, when bfloat16 was evaluated too
        if usable(v[p], v[torch.float64], v.get(dtype), p):
            return p
    return present[-1]


def predicted_error(v: dict, dtype: torch.dtype, probe: torch.dtype | None = None) -> torch.Tensor:
    """err_D(v) of the module docstring, from {dtype: tensor} holding float64 and D's probe(s)
    (``probe``: the one :func:`probe_of` chose, when the caller has it)."""
    probe = probe_of(v, dtype) if probe is None else probe
    v64, vP = v[torch.float64].double(), v[probe].double()
    uD, uP = UNIT_ROUNDOFF[dtype], UNIT_ROUNDOFF[probe]
    # Normwise: an entry whose own probe error is small by luck (or cancels)
    # still rounded intermediates as large as the tensor's worst entry.  Half
    # formats and bfloat16 often accumulate in float32 internally, so their
    # error is not a scaled copy of float32's entry by entry.
    err = torch.maximum(_probe_error(vP, v64, torch.finfo(probe).smallest_normal), _normwise((vP - v64).abs()))
    values = torch.maximum(v64.abs(), _normwise(v64.abs()))
    return K * (uD / uP) * err + K * uD * values + K * TINY_FLOOR * TINY[dtype]


def gamma(k: int, u: float) -> float:
    """gamma_k = k u / (1 - k u): the relative error bound of a sum of k terms (inf once k u >= 1)."""
    return k * u / (1 - k * u) if k * u < 1 else float("inf")


def accumulation(v: dict, dtype: torch.dtype, probe: torch.dtype, terms: int) -> float:
    """The part of D's error a probe coarser than D cannot show: D's own accumulation of a sum of ``terms``
    entries, ``gamma(terms, u_D) * max |v_64|`` (module docstring); 0 where the probe is at least as fine as
    D (its own sums are in its scaled error) or nothing is summed."""
    if terms <= 1 or UNIT_ROUNDOFF[probe] <= UNIT_ROUNDOFF[dtype]:
        return 0.0
    return gamma(terms, UNIT_ROUNDOFF[dtype]) * _largest(v[torch.float64])


def compare(a: dict, b: dict, dtype: torch.dtype, allowance: float = 0.0, terms: tuple = (0, 0),
            input_rounding: tuple = (None, None)) -> Comparison:
    """Compare two sides evaluated as {dtype: tensor} for D, float64 and D's probe precision(s) (:func:`evaluate`).

    ``terms``: (for a, for b) how many entries that side sums in D's own arithmetic along its longest chain of
    sums (the row mass of n keys: 2 n; a constant 1: 0), for :func:`accumulation`; 0 where not stated.
    ``input_rounding``: (for a, for b) |F_64(round_D(inputs)) - F_64(inputs)| of that side, or None (module
    docstring); added to the bound, its largest finite entry against the scale is ``input_relative``.

    A non-finite value in the dtype under test is a violation wherever both
    float64 sides are finite (NaN on both sides is agreement only where the
    float64 evaluation is not finite either: a 0/0 the law itself allows).
    """
    aD, bD = a[dtype].double(), b[dtype].double()
    if aD.shape != bD.shape:
        raise ValueError(f"compare: shapes differ {tuple(aD.shape)} vs {tuple(bD.shape)}")
    with torch.no_grad():
        pa, pb = probe_of(a, dtype), probe_of(b, dtype)
        bound = (predicted_error(a, dtype, pa) + predicted_error(b, dtype, pb) + accumulation(a, dtype, pa, terms[0])
                 + accumulation(b, dtype, pb, terms[1]) + allowance)
        rounding = [torch.nan_to_num(torch.as_tensor(r).double(), nan=0.0, posinf=0.0)
                    for r in input_rounding if r is not None]
        for r in rounding:
            bound = bound + r
        finite64 = torch.isfinite(a[torch.float64].double()) & torch.isfinite(b[torch.float64].double())
        c = _worst(aD, bD, bound, finite64)
        c.probe_relative = max(_relative(a[pa], a[torch.float64]), _relative(b[pb], b[torch.float64]))
        c.scale = max(_largest(a[torch.float64]), _largest(b[torch.float64]))
        top = max((float(r.max()) for r in rounding if r.numel()), default=0.0)
        c.input_relative = top / c.scale if c.scale > 0 else (0.0 if top == 0 else float("inf"))
        return c


def _largest(v64) -> float:
    v = torch.as_tensor(v64).double().abs()
    v = v[torch.isfinite(v)]
    return float(v.max()) if v.numel() else 0.0


def _relative(vP: torch.Tensor, v64: torch.Tensor) -> float:
    """max |vP - v64| / max |v64| over the finite entries: 0 where v64 is 0 everywhere (no scale to compare)."""
    vP, v64 = torch.as_tensor(vP).double(), torch.as_tensor(v64).double()
    err = (vP - v64).abs()
    fin = torch.isfinite(err) & torch.isfinite(v64)
    if not bool(fin.any()):
        return 0.0
    scale = float(v64[fin].abs().max())
    return float(err[fin].max()) / scale if scale > 0 else 0.0


def differential(aD: torch.Tensor, a64: torch.Tensor, probes: dict, dtype: torch.dtype, *,
                 sides: int = 1, input_rounding: torch.Tensor | None = None, ref_probes: dict | None = None,
                 resamples: tuple = (), a_priori: torch.Tensor | None = None, bias: bool = False,
                 input_shift: torch.Tensor | None = None, second_moment: torch.Tensor | None = None) -> Comparison:
    """Compare the implementation in ``dtype`` (aD) with the float64 reference (a64).

    probes: {probe dtype: the eager operator's output in that dtype}; each
    probe's normwise error, scaled by u_D / u_probe, predicts D's error and
    the largest prediction is the bound.  sides = 2 when a64 is itself a
    separate float64 evaluation (an independent reference) whose rounding
    error is predicted like the implementation's; ``ref_probes`` then gives
    the reference's own probe runs (where finite they predict its error).

    input_rounding: |F_64(round_D(inputs)) - F_64(inputs)|, the exact effect
    of rounding the inputs and parameters to D, evaluated in float64.  The
    probes see *their own* input rounding, which can be far smaller than D's
    by luck (two inputs that round alike in float32 but not in float16); this
    term is that part of D's error computed outright, not extrapolated.

    resamples: ``(b64, probes, ref_probes)`` of the same computation on nearby inputs (:data:`RESAMPLE`):
    a probe's error is one sample of its rounding, and each further sample's prediction joins the
    first one's entry by entry (the largest counts; a non-finite one counts as 0, never as an infinite bound).

    a_priori: an elementwise worst-case bound on the error that a step of this implementation's own
    algorithm adds, a step the probes do not take (``properties/softmax_backward.py``); it is added to
    the bound (a non-finite entry counts as 0).

    bias: judge D's systematic relative bias too (module docstring, *Systematic bias*): ``input_shift`` is the
    signed F_64(round_D(inputs)) - F_64(inputs) and ``second_moment`` the rest of ``input_rounding``
    (differential_laws.second_moment_rounding), both optional.  Only where every probe is at least as fine as
    D (a half D; float32 with half probes is not judged this way: the probes cannot show float32's own
    accumulation) and ``sides`` is 1.
    """
    aD, a64 = aD.double(), a64.double()
    if aD.shape != a64.shape:
        raise ValueError(f"differential: shapes differ {tuple(aD.shape)} vs {tuple(a64.shape)}")
    uD = UNIT_ROUNDOFF[dtype]
    with torch.no_grad():
        predicted = _predicted(a64, probes, uD)
        own = _predicted(a64, ref_probes, UNIT_ROUNDOFF[torch.float64]) if ref_probes else None
        for b64, b_probes, b_ref in resamples:
            b64 = b64.double()
            predicted = torch.maximum(predicted, _finite(_predicted(b64, b_probes, uD)))
            if own is not None and b_ref:
                own = torch.maximum(own, _finite(_predicted(b64, b_ref, UNIT_ROUNDOFF[torch.float64])))
        if own is not None:
            # the reference's own rounding, predicted from its own probe where that is finite
            predicted = predicted + torch.where(torch.isfinite(own), own, predicted)
        bound = sides * (K * predicted + K * uD * a64.abs() + K * torch.finfo(dtype).tiny)
        if input_rounding is not None:
            bound = bound + torch.nan_to_num(input_rounding.double(), nan=0.0, posinf=0.0)
        if a_priori is not None:
            # a worst-case bound of the error a step of the implementation's own algorithm adds, a step
            # the probes (another algorithm) do not take (softmax_backward): added, so the bound only grows
            bound = bound + torch.nan_to_num(a_priori.double(), nan=0.0, posinf=0.0)
        scale = float(a64.abs()[torch.isfinite(a64)].max()) if bool(torch.isfinite(a64).any()) else 0.0
        fin = torch.isfinite(predicted)
        top = float(predicted[fin].max()) if bool(fin.any()) else float("inf")
        c = _worst(aD, a64, bound, torch.isfinite(a64))
        c.predicted_relative = top / scale if scale > 0 else (0.0 if top == 0 else float("inf"))
        if a_priori is not None:
            # an infinite entry is no bound at all (softmax_backward.gamma past 1 / u terms): the example
            # decides nothing for this tensor (bound_relative past BOUND_FRACTION), never a bound of 0
            prior = float(torch.nan_to_num(a_priori.double(), nan=0.0).max()) if a_priori.numel() else 0.0
            c.a_priori_relative = prior / scale if scale > 0 else (0.0 if prior == 0 else float("inf"))
        if input_rounding is not None:
            # the inputs' rounding to D alone moves the output this much: past BOUND_FRACTION of its scale the
            # computation is no first-order perturbation in D (bound_relative: the example decides nothing)
            moved = torch.nan_to_num(input_rounding.double(), nan=0.0, posinf=0.0)
            top_moved = float(moved.max()) if moved.numel() else 0.0
            c.input_relative = top_moved / scale if scale > 0 else (0.0 if top_moved == 0 else float("inf"))
        c.scale = scale
        if bias and sides == 1 and probes and UNIT_ROUNDOFF[PROBE[dtype]] < uD:
            samples = [(UNIT_ROUNDOFF[p], _beta(t, a64)) for p, t in probes.items()]
            samples += [(UNIT_ROUNDOFF[p], _beta(t, b64.double())) for b64, b_probes, _ in resamples
                        for p, t in (b_probes or {}).items()]
            c.bias = abs(_beta(aD, a64))
            top = bias_bound(aD, a64, dtype, samples, input_shift, second_moment)
            # a bound past BOUND_FRACTION decides nothing (the normwise comparison still judges)
            c.bias_bound = top if top <= BOUND_FRACTION else 0.0
            if not math.isfinite(c.bias):
                c.bias, c.bias_bound = 0.0, 0.0     # a non-finite D value: the normwise comparison reports it
        return c


def _beta(v: torch.Tensor, v64: torch.Tensor) -> float:
    """<v - v64, v64> / <v64, v64> over the entries where both are finite: v's systematic relative bias against
    float64 (a uniform scale by 1 + c adds c); 0 where v64 is 0 there, nan where v is not finite where v64 is."""
    v, v64 = v.double(), v64.double()
    fin64 = torch.isfinite(v64)
    if not bool(torch.isfinite(v[fin64]).all()):
        return float("nan")
    norm = float((v64[fin64] ** 2).sum())
    if norm == 0.0:
        return 0.0
    return float(((v[fin64] - v64[fin64]) * v64[fin64]).sum()) / norm


def bias_bound(aD: torch.Tensor, a64: torch.Tensor, dtype: torch.dtype, probe_biases, input_shift=None,
               second_moment=None) -> float:
    """The bound on |beta_D| (:func:`_beta` of D's output) for a correct implementation (module docstring,
    *Systematic bias*): D's final rounding, exactly bounded; the inputs' rounding, computed outright; and the
    rest of D's own rounding, predicted from the probes' biases (``probe_biases``: (u_P, beta_P) of every
    probe on every sample).  inf where float64's output is 0 on the compared entries (no scale)."""
    aD, a64 = aD.double(), a64.double()
    fin = torch.isfinite(a64) & torch.isfinite(aD)
    a, d = a64[fin], aD[fin]
    norm = float((a * a).sum())
    if norm == 0.0:
        return float("inf")
    uD = UNIT_ROUNDOFF[dtype]
    # final rounding: a_D = fl(y), |fl(y) - y| <= u |y| where y is in D's normal range, and |y| <= |a_D| / (1 - u);
    # an entry with |a_D| <= D's smallest normal may have been subnormal (or flushed to 0): its error is at most
    # that smallest normal, absolutely (rigorous under gradual underflow and flush-to-zero alike)
    tiny = torch.finfo(dtype).smallest_normal
    low = d.abs() <= tiny
    final = (uD / (1 - uD) * float((d.abs() * a.abs()).sum()) + tiny * float(a.abs()[low].sum())) / norm
    # the inputs' rounding to D: the signed shift F_64(round_D(x)) - F_64(x), projected exactly; the squared-norm
    # resolution below D's smallest normal (second_moment_rounding) only as an absolute bound
    shifted = 0.0
    if input_shift is not None:
        s = torch.nan_to_num(input_shift.double()[fin], nan=0.0, posinf=0.0, neginf=0.0)
        shifted += abs(float((s * a).sum())) / norm
    if second_moment is not None:
        m = torch.nan_to_num(second_moment.double()[fin], nan=0.0, posinf=0.0)
        shifted += float((m * a.abs()).sum()) / norm
    # D's other roundings: first order in u, predicted from the probes' own biases (their largest sample)
    predicted = max((uD / uP * abs(b) for uP, b in probe_biases if math.isfinite(b)), default=0.0)
    return final + shifted + K * predicted


def _finite(t: torch.Tensor) -> torch.Tensor:
    return torch.where(torch.isfinite(t), t, torch.zeros_like(t))


def _predicted(a64: torch.Tensor, probes: dict, uD: float) -> torch.Tensor:
    """max over probes P of (u_D / u_P) * P's normwise error against a64."""
    predicted = torch.zeros_like(a64)
    for pdt, ap in probes.items():
        ap = ap.double()
        err = (ap - a64).abs()
        finite = torch.isfinite(err)
        # normwise: every entry's error is estimated at least as the largest probe error
        # anywhere in the tensor (an entry that cancels rounded intermediates as large as the others)
        worst = float(err[finite].max()) if bool(finite.any()) else 0.0
        err = torch.maximum(_probe_error(ap, a64, torch.finfo(pdt).smallest_normal), torch.full_like(a64, worst))
        predicted = torch.maximum(predicted, (uD / UNIT_ROUNDOFF[pdt]) * err)
    return predicted


def _unravel(flat: int, shape: tuple) -> tuple:
    """The index tuple of entry ``flat`` of a row-major tensor of ``shape`` (torch.unravel_index, without its
    per-call tensor work: it cost a tenth of a host's closure cell)."""
    idx = []
    for size in reversed(shape):
        flat, i = divmod(flat, size)
        idx.append(i)
    return tuple(reversed(idx))


def _worst(aD: torch.Tensor, bD: torch.Tensor, bound: torch.Tensor, finite64: torch.Tensor) -> Comparison:
    """The worst elementwise ratio |aD - bD| / bound, with the NaN and infinity rules of ``compare``.

    finite64: where the float64 evaluation is finite.  There any non-finite
    value in D is a violation (ratio inf), even when both D sides agree on it:
    an oracle that counts NaN == NaN as agreement cannot see a NaN bug.
    """
    with torch.no_grad():
        diff = (aD - bD).abs()
        both_nan = torch.isnan(aD) & torch.isnan(bD)
        same_inf = torch.isinf(aD) & (aD == bD)
        diff = torch.where((both_nan | same_inf) & ~finite64, torch.zeros_like(diff), diff)
        broken = finite64 & ~(torch.isfinite(aD) & torch.isfinite(bD))
        diff = torch.where(broken, torch.full_like(diff, float("inf")), diff)
        diff = torch.where(torch.isnan(diff), torch.full_like(diff, float("inf")), diff)
        bound = torch.nan_to_num(bound, nan=0.0, posinf=float("inf"))
        if diff.numel() == 0:
            return Comparison(0.0, 0.0, 0.0, None, 0.0)
        trivial = bool(((aD == 0) & (bD == 0)).all())
        fin = torch.isfinite(bound)
        least = float(bound[fin].min()) if bool(fin.any()) else 0.0
        ratio = torch.where(diff == 0, torch.zeros_like(diff),
                            torch.where(bound > 0, diff / bound, torch.full_like(diff, float("inf"))))
        ratio = torch.nan_to_num(ratio, nan=float("inf"))
        flat = int(torch.argmax(ratio))
        idx = _unravel(flat, tuple(ratio.shape))
        return Comparison(float(diff.reshape(-1)[flat]), float(bound.reshape(-1)[flat]),
                          float(ratio.reshape(-1)[flat]), idx, float(diff.max()), least_bound=least, trivial=trivial)
