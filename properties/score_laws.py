"""Row-normaliser contracts on scores S -> weights W (SPEC 2, 3)."""
from __future__ import annotations

import torch

from tokenlaw.operators.xp import TORCH

from . import verdict as V
from .catalogue import contract
from .judging import exact_zero, relation, worst

_SCORE = dict(requires={"score_normaliser"}, needs={"weights"})


def scores(case) -> torch.Tensor:
    """Drawn float64 scores (batch, n, n), spread like attention logits."""
    return case.random_like((case.batch, case.n, case.n), salt=21, scale=2.0 * case.scale)


def visibility(case):
    """The visibility SPEC gives the operator: j <= t when causal (built here, not the operator's helper), its mask, or none."""
    if "causal" in case.op.traits:
        t = torch.arange(case.n)
        return (t[None, :] <= t[:, None]).double().expand(case.batch, case.n, case.n)
    return case.mask


def weights(case, s, dtype=None, **override):
    dtype = case.dtype if dtype is None else dtype
    m = visibility(case)
    params = {**case.weight_params(dtype), **override}
    if case.backend != "eager":   # the weights the kernel applies (tokenlaw.kernels.kernel_laws)
        from tokenlaw.kernels.kernel_laws import kernel_weights

        return kernel_weights(case, s, dtype, **params)
    with torch.no_grad():
        return case.op.weights(TORCH, s.to(dtype), None if m is None else m.to(dtype), **params)


def _tau(case) -> float:
    return float(case.params.get("tau", 0.0))


@contract(exact=False, **_SCORE)
def score_shift_invariance(case):
    """W(S + c 1) = W(S) for a constant c added to each row."""
    s = scores(case)
    c = case.shift * case.random_like((case.batch, case.n, 1), salt=22).clamp(-1, 1)
    return relation(case, lambda dt: weights(case, s + c, dt), lambda dt: weights(case, s, dt),
                    f"row shifts up to {float(c.abs().max()):.3g}")


@contract(exact=False, **_SCORE)
def tau_covariance(case):
    """W(S + c, tau + c) = W(S, tau) for every constant c."""
    s, c, tau = scores(case), case.shift, _tau(case)
    return relation(case, lambda dt: weights(case, s + c, dt, tau=tau + c), lambda dt: weights(case, s, dt, tau=tau),
                    f"shift c = {c:.3g} of scores and tau")


def max_negative(w) -> float:
    """Largest -w_ij (0 when none is negative); NaN if any weight is NaN."""
    if w.numel() == 0:
        return 0.0
    return float((-w.double()).clamp(min=0).max())


def _row_mass(case, s, dt):
    return weights(case, s, dt).double().sum(-1)


@contract(exact=False, **_SCORE)
def simplex(case):
    """W >= 0 and every row sums to 1."""
    s = scores(case)
    # A row with no visible key has no distribution to sum to 1 (softmax makes it 0/0):
    # the law is about rows that see something.
    m = visibility(case)
    seen = slice(None) if m is None else (m.sum(-1) > 0)
    w = weights(case, s)[seen]
    negative = V.judge(max_negative(w), 0.0, "most negative weight")
    ones = relation(case, lambda dt: _row_mass(case, s, dt)[seen],
                    lambda dt: torch.ones(case.batch, case.n, dtype=torch.float64)[seen], "row mass vs 1")
    return worst(negative, ones)


@contract(exact=False, **_SCORE)
def sub_simplex(case):
    """W >= 0 and every row sums to at most 1."""
    s = scores(case)
    w = weights(case, s)
    negative = V.judge(float((-w.double()).clamp(min=0).max()), 0.0, "most negative weight")
    # One-sided: compare min(mass, 1) with mass, so only an excess above 1 counts.
    excess = relation(case, lambda dt: _row_mass(case, s, dt),
                      lambda dt: _row_mass(case, s, dt).clamp(max=1.0), "row mass above 1")
    return worst(negative, excess)


@contract(exact=True, **_SCORE)
def silence(case):
    """All S'_tj = S_tj - tau <= 0 implies row mass 0 and output exactly 0."""
    if case.backend != "eager":   # the kernel takes no scores: silence it through tau
        from tokenlaw.kernels.kernel_laws import kernel_silence

        return kernel_silence(case)
    tau = _tau(case)
    s = tau - scores(case).abs()
    s[..., 0] = tau                                   # the boundary S' = 0 is silent too
    w = weights(case, s)
    v = case.random_like((case.batch, case.n, case.d), salt=23).to(w.dtype)
    return worst(exact_zero(w, "weights of rows with no positive S - tau"),
                 exact_zero(torch.matmul(w, v), "outputs of those rows"))


@contract(exact=True, **_SCORE)
def gate_below_one(case):
    """Rows whose largest rectified score m_t = max_j (S_tj - tau)+ is at most 1 have mass strictly below 1."""
    # A gate g with g < 1 for every finite m stays well below 1 at m <= 1 in
    # every dtype (SPEC's m / (1 + m) gives at most 1/2), so strictness is
    # judged exactly here; a gate that saturates at moderate peaks fails.
    tau = _tau(case)
    s = tau + scores(case).abs().clamp(max=1.0) * torch.sign(scores(case))   # rectified peaks in [0, 1]
    w = weights(case, s).double()
    m = visibility(case)
    mass = w.sum(-1)
    visible = torch.ones_like(mass, dtype=torch.bool) if m is None else m.sum(-1) > 0
    top = float(mass[visible].max()) if bool(visible.any()) else 0.0
    if top != top:
        return V.violated(float("nan"), 1.0, "a row mass is NaN at peaks <= 1")
    return V.Verdict(V.VIOLATED if top >= 1.0 else V.HOLDS, top, 1.0,
                     f"largest row mass {top:.6g} at peaks <= 1 (must stay strictly below 1)")
