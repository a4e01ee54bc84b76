"""The row weights an attention operator's own code applies, read off its output.

A score law (simplex, silence, tau-covariance...) is about the weights W(S)
the operator *runs*, not the ``weights=`` function it declares: a body that
applies another normaliser than the one it names must fail the law.  So the
laws judge :func:`applied_weights`, which runs ``op.fn`` on a probe whose
output *is* the weight matrix:

* width D = the smallest power of 4 with D >= 2n, one head (so the score
  scale 1/sqrt(D) is a power of two and every step below is exact in every
  dtype, barring overflow);
* token i is ``x_i = [s_i ; e_i ; 0]``: a score part and a one-hot part;
* ``wq`` reads the score part, ``wk`` maps the one-hot part times sqrt(D) to
  the first n coordinates, so ``q_i . k_j / sqrt(D) = s_ij`` exactly (the
  scores' keys are scaled by 1 / sqrt(D) before the product, so no step
  exceeds |s|: with sqrt(D) in wq, q = s sqrt(D) overflowed float16 at
  |s| > 65504 / sqrt(D), where s itself is representable);
* ``wv`` copies the one-hot part (values v_j = e_j, in coordinates n..2n-1),
  ``wo`` is the identity and every bias is 0, so ``out_i = sum_j W_ij e_j``
  and ``W = out[..., n:2n]``;
* an FIR over the keys (``taps=``) gets the unit filter (1,), so keys stay
  one-hot; the causal / external mask is the operator's own;
* a per-head parameter (``Domain.roles.per_head``, e.g. a sink logit b_h)
  keeps head 0's entry: the probe's one head is the operator's head 0.

On torch, where the stacked layout above would need a width of 256 or more and a
width of n would need fewer (n in 33..64 and 129..256: 16 times fewer multiply-adds
per projection), the same weights are read off a *row* probe instead, one batch
element at a time: token i is the one-hot ``e_i`` alone, ``wq`` holds that element's
score matrix (``q_i = e_i wq = s_i``, exact: one product by 1, the rest by 0), ``wk``
is sqrt(D) times the identity and ``wv``, ``wo`` the identity, at D = the smallest
power of 4 >= n.  Every step is as exact as in the stacked probe; it is taken only
when every score is finite in the dtype (a non-finite s_rc times 0 would poison
column c of every row, where the stacked probe poisons row r alone), and it costs
one run of ``op.fn`` per batch element.  For an operator whose output is W(S) V
the two probes read the same bits (tests/properties/test_applied_probe.py, every
score normaliser, every dtype); one that normalises each head's output over its
features (rela) reads a map of the probe's width in either probe, and the two
agree on which weights are 0 and on their signs.  Measured: the score laws' probes at n = 129
and 130 (D = 1024 stacked) took 47 of a cell's 75 s (issue 19's 5-minute budget).

Every product the probe forms has at most one nonzero term per entry (its projections are 0/1 or
sqrt(D) times a selection, its keys and values one-hot), so inside the probe the eager ``matmul`` forms
such a product as a gather and one multiply per entry (``xp.one_term_products``): the GEMM's exact bits,
checked rather than assumed (``xp.one_term_product`` declines a non-finite operand, a -0, a row of
negative terms, autograd, and a product whose right operand has a column of two nonzeros, such as the
row probe's scores: those go to the GEMM).  At n = 257 (D = 1024 in both probes) MKL's reproducible
GEMM (``MKL_CBWR=COMPATIBLE``: SSE2) took most of a score-law cell's CPU: sparsemax
score_shift_invariance float64 28.9 -> 9.7 s CPU, the same draws and bounds.

Written against ``xp``, so the fuzz tier evaluates it on torch tensors (in
the dtype under test) and the symbolic tier on z3 terms: both judge the
code that runs.  Which parameters are the projections and the taps is the
declaration's answer (``op.domain.roles``, ``tokenlaw.operators.roles``), so
an operator that names them otherwise is probed alike; one whose ``fn`` does
not take all of its projections cannot be probed and the score law says so
(InvalidArgument naming the missing parameters).
"""
from __future__ import annotations

import inspect

import numpy as np
import torch

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.xp import TORCH, one_term_products


def power_of_4(m: int) -> int:
    """The smallest power of 4 that is >= m (so its square root is a power of 2)."""
    d = 4
    while d < m:
        d *= 4
    return d


def probe_width(n: int) -> int:
    """The stacked probe's width: the smallest power of 4 that is >= 2n."""
    return power_of_4(2 * n)


def law_params(op, params) -> dict:
    """The operator's parameters a score law keeps (its threshold...): all but the probe's own
    (the projections and taps ``op.domain.roles`` names)."""
    roles = op.domain.roles
    probe = {*roles.projections, roles.taps}
    return {k: v for k, v in params.items() if k not in probe}


