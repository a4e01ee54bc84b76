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

from tokenlaw.operators.errors import InvalidArgument


def probe_width(n: int) -> int:
    """The smallest power of 4 that is >= 2n (so sqrt(D) is a power of 2)."""
    d = 4
    while d < 2 * n:
        d *= 4
    return d


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
    b, n, _ = s.shape
    wq, wk, wv, wo, d = _probe(n)
    onehot = np.zeros((b, n, d - n), dtype=int)
    onehot[:, np.arange(n), np.arange(n)] = 1
    x = xp.concat([s, xp.asarray(onehot, s)], axis=-1)
    zero = np.zeros(d, dtype=int)
    # one head: a per-head parameter (a sink logit b_h) keeps head 0's entry (roles.Roles.per_head)
    params = {k: v[:1] if k in roles.per_head else v for k, v in params.items()}
    probe = (wq, zero, wk, zero, wv, zero, wo)
    kwargs = dict(params, **{name: xp.asarray(a, s) for name, a in zip(roles.projections, probe)})
    kwargs[roles.heads] = 1
    if roles.taps in takes:
        kwargs[roles.taps] = (1.0,)
    if op.domain.mask != "none":
        kwargs["mask"] = mask
    out = op.fn(xp, x, **kwargs) if run is None else run(x, **kwargs)
    return out[..., n:2 * n]
