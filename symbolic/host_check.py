"""Is the host the induction reasons about the host that runs?  Checked before any induction.

Closure by induction (``laws.closure``) proves facts about ``op.layers.prefix`` and
``op.layers.block``; ``null_source_insertion`` via closure turns them into a fact about
``op.fn``.  Both steps rest on two declarations, which :func:`check` tests instead of
trusting:

* **pieces**: the prefix followed by each block (fed the previous state, with
  ``block=blocks[i]``) returns, state by state, what ``op.layers`` returns;
* **output**: ``op.fn`` is the last state of ``op.layers``.

Numerically, on several random in-domain float64 inputs (the prover's shape and the
domain's widths and lengths, masks with the diagonal visible, one input with a null
token), each drawn with its own parameters.  Two states are compared with the project's
tolerance model (``properties.tolerance.compare`` at float64): each side's float64
rounding error is *predicted* from its own float32 run, scaled by u64 / u32 = 2**-29 and
made normwise (K = 8), never from the difference under test.  The same code gives
bit-identical states (difference 0); a different block or a ``+ 0.1 n`` is many orders
above that bound.  If a side cannot run in float32 the bound is K * u64 * max|value|.

Symbolically, at the prover's shape with every parameter a symbol: both sides traced
through one z3 namespace (equal sub-terms share their fresh symbols), for every mask
the prover enumerates; each pair of terms must be equal after AC-normalisation, or else
z3 must prove ``a = b`` under the premises and axioms (a short query).  An undecided
query is a mismatch: what is not shown equal is not trusted.

A mismatch does not refute anything by itself: it means the host is judged as a whole
(the direct whole-host statement, on ``op.fn``), never by the induction.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import torch
import z3

from tokenlaw.operators.xp import TORCH
from tokenlaw.properties import tolerance as T
from tokenlaw.properties.case import cast

from . import effort
from . import relations as R
from .inputs import Symbols, symbolic_params
from .objarray import traced
from .z3_ns import Z3Namespace, canonical

SEEDS = 4                 # random inputs per shape
EQUAL_TIMEOUT = 2.0       # seconds for one z3 query "these two terms differ"


@dataclasses.dataclass(frozen=True)
class HostCheck:
    """The outcome of :func:`check`: ``ok``, or which declaration failed, where and by how much."""

    ok: bool
    detail: str
    failed: str = ""              # "pieces" | "output" | "raises" | "" (ok)
    state: int | None = None      # index of the first differing state of op.layers
    difference: float | None = None


def pieces(op):
    """(prefix, block) of a host's layers, or None when it does not expose them."""
    prefix, block = getattr(op.layers, "prefix", None), getattr(op.layers, "block", None)
    return None if prefix is None or block is None else (prefix, block)


def composed_states(op, xp, x, mask, params) -> list:
    """prefix(x), then each block fed the previous state: the states the induction is about."""
    prefix, block = pieces(op)
    rest = {k: v for k, v in params.items() if k != "blocks"}
    states = list(prefix(xp, x, mask, **rest))
    h = states[-1] if states else x
    for b in params["blocks"]:
        out = list(block(xp, h, mask, block=b, **rest))
        states += out
        h = out[-1] if out else h
    return states


def _sides(op, xp, x, mask, params):
    """{kind: (states, states of op.layers, index of their first state in op.layers)} on one input:
    "pieces" (prefix then blocks vs every state), "output" (op.fn vs the last state)."""
    layers = list(op.layers(xp, x, mask, **params))
    out = {}
    if pieces(op) is not None:
        out["pieces"] = (composed_states(op, xp, x, mask, params), layers, 0)
    out["output"] = ([R.run(op, xp, x, mask, params)], layers[-1:], len(layers) - 1)
    return out


def _inputs(op, n, d):
    """(x, mask, params, where) float64 inputs: the prover's shape and the domain's, one with a null token."""
    dom = op.domain
    shapes = [(n, d), (min(3, dom.n_max), dom.d_model[0]), (dom.n_max, dom.d_model[-1])]
    for s, (nn, dd) in enumerate(shapes):
        for seed in range(SEEDS):
            gen = torch.Generator().manual_seed(1000 * s + seed)
            params = dom.params(gen, dd, torch.float64) if dom.params is not None else {}
            x = torch.randn(1, nn, dd, generator=gen, dtype=torch.float64) * (0.5 + seed)
            if seed % 2 == 1:
                x[:, int(torch.randint(nn, (1,), generator=gen))] = 0.0      # a null token
            mask = None
            if dom.mask == "random":
                mask = (torch.rand(1, nn, nn, generator=gen) < 0.6).to(torch.float64)
                mask[:, range(nn), range(nn)] = 1.0
            elif dom.mask == "causal":
                mask = R.causal(nn, x)
            yield x, mask, params, f"input {s * SEEDS + seed} (n={nn}, d={dd}, seed {seed})"


def _float32(op, x, mask, params):
    try:
        with torch.no_grad():
            return _sides(op, TORCH, x.float(), None if mask is None else mask.float(), cast(params, torch.float32))
    except Exception:  # noqa: BLE001 -- a side that cannot run in float32 gets the float64-only bound
        return None


