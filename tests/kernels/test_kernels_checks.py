"""Kernel-specific checks on Triton's CPU interpreter: agreement, memory safety, determinism, nulls, tiles.

Shapes are small; the interpreter uses 8 x 8 tiles, so N = 9..17 already
spans two or three tiles and N that is not a multiple of 8 exercises the
masked tail.
"""
from __future__ import annotations


import pytest
import torch

from tokenlaw.kernels import capabilities, ops
from tokenlaw.properties.implementation_laws import nan_buffer
from tokenlaw.operators.errors import InvalidArgument

pytestmark = pytest.mark.skipif(not capabilities.interpreting(), reason="these tests run the CPU interpreter")

DTYPES = (torch.float32, torch.float16)


def heads(b=2, h=2, n=11, dh=4, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(b, h, n, dh, generator=g, dtype=torch.float64).to(dtype) for _ in range(3)]


def presence_vector(b, n, nulls=(), seed=1):
    p = torch.rand(b, n, generator=torch.Generator().manual_seed(seed)) * 0.9 + 0.05
    p[:, list(nulls)] = 0.0
    return p


def visibility(b, n, density=0.6, seed=2):
    m = (torch.rand(b, n, n, generator=torch.Generator().manual_seed(seed)) < density).float()
    m[:, torch.arange(n), torch.arange(n)] = 1.0
    return m


def run(name, q, k, v, p=None, mask=None, tau=0.2, eps_den=0.05, causal=False):
    if name == "oattention_fwd":
        return ops.oattention_fwd(q, k, v, p, mask, eps_den, causal)
    if name == "sm_fir_fwd":
        return ops.sm_fir_fwd(q, k, v)
    return ops.pn_fir_tau_fwd(q, k, v, torch.tensor(tau))


def reference(name, q, k, v, p=None, mask=None, tau=0.2, eps_den=0.05, causal=False):
    q, k, v = (t.double() for t in (q, k, v))
    if name == "oattention_fwd":
        return ops.oattention_reference(q, k, v, p.double(), mask, eps_den, causal)
    if name == "sm_fir_fwd":
        return ops.sm_fir_reference(q, k, v)
    return ops.pn_fir_tau_reference(q, k, v, tau)


KERNELS = ("oattention_fwd", "sm_fir_fwd", "pn_fir_tau_fwd")


def _inputs(name, n, dh, dtype, nulls=()):
    q, k, v = heads(n=n, dh=dh, dtype=dtype)
    extra = {}
    if name == "oattention_fwd":
        extra = dict(p=presence_vector(2, n, nulls), mask=visibility(2, n))
    return q, k, v, extra


# -- agreement with the float64 eager math -----------------------------------
@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("n,dh", [(1, 4), (7, 16), (13, 3), (17, 64), (9, 128)])
def test_kernel_matches_float64_math(name, n, dh):
    # fp32 accumulation: the error is a few fp32 ulps of the output scale,
    # times the growth of exp / x^10 over a row (bounded here by 64 ulps).
    q, k, v, extra = _inputs(name, n, dh, torch.float32)
    out = run(name, q, k, v, **extra).double()
    ref = reference(name, q, k, v, **extra)
    assert (out - ref).abs().max() <= 64 * 2.0 ** -24 * max(1.0, float(ref.abs().max())) * max(1, dh ** 0.5)


@pytest.mark.parametrize("name", KERNELS)
def test_fp16_kernel_is_no_worse_than_fp16_eager(name):
    q, k, v, extra = _inputs(name, 12, 8, torch.float16)
    ref = reference(name, q, k, v, **extra)
    kern_err = float((run(name, q, k, v, **extra).double() - ref).abs().max())
    # the eager math in fp16 on the same fp16 inputs is the yardstick
    eager = {"oattention_fwd": ops.oattention_reference, "sm_fir_fwd": ops.sm_fir_reference,
             "pn_fir_tau_fwd": ops.pn_fir_tau_reference}[name]
    args = (q, k, v, extra["p"].half(), extra["mask"], 0.05, False) if extra else (q, k, v) if name == "sm_fir_fwd" \
        else (q, k, v, 0.2)
    eager_err = float((eager(*args).double() - ref).abs().max())
    assert kern_err <= 8 * max(eager_err, 2.0 ** -11 * float(ref.abs().max()))


def test_causal_and_dense_mask_combine():
    q, k, v = heads(n=10)
    p, m = presence_vector(2, 10, nulls=(3,)), visibility(2, 10)
    out = ops.oattention_fwd(q, k, v, p, m, 0.1, True).double()
    ref = ops.oattention_reference(q.double(), k.double(), v.double(), p.double(), m, 0.1, True)
    assert (out - ref).abs().max() < 1e-5


