"""Contracts stated on symbolic inputs: one builder per contract name.

A builder ``law(op, shapes, mode) -> Problem`` makes the symbols (inputs and
the operator's parameters, each with its domain premise) and a *relation*
``relation(xp, v) -> [Fact]`` that runs the registered operator function
(``op.fn``, ``op.layers``, ``op.reference``; the score laws read the
weights ``op.fn`` applies off its output, never the declared ``op.weights``) through ``xp``
and says which arrays must be equal (or ordered).  The prover runs the
relation on z3 terms to build the claim; the replay runs the very same
relation on float64 tensors read from the model.

The law itself is stated once, in ``tokenlaw.properties`` (e.g.
``null_laws.null_insertion``), as a relation over ``xp`` that both tiers
evaluate (:mod:`tokenlaw.properties.statement`); a builder here only makes
its inputs symbolic and instantiates it for *every* position instead of one
drawn position (null_receiver proves ``out_i = 0`` for each i) and turns its
claims into facts.  Still written here alone: ``dc_gain`` and the proof
strategies of hosts (the layered insertion and ``closure``); a host whose declared pieces do
not check out (``host_check``) is judged by the direct statements of ``WHOLE_HOST`` instead.
"""
from __future__ import annotations

import dataclasses
import itertools
import re
from typing import Callable

import numpy as np
import z3

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties import filter_laws as F
from tokenlaw.properties import null_laws as N
from tokenlaw.properties import score_laws as W
from tokenlaw.properties import sequence_laws as Q
from tokenlaw.properties import statement as S
from tokenlaw.properties.applied import applied_weights, law_params

from . import relations as R
from .inputs import Symbols, symbolic_params


@dataclasses.dataclass
class Fact:
    """``lhs == rhs`` (kind "eq") or ``lhs <= rhs`` (kind "le"), elementwise."""

    kind: str
    lhs: object
    rhs: object
    what: str
    guard: tuple | None = None       # (selector, value): the fact only binds when selector == value
    rewrite: tuple = ()              # ((term array, equal term array), ...) proved by earlier facts
    replay_only: bool = False        # measured on the eager replay only (e.g. the whole host)
    lemma: bool = False              # a stepping stone: proved if possible, never refutes the law
    step: bool = False               # an induction step: its failure alone is no counterexample of the law


def eq(lhs, rhs, what):
    return Fact("eq", lhs, rhs, what)


def le(lhs, rhs, what):
    return Fact("le", lhs, rhs, what)


@dataclasses.dataclass
class Problem:
    """A contract instantiated at small shapes, ready to trace with any namespace."""

    contract: str
    operator: str
    shapes: dict
    sym: Symbols
    inputs: dict                     # name -> symbolic array (also in sym.arrays)
    params: dict                     # symbolic parameter tree
    relation: Callable               # relation(xp, v) -> [Fact]; v = inputs + {"params": ...}
    statement: str                   # the instantiated law, in words
    exp_product: bool = False        # instantiate axiom E4 (exp(a) exp(b) = exp(a + b))
    replay_params: Callable | None = None   # values -> eager params (default: inputs.concrete)
    argument: str = ""               # how the proved statement implies the contract (printed in proofs.md)
    fallback: Callable | None = None # () -> Problem: a direct statement to decide when this one is not proved


LAWS: dict = {}


def law(name):
    def mark(fn):
        LAWS[name] = fn
        return fn
    return mark


def _setup(op, n, d, mode, *, mask="domain"):
    """Symbols for x (1, n, d), the mask (if the operator takes one) and the parameters."""
    sym = Symbols()
    params = symbolic_params(op, sym, d, mode=mode)
    inputs = {"x": sym.array("x", (1, n, d))}
    if op.domain.mask != "none" and mask != "none":
        inputs["mask"] = sym.bits("mask", (1, n, n), diagonal=(mask == "domain"))
    return sym, params, inputs


