"""Implementation laws: what every backend other than the reference owes the operators it implements.

``@contract(implementation=...)`` laws are claimed by every non-reference
backend (``tokenlaw check --backend NAME``: tokenlaw's Triton kernels, or a
third party's) for every operator it implements:

* ``eager_agreement`` -- the differential check against the float64 eager reference;
* ``nan_padding``     -- inputs placed inside larger NaN-filled buffers give bit-identical outputs;
* ``determinism``     -- reruns are bit-identical;
* ``gradient_agreement`` -- gradients w.r.t. the tokens, every weight and tau
  match the float64 eager gradients within the predicted rounding error.

The others are claimed per operator (``implementation_claims=`` of its
declaration), because the math has them only there:

* ``null_key_immunity`` -- a token with a null carrier is inert however large its key;
* ``null_carrier_gradient`` -- a token with a null carrier gets exactly 0
  gradient in its tokens and its carrier, however large its key;
* ``masked_gradient`` -- a source gets exactly 0 gradient from the outputs of
  the receivers it is masked from;
* ``gradient_causality`` -- out_t has exactly 0 gradient w.r.t. tokens after t;
* ``silent_gradient`` -- a silent row (no score above tau) has exactly 0
  gradient w.r.t. every input.

Every law runs the implementation through the case's backend (``case.runner.run``,
``case.runner.call``, ``Backend.run_placed``): the gradient laws judge its backward
(eager autograd, or a backend's fused backward kernels).
"""
from __future__ import annotations

import dataclasses

import torch

from tokenlaw.operators import dtypes, projections, tree
from tokenlaw.operators.fir import fir
from tokenlaw.operators.xp import TORCH, TorchNamespace
from tokenlaw.properties import softmax_backward
from tokenlaw.properties import verdict as V
from tokenlaw.operators.dtypes import name as dtype_name
from tokenlaw.properties.case import cast
from tokenlaw.properties.contract import contract
from tokenlaw.properties.judging import exact_zero, worst
from tokenlaw.properties.tolerance import BOUND_FRACTION, K, PROBES, UNIT_ROUNDOFF
from tokenlaw.properties.tolerance import differential as compare_differential

# Where the catalogue lists this module's laws (tokenlaw.properties.catalogue.laws_modules).
ORDER = 70


def _eager(case, x, mask, dtype, rounded_to=None, **overrides):
    """The eager operator in ``dtype``; with ``rounded_to``, on inputs first rounded to that dtype (evaluated in
    float64 that is the exact value of what an implementation computing in ``rounded_to`` is given)."""
    src = dtype if rounded_to is None else rounded_to
    kwargs = case.runner.arguments(mask, src, **overrides)
    if rounded_to is not None:
        kwargs = cast(kwargs, dtype)
    with torch.no_grad():
        return case.op.fn(TORCH, x.to(src).to(dtype), **kwargs)


def agreement(case, kernel_out, reference, what) -> V.Verdict:
    """Judge a kernel output against ``reference(dtype)``, the eager operator on the same input.

    Both evaluate the same formula from the same dtype-rounded inputs (the
    projections run in torch in that dtype); the kernel accumulates in fp32,
    so its error against float64 should not exceed the eager evaluation's in
    that dtype by more than the tolerance model's constant K.  The floor
    u_D * max|ref| covers an eager error that is small by luck, and so does
    the input-rounding term: the float64 operator on the D-rounded inputs
    misses the reference by what those inputs' rounding alone does to the
    output -- an error no implementation receiving them can avoid, which the
    eager evaluation in D can undershoot when its own rounding happens to
    cancel it (an example backend's correct bf16 OAttention missed the old
    bound at scores near -42 while float64 on the same bf16 inputs missed it
    too).  (A relation
    between two kernel runs cannot judge this: on the kernel backend the
    float64 leg is the eager reference, so the tolerance model would count
    a kernel bug as that kernel's "rounding error".)
    """
    ref = reference(torch.float64).double()
    same = reference(case.dtype).double()
    given = reference(torch.float64, rounded_to=case.dtype).double()
    kern = kernel_out.double()
    # where the formula is not finite (a fully masked row's 0/0), a backend's declared convention is held exactly
    value, undefined, declared = case.runner.implementation.masked_row.get(case.op.name), ~torch.isfinite(ref), ""
    if value is not None and bool(undefined.any()):
        off, n = _off_convention(kern[undefined], value), int(undefined.sum())
        if off:
            return V.violated(float("inf"), 0.0, f"{what}: {off} of the {n} entries where the float64 formula is "
                                                 f"not finite (a fully masked row) are not the backend's declared "
                                                 f"{value:g}")
        declared = f"; {n} entries where the formula is not finite are the backend's declared {value:g}"
        ref, same, given, kern = ref[~undefined], same[~undefined], given[~undefined], kern[~undefined]
    scale = float(ref.abs().max()) if ref.numel() else 0.0
    eager_err = float((same - ref).abs().max()) if ref.numel() else 0.0
    input_err = float((given - ref).abs().max()) if ref.numel() else 0.0
    bound = K * max(eager_err, input_err, UNIT_ROUNDOFF[case.dtype] * scale)
    diff = (kern - ref).abs()
    disc = float("nan") if torch.isnan(diff).any() else float(diff.max()) if diff.numel() else 0.0
    return V.judge(disc, bound, f"{what}: kernel vs float64 eager max |diff| = {disc:.3g} vs bound {bound:.3g} "
                                f"(eager {dtype_name(case.dtype)} error {eager_err:.3g}, input rounding alone "
                                f"{input_err:.3g}, |ref| <= {scale:.3g}){declared}")


