"""Null-token contracts: a zero-vector token is inert (SPEC 1, 3)."""
from __future__ import annotations

import torch


from . import transforms as T
from . import verdict as V
from .catalogue import contract
from .judging import exact_zero, max_abs, relation, worst
from .tolerance import PROBE


def null_positions(case) -> tuple:
    """The case's null tokens, or one at ``pos`` so there is always one."""
    return tuple(sorted(set(case.null))) or (case.pos % case.n,)


def with_nulls(case, nulls) -> torch.Tensor:
    x = case.x_dense.clone()
    for i in nulls:
        x[:, i] = 0.0
    return x


@contract(exact=True, requires={"token_local"})
def zero_absorption(case):
    """f(0) = 0 exactly: a null token stays exactly null."""
    nulls = null_positions(case)
    out = case.run(with_nulls(case, nulls), case.mask)
    return exact_zero(out[:, list(nulls)], f"output at null tokens {list(nulls)}")


@contract(exact=True, requires={"token_mixing"})
def null_receiver(case):
    """h_i = 0 implies out_i = 0 exactly."""
    nulls = null_positions(case)
    out = case.run(with_nulls(case, nulls), case.mask)
    return exact_zero(out[:, list(nulls)], f"output at null receivers {list(nulls)}")


@contract(exact=False, requires={"token_mixing"})
def null_source_insertion(case):
    """Inserting a null token leaves every other output unchanged and its own output exactly 0."""
    k = case.pos % (case.n + 1)
    x2, m2 = T.insert_null(case.x, k), T.insert_visible(case.mask, k)
    keep = T.others(case.n + 1, k)
    own = exact_zero(case.run(x2, m2)[:, k], f"inserted null's own output (at {k})")
    rest = relation(case, lambda dt: case.run(x2, m2, dtype=dt)[:, keep],
                    lambda dt: case.run(case.x, case.mask, dtype=dt), f"old tokens after inserting a null at {k}")
    return worst(own, rest)


@contract(exact=True, requires={"token_mixing"})
def empty_support(case):
    """Every source null or masked implies out = 0 exactly, and finite."""
    nulls = null_positions(case)
    if case.mask is None:
        out = case.run(torch.zeros_like(case.x), None)
        return exact_zero(out, "output with every token null")
    i = case.pos % case.n
    sources = tuple(j for j in nulls if j != i)        # row i (not null) sees only these nulls
    m = case.mask.clone()
    m[:, i, :] = 0.0
    m[:, i, list(sources)] = 1.0
    out = case.run(with_nulls(case, sources), m)
    if not torch.isfinite(out).all():
        return V.violated(float("nan"), 0.0, f"non-finite output when row {i} sees only null tokens {list(sources)}")
    return exact_zero(out[:, i], f"row {i} whose visible sources are all null ({list(sources)})")


@contract(exact=True, dtypes=("float64", "float32"))
def null_gradient(case):
    """A null token's carrier receives exactly zero gradient."""
    nulls = null_positions(case)
    x = with_nulls(case, nulls).to(case.dtype).requires_grad_(True)
    out = case.call(x, **case.arguments(case.mask))          # eager autograd or the kernels' backward
    weights = case.random_like(out.shape, salt=11).to(case.dtype)
    (grad,) = torch.autograd.grad((out * weights).sum(), x)
    return exact_zero(grad[:, list(nulls)], f"gradient at null tokens {list(nulls)}")


@contract(exact=False, requires={"host"}, needs={"layers"})
def closure(case):
    """Inserting a null token commutes with every layer: it stays exactly 0 and old tokens are unchanged."""
    k = case.pos % (case.n + 1)
    x2, m2 = T.insert_null(case.x, k), T.insert_visible(case.mask, k)
    keep = T.others(case.n + 1, k)
    new = {dt: case.layers(x2, m2, dtype=dt) for dt in {case.dtype, torch.float64, PROBE[case.dtype]}}
    old = {dt: case.layers(case.x, case.mask, dtype=dt) for dt in new}
    per_layer = []
    for layer in range(len(new[case.dtype])):
        own = max_abs(new[case.dtype][layer][:, k])
        rest = relation(case, lambda dt: new[dt][layer][:, keep], lambda dt: old[dt][layer],
                        f"layer {layer}: old tokens")
        per_layer.append(dict(layer=layer, null_norm=own, old_shift=rest.discrepancy, bound=rest.bound,
                              null_ok=own == 0.0, old_ok=not rest.violated))
    first = next((p for p in per_layer if not (p["null_ok"] and p["old_ok"])), None)
    if first is None:
        shift = max(p["old_shift"] for p in per_layer)
        bound = max(p["bound"] for p in per_layer)
        return V.holds(shift, bound, f"closed at all {len(per_layer)} layers (null inserted at {k})",
                       extra={"layers": per_layer})
    kind = "zero absorption lost" if not first["null_ok"] else "contextual erasure lost"
    disc = first["null_norm"] if not first["null_ok"] else first["old_shift"]
    return V.violated(disc, 0.0 if not first["null_ok"] else first["bound"],
                      f"first break at layer {first['layer']} ({kind}): null |h| = {first['null_norm']:.3g}, "
                      f"old-token shift {first['old_shift']:.3g}", extra={"layers": per_layer})
