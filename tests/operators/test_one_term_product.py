"""xp.one_term_product (the exact weight probes' matmul): the GEMM's bits, or None where they are not known.

Each column of the right operand with at most one nonzero makes every output entry one product; the gather
must then give TorchNamespace.matmul's result bit for bit (the sign of a zero included), in every dtype, and
decline (None) wherever the zeros themselves could decide otherwise.
"""
from __future__ import annotations

import random

import pytest
import torch

from tokenlaw.operators import xp as X
from tokenlaw.operators.xp import TORCH, one_term_product, one_term_products

DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)
INT = {torch.float64: torch.int64, torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}


def _same_bits(got, ref) -> bool:
    same = (got.contiguous().view(INT[got.dtype]) == ref.contiguous().view(INT[ref.dtype]))
    return bool((same | (got.isnan() & ref.isnan())).all())


def _selection(shape, rng, g, fill=0.8):
    k, n = shape[-2], shape[-1]
    b = torch.zeros(shape, dtype=torch.float64)
    for c in range(n):
        if rng.random() < fill:
            b[..., rng.randrange(k), c] = rng.choice([1.0, 32.0, 2.0 ** rng.randint(-40, 40), -0.5,
                                                      torch.randn(1, generator=g).item() * 10 ** rng.randint(-5, 5)])
    return b


@pytest.mark.parametrize("dtype", DTYPES)
def test_bits_equal_the_gemm(dtype):
    rng, g = random.Random(1), torch.Generator().manual_seed(1)
    taken = 0
    for _ in range(150):
        k, m, n = rng.choice([2, 5, 64, 257]), rng.choice([1, 7, 33]), rng.choice([1, 16, 70])
        bshape = ((2, 1) if rng.random() < 0.4 else ()) + (k, n)
        a = torch.randn(rng.choice([(), (2,), (2, 3)]) + (m, k), generator=g, dtype=torch.float64)
        a = a * 10.0 ** rng.randint(-330, 300) if rng.random() < 0.3 else a       # subnormal and overflowing
        if rng.random() < 0.3:
            a[a.abs() < 0.5] = 0.0
        if rng.random() < 0.2:
            a[..., 0] = -0.0
        a, b = a.to(dtype), _selection(bshape, rng, g).to(dtype)
        got = one_term_product(a, b)
        if got is not None:
            taken += 1
            ref = TORCH.matmul(a, b)
            assert got.shape == ref.shape and got.dtype == ref.dtype
            assert _same_bits(got, ref), (a.shape, b.shape)
    assert taken >= 30          # the path is exercised, not declined throughout


def test_declines_where_the_zeros_could_decide():
    a = torch.randn(3, 4, dtype=torch.float64).abs() + 0.5
    b = torch.eye(4, dtype=torch.float64)
    assert one_term_product(a, b) is not None
    two = b.clone()
    two[1, 0] = 1.0                                  # two nonzero terms in column 0: a real sum
    assert one_term_product(a, two) is None
    two[1, 1] = 0.0                                  # as many nonzeros as columns, one column empty: still a sum
    assert one_term_product(a, two) is None
    bad = a.clone()
    bad[0, 2] = float("inf")                         # inf * 0 is NaN in the GEMM's other terms
    assert one_term_product(bad, b) is None
    nan = b.clone()
    nan[2, 2] = float("nan")
    assert one_term_product(a, nan) is None
    negzero = b.clone()
    negzero[0, 1] = -0.0                              # a -0 term: the zero sum's sign is the GEMM's to decide
    assert one_term_product(a, negzero) is None
    negative = -a                                     # every term of a zero column would be -0
    assert one_term_product(negative, torch.zeros(4, 4, dtype=torch.float64)) is None
    grad = a.clone().requires_grad_()
    assert one_term_product(grad, b) is None          # the gather's gradient would miss b's zeros


def test_in_place_change_is_read_again():
    a = torch.randn(2, 3, dtype=torch.float64).abs()
    b = torch.eye(3, dtype=torch.float64)
    assert one_term_product(a, b) is not None
    b[1, 0] = 5.0                                     # the same tensor, changed: column 0 has two terms now
    assert one_term_product(a, b) is None
    b[1, 0] = 0.0
    assert one_term_product(a, b) is not None         # the left operand was read (and remembered) as usable
    a[0, 1] = float("inf")                            # the same left operand, changed: inf * 0 is NaN in the GEMM
    assert one_term_product(a, b) is None
    a[0, 1] = 1.0
    a[1] = -a[1].abs()                                # a row of sign bits: a zero sum's sign is the GEMM's to decide
    assert one_term_product(a, b) is None
    with one_term_products():
        assert _same_bits(TORCH.matmul(a, b), a @ b)
    assert X._SELECTIONS[0] == 0