def _off_convention(got: torch.Tensor, value: float) -> int:
    """Entries of ``got`` that are not the declared ``value``, exactly (a declared NaN: entries that are not NaN)."""
    return int((~torch.isnan(got)).sum()) if value != value else int((got != value).sum())


@contract(exact=False, dtypes=dtypes.LOW,
          implementation="the implementation evaluates the operator's formula; with fp32 accumulation it stays "
                         "within the eager operator's own rounding error in the same dtype")
def eager_agreement(case):
    """The kernel's output equals the float64 eager reference within the eager operator's own error in that dtype."""
    return agreement(case, case.runner.run(case.x, case.mask), lambda dt, **r: _eager(case, case.x, case.mask, dt, **r),
                     "differential check")


def placed_call(case, place=lambda t: t):
    """The case's backend on the case's input in its dtype, every buffer it reads passed through ``place``."""
    with torch.no_grad():
        return case.runner.implementation.run_placed(case.op, case.x.to(case.dtype), place,
                                              **case.runner.arguments(case.mask, case.dtype))


def nan_buffer(t: torch.Tensor, pad: int = 3) -> torch.Tensor:
    """A view equal to ``t`` inside a larger NaN-filled buffer: ``pad`` NaN slots before, after and
    between rows of every axis, so any read outside the tensor's extent picks up NaN."""
    big = torch.full([s + 2 * pad for s in t.shape], float("nan"), dtype=t.dtype, device=t.device)
    view = big[tuple(slice(pad, pad + s) for s in t.shape)]
    view.copy_(t)
    return view


def _same_bits(a, b, what) -> V.Verdict:
    if a.shape == b.shape and torch.equal(a, b):
        return V.holds(0.0, 0.0, f"{what}: bit-identical")
    nan = torch.isnan(a) | torch.isnan(b)
    diff = (a.double() - b.double()).abs()
    d = float("nan") if bool(nan.any()) else float(diff.max())
    return V.violated(d, 0.0, f"{what}: outputs differ (max |diff| = {d:.3g}, NaNs: {int(nan.sum())})")


@contract(exact=True, dtypes=dtypes.LOW, implementation="every load is masked to the tensor's extent; strides are honoured")
def nan_padding(case):
    """Placing every kernel input inside a larger NaN-filled buffer leaves the output bit-identical."""
    plain = placed_call(case)
    padded = placed_call(case, place=nan_buffer)
    return _same_bits(plain, padded, "inputs embedded in NaN buffers (3 NaN slots around every axis)")


@contract(exact=True, dtypes=dtypes.LOW,
          implementation="a fixed reduction order and no atomics: reruns are bit-identical")
def determinism(case):
    """Rerunning the kernel on the same inputs gives bit-identical outputs."""
    first = case.runner.run(case.x, case.mask)
    second = case.runner.run(case.x, case.mask)
    return _same_bits(first, second, "two runs on the same input")