def runner(op, xp, v) -> S.Runner:
    """The statement's ``run`` on symbolic inputs: op.fn (and op.reference) with the law's parameters."""
    def reference(x, mask):
        kwargs = dict(v["params"])
        if op.domain.mask != "none":
            kwargs["mask"] = mask
        return op.reference(xp, x, **kwargs)

    return S.Runner(lambda x, mask, **overrides: R.run(op, xp, x, mask, {**v["params"], **overrides}), reference)


def facts(xp, claims, guard=None) -> list:
    """A statement's claims as facts to prove: zero / equal as ``=``, at_most as ``<=``.

    ``finite`` claims add nothing here: a traced term is a real wherever the
    obligations of its divisions (which the prover proves) hold."""
    out = []
    for c in claims:
        if c.kind == "finite":
            continue
        lhs, rhs = c.lhs, xp.zeros_like(c.lhs) if c.kind == "zero" else c.rhs
        out.append(Fact("le" if c.kind == "at_most" else "eq", lhs, rhs, c.what, guard=guard))
    return out


def selected(sel, c) -> bool:
    """Is case c the one the (enumerated) selector picks?  A symbolic selector picks any."""
    if isinstance(sel, np.ndarray) and sel.dtype == object:
        return True
    return int(round(float(sel))) == c


def _mask(v):
    return v.get("mask")


# -- null-token laws -------------------------------------------------------------

@law("zero_absorption")
def zero_absorption(op, n, d, mode):
    sym, params, inputs = _setup(op, n, d, mode)

    def relation(xp, v):
        return facts(xp, N.nulls_stay_null(xp, runner(op, xp, v), v["x"], _mask(v), (0,)))

    return Problem("zero_absorption", op.name, dict(n=n, d=d), sym, inputs, params, relation,
                   f"token 0 of {n} set to 0 => out_0 = 0")


@law("null_receiver")
def null_receiver(op, n, d, mode):
    sym, params, inputs = _setup(op, n, d, mode)

    def relation(xp, v):
        run = runner(op, xp, v)
        return [f for i in range(n) for f in facts(xp, N.nulls_stay_null(xp, run, v["x"], _mask(v), (i,)))]

    return Problem("null_receiver", op.name, dict(n=n, d=d), sym, inputs, params, relation,
                   f"for every i < {n}: h_i = 0 => out_i = 0")


@law("null_source_insertion")
def null_source_insertion(op, n, d, mode, *, layered=True):
    """``layered=False``: the statement on ``op.fn`` alone (a host judged as a whole, see WHOLE_HOST)."""
    sym, params, inputs = _setup(op, n, d, mode)

    def relation(xp, v):
        x, m = v["x"], _mask(v)
        if op.layers is not None and layered:
            return _layered_insertion(op, xp, x, m, v["params"], n)
        run = runner(op, xp, v)
        return [f for k in range(n + 1) for f in facts(xp, N.null_insertion(xp, run, x, m, k))]

    return Problem("null_source_insertion", op.name, dict(n=n, d=d, inserted=1), sym, inputs, params, relation,
                   f"for every k <= {n}: insert a null at k => its output 0, the {n} others unchanged")


def _layered_insertion(op, xp, x, m, params, n):
    """Null insertion through a host, layer by layer: each layer's facts may restart from
    the previous layer's proved-equal states (Fact.rewrite); the last layer is the output."""
    old = op.layers(xp, x, m, **params)
    facts = []
    for k in range(n + 1):
        new = op.layers(xp, R.insert_null(xp, x, k), R.insert_visible(m, k), **params)
        keep = R.others(n + 1, k)
        for layer, (a, o) in enumerate(zip(new, old)):
            last = layer == len(new) - 1
            at = "output" if last else f"layer {layer} (a lemma on the way)"
            cut = () if layer == 0 else ((new[layer - 1][:, keep], old[layer - 1]),
                                         (new[layer - 1][:, k], xp.zeros_like(new[layer - 1][:, k])))
            facts.append(Fact("eq", a[:, k], xp.zeros_like(a[:, k]), f"{at}: inserted null at {k} stays 0",
                              rewrite=cut, lemma=not last))
            facts.append(Fact("eq", a[:, keep], o, f"{at}: old tokens after inserting a null at {k}",
                              rewrite=cut, lemma=not last))
    return facts


