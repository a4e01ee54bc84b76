"""Mask-argument contracts: ``mask=None`` is the mask that hides nothing (issue 43, class 2).

Every other law of a masked operator is judged with a mask tensor (the fuzz tier draws one, the symbolic
tier traces one), so the operator's ``mask is None`` path -- the one most callers take -- ran nowhere.
This law runs it, next to the same tokens under the all-visible mask.
"""
from __future__ import annotations

import torch

from . import statement as S
from .runner import lay_out
from .contract import AdversaryOptions, SHARED_AXES, SymbolicOptions, contract

# Where the catalogue lists this module's laws (tokenlaw.properties.catalogue.laws_modules).
ORDER = 15


# -- statement (both tiers: see tokenlaw.properties.statement) -----------------------------

def no_mask(xp, run, x, causal):
    """F(x, mask=None) = F(x, all-visible mask); for a causal operator also = F(x, causal mask)."""
    out = run(x, None)
    claims = [S.same(out, run(x, S.all_visible(x)), "F(x, mask=None) vs F(x, all-visible mask)")]
    if causal:
        claims.append(S.same(out, run(x, S.all_visible(x, causal=True)),
                             "F(x, mask=None) vs F(x, causal mask) (declared causal: None still means causal)"))
    return claims


def contiguous_mask(case, dtype) -> S.Runner:
    """The statement's ``run`` in ``dtype``: the case's tokens in the case's memory layout, the mask contiguous.

    The mask is not laid out as the case says: a mask of ones stored transposed makes ``mask * ones`` come
    out transposed, and a row sum over it then adds in another order -- a legitimate rounding difference of
    the memory layout (measured: sdpa, float64, 8.9e-16), not of ``mask=None``, which has no layout."""
    r, roles = case.runner, case.op.domain.roles

    def run(x, mask, **overrides):
        kwargs = r.arguments(mask, dtype, **roles.named(overrides))
        with torch.no_grad():
            return r.call(lay_out(x.to(dtype), r.layout), **kwargs).double()
    return S.Runner(run)


# -- contract ------------------------------------------------------------------------------

@contract(exact=True, requires={"masked"}, universal=True,
          symbolic=SymbolicOptions(shape=(2, 2), host_shape=(2, 1), statement=no_mask,
                                   at=lambda at: [dict(causal=at.causal)],
                                   says=lambda at: f"F(x, mask=None) = F(x, all-visible mask) at n = {at.n}, "
                                                   f"d = {at.d}" + (", and = F(x, causal mask)" if at.causal
                                                                    else "")),
          # both sides run on the same tokens, dtype and shape: a uniform scale of the output cancels on every
          # axis but the mask's (mask=None is one side only) and call parity (two calls)
          adversary=AdversaryOptions(scale_blind=SHARED_AXES | {"length", "magnitude", "null"}))
def unmasked(case):
    """F(x, mask=None) is F(x, all-visible mask) exactly (causal: also F(x, causal mask)), bit for bit."""
    # Exact, not within the tolerance model: the operator is handed the same tokens and parameters, and a
    # mask of ones only multiplies by 1, adds log 1 = 0 or selects every entry -- operations that are exact
    # in every dtype -- so the same arithmetic runs on both paths and gives the same bits.  A path that
    # computes otherwise without a mask (another reduction order, another kernel) is a second code path the
    # rest of the suite never judges; a difference there, however small, is what this law exists to show,
    # and an operator that means it declares the row violated with its reason.
    return S.judge(case, lambda xp, run: no_mask(xp, run, case.x, "causal" in case.op.traits), contiguous_mask)