@contract(exact=False, requires={"presence"}, dtypes=dtypes.LOW)
def null_key_immunity(case):
    """A token whose carrier is null leaves every other output unchanged however large its key."""
    k = case.pos % case.n
    carrier = case.x.clone()
    carrier[:, k] = 0.0
    huge = case.x.clone()
    huge[:, k] = case.random_like(huge[:, k].shape, salt=41, scale=1000.0)
    quiet = carrier.clone()                                  # the same token with x = 0
    keep = [i for i in range(case.n) if i != k]
    out = case.runner.run(huge, case.mask, carrier=carrier)
    own = exact_zero(out[:, k], f"output of the null-carrier token {k}")
    rest = agreement(case, out[:, keep], lambda dt, **r: _eager(case, quiet, case.mask, dt, carrier=carrier, **r)[:, keep],
                     f"other tokens when token {k} (null carrier) has a key of scale 1000, vs the same token at x = 0")
    return worst(own, rest)


# -- gradient laws -------------------------------------------------------------------


def gradients(case, dtype, x=None, mask=None, cotangent=None, carrier=None, run=None) -> dict:
    """d(sum cotangent * out)/d(inputs) through the case's backend, in ``dtype``, as float64 tensors.

    The inputs are the tokens ``x`` (default the case's), every floating
    parameter tensor and the scalar threshold (the parameter the declaration's
    roles name: presence tau for OAttention, the threshold for pn_fir_tau),
    each rounded to ``dtype`` from float64 --
    as every run of the tolerance model rounds the same float64 inputs --
    plus ``carrier`` when given.  ``cotangent`` (float64, out's shape)
    defaults to a fixed random tensor.  ``run(x, **kwargs)`` replaces the backend's call (a probe's
    own evaluation of the operator, :func:`held_shift_probe`).
    """
    x = case.x if x is None else x
    mask = case.mask if mask is None else mask
    leaves = {"x": x.to(dtype).requires_grad_(True)}
    kwargs = case.runner.arguments(mask, dtype)
    threshold = case.op.domain.roles.threshold
    for name, value in list(kwargs.items()):
        if torch.is_tensor(value) and value.is_floating_point() and name != "mask":
            kwargs[name] = leaves[name] = value.detach().clone().requires_grad_(True)
        elif name == threshold:
            kwargs[name] = leaves[name] = torch.tensor(float(value), dtype=dtype, requires_grad=True)
    if carrier is not None:
        kwargs["carrier"] = leaves["carrier"] = carrier.to(dtype).requires_grad_(True)
    with torch.enable_grad():
        out = (case.runner.call if run is None else run)(leaves["x"], **kwargs)
        w = case.random_like(out.shape, salt=11) if cotangent is None else cotangent
        grads = torch.autograd.grad(out, list(leaves.values()), w.to(out.dtype), allow_unused=True)
    return {name: (torch.zeros(t.shape, dtype=torch.float64) if g is None else g.detach().double())
            for (name, t), g in zip(leaves.items(), grads)}


def representable(case, dtype) -> bool:
    """Every finite token and parameter of ``case`` stays finite rounded to ``dtype``."""
    for _, v in [((), case.x), *tree.leaves(case.params)]:
        t = torch.tensor(float(v), dtype=torch.float64) if isinstance(v, float) else v
        if torch.is_tensor(t) and t.is_floating_point():
            finite = torch.isfinite(t)
            if not bool(torch.isfinite(t[finite].to(dtype)).all()):
                return False
    return True


def _affine(grads: dict, roles) -> dict:
    """Each (weight, bias) pair's gradients (``roles.affine``) as one tensor [W; b] (a bias is the weight
    of a constant-1 input).

    Judged alone, a bias gradient is a sum over tokens whose terms may cancel
    to ~0 (a key bias under softmax, exactly); its rounding is relative to
    those terms, i.e. to the weight gradient's scale, which the normwise
    tolerance then sees.
    """
    out = dict(grads)
    for w in grads:                     # in the gradients' order, as the verdicts list them
        b = next((b for w_, b in roles.affine if w_ == w and b in grads), None)
        if b is not None:
            out[f"{w}|{b}"] = torch.cat([out.pop(w), out.pop(b)[None]])
    return out


class HeldShift(TorchNamespace):
    """torch, with every row max a constant under autograd (the same values; no gradient through the max)."""

    def max(self, x, axis, keepdims=False):
        return torch.amax(x, dim=axis, keepdim=keepdims).detach()


HELD_SHIFT = HeldShift()