@law("empty_support")
def empty_support(op, n, d, mode):
    masked = op.domain.mask != "none"
    sym, params, inputs = _setup(op, n, d, mode, mask="free")
    m = inputs.get("mask")
    # Row i sees only the null sources in N: m_ij = 0 for j outside N (premise on the mask).
    cases = [(i, nulls) for i in range(n) for r in range(n + 1) for nulls in itertools.combinations(range(n), r)] \
        if masked else [(None, tuple(range(n)))]
    if masked:
        selector = sym.choice("case", len(cases))[()]
        for c, (i, nulls) in enumerate(cases):
            for j in range(n):
                if j not in nulls:
                    sym.premise(z3.Implies(selector == c, m[0, i, j] == 0), "row i sees only null sources")

    def relation(xp, v):
        out = []
        run = runner(op, xp, v)
        for c, (i, nulls) in enumerate(cases):
            if masked and not selected(v["case"], c):
                continue
            # one selector picks the case (masked): the others hold vacuously
            out += facts(xp, N.empty_row(xp, run, v["x"], _mask(v), i, nulls),
                         guard=(v["case"], c) if masked else None)
        return out

    inputs = dict(inputs)
    if masked:
        inputs["case"] = sym.arrays["case"]
    return Problem("empty_support", op.name, dict(n=n, d=d), sym, inputs, params, relation,
                   "row i whose visible sources are all null (every row, every set of nulls) => out_i = 0, finite"
                   if masked else "every token null => out = 0, finite")


@law("mask_respect")
def mask_respect(op, n, d, mode):
    sym, params, inputs = _setup(op, n, d, mode)
    inputs["y"] = sym.array("y", (1, d))
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
    sel = sym.choice("case", len(pairs))[()]
    inputs["case"] = sym.arrays["case"]
    for c, (i, j) in enumerate(pairs):
        sym.premise(z3.Implies(sel == c, inputs["mask"][0, i, j] == 0), "m_ij = 0 for the chosen pair")

    def relation(xp, v):
        out, run = [], runner(op, xp, v)
        for c, (i, j) in enumerate(pairs):
            if selected(v["case"], c):
                out += facts(xp, Q.blind_rows(xp, run, v["x"], v["mask"], j, v["y"], (slice(None), i)),
                             guard=(v["case"], c))
        return out

    return Problem("mask_respect", op.name, dict(n=n, d=d), sym, inputs, params, relation,
                   f"for every i != j < {n}: m_ij = 0 => out_i unchanged when h_j is replaced by any y")


@law("formula_equivalence")
def formula_equivalence(op, n, d, mode):
    sym, params, inputs = _setup(op, n, d, mode)

    def relation(xp, v):
        return facts(xp, Q.same_as_reference(xp, runner(op, xp, v), v["x"], _mask(v)))

    return Problem("formula_equivalence", op.name, dict(n=n, d=d), sym, inputs, params, relation,
                   "implementation(x, m) = reference formula(x, m) (eps_den included)", exp_product=True)


@law("permutation_equivariance")
def permutation_equivariance(op, n, d, mode):
    sym, params, inputs = _setup(op, n, d, mode)
    perm = list(range(1, n)) + [0]            # a cyclic shift: with the swap it generates every permutation

    def relation(xp, v):
        return facts(xp, Q.permuted(xp, runner(op, xp, v), v["x"], _mask(v), perm))

    return Problem("permutation_equivariance", op.name, dict(n=n, d=d), sym, inputs, params, relation,
                   f"F(pi H) = pi F(H) for the cyclic permutation {perm}")


# -- causal / filter laws -----------------------------------------------------------

@law("causality")
def causality(op, n, d, mode):
    sym, params, inputs = _setup(op, n, d, mode)
    inputs["y"] = sym.array("y", (1, n, d))

    def relation(xp, v):
        run = runner(op, xp, v)
        return [f for t in range(n - 1) for f in facts(xp, Q.past_unchanged(xp, run, v["x"], _mask(v), v["y"], t))]

    return Problem("causality", op.name, dict(n=n, d=d), sym, inputs, params, relation,
                   f"for every t < {n - 1}: out_<=t unchanged when tokens > t are replaced")


