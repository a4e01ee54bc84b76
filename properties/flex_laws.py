"""Laws of FlexAttention mods: what a ``score_mod`` / ``mask_mod`` pair states, judged on the code that runs.

An operator declared through ``tokenlaw.operators.flex.declare_flex`` carries
its mods (``OperatorSpec.mods``: :class:`~tokenlaw.operators.flex.Mods`).  The
mods evaluated densely, position by position, are the ground truth here --
never the BlockMask flex builds from them, which is one of the things judged:

* ``mod_mask_respect``: a key that ``mask_mod`` (or a declared causality) hides
  from row i never reaches out_i, bit for bit;
* ``block_layouts``: a BlockMask built for a longer sequence (then adjusted
  to this one, as flex asks), and one that describes every block as
  partial, give the output of the exact one; without a ``mask_mod``, the
  flex call with ``block_mask=None`` (the no-mask path every such operator
  runs) gives the output of a BlockMask of every key;
* ``block_prefix`` (causal): the output on a prefix is the prefix of the output;
* ``masked_row``: a row that sees nothing gives 0 and LSE -inf, bit for bit;
* ``relative_mods`` (declared relative): shifting q_idx and kv_idx together
  changes neither the modded score nor the mask.

The block laws draw only lengths around the declared block size (below, at,
past one block and past two: :func:`block_lengths`), so every row of them
searches those edges and says so in its searched shapes.
"""
from __future__ import annotations

import torch

from tokenlaw.operators.flex import BLOCK_SIZE, Variant

from . import statement as S
from . import verdict as V
from .contract import FuzzOptions, SymbolicOptions, contract

# Where the catalogue lists this module's laws (tokenlaw.properties.catalogue.laws_modules).
ORDER = 25

_NO_SYMBOLIC = SymbolicOptions(none="FlexAttention runs torch code (vmap, BlockMask): no real-arithmetic trace")


def block_lengths(block: int = BLOCK_SIZE) -> tuple:
    """The lengths a block law draws: below, at and past one block, and past two.

    >>> block_lengths(128)
    (127, 128, 129, 257)
    """
    return (block - 1, block, block + 1, 2 * block + 1)


# The block laws' searches: lengths around flex's default 128-token block, one batch, widths 4 and 8 (flex
# on CPU costs 0.1-0.5 s a call at these lengths).  A declaration with another block_size is still searched
# at the 128 edges (FuzzOptions are per contract, not per operator); block_prefix's prefix uses its own.
_BLOCK_FUZZ = FuzzOptions(only_lengths=block_lengths(), batch_max=1, widths=(4, 8), near_null=False)


def _mods(case):
    return case.op.mods


def _heads(case) -> int:
    return int(case.params[case.op.domain.roles.heads])


def hidden_from(case, j: int) -> torch.Tensor:
    """(B, N) bool: the rows i != j that may not see key j in any head (mask_mod, and j > i if causal)."""
    mods = _mods(case)
    seen = mods.visible(case.batch, _heads(case), case.n)[..., j].any(dim=1)        # (B, N): some head sees j
    if mods.causal:
        seen = seen & (torch.arange(case.n) >= j)[None, :]
    hidden = ~seen
    hidden[:, j] = False                           # j's own output reads h_j through its query
    return hidden


def _differing_rows(a: torch.Tensor, b: torch.Tensor, rows: torch.Tensor) -> list:
    """[(batch, row)] of ``rows`` where a and b differ in any bit (NaN equal to NaN)."""
    same = (a == b) | (a.isnan() & b.isnan())
    bad = rows & ~same.all(dim=-1)
    return [tuple(map(int, ij)) for ij in bad.nonzero()]


@contract(exact=True, requires={"token_mixing"}, needs={"mods"}, symbolic=_NO_SYMBOLIC)
def mod_mask_respect(case):
    """A key that mask_mod (or declared causality) hides from row i never changes out_i (bit for bit)."""
    if case.n < 2:
        return V.holds(0.0, 0.0, "one token: nothing is hidden")
    j = case.pos % case.n
    rows = hidden_from(case, j)
    if not bool(rows.any()):
        return V.holds(0.0, 0.0, f"no row is hidden from key {j}")
    y = case.random_like(case.x[:, j].shape, salt=5, scale=10.0)
    base = case.runner.run(case.x, None)
    moved = case.runner.run(S.with_token(case.x, j, y), None)
    bad = _differing_rows(moved, base, rows)
    what = f"rows hidden from key {j} ({int(rows.sum())} of {rows.numel()}) after changing token {j}"
    if bad:
        worst_gap = float((moved - base).abs()[rows].max())
        return V.violated(worst_gap, 0.0, f"{what}: (batch, row) {bad[:4]} changed by up to {worst_gap:.3g}")
    return V.holds(0.0, 0.0, f"{what}: unchanged")


def prefix_kept(xp, run, x, m):
    """run(x[:, :m]) = run(x)[:, :m]: the first m outputs do not depend on the tokens after m."""
    return [S.equal(run(x[:, :m], None), run(x, None)[:, :m], f"outputs of the {m}-token prefix vs the first {m} "
                                                              f"of {x.shape[1]}")]