def held_shift_probe(reference, exact: dict, probes: dict, roles):
    """({name: {dtype: gradient}}, None) of the eager operator run with its row max held constant
    (:class:`HeldShift`), in each of ``probes``' dtypes; or (None, why) where that is not the same function.

    A backend whose backward is the textbook one of a max-shifted softmax (``Backend.standard_backward``)
    errs like this probe, not like the eager autograd, which also differentiates through the max: at a
    saturated row the two differ a hundredfold in float32 (docs/flex.md).  In the reals the max's
    gradient is 0 only where the output is shift-invariant in it; where it is not (a gate that reads the
    max) the probe is another function, and its float64 gradient says so.  The probe is used only where
    that difference explains at most a sixteenth of its float32 error, |held_64 - exact_64| <= e_32 / 16
    (e_32 = max |held_32 - exact_64|): the rest of its error is rounding, which is what it predicts.  A
    gate that reads the max moves the float64 gradient by O(|g|), far past e_32 ~ u_32 |g|.
    """
    run = lambda x, **kw: reference.op.fn(HELD_SHIFT, x, **kw)       # noqa: E731
    held64 = _affine(gradients(reference, torch.float64, run=run), roles)
    held = {dt: _affine(gradients(reference, dt, run=run), roles) for dt in probes}
    if torch.float32 not in held:
        return None, "the held-shift probe has no float32 run to be validated by (the inputs overflow it)"
    for name, g in exact.items():
        finite = torch.isfinite(g)
        if not torch.equal(finite, torch.isfinite(held64[name])):
            return None, f"the held-shift probe is another function here (d/d{name}: non-finite elsewhere in float64)"
        if not bool(finite.any()):
            continue
        e32 = float((held[torch.float32][name] - g)[finite].abs().nan_to_num(nan=0.0, posinf=0.0).max())
        gap = float((held64[name] - g)[finite].abs().max())
        if not gap <= e32 / 16:
            return None, (f"the held-shift probe is another function here (d/d{name}: float64 gap {gap:.3g} "
                          f"> its float32 error / 16 = {e32 / 16:.3g})")
    return {name: {dt: p[name] for dt, p in held.items()} for name in exact}, None


def standard_bound(reference, raw: dict, dtype) -> tuple[dict, str]:
    """({[W; b] name: a-priori bound}, why) of the textbook softmax-attention backward in ``dtype`` against the
    float64 gradients ``raw`` (:mod:`softmax_backward`); ({}, why) where the model is not the operator there."""
    roles = reference.op.domain.roles
    mask = None if reference.mask is None else reference.mask.double()
    cotangent = reference.random_like(tuple(reference.x.shape), salt=11)   # gradients()'s cotangent
    limits, why = softmax_backward.bound(reference.x, reference.params, roles, mask, cotangent, dtype, raw)
    return ({}, f"no a-priori bound: {why}") if limits is None else (_affine(limits, roles), "")


def _eager_probe_only(op, dtype, backend):
    if backend.reference and dtype == "float32":
        return ("eager float32 gradients are the error probe the bound is predicted from; "
                "the float32 cell is judged for kernel backends")
    return None


@contract(exact=False, dtypes=dtypes.LOW, skip=_eager_probe_only, evaluated="autograd",
          implementation="the backward evaluates the operator's derivative (a fused backward from saved row "
                         "statistics, with fp32 accumulation)")
