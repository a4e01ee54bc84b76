"""Synthetic regression tasks: the training prior and the evaluation datasets of the retrofit study.

A task is ``FEATURES`` input columns and one target, drawn from one of a few
function families (linear, random MLP, sines, pairwise interactions,
axis-aligned steps, Friedman #1).  The in-context regressor is trained on a
stream of random tasks from every family and evaluated on named (dataset,
seed) pairs it never saw.  Columns and target are standardised with the
*context* rows' mean and standard deviation (what a tabular in-context
model does before embedding), so RMSE is in units of the context's target
standard deviation.

Example::

    >>> g = torch.Generator().manual_seed(0)
    >>> x, y = FAMILIES["friedman1"](g, 10)
    >>> tuple(x.shape), tuple(y.shape)
    ((10, 5), (10,))
"""
from __future__ import annotations

import math

import torch

FEATURES = 5


def _normal(g, *shape):
    return torch.randn(*shape, generator=g)


def linear(g, n):
    x = _normal(g, n, FEATURES)
    w = _normal(g, FEATURES)
    return x, x @ w + 0.1 * _normal(g, n)


def mlp(g, n):
    x = _normal(g, n, FEATURES)
    w1, b1, w2 = _normal(g, FEATURES, 16), _normal(g, 16), _normal(g, 16)
    return x, torch.tanh(x @ w1 / math.sqrt(FEATURES) + b1) @ w2 + 0.1 * _normal(g, n)


def sines(g, n):
    x = _normal(g, n, FEATURES)
    a, f, phase = _normal(g, FEATURES), 0.5 + 1.5 * torch.rand(FEATURES, generator=g), 6.3 * torch.rand(FEATURES, generator=g)
    return x, (a * torch.sin(f * x + phase)).sum(-1) + 0.1 * _normal(g, n)


def interactions(g, n):
    x = _normal(g, n, FEATURES)
    c = _normal(g, FEATURES, FEATURES) / FEATURES
    return x, torch.einsum("ni,ij,nj->n", x, c, x) + 0.1 * _normal(g, n)


def steps(g, n):
    x = _normal(g, n, FEATURES)
    y = torch.zeros(n)
    for _ in range(3):
        j = int(torch.randint(FEATURES, (1,), generator=g))
        y = y + _normal(g, 1) * (x[:, j] > 0.5 * _normal(g, 1)).float()
    return x, y + 0.1 * _normal(g, n)


def friedman1(g, n):
    """Friedman #1: 10 sin(pi x1 x2) + 20 (x3 - 1/2)^2 + 10 x4 + 5 x5 + N(0, 1), x ~ U(0, 1)^5."""
    x = torch.rand(n, FEATURES, generator=g)
    y = 10 * torch.sin(math.pi * x[:, 0] * x[:, 1]) + 20 * (x[:, 2] - 0.5) ** 2 + 10 * x[:, 3] + 5 * x[:, 4]
    return x, y + _normal(g, n)


FAMILIES = {"linear": linear, "mlp": mlp, "sines": sines, "interactions": interactions,
            "steps": steps, "friedman1": friedman1}


def standardise(x, y, n_ctx):
    """Standardise columns and target by the context rows' statistics (batched: x (B, N, F), y (B, N))."""
    mx, sx = x[:, :n_ctx].mean(1, keepdim=True), x[:, :n_ctx].std(1, keepdim=True).clamp_min(1e-6)
    my, sy = y[:, :n_ctx].mean(1, keepdim=True), y[:, :n_ctx].std(1, keepdim=True).clamp_min(1e-6)
    return (x - mx) / sx, (y - my) / sy


def batch(g, size, n_ctx, n_qry, families=None):
    """``size`` random tasks (a family drawn per task): standardised x (B, N, F), y (B, N)."""
    names = list(families or FAMILIES)
    xs, ys = [], []
    for _ in range(size):
        fam = FAMILIES[names[int(torch.randint(len(names), (1,), generator=g))]]
        x, y = fam(g, n_ctx + n_qry)
        xs.append(x)
        ys.append(y)
    return standardise(torch.stack(xs), torch.stack(ys), n_ctx)


def dataset(name, seed, n_ctx, n_qry):
    """One evaluation (dataset, seed) pair, disjoint from training (seed offset 10**6)."""
    g = torch.Generator().manual_seed(10 ** 6 + 1000 * list(FAMILIES).index(name) + seed)
    x, y = FAMILIES[name](g, n_ctx + n_qry)
    return standardise(x[None], y[None], n_ctx)