@contract(exact=False, requires={"causal"}, needs={"mods"}, symbolic=_NO_SYMBOLIC, fuzz=_BLOCK_FUZZ)
def block_prefix(case):
    """A causal mod's output on a prefix equals the prefix of its output on the longer sequence."""
    # the prefix crosses a block edge whenever the case's length does: the longest block length below n
    shorter = [m for m in block_lengths(_mods(case).block_size) + (case.pos + 1,) if m < case.n]
    m = max(shorter) if shorter else max(1, case.n - 1)
    verdict = S.judge(case, lambda xp, run: prefix_kept(xp, run, case.x, m))
    return V.Verdict(verdict.status, verdict.discrepancy, verdict.bound, f"n {case.n}, prefix {m}: {verdict.detail}",
                     extra=dict(verdict.extra), inconclusive=verdict.inconclusive)


def same_layouts(xp, run, x, variants):
    """Every description of the same mask gives the output of the exact BlockMask."""
    plain = run(x, None)
    return [S.equal(run(x, None, variant=v), plain, what) for what, v in variants]


@contract(exact=False, requires={"token_mixing"}, needs={"mods"}, symbolic=_NO_SYMBOLIC, fuzz=_BLOCK_FUZZ)
def block_layouts(case):
    """Every description of the same mask (built longer; all blocks partial; no mask_mod: None) gives one output."""
    block = _mods(case).block_size
    longer = (case.n // block + 2) * block + 1          # past two more block edges than the sequence
    variants = ((f"BlockMask built for {longer} tokens vs for {case.n}", Variant(extent=longer)),
                ("all blocks partial vs full blocks separated", Variant(partial=True)))
    if _mods(case).mask_mod is None:        # the no-mask path (block_mask=None) vs a BlockMask of every key
        variants += (("a BlockMask of every key vs block_mask=None", Variant(explicit=True)),)
    verdict = S.judge(case, lambda xp, run: same_layouts(xp, run, case.x, variants))
    return V.Verdict(verdict.status, verdict.discrepancy, verdict.bound, f"n {case.n}: {verdict.detail}",
                     extra=dict(verdict.extra), inconclusive=verdict.inconclusive)


@contract(exact=True, requires={"token_mixing"}, needs={"mods"}, symbolic=_NO_SYMBOLIC)
def masked_row_lse(case):
    """A row that sees no key gives output 0 and LSE -inf; every other row's LSE is finite (bit for bit)."""
    r = case.pos % case.n
    hide = Variant(hide_row=r)
    out = case.runner.run(case.x, None, variant=hide)
    lse = case.runner.run(case.x, None, variant=Variant(hide_row=r, lse=True))
    seen = _mods(case).visible(case.batch, _heads(case), case.n).any(dim=-1)       # (B, H, N): rows seeing some key
    seen[:, :, r] = False
    problems = []
    if bool((out[:, r] != 0).any()):
        problems.append(f"row {r} output max |entry| {float(out[:, r].abs().max()):.3g} (must be 0)")
    if not bool((lse[:, :, r] == float("-inf")).all()):
        problems.append(f"row {r} LSE {lse[:, :, r].flatten()[:4].tolist()} (must be -inf)")
    empty = ~seen
    if bool((empty & (lse != float("-inf"))).any()):
        problems.append("a row the mask_mod leaves empty has a finite LSE")
    if bool((seen & ~torch.isfinite(lse)).any()):
        problems.append(f"{int((seen & ~torch.isfinite(lse)).sum())} rows that see keys have a non-finite LSE")
    detail = f"row {r} hidden from every key: " + ("; ".join(problems) if problems else "output 0, LSE -inf")
    return V.judge(float(len(problems)), 0.0, detail)


@contract(exact=True, requires={"token_mixing"}, needs={"mods"}, dtypes=("float64",), symbolic=_NO_SYMBOLIC)
def relative_mods(case):
    """Shifting q_idx and kv_idx by the same c changes neither score_mod's score nor mask_mod (bit for bit)."""
    mods = _mods(case)
    c = case.pos + 1
    s = case.random_like((case.batch, _heads(case), case.n, case.n), salt=23, scale=case.scale)
    gap_scores = (mods.modded(s, offset=c) - mods.modded(s)).abs()
    gap_mask = mods.visible(case.batch, _heads(case), case.n, offset=c) != mods.visible(case.batch, _heads(case),
                                                                                        case.n)
    worst_gap = float(gap_scores.max()) if gap_scores.numel() else 0.0
    if gap_scores.isnan().any():
        worst_gap = float("nan")
    detail = (f"positions shifted by {c} (n {case.n}): score_mod moves by up to {worst_gap:.3g}, "
              f"mask_mod changes {int(gap_mask.sum())} of {gap_mask.numel()} entries")
    return V.judge(worst_gap + float(gap_mask.sum()), 0.0, detail)