def gradient_agreement(case):
    """Gradients in dtype D w.r.t. the tokens, weights and tau match the float64 eager gradients within D's predicted error."""
    # Each projection's [W; b] is judged as one tensor (_affine).
    # The tolerance model's differential check, applied to every gradient:
    # the eager float32 gradient on the same float64 inputs measures this
    # input's conditioning and predicts D's rounding error
    # (tolerance.differential).  A second probe guards against an error
    # small by luck: the other half format for a half D, and for float32 its
    # fallback probe of the tolerance model (tolerance.PROBES: bfloat16).  Luck matters
    # most for the 0-d tau gradient, a signed sum over every score of the
    # case, whose float32 error can cancel to far below its terms' rounding.
    reference, roles = case.on_reference(), case.op.domain.roles
    got = _affine(gradients(case, case.dtype), roles)
    raw = gradients(reference, torch.float64)
    exact = _affine(raw, roles)
    second = dtypes.OTHER_HALF.get(case.dtype, PROBES[torch.float32][-1])
    # A probe runs the eager operator on the case's inputs rounded to its dtype: where they overflow
    # there (a bfloat16 case's bias of 6.6e4 or tau = 1e5 is inf in float16) it would judge other inputs
    # -- the eager operator rightly refuses them -- so that probe is left out and float32's predicts.
    unheld = [dtype_name(dt) for dt in (torch.float32, second) if not representable(reference, dt)]
    probes = {dt: _affine(gradients(reference, dt), roles) for dt in (torch.float32, second)
              if dtype_name(dt) not in unheld}
    where = f"{case.backend} {dtype_name(case.dtype)} gradients vs float64 eager"
    # Calibration, for an implementation other than the reference: where the eager operator's
    # own gradient in D misses the prediction too (D rounds an input the probes hold exactly --
    # a near-null token's presence is subnormal in fp16, normal in fp32 and bf16), the probes
    # cannot predict D's error, and the implementation is judged as eager_agreement judges
    # outputs: no further from float64 than K times the eager operator's own error in D.  If
    # the eager gradient leaves D's range there, the example says nothing (inconclusive).
    # (On the eager backend the implementation *is* the reference: no calibration, so its D
    # gradients are always judged against the prediction.)
    eager_d = None if case.runner.implementation.reference else _affine(gradients(reference, case.dtype), roles)
    held, held_note, a_priori = None, "", {}
    if case.op.name in case.runner.implementation.standard_backward:
        held, why = held_shift_probe(reference, exact, probes, roles)
        held_note = f"; {why}" if why else "; with the held-shift probe (the backend's standard backward)"
        a_priori, why = standard_bound(reference, raw, case.dtype)
        held_note += f"; {why}" if why else "; with the standard backward's a-priori bound"
    verdicts, inconclusive = [], []
    for name in got:
        tensors = {dt: p[name] for dt, p in probes.items()}
        more = ((exact[name], held[name], None),) if held else ()
        c = compare_differential(got[name], exact[name], tensors, case.dtype, resamples=more,
                                 a_priori=a_priori.get(name))
        if c.bound_relative > BOUND_FRACTION:
            # outside the first-order error model (see differential_laws), or an a-priori bound of the
            # standard backward past tolerance.BOUND_FRACTION of the leaf's own scale: it would pass any
            # value of the leaf's size (a saturated row's dS set to 0), so the leaf decides nothing here
            inconclusive.append(name)
            continue
        if not c.ok and eager_d is not None and not compare_differential(eager_d[name], exact[name], tensors,
                                                                         case.dtype, resamples=more).ok:
            eager_err = (eager_d[name] - exact[name]).abs()
            if not bool(torch.isfinite(eager_err).all()):
                inconclusive.append(name)  # the eager gradient leaves D's range here
                continue
            disc = (got[name] - exact[name]).abs()
            d = float("nan") if torch.isnan(disc).any() else float(disc.max())
            bound = K * float(eager_err.max())
            verdicts.append(V.judge(d, bound, f"{where}: d/d{name} |diff| = {d:.3g} vs K x the eager "
                                              f"{dtype_name(case.dtype)} error {bound:.3g} (the prediction "
                                              f"{c.bound:.3g} misses the eager operator in D too)"))
            continue
        verdicts.append(V.Verdict(V.Status.HOLDS if c.ok else V.Status.VIOLATED, c.discrepancy, c.bound,
                                  f"{where}: d/d{name} |diff| = {c.discrepancy:.3g} vs predicted bound "
                                  f"{c.bound:.3g} at {c.index} (max anywhere {c.max_discrepancy:.3g})",
                                  extra={"ratio": c.ratio}))
    if not verdicts:
        return V.holds(0.0, 0.0, f"{where}: inconclusive for {inconclusive} (beyond first order, a bound past "
                                 f"{BOUND_FRACTION:.3g} of the leaf's scale, or the eager gradient in "
                                 f"{dtype_name(case.dtype)} leaves its range)",
                       extra={"ratio": 0.0}, inconclusive=True)
    verdict = worst(*verdicts)
    if inconclusive:
        verdict = dataclasses.replace(
            verdict, detail=verdict.detail + f"; inconclusive for {inconclusive} (beyond first order, a bound past a fraction of the leaf, or out of range)")
    if unheld:
        verdict = dataclasses.replace(
            verdict, detail=verdict.detail + f"; no {', '.join(unheld)} probe (the inputs overflow it)")
    if held_note:
        verdict = dataclasses.replace(verdict, detail=verdict.detail + held_note)
    return verdict


@contract(exact=True, requires={"presence"}, dtypes=dtypes.LOW, evaluated="autograd")
def null_carrier_gradient(case):
    """A token whose carrier is null gets exactly zero gradient in its token and its carrier, however large its key."""
    k = case.pos % case.n
    carrier = case.x.clone()
    carrier[:, k] = 0.0
    x = case.x.clone()
    x[:, k] = case.random_like(x[:, k].shape, salt=41, scale=1000.0)
    # exact_zero counts a NaN as a violation; other tokens' gradients may overflow legitimately
    # (a near-null neighbour's presence gradient is ~exp(s) / den, beyond fp32 at large scores)
    g = gradients(case, case.dtype, x=x, carrier=carrier)
    return worst(exact_zero(g["x"][:, k], f"gradient at token {k} (null carrier, key of scale 1000)"),
                 exact_zero(g["carrier"][:, k], f"gradient at token {k}'s null carrier"))