@law("linearity")
def linearity(op, n, d, mode):
    sym, params, inputs = _setup(op, n, d, mode)
    inputs["y"] = sym.array("y", (1, n, d))
    inputs["a"], inputs["b"] = sym.real("a"), sym.real("b")

    def relation(xp, v):
        return facts(xp, F.superposes(xp, runner(op, xp, v), v["x"], v["y"], v["a"], v["b"]))

    return Problem("linearity", op.name, dict(n=n, d=d), sym, inputs, params, relation,
                   "F(a x + b y) = a F(x) + b F(y) for all reals a, b")


@law("dc_gain")
def dc_gain(op, n, d, mode):
    sym, params, inputs = _setup(op, n, d, mode)
    inputs["level"] = sym.array("level", (1, 1, d))
    taps = params["taps"]
    warm = len(taps) - 1
    n = max(n, warm + 1)
    inputs["x"] = sym.arrays["x"] = sym.array("x", (1, n, d))

    def relation(xp, v):
        const = v["level"] * xp.ones_like(v["x"])
        out = R.run(op, xp, const, None, v["params"])
        facts = [eq(out[:, warm:], const[:, warm:], f"constant input after the {warm}-token warm-up")]
        impulse = xp.zeros_like(v["x"])
        impulse[:, 0] = 1
        expected = xp.zeros_like(v["x"])
        for k, w in enumerate(v["params"]["taps"]):
            if k < n:
                expected[:, k] = w
        facts.append(eq(R.run(op, xp, impulse, None, v["params"]), expected, "impulse at 0 vs the taps"))
        return facts

    return Problem("dc_gain", op.name, dict(n=n, d=d), sym, inputs, params, relation,
                   f"constant in => constant out from token {warm}; impulse at 0 => the taps")


# -- row-normaliser laws (weights of scores S) -----------------------------------------

def _scores(op, n, mode):
    sym = Symbols()
    params = symbolic_params(op, sym, 1, mode=mode)
    inputs = {"s": sym.array("s", (1, n, n))}
    if "causal" not in op.traits and op.domain.mask != "none":
        inputs["mask"] = sym.bits("mask", (1, n, n), diagonal=True)
    return sym, params, inputs


def _weights(op, xp, s, v, n, **override):
    """The weights op.fn applies to s (read off its output: properties.applied), never op.weights."""
    return applied_weights(op, xp, s, v.get("mask"), **{**law_params(v["params"]), **override})


def _weigher(op, xp, v, n):
    """The score statements' ``weights(s, **overrides)`` on symbolic scores."""
    return lambda s, **overrides: _weights(op, xp, s, v, n, **overrides)


@law("score_shift_invariance")
def score_shift_invariance(op, n, d, mode):
    sym, params, inputs = _scores(op, n, mode)
    inputs["c"] = sym.array("c", (1, n, 1))

    def relation(xp, v):
        return facts(xp, W.shift_invariant(xp, _weigher(op, xp, v, n), v["s"], v["c"]))

    return Problem("score_shift_invariance", op.name, dict(n=n), sym, inputs, params, relation,
                   "W(S + c_t 1) = W(S) for any per-row constants c_t")


@law("tau_covariance")
def tau_covariance(op, n, d, mode):
    sym, params, inputs = _scores(op, n, mode)
    inputs["c"] = sym.real("c")

    def relation(xp, v):
        return facts(xp, W.tau_covariant(xp, _weigher(op, xp, v, n), v["s"], v["c"], v["params"]["tau"]))

    return Problem("tau_covariance", op.name, dict(n=n), sym, inputs, params, relation,
                   "W(S + c, tau + c) = W(S, tau) for every real c")


@law("simplex")
def simplex(op, n, d, mode):
    sym, params, inputs = _scores(op, n, mode)
    return Problem("simplex", op.name, dict(n=n), sym, inputs, params,
                   lambda xp, v: facts(xp, W.distribution(xp, _weigher(op, xp, v, n), v["s"], slice(None), "eq")),
                   "W >= 0 and every row sums to 1")


