"""Null-token contracts: a zero-vector token is inert (docs/mathematics.md#null-contracts)."""
from __future__ import annotations

import itertools

import torch

from tokenlaw.operators.xp import TORCH

from . import statement as S
from . import verdict as V
from .contract import AdversaryOptions, SHARED_AXES, SymbolicOptions, contract
from .judging import exact_zero, max_abs, relation

# Where the catalogue lists this module's laws (tokenlaw.properties.catalogue.laws_modules).
ORDER = 10


def null_positions(case) -> tuple:
    """The case's null tokens, or one at ``pos`` so there is always one."""
    return tuple(sorted(set(case.null))) or (case.pos % case.n,)


def with_nulls(case, nulls) -> torch.Tensor:
    x = case.x_dense.clone()
    for i in nulls:
        x[:, i] = 0.0
    return x


# -- statements (both tiers: see tokenlaw.properties.statement) ---------------------------

def nulls_stay_null(xp, run, x, mask, nulls):
    """Tokens set to 0 have output exactly 0 (zero_absorption, null_receiver)."""
    out = run(S.with_nulls(x, nulls), mask)
    return [S.zero(out[:, list(nulls)], f"output at null tokens {list(nulls)}")]


def null_insertion(xp, run, x, mask, k):
    """The old tokens' outputs are unchanged by a null inserted at k, whose own output is 0.

    The old tokens come first: a violation of both is reported as the old tokens moving (the law's
    substance); the null's own output alone is what null_receiver already says.
    """
    out = run(S.insert_null(xp, x, k), S.insert_visible(mask, k))
    return [S.equal(out[:, S.others(x.shape[1] + 1, k)], run(x, mask), f"old tokens after inserting a null at {k}"),
            S.zero(out[:, k], f"inserted null's own output (at {k})")]


def empty_row(xp, run, x, mask, row, sources):
    """Row ``row`` (None: every row) whose visible sources are all null has output 0, and nothing is NaN."""
    out = run(S.with_nulls(x, sources), mask)
    where = "with every token null" if row is None else f"when row {row} sees only null tokens {list(sources)}"
    return [S.finite(out, where),
            S.zero(out if row is None else out[:, row],
                   "output with every token null" if row is None
                   else f"row {row} whose visible sources are all null ({list(sources)})")]


# -- contracts (the fuzz tier's choices of the statements' inputs) ------------------------

@contract(exact=True, requires={"token_local"},
          symbolic=SymbolicOptions(shape=(1, 2), statement=nulls_stay_null, at=lambda at: [dict(nulls=(0,))],
                                   says=lambda at: f"token 0 of {at.n} set to 0 => out_0 = 0"),
          adversary=AdversaryOptions(sees=frozenset({"leak_null"}), scale_blind=SHARED_AXES))
def zero_absorption(case):
    """f(0) = 0 exactly: a null token stays exactly null."""
    nulls = null_positions(case)
    return S.judge(case, lambda xp, run: nulls_stay_null(xp, run, case.x_dense, case.mask, nulls))


@contract(exact=True, requires={"token_mixing"},
          symbolic=SymbolicOptions(shape=(2, 2), host_shape=(2, 1), statement=nulls_stay_null,
                                   at=lambda at: [dict(nulls=(i,)) for i in range(at.n)],
                                   says=lambda at: f"for every i < {at.n}: h_i = 0 => out_i = 0"),
          adversary=AdversaryOptions(sees=frozenset({"leak_null"}), scale_blind=SHARED_AXES))
def null_receiver(case):
    """h_i = 0 implies out_i = 0 exactly."""
    nulls = null_positions(case)
    return S.judge(case, lambda xp, run: nulls_stay_null(xp, run, case.x_dense, case.mask, nulls))


@contract(exact=False, requires={"token_mixing"},
          symbolic=SymbolicOptions(shape=(2, 1), host_shape=(1, 1), statement=null_insertion,
                                   at=lambda at: [dict(k=k) for k in range(at.n + 1)], shapes=(("inserted", 1),),
                                   says=lambda at: f"for every k <= {at.n}: insert a null at k => its output 0, "
                                                   f"the {at.n} others unchanged",
                                   host="layered_insertion", implied_by="closure"),
          adversary=AdversaryOptions(sees=frozenset({"position", "leak_null"})))
def null_source_insertion(case):
    """Inserting a null token leaves every other output unchanged and its own output exactly 0."""
    k = case.pos % (case.n + 1)
    return S.judge(case, lambda xp, run: null_insertion(xp, run, case.x, case.mask, k))


def _empty_rows(at):
    """Row i sees only the null sources in N (every row, every set N): m_ij = 0 for j outside N.
    Without a mask: every token null."""
    if not at.masked:
        return [(dict(row=None, sources=tuple(range(at.n))), ())]
    return [(dict(row=i, sources=nulls), tuple((i, j) for j in range(at.n) if j not in nulls))
            for i in range(at.n) for r in range(at.n + 1) for nulls in itertools.combinations(range(at.n), r)]


@contract(exact=True, requires={"token_mixing"},
          symbolic=SymbolicOptions(shape=(2, 1), statement=empty_row, mask="free", cases=_empty_rows,
                                   case_premise="row i sees only null sources",
                                   says=lambda at: "row i whose visible sources are all null (every row, every set "
                                                   "of nulls) => out_i = 0, finite" if at.masked
                                   else "every token null => out = 0, finite"),
          adversary=AdversaryOptions(sees=frozenset({"leak_null"}), scale_blind=SHARED_AXES))