# -- memory safety, strides and determinism ----------------------------------
@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_inputs_inside_nan_buffers_give_identical_outputs(name, dtype):
    q, k, v, extra = _inputs(name, 11, 5, dtype, nulls=(0, 8))
    plain = run(name, q, k, v, **extra)
    padded = run(name, nan_buffer(q), nan_buffer(k), nan_buffer(v),
                 **{key: nan_buffer(t) for key, t in extra.items()})
    assert not padded.isnan().any()
    assert torch.equal(plain, padded)


def test_nan_buffer_really_is_surrounded_by_nan():
    t = torch.ones(2, 3)
    view = nan_buffer(t, pad=2)
    assert torch.equal(view, t) and not view.is_contiguous()
    base = torch.as_strided(view, (view.untyped_storage().nbytes() // view.element_size(),), (1,), 0)
    assert int(base.isnan().sum()) == base.numel() - t.numel()


@pytest.mark.parametrize("name", KERNELS)
def test_transposed_views_are_handled_through_strides(name):
    q, k, v, extra = _inputs(name, 9, 4, torch.float32)
    qt = q.transpose(1, 2).contiguous().transpose(1, 2)      # same values, (B, N, H, dh) memory
    assert not qt.is_contiguous()
    assert torch.equal(run(name, qt, k, v, **extra), run(name, q, k, v, **extra))


@pytest.mark.parametrize("name", KERNELS)
def test_reruns_are_bitwise_identical(name):
    q, k, v, extra = _inputs(name, 13, 4, torch.float32)
    assert torch.equal(run(name, q, k, v, **extra), run(name, q, k, v, **extra))


# -- null tokens -------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_null_receivers_are_exactly_zero(dtype):
    q, k, v = heads(n=12, dtype=dtype)
    p = presence_vector(2, 12, nulls=(0, 7, 8, 11))
    out = ops.oattention_fwd(q, k, v, p, visibility(2, 12), 0.05, False)
    z = out[:, :, [0, 7, 8, 11]]
    assert torch.equal(z, torch.zeros_like(z))


@pytest.mark.parametrize("dtype", DTYPES)
def test_row_with_only_null_sources_is_exactly_zero(dtype):
    q, k, v = heads(n=9, dtype=dtype)
    p = presence_vector(2, 9, nulls=(2, 3))
    m = visibility(2, 9)
    m[:, 5] = 0.0
    m[:, 5, [2, 3]] = 1.0        # row 5 sees only the null tokens
    out = ops.oattention_fwd(q, k, v, p, m, 0.05, False)
    assert torch.isfinite(out).all() and torch.equal(out[:, :, 5], torch.zeros_like(out[:, :, 5]))


@pytest.mark.parametrize("k_at", [0, 7, 8, 9, 12])
def test_null_insertion_across_a_tile_edge(k_at):
    """Inserting a null at k moves tokens k.. one slot right; at k <= 8 one of them crosses the tile edge at 8."""
    n = 12
    q, k, v = heads(n=n, dh=4)
    p, m = presence_vector(2, n), visibility(2, n)
    base = ops.oattention_fwd(q, k, v, p, m, 0.05, False)

    def insert(t, dim, value=0.0):
        shape = list(t.shape)
        shape[dim] = 1
        pad = torch.full(shape, value, dtype=t.dtype)
        return torch.cat([t.narrow(dim, 0, k_at), pad, t.narrow(dim, k_at, t.shape[dim] - k_at)], dim)

    # the null's projections are biases in a real layer: give it large q, k, v
    q2, k2, v2 = (insert(t, 2, 5.0) for t in (q, k, v))
    p2 = insert(p, 1, 0.0)
    m2 = insert(insert(m, 1, 1.0), 2, 1.0)
    out = ops.oattention_fwd(q2, k2, v2, p2, m2, 0.05, False)
    keep = [i for i in range(n + 1) if i != k_at]
    assert torch.equal(out[:, :, k_at], torch.zeros_like(out[:, :, k_at]))
    assert (out[:, :, keep] - base).abs().max() < 1e-6


@pytest.mark.parametrize("name", ("sm_fir_fwd", "pn_fir_tau_fwd"))
@pytest.mark.parametrize("t", [6, 7, 8, 15])
def test_causality_at_tile_edges(name, t):
    q, k, v = heads(n=17, dh=4)
    before = run(name, q, k, v)
    q2, k2, v2 = (x.clone() for x in (q, k, v))
    for x in (q2, k2, v2):
        x[:, :, t + 1:] = 50.0
    after = run(name, q2, k2, v2)
    assert torch.equal(before[:, :, : t + 1], after[:, :, : t + 1])


@pytest.mark.parametrize("j", [0, 7, 8, 10])
def test_masked_key_cannot_move_its_blind_receivers(j):
    n = 11
    q, k, v = heads(n=n, dh=4)
    p, m = presence_vector(2, n), visibility(2, n)
    m[:, (j + 1) % n, j] = 0.0
    blind = m[:, :, j] == 0                                     # (B, N)
    before = ops.oattention_fwd(q, k, v, p, m, 0.05, False)
    k2, v2 = k.clone(), v.clone()
    k2[:, :, j], v2[:, :, j] = 100.0, -100.0
    after = ops.oattention_fwd(q, k2, v2, p, m, 0.05, False)
    sel = blind[:, None, :, None].expand_as(before)
    assert torch.equal(before[sel], after[sel])


def test_null_key_of_any_size_cannot_underflow_the_active_weights():
    n = 10
    q, k, v = heads(n=n, dh=4)
    p = presence_vector(2, n, nulls=(4,))
    base = ops.oattention_fwd(q, k, v, p, None, 1e-3, False)
    k2 = k.clone()
    k2[:, :, 4] = 1e4 * q.mean(2)                               # a null key scoring ~1e4 above the rest
    out = ops.oattention_fwd(q, k2, v, p, None, 1e-3, False)
    assert torch.equal(out, base)


def test_silent_pn_rows_are_exactly_zero_and_live_rows_are_not():
    q, k, v = heads(n=14, dh=4)
    out = ops.pn_fir_tau_fwd(q, k, v, torch.tensor(1e3))
    assert torch.equal(out, torch.zeros_like(out))
    assert ops.pn_fir_tau_fwd(q, k, v, torch.tensor(-1e3)).abs().max() > 0


# -- bad input: rejected by the wrapper, with the reason --------------------------
@pytest.mark.parametrize("make, match", [
    (lambda q, k, v: (q, k.double(), v), "kernels take"),
    (lambda q, k, v: (q, k.half(), v), "differs from q's"),
    (lambda q, k, v: (q, k[:, :, :-1], v), "shape"),
    (lambda q, k, v: (q[..., None], k, v), "expected"),
    (lambda q, k, v: (q.bfloat16(), k.bfloat16(), v.bfloat16()), "bfloat16 is refused"),
])
def test_bad_heads_are_rejected_by_the_wrapper(make, match):
    with pytest.raises(InvalidArgument, match=match):
        ops.sm_fir_fwd(*make(*heads(n=5)))


def test_unsupported_head_dim_is_rejected():
    with pytest.raises(InvalidArgument, match="head dim 129 unsupported"):
        ops.sm_fir_fwd(*heads(n=3, dh=129))


def test_bad_presence_mask_and_eps_are_rejected():
    q, k, v = heads(n=5)
    with pytest.raises(InvalidArgument, match="p: expected shape"):
        ops.oattention_fwd(q, k, v, torch.ones(2, 4), None, 0.1, False)
    with pytest.raises(InvalidArgument, match="mask: expected shape"):
        ops.oattention_fwd(q, k, v, torch.ones(2, 5), torch.ones(3, 5, 5), 0.1, False)
    with pytest.raises(InvalidArgument, match="eps_den: expected > 0"):
        ops.oattention_fwd(q, k, v, torch.ones(2, 5), None, 0.0, False)
    with pytest.raises(InvalidArgument, match="tau: expected a finite"):
        ops.pn_fir_tau_fwd(q, k, v, torch.tensor(float("nan")))


def test_layer_rejects_variants_without_a_kernel():
    from tokenlaw.kernels import fir_attention_layer

    with pytest.raises(InvalidArgument, match="has no Triton kernel"):
        fir_attention_layer(torch.randn(1, 3, 4), "pn_fir_c", wq=None, bq=None, wk=None, bk=None, wv=None,
                            bv=None, wo=None, heads=1)


@pytest.mark.parametrize("op", ["sm_fir", "pn_fir_tau"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_kernel_weights_are_the_eager_weights(op, dtype, registry):
    """The v = I, k = F^-1 construction exposes the kernel's W(S); it must match the eager normaliser."""
    from tokenlaw.kernels.backend import TRITON
    from tokenlaw.properties import score_laws
    from tokenlaw.properties.case import Case

    case = Case(op=registry[op], dtype=dtype, backend="triton", n=11, batch=2, seed=3)
    s = score_laws.scores(case)
    params = case.runner.weight_params(torch.float64)
    kern = TRITON.weights(case.op, s, case.mask, dtype, **params).double()
    ref = TRITON.weights(case.op, s, case.mask, torch.float64, **params)    # the eager weights in float64
    # Rounding q = sqrt(n) S to the dtype moves each score by ~u |S|; pn's x^10
    # turns that into ~10 u |S| relative weight error, and W <= 1.
    u = {torch.float32: 2.0 ** -24, torch.float16: 2.0 ** -11}[dtype]
    assert (kern - ref).abs().max() <= 10 * u * (1.0 + float(s.abs().max()))