@law("sub_simplex")
def sub_simplex(op, n, d, mode):
    sym, params, inputs = _scores(op, n, mode)
    return Problem("sub_simplex", op.name, dict(n=n), sym, inputs, params,
                   lambda xp, v: facts(xp, W.distribution(xp, _weigher(op, xp, v, n), v["s"], slice(None), "le")),
                   "W >= 0 and every row sums to <= 1")


@law("silence")
def silence(op, n, d, mode):
    sym, params, inputs = _scores(op, n, mode)
    inputs["v"] = sym.array("v", (1, n, 1))
    tau = params.get("tau")
    for idx in itertools.product(range(n), range(n)):
        s = inputs["s"][(0,) + idx]
        sym.premise(s <= (0 if tau is None else tau[()]), "S - tau <= 0 everywhere")

    def relation(xp, v):
        return facts(xp, W.silent(xp, _weigher(op, xp, v, n), v["s"], v["v"]))

    return Problem("silence", op.name, dict(n=n), sym, inputs, params, relation,
                   "every S_tj - tau <= 0 => W = 0 and W v = 0 (tau = 0 when the normaliser has none)")


# -- hosts ---------------------------------------------------------------------------------

CLOSURE_ARGUMENT = (
    "Induction over the host H = B_L o ... o B_1 o P (P: the prefix, standardize / inject, possibly empty). "
    "(0) Checked first, not assumed (symbolic/host_check.py): P followed by the blocks B_i = layers.block(blocks[i]) "
    "returns the host's layers state by state, and the operator's output is the last of them, numerically on "
    "random float64 inputs and symbolically (equal z3 terms at the shape below); "
    "(i) P(ins_k x) = ins_k P(x) for every input x, every k, at each prefix stage; "
    "(ii) for every block B: B(ins_k h) = ins_k B(h) at each of its sub-layers, for EVERY state h "
    "(fresh symbols, not the prefix's outputs) and every mask; "
    "hence by induction on the layers H(ins_k x) = ins_k H(x) at every layer, for every input x "
    "(ins_k: insert a null token at k, the mask grown with row and column k visible). "
    "Stated at the shapes given (n tokens + 1 inserted, width d); each block's parameters are its own "
    "symbols (or, for a sampled-weights row, its drawn weights), so the per-block proofs cover the composed "
    "model with those parameters.")


def _host_pieces(op):
    """The host's prefix and block functions (``op.layers.prefix`` / ``.block``): separately callable."""
    prefix, block = getattr(op.layers, "prefix", None), getattr(op.layers, "block", None)
    if prefix is None or block is None:
        raise InvalidArgument(f"layers: {op.name}'s layers expose no .prefix / .block: closure by induction "
                              "needs them (see operators/composition.py prefix_layers, block_layers)")
    return prefix, block


STEP_AT = re.compile(r"^block (\d+) on any state h\1 ")


def step_block(what: str) -> int | None:
    """The block index of an induction-step claim's description (as :func:`closure` words it), else None."""
    hit = STEP_AT.match(what)
    return int(hit.group(1)) if hit else None


def _commutes(xp, f, h, m, n, at, step=False):
    """Facts: f(ins_k h) = ins_k f(h) at each stage f returns, for every k <= n; each stage may
    restart from the previous stage's proved-equal states (Fact.rewrite, a sound cut)."""
    old = f(h, m)
    facts = []
    for k in range(n + 1):
        new = f(R.insert_null(xp, h, k), R.insert_visible(m, k))
        keep = R.others(n + 1, k)
        for layer, (a, o) in enumerate(zip(new, old)):
            cut = () if layer == 0 else ((new[layer - 1][:, keep], old[layer - 1]),
                                         (new[layer - 1][:, k], xp.zeros_like(new[layer - 1][:, k])))
            where = f"{at} stage {layer}, null at {k}"
            facts.append(Fact("eq", a[:, k], xp.zeros_like(a[:, k]), f"{where}: the null stays 0", rewrite=cut,
                              step=step))
            facts.append(Fact("eq", a[:, keep], o, f"{where}: old tokens unchanged", rewrite=cut, step=step))
    return facts


