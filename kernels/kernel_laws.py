"""Contracts about kernels themselves, judged on the kernel backend (``Case(backend="triton")``).

* ``eager_agreement`` -- the differential check against the float64 eager reference;
* ``nan_padding``     -- inputs placed inside larger NaN-filled buffers give bit-identical outputs;
* ``determinism``     -- reruns are bit-identical;
* ``null_key_immunity`` -- a token with a null carrier is inert however large its key.

They use the contract catalogue's marker so reports and the CLI treat them
like every other law; ``kernels/backend.py`` decides which operators claim them.
"""
from __future__ import annotations

import torch

from tokenlaw.operators import projections
from tokenlaw.operators.presence import presence
from tokenlaw.operators.xp import TORCH
from tokenlaw.properties import verdict as V
from tokenlaw.properties.case import cast, dtype_name
from tokenlaw.properties.catalogue import contract
from tokenlaw.properties.judging import exact_zero, worst
from tokenlaw.properties.tolerance import K, UNIT_ROUNDOFF

_KERNEL_DTYPES = ("float32", "float16", "bfloat16")


def _eager(case, x, mask, dtype, **overrides):
    with torch.no_grad():
        return case.op.fn(TORCH, x.to(dtype), **case.arguments(mask, dtype, **overrides))


def agreement(case, kernel_out, reference, what) -> V.Verdict:
    """Judge a kernel output against ``reference(dtype)``, the eager operator on the same input.

    Both evaluate the same formula from the same dtype-rounded inputs (the
    projections run in torch in that dtype); the kernel accumulates in fp32,
    so its error against float64 should not exceed the eager evaluation's in
    that dtype by more than the tolerance model's constant K.  The floor
    u_D * max|ref| covers an eager error that is small by luck.  (A relation
    between two kernel runs cannot judge this: on the kernel backend the
    float64 leg is the eager reference, so the tolerance model would count
    a kernel bug as that kernel's "rounding error".)
    """
    ref = reference(torch.float64).double()
    same = reference(case.dtype).double()
    kern = kernel_out.double()
    scale = float(ref.abs().max()) if ref.numel() else 0.0
    eager_err = float((same - ref).abs().max()) if ref.numel() else 0.0
    bound = K * max(eager_err, UNIT_ROUNDOFF[case.dtype] * scale)
    diff = (kern - ref).abs()
    disc = float("nan") if torch.isnan(diff).any() else float(diff.max()) if diff.numel() else 0.0
    return V.judge(disc, bound, f"{what}: kernel vs float64 eager max |diff| = {disc:.3g} vs bound {bound:.3g} "
                                f"(eager {dtype_name(case.dtype)} error {eager_err:.3g}, |ref| <= {scale:.3g})")


@contract(exact=False, dtypes=_KERNEL_DTYPES)
def eager_agreement(case):
    """The kernel's output equals the float64 eager reference within the eager operator's own error in that dtype."""
    return agreement(case, case.run(case.x, case.mask), lambda dt: _eager(case, case.x, case.mask, dt),
                     "differential check")


def core_call(case, dtype, place=lambda t: t):
    """Run the operator's kernel op directly on projected heads, each input passed through ``place``."""
    from . import ops

    p = cast(case.params, dtype)
    x = case.x.to(dtype)
    q, k, v = projections.project_qkv(TORCH, x, wq=p["wq"], bq=p["bq"], wk=p["wk"], bk=p["bk"],
                                      wv=p["wv"], bv=p["bv"], heads=p["heads"])
    with torch.no_grad():
        if case.op.kernel == "oattention_fwd":
            pres = presence(TORCH, x, tau=p["tau"])[..., 0].float()
            mask = None if case.mask is None else case.mask.to(dtype)
            return ops.oattention_fwd(place(q), place(k), place(v), place(pres),
                                      None if mask is None else place(mask), float(p["eps_den"]), False)
        if case.op.kernel == "sm_fir_fwd":
            return ops.sm_fir_fwd(place(q), place(k), place(v))
        tau = torch.tensor(float(p["tau"]), dtype=torch.float32)
        return ops.pn_fir_tau_fwd(place(q), place(k), place(v), tau)


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


@contract(exact=True, dtypes=_KERNEL_DTYPES)
def nan_padding(case):
    """Placing every kernel input inside a larger NaN-filled buffer leaves the output bit-identical."""
    plain = core_call(case, case.dtype)
    padded = core_call(case, case.dtype, place=nan_buffer)
    return _same_bits(plain, padded, "inputs embedded in NaN buffers (3 NaN slots around every axis)")


@contract(exact=True, dtypes=_KERNEL_DTYPES)
def determinism(case):
    """Rerunning the kernel on the same inputs gives bit-identical outputs."""
    first = case.run(case.x, case.mask)
    second = case.run(case.x, case.mask)
    return _same_bits(first, second, "two runs on the same input")


