"""A host input that reaches a refuted induction step: a step refutation made a refutation of the host.

Closure by induction (``laws.closure``) proves each block commutes with null insertion on
*every* state.  When block b's step is refuted (z3 gives a state ``h_b``, a mask and the
parameters on which it does not), the host is refuted only if some host input ``x``
drives the host into a state where block b fails.  The prefix and the blocks before b
keep an inserted null exactly 0 and the old tokens unchanged (they were proved first,
in the law's order), so the state entering block b after an insertion is the insertion
into the old one: reaching ``h_b`` itself is enough, and a block that fails on every
state (a plain FFN: FFN(0) != 0) is reached by any input.

:func:`search` tries, with the step model's parameters and mask, in this order:

1. the model's own ``x``, then ``h_b`` as an input, then random inputs (four scales,
   three seeds, every other one with a null token);
2. descent: ``x`` minimising ``|reach_b(x) - h_b|^2`` (``reach_b``: the prefix then blocks
   0..b-1, torch autograd in float64, L-BFGS) from the same starts.

A candidate counts only when the eager code breaks the law there: the direct whole-host
statement's relation runs on it through the torch namespace in float64 (``replay.measure``,
every layer, every insertion position) and its discrepancy must exceed the replay's
noise bound, as every refutation's must.  Nothing here is a proof: no witness found
leaves the cell to the direct statement, and ``unknown`` says what was tried.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import torch

from tokenlaw.operators import tree
from tokenlaw.operators.xp import TORCH

from . import laws as L
from .host_check import pieces
from .replay import measure, reproduces

SCALES = (0.5, 1.0, 2.0, 4.0)
SEEDS = 3
DESCENT_ITERATIONS = 60


@dataclasses.dataclass(frozen=True)
class Witness:
    """A host input the eager whole host fails on: the replay's values and what it measured."""

    values: dict            # x, mask, params: float64, the direct statement's inputs
    discrepancy: float
    bound: float
    what: str
    how: str                # which candidate found it


def tensors(template, value):
    """A counterexample's JSON values back as float64 tensors / floats, shaped like the problem's ``template``."""
    def leaf(path, t):
        v = tree.get(value, path)
        if isinstance(t, np.ndarray):
            return float(v) if t.ndim == 0 else torch.as_tensor(v, dtype=torch.float64)
        return v

    return tree.map_with_path(leaf, template)


def _reach(op, x, mask, params, b):
    """The host's state entering block b: the prefix, then blocks 0..b-1."""
    prefix, block = pieces(op)
    rest = {k: v for k, v in params.items() if k != "blocks"}
    states = list(prefix(TORCH, x, mask, **rest))
    h = states[-1] if states else x
    for blk in params["blocks"][:b]:
        h = list(block(TORCH, h, mask, block=blk, **rest))[-1]
    return h


def _descend(op, start, target, mask, params, b):
    """x from ``start`` minimising |reach_b(x) - target|^2, and the distance it got to."""
    x = start.clone().requires_grad_(True)
    opt = torch.optim.LBFGS([x], max_iter=DESCENT_ITERATIONS, line_search_fn="strong_wolfe")

    def loss():
        opt.zero_grad()
        out = ((_reach(op, x, mask, params, b) - target) ** 2).sum()
        out.backward()
        return out

    with torch.enable_grad():
        try:
            opt.step(loss)
        except (RuntimeError, ValueError):          # a non-finite step: keep where it got to
            pass
        with torch.no_grad():
            dist = float((_reach(op, x, mask, params, b) - target).norm())
    return x.detach(), dist


def search(op, step_ce: dict, failed: list, whole: L.Problem) -> tuple[Witness | None, str]:
    """(witness, words): a host input on which the eager whole host breaks closure, or None and what was tried.

    ``step_ce``: the step refutation's counterexample (its x, h_b, mask and parameters);
    ``failed``: the claims its model violates (the first induction step names block b);
    ``whole``: the direct whole-host statement whose relation replays a candidate."""
    blocks = [b for b in map(L.step_block, failed) if b is not None]
    if pieces(op) is None or not blocks:
        return None, "no host input searched (the refuted claim names no induction step of a block)"
    b = blocks[0]
    params = tensors(whole.params, step_ce["params"])
    x0 = torch.as_tensor(step_ce["x"], dtype=torch.float64)
    mask = torch.as_tensor(step_ce["mask"], dtype=torch.float64)
    target = torch.as_tensor(step_ce[f"h{b}"], dtype=torch.float64)
    gen = torch.Generator().manual_seed(0)
    same = target.shape == x0.shape              # a prefix may change the width: then no h_b-guided candidate
    starts = [("the z3 model's x", x0)] + ([(f"h{b} as the input", target)] if same else [])
    for scale in SCALES:
        for seed in range(SEEDS):
            x = torch.randn(x0.shape, generator=gen, dtype=torch.float64) * scale
            if seed % 2 == 1:
                x[:, seed % x.shape[1]] = 0.0
            starts.append((f"a random input (scale {scale:g})", x))
    tried, worst, closest = 0, 0.0, float("inf")

    def replay(x, how):
        nonlocal tried, worst
        tried += 1
        with torch.no_grad():
            disc, bound, what = measure(whole, {"x": x, "mask": mask, "params": params})
        worst = max(worst, disc) if disc == disc else worst
        if reproduces(disc, bound):
            return Witness({"x": x, "mask": mask, "params": params}, disc, bound, what, how)
        return None

    for how, x in starts:
        found = replay(x, how)
        if found is not None:
            return found, f"found by {how}"
    for how, x in starts[:4] if same else ():
        reached, dist = _descend(op, x, target, mask, params, b)
        closest = min(closest, dist)
        found = replay(reached, f"descent to h{b} from {how} (|reach - h{b}| = {dist:.3g})")
        if found is not None:
            return found, f"found by descent to h{b}"
    return None, (f"no host input found that reaches a state where block {b} fails: {tried} inputs replayed on "
                  f"the eager whole host ({len(starts)} starts: the z3 model's x, h{b}, random inputs; then descent "
                  f"to the refuted state h{b}, closest |reach - h{b}| = {closest:.3g}); largest discrepancy "
                  f"{worst:.3g}, within the noise bound")