def empty_support(case):
    """Every source null or masked implies out = 0 exactly, and finite."""
    if case.mask is None:
        every = tuple(range(case.n))
        return S.judge(case, lambda xp, run: empty_row(xp, run, case.x, None, None, every))
    nulls = null_positions(case)
    i = case.pos % case.n
    sources = tuple(j for j in nulls if j != i)        # row i (not null) sees only these nulls
    m = case.mask.clone()
    m[:, i, :] = 0.0
    m[:, i, list(sources)] = 1.0
    return S.judge(case, lambda xp, run: empty_row(xp, run, case.x_dense, m, i, sources))


@contract(exact=True, dtypes=("float64", "float32"),
          symbolic=SymbolicOptions(none="a statement about autograd's float gradients, judged by the eager tier"),
          evaluated="autograd",
          adversary=AdversaryOptions(scale_blind=SHARED_AXES))
def null_gradient(case):
    """A null token's carrier receives exactly zero gradient."""
    nulls = null_positions(case)
    x = with_nulls(case, nulls).to(case.dtype).requires_grad_(True)
    out = case.runner.call(x, **case.runner.arguments(case.mask))          # eager autograd or the kernels' backward
    weights = case.random_like(out.shape, salt=11).to(case.dtype)
    (grad,) = torch.autograd.grad((out * weights).sum(), x)
    return exact_zero(grad[:, list(nulls)], f"gradient at null tokens {list(nulls)}")


def _memo(f):
    """f(dtype), computed once per dtype."""
    seen = {}

    def at(dt):
        if dt not in seen:
            seen[dt] = f(dt)
        return seen[dt]
    return at


@contract(exact=False, requires={"host"}, needs={"layers"},
          symbolic=SymbolicOptions(shape=(1, 1), host_shape=(1, 1), host="closure_induction"),
          evaluated="reference",
          unjudged="judged on the per-layer states of the operator's own code (op.layers) and on its output (op.fn)",
          # the operator compared with itself (with and without an inserted null): a uniform scale cancels where
          # the predicate is alike on both sides (the insertion changes n and adds a null row)
          adversary=AdversaryOptions(rank=5, sees=frozenset({"drop_key"}), scale_blind=SHARED_AXES))
def closure(case):
    """Inserting a null token commutes with every layer and the output: it stays exactly 0, old tokens unchanged.

    The last entry of ``layers`` in the verdict is the operator's own output (``op.fn``), so a host whose
    declared layers are closed but whose output is not (e.g. fn adds a term) breaks there."""
    k = case.pos % (case.n + 1)
    x2, m2 = S.insert_null(TORCH, case.x, k), S.insert_visible(case.mask, k)
    keep = S.others(case.n + 1, k)
    # the operator's own output closes the list: a host whose fn is not its last layer is judged on both
    new = _memo(lambda dt: case.runner.layers_and_output(x2, m2, dtype=dt))
    old = _memo(lambda dt: case.runner.layers_and_output(case.x, case.mask, dtype=dt))
    per_layer = []
    for layer in range(len(new(case.dtype))):
        own = max_abs(new(case.dtype)[layer][:, k])
        # each side's states are computed once per dtype: relation asks for the probes it needs
        rest = relation(case, lambda dt: new(dt)[layer][:, keep], lambda dt: old(dt)[layer],
                        f"layer {layer}: old tokens")
        per_layer.append(dict(layer=layer, null_norm=own, old_shift=rest.discrepancy, bound=rest.bound,
                              least_bound=rest.extra.get("least_bound", rest.bound),
                              null_ok=own == 0.0, old_ok=not rest.violated))
    first = next((p for p in per_layer if not (p["null_ok"] and p["old_ok"])), None)
    if first is None:
        shift = max(p["old_shift"] for p in per_layer)
        bound = max(p["bound"] for p in per_layer)
        return V.holds(shift, bound, f"closed at all {len(per_layer)} layers (null inserted at {k})",
                       extra={"layers": per_layer, "least_bound": max(p["least_bound"] for p in per_layer)})
    kind = "zero absorption lost" if not first["null_ok"] else "contextual erasure lost"
    disc = first["null_norm"] if not first["null_ok"] else first["old_shift"]
    return V.violated(disc, 0.0 if not first["null_ok"] else first["bound"],
                      f"first break at layer {first['layer']} ({kind}): null |h| = {first['null_norm']:.3g}, "
                      f"old-token shift {first['old_shift']:.3g}", extra={"layers": per_layer})


@contract(exact=True, requires={"masked"}, needs={"masked_row"},
          symbolic=SymbolicOptions(none="the declared convention may be NaN, which real arithmetic has no value for; "
                                        "judged bit for bit by the fuzz tier in every dtype"))
def masked_row(case):
    """A row that sees no key at all outputs the operator's declared convention (0, NaN or a stated value), exactly."""
    # The convention is a declaration (@declare(masked_row=...)), not a law the operator could be
    # expected to violate: a fully masked row has no attention to take, and users trip on which
    # value comes out (SDPA's NaN padding rows, FlexAttention's 0).
    i = case.pos % case.n
    m = case.mask.clone()
    m[:, i, :] = 0.0
    row = case.runner.run(case.x, m)[:, i].double()
    c = float(case.op.masked_row)
    where = f"row {i} with every key masked"
    if c != c:
        off = int((~torch.isnan(row)).sum())
        return V.judge(off, 0, f"{where}: {off} of {row.numel()} entries are not NaN (declared NaN)")
    gap = max_abs(row - c)
    return V.judge(gap, 0.0, f"{where}: max |out - {c:g}| = {gap:.3g} (declared {c:g}; exact contract)")