@contract(exact=False, requires={"presence"}, dtypes=("float32", "float16", "bfloat16"))
def null_key_immunity(case):
    """A token whose carrier is null leaves every other output unchanged however large its key."""
    k = case.pos % case.n
    carrier = case.x.clone()
    carrier[:, k] = 0.0
    huge = case.x.clone()
    huge[:, k] = case.random_like(huge[:, k].shape, salt=41, scale=1000.0)
    quiet = carrier.clone()                                  # the same token with x = 0
    keep = [i for i in range(case.n) if i != k]
    out = case.run(huge, case.mask, carrier=carrier)
    own = exact_zero(out[:, k], f"output of the null-carrier token {k}")
    rest = agreement(case, out[:, keep], lambda dt: _eager(case, quiet, case.mask, dt, carrier=carrier)[:, keep],
                     f"other tokens when token {k} (null carrier) has a key of scale 1000, vs the same token at x = 0")
    return worst(own, rest)


def kernel_transcendentals(case) -> V.Verdict:
    """zero_transcendental on the kernel backend: trace the interpreter, or read the kernel's source."""
    from . import ops  # noqa: F401  (registers the kernels)
    from .capabilities import interpreting
    from .inspection import trace_transcendentals, transcendental_names
    from .layers import KERNELS

    kernel = KERNELS[case.op.kernel]
    static = dict(transcendental_names(kernel))
    if not interpreting():
        n = sum(static.values())
        return V.judge(n, 0, f"{case.op.kernel} source names: {static or 'no transcendental'} "
                             "(compiled run: read from the kernel and its jit helpers)")
    with trace_transcendentals() as calls:
        case.run(case.x, case.mask, dtype=torch.float32)
    n = sum(calls.values())
    return V.judge(n, 0, f"interpreter evaluated {dict(calls) or 'no transcendental'} in {case.op.kernel}; "
                         f"its source names {static or 'none'}")


def kernel_silence(case) -> V.Verdict:
    """silence on the kernel backend: with tau above every score, the output is exactly 0.

    The kernel takes no scores, so the premise "all S - tau <= 0" is met by
    raising tau above the largest FIR score of the case (computed in float64)
    by a margin of 10% plus 0.1, far more than any dtype's score rounding.
    """
    from tokenlaw.operators.fir import fir

    if "tau" not in case.params:
        return V.Verdict(V.NOT_RUNNABLE, detail="the operator has no threshold tau to silence its rows on the kernel",
                         tier="kernel")
    p = case.params
    q, k, _ = projections.project_qkv(TORCH, case.x, wq=p["wq"], bq=p["bq"], wk=p["wk"], bk=p["bk"],
                                      wv=p["wv"], bv=p["bv"], heads=p["heads"])
    top = float(projections.scores(TORCH, q, fir(TORCH, k)).abs().max())
    tau = 1.1 * top + 0.1
    out = case.run(case.x, case.mask, tau=tau)
    return exact_zero(out, f"kernel output with tau = {tau:.3g} above every score (|S| <= {top:.3g})")


def _register_if_imported_first():
    # Imported before the catalogue, this module triggers the catalogue's
    # collection while only half-initialised, so its laws were missed; add
    # them now that they exist (a no-op when the catalogue came first).
    from tokenlaw.properties import catalogue

    if not hasattr(catalogue, "CONTRACTS"):    # the catalogue is collecting us right now
        return
    for name, law in catalogue.collect_contracts((__name__,)).items():
        catalogue.CONTRACTS.setdefault(name, law)


_register_if_imported_first()


def kernel_weights(case, s, dtype, **params):
    """The weights W(S) the operator's *kernel* applies to scores ``s`` (batch, n, n).

    The kernels take q, k, v, not scores, so the inputs are built to make the
    output equal W: one head of width n, values v = I, keys k = F^-1 (F the
    causal FIR as an n x n lower-triangular Toeplitz matrix, invertible since
    w_0 > 0, and well conditioned since the taps decrease), so the smoothed
    keys are I and q = sqrt(n) S gives scores S.  float64 (and bf16 under the
    interpreter) are evaluated by the eager weights, as ``layers.implementation`` does.
    """
    from tokenlaw.operators.fir import TAPS
    from tokenlaw.properties.score_laws import visibility

    from . import ops
    from .capabilities import interpreting

    if dtype == torch.float64 or (dtype == torch.bfloat16 and interpreting()):
        m = visibility(case)
        with torch.no_grad():
            return case.op.weights(TORCH, s.to(dtype), None if m is None else m.to(dtype), **params)
    b, n, _ = s.shape
    fir_matrix = sum(w * torch.diag(torch.ones(n - t, dtype=torch.float64), -t) for t, w in enumerate(TAPS) if t < n)
    keys = torch.linalg.solve_triangular(fir_matrix, torch.eye(n, dtype=torch.float64), upper=False)
    q = (s * n ** 0.5)[:, None].to(dtype)
    k = keys.expand(b, 1, n, n).to(dtype)
    v = torch.eye(n, dtype=torch.float64).expand(b, 1, n, n).to(dtype)
    with torch.no_grad():
        if case.op.kernel == "sm_fir_fwd":
            out = ops.sm_fir_fwd(q, k, v)
        elif case.op.kernel == "pn_fir_tau_fwd":
            out = ops.pn_fir_tau_fwd(q, k, v, torch.tensor(float(params["tau"]), dtype=torch.float32))
        else:
            raise ValueError(f"{case.op.kernel} has no row normaliser to expose")
    return out[:, 0]
