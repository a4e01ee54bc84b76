"""The pn normalisers in float16 where their weights are representable (issue 19, point 4).

Two collapses inside the declared domains, each replayed here on the operator's own code (its weights
read off its output by the one-hot probe, :func:`tokenlaw.properties.applied.applied_weights`, or its
declared normaliser where the probe itself would overflow) and on the pre-fix source (a source mutant of ``normalisers``), which must fail the same check:

* pn_fir_c, scores in the thousands: the row sum of the centring overflowed (65504), the mean became
  inf, every centred score -inf, and the row's mass 0 where float64's is 1;
* pn_fir_tau, tau = -1e5: S - tau overflowed, peak / peak = inf / inf gave NaN weights.

The weights are compared with float64's on the *same* scores (the float16 values, exactly
representable in float64), so only the normaliser's own rounding is measured.  A row's mass
sum_j W_tj is a sum of n weights, each within a few roundings of float64's after the final
division: it may differ by at most (n + 4) u (u = 2^-11), against 1 for the collapse.
"""
from __future__ import annotations

import pytest
import torch

from tokenlaw.fuzz.mutants.source_edit import SourceEdit
from tokenlaw.operators import normalisers
from tokenlaw.operators.fir_attention import causal_mask
from tokenlaw.operators.xp import TORCH
from tokenlaw.properties.applied import applied_weights
from tokenlaw.properties.case import Case
from tokenlaw.properties.catalogue import CONTRACTS, default_registry

REG = default_registry()
U16 = 2.0 ** -11
N = 32

# The pre-fix normalisers, one edit each (the shipping lines, reverted).
OLD_CENTRED = SourceEdit("normalisers", ((
    "    mean = _row_mean(xp, s, m)\n"
    "    # (s - mean) / 2, never past the dtype's range; power_norm is invariant to the scale\n"
    "    return power_norm(xp, xp.relu(s * 0.5 - mean * 0.5) * m)\n",
    "    count = xp.sum(m, axis=-1, keepdims=True)\n"
    "    mean = xp.div(xp.sum(s * m, axis=-1, keepdims=True), _safe(xp, count))\n"
    "    return power_norm(xp, xp.relu(s - mean) * m)\n"),), (("fir_attention", ("normalisers",)),))
OLD_TAU = SourceEdit("normalisers", ((
    "    return gate * power_norm(xp, _in_range(xp, r, _shifted(xp, s, m, tau, FAR_SCALE), m))\n",
    "    r = xp.relu(s - tau) * m\n"
    "    return silence_gate(xp, xp.max(r, axis=-1, keepdims=True)) * power_norm(xp, r)\n"),),
    (("fir_attention", ("normalisers",)),))


def _scores(centre, spread, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (centre + spread * torch.randn(2, N, N, generator=g, dtype=torch.float64)).clamp(-6e4, 6e4).half()


def _weights(op, s, **params):
    """The weights op's code applies to s: read off its output (the one-hot probe) where the probe's
    q = s * sqrt(D) (D = 64) stays in float16's range, else its declared normaliser (weights=)."""
    mask = causal_mask(TORCH, s, N)
    if float(s.abs().max()) * 8.0 < torch.finfo(torch.float16).max:
        return applied_weights(op, TORCH, s, mask, **params)
    return op.weights(TORCH, s, mask, **params)


def _collapse(op, s16, **params):
    """None if op's float16 weights on s16 are finite with float64's row masses, else what went wrong."""
    w16, w64 = _weights(op, s16, **params), _weights(op, s16.double(), **params)
    if not bool(torch.isfinite(w16).all()):
        return f"{int((~torch.isfinite(w16)).sum())} non-finite float16 weights"
    gap = (w16.double().sum(-1) - w64.sum(-1)).abs().max().item()
    if gap > (N + 4) * U16:
        return f"row mass differs from float64's by {gap:.3g} > {(N + 4) * U16:.3g}"
    return None


CASES = {
    "pn_fir_c-scores-3e3": ("pn_fir_c", (3000.0, 50.0), {}, OLD_CENTRED),
    "pn_fir_c-scores-3e4": ("pn_fir_c", (30000.0, 600.0), {}, OLD_CENTRED),
    "pn_fir_c-scores-spanning-6e4": ("pn_fir_c", (0.0, 30000.0), {}, OLD_CENTRED),
    "pn_fir_tau-tau--1e5": ("pn_fir_tau", (0.0, 4.0), {"tau": -1e5}, OLD_TAU),
    "pn_fir_tau-tau--1e5-scores-3e3": ("pn_fir_tau", (0.0, 3000.0), {"tau": -1e5}, OLD_TAU),
    "pn_fir_tau-s-tau-past-65504": ("pn_fir_tau", (40000.0, 500.0), {"tau": -30000.0}, OLD_TAU),
    "pn_fir_tau-tau--1e7": ("pn_fir_tau", (0.0, 3000.0), {"tau": -1e7}, OLD_TAU),
    "pn_fir_tau-tau--1e30": ("pn_fir_tau", (0.0, 4.0), {"tau": -1e30}, OLD_TAU),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_float16_weights_keep_float64s_mass_and_the_pre_fix_code_does_not(name):
    op_name, (centre, spread), params, old = CASES[name]
    s16 = _scores(centre, spread)
    assert bool(torch.isfinite(s16).all())
    assert _collapse(REG[op_name], s16, **params) is None
    # the same check on the pre-fix source: the collapse it replays
    assert _collapse(old(REG)[op_name], s16, **params) is not None, "the check must fail on the old code"


@pytest.mark.parametrize("tau", [-1e5, -1e10])
def test_float16_gradients_stay_finite_past_the_range(tau):
    """The fallbacks take finite inputs only, so their unselected branches do not poison the gradient."""
    s = _scores(0.0, 4.0).requires_grad_()
    w = normalisers.pn_tau(TORCH, s, causal_mask(TORCH, s, N), tau=tau)
    (w * torch.linspace(-1, 1, N, dtype=torch.float16)).sum().backward()
    assert bool(torch.isfinite(s.grad).all())


def test_float64_is_bit_identical_to_the_pre_fix_formula():
    """Halving (a power of two) and the 2^-k rescaled sum round exactly as the plain forms do."""
    for seed in range(4):
        for spread in (1e-2, 1.0, 1e3):
            s = _scores(0.0, spread, seed).double() * (1.0 + seed)
            for (op_name, old), params in ((("pn_fir_c", OLD_CENTRED), {}), (("pn_fir_tau", OLD_TAU), {"tau": -0.3}),
                                           (("pn_fir_tau", OLD_TAU), {"tau": 0.7})):
                new = _weights(REG[op_name], s, **params)
                ref = _weights(old(REG)[op_name], s, **params)
                assert torch.equal(new, ref), (op_name, seed, spread, params)


@pytest.mark.parametrize("tau", [-1e5, -3e5])
def test_the_differential_contract_sees_the_tau_collapse_and_passes_the_fix(tau):
    """The same collapse through the fuzz tier's own law: float16 against float64 within the predicted bound."""
    def judge(registry):
        return CONTRACTS["differential"](Case(op=registry["pn_fir_tau"], dtype=torch.float16, n=9, d=4, seed=1,
                                              tau=tau))

    fixed, old = judge(REG), judge(OLD_TAU(REG))
    assert fixed.status == "holds" and not fixed.inconclusive, fixed.detail
    assert old.violated and old.discrepancy == float("inf"), old.detail