@law("closure")
def closure(op, n, d, mode):
    """Closure by induction: the prefix and each block commute with null insertion for *every*
    input / state (CLOSURE_ARGUMENT).  If only an induction step is refuted (``Fact.step``), the
    direct whole-host statement (:func:`closure_whole_host`) decides: a block that is not closed on
    states the host never reaches is not a counterexample of the composed model."""
    prefix, block_fn = _host_pieces(op)
    sym = Symbols()
    params = symbolic_params(op, sym, d, mode=mode)
    blocks = params["blocks"]
    inputs = {"x": sym.array("x", (1, n, d))}
    inputs.update({f"h{b}": sym.array(f"h{b}", (1, n, d)) for b in range(len(blocks))})
    inputs["mask"] = sym.bits("mask", (1, n, n), diagonal=True)
    shared = [k for k in params if k != "blocks"]

    def relation(xp, v):
        p, m = v["params"], v["mask"]
        rest = {k: p[k] for k in shared}
        facts = _commutes(xp, lambda h, mm: prefix(xp, h, mm, **rest), v["x"], m, n, "prefix")
        # Without a prefix, block 0's input is the host's input x: its facts are facts about the
        # host itself (a failure there refutes the host); every other block's are induction steps.
        has_prefix = bool(facts)
        for b, block in enumerate(p["blocks"]):
            step = has_prefix or b > 0
            h = v[f"h{b}"] if step else v["x"]
            facts += _commutes(xp, lambda h, mm, block=block: block_fn(xp, h, mm, block=block, **rest),
                               h, m, n, f"block {b} on any state h{b}" if step else f"block {b} on the input x", step)
        return facts

    return Problem("closure", op.name, dict(n=n, d=d, inserted=1, blocks=len(blocks), heads=1), sym, inputs, params,
                   relation, "prefix P(ins_k x) = ins_k P(x) and every block B(ins_k h) = ins_k B(h) at each "
                   "sub-layer, for all inputs x, all states h and all k (closure of the host by induction)",
                   argument=CLOSURE_ARGUMENT, fallback=lambda: closure_whole_host(op, n, d, mode))


def closure_whole_host(op, n, d, mode, *, output=False):
    """The composed model itself: H(ins_k x) = ins_k H(x) at every layer, for symbolic x (no induction).

    ``output``: op.fn's output is one more layer (a host whose fn is not shown to be the last
    state of its layers, see ``host_check``: the closure of what runs includes its output)."""
    sym = Symbols()
    params = symbolic_params(op, sym, d, mode=mode)
    inputs = {"x": sym.array("x", (1, n, d)), "mask": sym.bits("mask", (1, n, n), diagonal=True)}

    def states(xp, h, mm, p):
        out = list(op.layers(xp, h, mm, **p))
        return out + [R.run(op, xp, h, mm, p)] if output else out

    def relation(xp, v):
        p = v["params"]
        return _commutes(xp, lambda h, mm: states(xp, h, mm, p), v["x"], v["mask"], n, "whole host layer")

    last = " and its output op.fn" if output else ""
    return Problem("closure", op.name, dict(n=n, d=d, inserted=1, blocks=len(params["blocks"]), heads=1), sym,
                   inputs, params, relation, f"the whole host: H(ins_k x) = ins_k H(x) at every layer{last}, for "
                   "all inputs x and all k (direct, no induction)",
                   argument=f"Direct: the composed model's every layer{last}, traced from a symbolic input x.")


# A host whose declarations do not check out (host_check) is judged by these statements, never by
# the induction: closure on every layer and the output, null insertion on op.fn's output.
WHOLE_HOST = {
    "closure": lambda op, n, d, mode: closure_whole_host(op, n, d, mode, output=True),
    "null_source_insertion": lambda op, n, d, mode: null_source_insertion(op, n, d, mode, layered=False),
}