def _probe(n: int):
    """(wq, wk, wv, wo, D) as integer numpy arrays (0/1, and sqrt(D) in wk)."""
    d = probe_width(n)
    root = int(round(d ** 0.5))
    wq, wk, wv = np.zeros((d, d), dtype=int), np.zeros((d, d), dtype=int), np.zeros((d, d), dtype=int)
    for i in range(n):
        wq[i, i] = 1              # score part -> q
        wk[n + i, i] = root       # one-hot part -> k_j = sqrt(D) e_j
        wv[n + i, n + i] = 1      # one-hot part -> v_j = e_j (coordinates n..2n-1)
    return wq, wk, wv, np.eye(d, dtype=int), d


def applied_weights(op, xp, s, mask=None, *, run=None, **params):
    """W (B, n, n) that ``op.fn`` applies to scores ``s`` (B, n, n) under ``mask`` and ``params``.

    ``run(x, **kwargs)`` evaluates another implementation of ``op`` on the probe
    instead (a backend's, on torch tensors); the probe's parameters are ``op.fn``'s.
    """
    takes = inspect.signature(op.fn).parameters
    roles = op.domain.roles
    missing = [p for p in roles.projections if p not in takes]
    if missing:
        raise InvalidArgument(f"operator {op.name!r}: its weights cannot be read off its output: "
                              f"fn takes no {missing} (the projections its Domain(roles=...) names)")
    run = (lambda x, **kw: op.fn(xp, x, **kw)) if run is None else run
    # one head: a per-head parameter (a sink logit b_h) keeps head 0's entry (roles.Roles.per_head)
    params = {k: v[:1] if k in roles.per_head else v for k, v in params.items()}
    b, n, _ = s.shape
    # every product of the probe has one nonzero term: formed as such, with the GEMM's exact bits
    with one_term_products():
        if _rows_cheaper(xp, s):
            return _row_probe(op, s, mask, run, takes, params)
        d = probe_width(n)
        onehot = np.zeros((b, n, d - n), dtype=int)
        onehot[:, np.arange(n), np.arange(n)] = 1
        x = xp.concat([s, xp.asarray(onehot, s)], axis=-1)
        return run(x, **_probe_kwargs(op, takes, params, _stacked(xp, n, s), mask))[..., n:2 * n]


# The last stacked probes' projections as arrays, by (namespace, n, dtype, device): the same tensors call after
# call (one_term_products reads each once), rebuilt if an operator changed one in place
_STACKED: dict = {}


def _stacked(xp, n, like) -> list:
    """The stacked probe's (wq, bq, wk, bk, wv, bv, wo) for ``n`` tokens as arrays like ``like``."""
    key = (id(xp), n, getattr(like, "dtype", None), str(getattr(like, "device", None)))
    hit = _STACKED.get(key)
    if hit is not None and hit[0] is xp and all(getattr(t, "_version", None) == v for t, v in zip(hit[1], hit[2])):
        return list(hit[1])
    wq, wk, wv, wo, d = _probe(n)
    zero = np.zeros(d, dtype=int)
    probe = [xp.asarray(a, like) for a in (wq, zero, wk, zero, wv, zero, wo)]
    if xp is TORCH:
        if len(_STACKED) >= 4:
            _STACKED.clear()
        _STACKED[key] = (xp, tuple(probe), tuple(t._version for t in probe))
    return probe


def _probe_kwargs(op, takes, params, probe, mask) -> dict:
    """op.fn's keyword arguments on a probe: ``params``, the probe's projections, one head, the unit filter
    over the keys (when it takes taps) and ``mask`` (when it takes one)."""
    roles = op.domain.roles
    kwargs = dict(params, **dict(zip(roles.projections, probe)))
    kwargs[roles.heads] = 1
    if roles.taps in takes:
        kwargs[roles.taps] = (1.0,)
    if op.domain.mask != "none":
        kwargs["mask"] = mask
    return kwargs


def _rows_cheaper(xp, s) -> bool:
    """Whether the row probe applies (torch, every score finite) and saves work (see the module's docstring)."""
    n = s.shape[-1]
    stacked, rows = probe_width(n), power_of_4(n)
    return xp is TORCH and stacked >= 256 and rows < stacked and bool(torch.isfinite(s).all())


def _row_probe(op, s, mask, run, takes, params):
    """applied_weights through the row probe, one batch element at a time (torch tensors)."""
    n = s.shape[-1]
    d = power_of_4(n)
    eye = torch.eye(d, dtype=s.dtype, device=s.device)
    x = eye[:n].unsqueeze(0).clone()
    zero = torch.zeros(d, dtype=s.dtype, device=s.device)
    rows = []
    for e in range(s.shape[0]):
        wq = torch.zeros(d, d, dtype=s.dtype, device=s.device)
        wq[:n, :n] = s[e]
        probe = (wq, zero, float(round(d ** 0.5)) * eye, zero, eye, zero, eye)
        one = None if mask is None else mask[e:e + 1]
        rows.append(run(x, **_probe_kwargs(op, takes, params, probe, one))[..., :n])
    return torch.cat(rows, dim=0)