@contract(exact=True, requires={"masked"}, dtypes=dtypes.LOW, evaluated="autograd")
def masked_gradient(case):
    """A source gets exactly zero gradient from the outputs of the receivers it is masked from."""
    j = case.pos % case.n
    mask = case.mask.clone()
    mask[:, :, j] = 0.0                 # j is hidden from every receiver but itself
    mask[:, j, j] = 1.0
    w = case.random_like((case.batch, case.n, case.d), salt=11)
    w[:, j] = 0.0                       # only the outputs of the receivers j is masked from
    g = gradients(case, case.dtype, mask=mask, cotangent=w)
    return exact_zero(g["x"][:, j], f"gradient at source {j} from the {case.n - 1} receivers masked from it")


@contract(exact=True, requires={"causal"}, dtypes=dtypes.LOW, evaluated="autograd")
def gradient_causality(case):
    """out_t has exactly zero gradient with respect to every token after t."""
    if case.n < 2:
        return V.holds(0.0, 0.0, "n = 1: no token after another")
    s = 1 + case.pos % (case.n - 1)
    w = case.random_like((case.batch, case.n, case.d), salt=11)
    w[:, s:] = 0.0                      # the outputs before s only
    g = gradients(case, case.dtype, cotangent=w)
    return exact_zero(g["x"][:, s:], f"gradient of out[:{s}] w.r.t. tokens {s}..{case.n - 1}")


def _fir_scores(case, dtype):
    p = case.op.domain.roles.standard(cast(case.params, dtype), output=False)
    q, k, _ = projections.project_qkv(TORCH, case.x.to(dtype), **p)
    s = projections.scores(TORCH, q, fir(TORCH, k)).double()
    n = s.shape[-1]
    return s.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))


@contract(exact=True, requires={"causal"}, dtypes=dtypes.LOW, evaluated="autograd")
def silent_gradient(case):
    """A silent row (no score above tau in any head) has exactly zero gradient with respect to every input."""
    if case.op.domain.roles.threshold not in case.params:
        return V.Verdict(V.Status.NOT_RUNNABLE, detail="the operator has no threshold tau to silence a row", tier="kernel")
    # Each token's peak score over heads and visible keys (float64); tau goes
    # in the widest gap between two peaks, so the rows below it are silent.
    s64, sD = _fir_scores(case, torch.float64), _fir_scores(case, case.dtype)
    peaks = s64.amax(dim=(1, 3))                                  # (B, N)
    values = peaks.flatten().sort().values
    if values.numel() < 2:
        return V.holds(0.0, 0.0, "one row: nothing to silence beside a live row")
    gaps = values[1:] - values[:-1]
    # the widest gap in the middle half, so that both silent and live rows remain
    lo, hi = len(gaps) // 4, max(len(gaps) // 4 + 1, (3 * len(gaps)) // 4)
    i = lo + int(gaps[lo:hi].argmax())
    tau, margin = float(values[i] + values[i + 1]) / 2, float(gaps[i]) / 2
    # The premise must hold in D too: the rows' peaks may move by D's score rounding.
    finite = torch.isfinite(s64)
    noise = K * (float((sD - s64)[finite].abs().max()) + UNIT_ROUNDOFF[case.dtype] * float(s64[finite].abs().max()))
    if margin <= noise:
        return V.holds(0.0, 0.0, f"inconclusive: widest gap between row peaks {2 * margin:.3g} is within the "
                                 f"{dtype_name(case.dtype)} score rounding {noise:.3g}",
                       extra={"ratio": 0.0}, inconclusive=True)
    silent = peaks < tau                                          # (B, N)
    w = case.random_like((case.batch, case.n, case.d), salt=11) * silent[..., None]
    shifted = dataclasses.replace(case, tau=tau)
    g = gradients(shifted, case.dtype, cotangent=w)
    rows = f"{int(silent.sum())} silent of {silent.numel()} rows"
    return worst(*(exact_zero(t, f"gradient w.r.t. {name} of the outputs of {rows} (tau = {tau:.3g})")
                   for name, t in g.items()))