def _numeric(op, n, d) -> HostCheck | None:
    """The first numeric mismatch, or None."""
    for x, mask, params, where in _inputs(op, n, d):
        try:
            with torch.no_grad():
                s64 = _sides(op, TORCH, x, mask, params)
        except Exception as err:  # noqa: BLE001 -- an in-domain input the host's own code rejects
            return HostCheck(False, f"op.layers / its pieces / op.fn raised {type(err).__name__} on {where}: "
                             f"{str(err)[:160]}", "raises")
        s32 = _float32(op, x, mask, params)
        for kind, (a, b, first) in s64.items():
            if len(a) != len(b):
                return HostCheck(False, f"{_WHAT[kind]}: {len(a)} states vs {len(b)} of op.layers ({where})",
                                 kind)
            for i, (u, v) in enumerate(zip(a, b)):
                state = first + i
                diff, bound = _compare(u, v, None if s32 is None else s32[kind][0][i],
                                       None if s32 is None else s32[kind][1][i])
                if not diff <= bound:
                    return HostCheck(False, f"{_WHAT[kind]}: differ at state {state} of op.layers on {where}: "
                                     f"max |difference| {diff:.3g} > bound {bound:.3g} (float64 rounding "
                                     f"predicted from float32)", kind, state, diff)
    return None


def _compare(a64, b64, a32, b32):
    a64, b64 = torch.as_tensor(a64, dtype=torch.float64), torch.as_tensor(b64, dtype=torch.float64)
    if a64.shape != b64.shape:
        return float("inf"), 0.0
    if a32 is None or b32 is None or tuple(a32.shape) != tuple(a64.shape) or tuple(b32.shape) != tuple(b64.shape):
        diff = (a64 - b64).abs()
        scale = max(float(a64.abs().max()), float(b64.abs().max())) if a64.numel() else 0.0
        return (float(diff.max()) if diff.numel() else 0.0), T.K * T.UNIT_ROUNDOFF[torch.float64] * scale
    c = T.compare({torch.float64: a64, torch.float32: a32}, {torch.float64: b64, torch.float32: b32}, torch.float64)
    return (c.max_discrepancy if c.ok else c.discrepancy), c.bound


_WHAT = {"pieces": "prefix followed by the blocks (op.layers.prefix / .block) and op.layers",
         "output": "op.fn and the last state of op.layers"}


def _symbolic(op, n, d) -> HostCheck | None:
    """The first pair of traced terms not shown equal, or None (every mask the prover enumerates)."""
    sym = Symbols()
    params = symbolic_params(op, sym, d, mode="symbolic")
    x = sym.array("x", (1, n, d))
    masks = [None]
    if op.domain.mask == "random":
        sym.bits("mask", (1, n, n), diagonal=True)
        masks = sym.finite["mask"]
    elif op.domain.mask == "causal":
        masks = [R.causal(n, x)]
    for mi, mask in enumerate(masks):
        ns = Z3Namespace()
        sides = _sides(op, ns, *traced((x, mask, params)))
        for kind, (a, b, first) in sides.items():
            if len(a) != len(b):
                return HostCheck(False, f"{_WHAT[kind]}: {len(a)} traced states vs {len(b)}", kind)
            for i, (u, v) in enumerate(zip(a, b)):
                lhs, rhs = np.broadcast_arrays(ns._arr(u), ns._arr(v))
                for idx in np.ndindex(*lhs.shape):
                    p, q = ns._term(lhs[idx]), ns._term(rhs[idx])
                    if canonical(p).eq(canonical(q)):
                        continue
                    verdict = _z3_equal(ns, sym, p, q)
                    if verdict is not True:
                        state = first + i
                        return HostCheck(False, f"{_WHAT[kind]}: traced terms of state {state} at {idx} "
                                         f"(n={n}, d={d}, mask {mi}) are {verdict}", kind, state)
    return None


def _z3_equal(ns, sym, p, q):
    """True when z3 proves p = q under the premises and axioms; else why not (words)."""
    s = effort.limit(z3.Solver(), EQUAL_TIMEOUT)
    s.add(*[c for c, _ in sym.premises], *[c for c, _ in ns.axioms()])
    s.add(p != q)
    r = effort.check(s)
    if r == z3.unsat:
        return True
    return "different (z3 finds parameters and an input where they differ)" if r == z3.sat else \
        f"not shown equal (z3: {effort.reason(s)})"


def check(op, n: int, d: int) -> HostCheck:
    """Both declarations (module docstring), numerically and symbolically; the first failure or ok."""
    found = _numeric(op, n, d) or _symbolic(op, n, d)
    if found is not None:
        return found
    what = "prefix followed by the blocks = op.layers at every state and " if pieces(op) is not None else ""
    return HostCheck(True, f"checked before the induction: {what}op.fn = the last state of op.layers, "
                     f"numerically on {3 * SEEDS} random float64 inputs (bit-identical up to the predicted "
                     f"rounding) and symbolically at n={n}, d={d} (equal terms)")
