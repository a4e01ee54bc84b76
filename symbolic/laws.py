"""Contracts stated on symbolic inputs, instantiated from their declaration (:func:`build`).

A contract declares how the symbolic tier states it (``@contract(symbolic=SymbolicOptions(...))``,
``tokenlaw.properties.contract``): its statement -- the very function over ``xp`` the fuzz tier
evaluates (:mod:`tokenlaw.properties.statement`) -- the positions or enumerated cases to prove it
at, the further symbolic inputs and premises, the shapes.  :func:`instantiate` turns that into a
:class:`Problem`: the symbols (inputs and the operator's parameters, each with its domain premise)
and a *relation* ``relation(xp, v) -> [Fact]`` that runs the registered operator function
(``op.fn``, ``op.reference``; over scores, the weights ``op.fn`` applies, read off its output, never
the declared ``op.weights``) through ``xp`` at *every* position (null_receiver proves ``out_i = 0``
for each i) and turns the statement's claims into facts.  The prover runs the relation on z3 terms
to build the claim; the replay runs the very same relation on float64 tensors read from the model.

No contract is named here.  Written here alone are the proof strategies of hosts
(:data:`HOST_STRATEGIES`, chosen by a contract's ``host=``): the layered insertion and the closure
by induction; a host whose declared pieces do not check out (``host_check``) is judged by each
strategy's direct whole-host statement instead.
"""
from __future__ import annotations

import dataclasses
import inspect
import re
from typing import Callable

import numpy as np
import z3

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties import statement as S
from tokenlaw.properties.applied import applied_weights, law_params
from tokenlaw.properties.contract import Contract, Instance

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
    exact: bool = False              # the contract is exact: any non-zero replayed discrepancy refutes it


def runner(op, xp, v) -> S.Runner:
    """The statement's ``run`` on symbolic inputs: op.fn (and op.reference) with the law's parameters."""
    def reference(x, mask):
        kwargs = dict(v["params"])
        if op.domain.mask != "none":
            kwargs["mask"] = mask
        return op.reference(xp, x, **kwargs)

    roles = op.domain.roles
    return S.Runner(lambda x, mask, **overrides: R.run(op, xp, x, mask, {**v["params"], **roles.named(overrides)}),
                    reference)


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


# -- any declared statement -----------------------------------------------------------------

def _input_shape(kind: str, n: int, d: int) -> tuple:
    return {"token": (1, d), "sequence": (1, n, d), "row": (1, n, 1), "level": (1, 1, d)}[kind]


def _weigher(op, xp, v):
    """The score statements' ``weights(s, **overrides)``: the weights op.fn applies to s (read off its
    output: properties.applied), never op.weights."""
    roles = op.domain.roles
    return lambda s, **overrides: applied_weights(op, xp, s, v.get("mask"), **{**law_params(op, v["params"]),
                                                                               **roles.named(overrides)})


def _arguments(contract: Contract, op, given: dict, position: dict, params) -> dict:
    """The statement's arguments, by the names of its parameters: a position's keyword, a traced
    array (or the runner), else the operator's parameter that plays the part of that name
    (``threshold``, ``taps``...: ``op.domain.roles``) or, failing a part, has that name."""
    names = list(inspect.signature(contract.symbolic.statement).parameters)[1:]
    out = {}
    for name in names:
        if name in position:
            out[name] = position[name]
        elif name in given:
            out[name] = given[name]
        elif isinstance(params, dict) and op.domain.roles.part(name) in params:
            out[name] = params[op.domain.roles.part(name)]
        else:
            raise InvalidArgument(f"symbolic: {contract.name}'s statement {contract.symbolic.statement.__name__} "
                                  f"takes {name!r}, which no input, position or parameter of {op.name} provides "
                                  f"(inputs {sorted(given)}, parameters {sorted(params or {})})")
    return out


def _upper(value):
    """A premise's upper bound: 0 for None, a 0-d object array's term, else the value."""
    if value is None:
        return 0
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value[()]
    return value


def instantiate(op, contract: Contract, n: int, d: int, mode: str) -> Problem:
    """The contract's declared statement (``SymbolicOptions``) on symbols, at every position / case."""
    o = contract.symbolic
    sym = Symbols()
    masked = op.domain.mask != "none"
    if o.over == "scores":
        params = symbolic_params(op, sym, 1, mode=mode)
        data = "s"
        inputs = {"s": sym.array("s", (1, n, n))}
        if "causal" not in op.traits and masked:
            inputs["mask"] = sym.bits("mask", (1, n, n), diagonal=True)
        at = Instance(n, d, "mask" in inputs, params, op.domain.roles, causal="causal" in op.traits)
        shapes = dict(n=n)
    else:
        params = symbolic_params(op, sym, d, mode=mode)
        at = Instance(n, d, masked, params, op.domain.roles, causal="causal" in op.traits)
        if o.tokens is not None:
            n = o.tokens(at)
            at = dataclasses.replace(at, n=n)
        data = "x"
        inputs = {"x": sym.array("x", (1, n, d))}
        if masked:
            inputs["mask"] = sym.bits("mask", (1, n, n), diagonal=(o.mask == "domain"))
        shapes = dict(n=n, d=d)
    shapes.update(o.shapes)
    for name, kind in o.inputs:
        inputs[name] = sym.real(name) if kind == "real" else sym.array(name, _input_shape(kind, n, d))
    cases = o.cases(at) if o.cases is not None else [(position, ()) for position in (o.at(at) if o.at else [{}])]
    select = o.cases is not None and at.masked
    if select:
        # one enumerated selector picks the case; each case's mask entries are hidden under it
        selector = sym.choice("case", len(cases))[()]
        inputs["case"] = sym.arrays["case"]
        for c, (_, hidden) in enumerate(cases):
            for i, j in hidden:
                sym.premise(z3.Implies(selector == c, inputs["mask"][0, i, j] == 0), o.case_premise)
    for array, upper, why in (o.bounds({**inputs, "params": params, "roles": op.domain.roles}) if o.bounds else ()):
        for idx in np.ndindex(*np.shape(array)):
            sym.premise(array[idx] <= _upper(upper), why)
    ones = _unit_values(op, params) if o.real_rows is not None and o.over == "scores" else None
    if ones is not None:
        # the operator's own rows at tokens of width 1 (n > d, any norm), not only the probe's (issue 43, class 3)
        inputs["x"] = sym.array("x", (1, REAL_ROWS, 1))
        shapes["real rows"] = f"tokens (1, {REAL_ROWS}, 1)"
    names = {data, "mask", *(name for name, _ in o.inputs), "run" if o.over == "tokens" else "weights"}
    for position, _ in cases[:1]:          # a statement that cannot be called is a declaration error, here
        _arguments(contract, op, {k: None for k in names}, position, params)

    def relation(xp, v):
        given = {data: v[data], "mask": v.get("mask"), **{name: v[name] for name, _ in o.inputs}}
        given["run" if o.over == "tokens" else "weights"] = runner(op, xp, v) if o.over == "tokens" \
            else _weigher(op, xp, v)
        out = []
        for c, (position, _) in enumerate(cases):
            if select and not selected(v["case"], c):
                continue                   # the selector picks another case: this one holds vacuously
            claims = o.statement(xp, **_arguments(contract, op, given, position, v["params"]))
            out += facts(xp, claims, guard=(v["case"], c) if select else None)
        mask = v.get("mask")
        if ones is not None and (mask is None or np.shape(mask)[-1] >= REAL_ROWS):
            # (a sweep's trace at n = 1 has a mask too small for the real rows: they are judged at the
            # traced shapes of n >= REAL_ROWS)
            values = {k: xp.asarray(a, v[data]) for k, a in ones.items()}
            mask = None if mask is None else mask[:, :REAL_ROWS, :REAL_ROWS]   # keeps its visible diagonal
            out += facts(xp, o.real_rows(xp, runner(op, xp, v), v["x"], mask, values))
        return out

    return Problem(contract.name, op.name, shapes, sym, inputs, params, relation, o.says(at),
                   exp_product=o.exp_product, exact=contract.exact)


# The real rows' tokens: 2 of width 1 (n > d, every norm), the smallest sequence with a second row to mix in.
REAL_ROWS = 2


def _unit_values(op, params) -> dict | None:
    """The overrides that make every value vector all-ones at width 1 (value weight 0, value bias 1, output
    weight 1) as integer numpy arrays, or None when the operator has no such projections of width 1."""
    roles = op.domain.roles
    (wv, bv), wo = roles.value, roles.output
    if not isinstance(params, dict) or any(np.shape(params.get(k)) != shape
                                           for k, shape in ((wv, (1, 1)), (bv, (1,)), (wo, (1, 1)))):
        return None
    return {wv: np.zeros((1, 1), dtype=int), bv: np.ones(1, dtype=int), wo: np.ones((1, 1), dtype=int)}


def build(op, contract: Contract, n: int, d: int, mode: str, *, whole: bool = False) -> Problem | None:
    """The contract's symbolic problem for ``op``, or None when it declares no symbolic statement.

    A host (``op.layers``) is stated by the proof strategy its contract names (``host=``);
    ``whole``: that strategy's direct statement on the whole host (never its induction)."""
    o = contract.symbolic
    if o.host and op.layers is not None:
        if o.host not in HOST_STRATEGIES:
            raise InvalidArgument(f"symbolic: host: {contract.name} names the proof strategy {o.host!r}; "
                                  f"known: {sorted(HOST_STRATEGIES)}")
        strategy = HOST_STRATEGIES[o.host]
        problem = (strategy.whole if whole else strategy.induction)(op, contract, n, d, mode)
        return dataclasses.replace(problem, exact=contract.exact)
    if whole or o.statement is None:
        return None
    return instantiate(op, contract, n, d, mode)


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


def closure(op, contract, n, d, mode):
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

    return Problem(contract.name, op.name, dict(n=n, d=d, inserted=1, blocks=len(blocks), heads=1), sym, inputs,
                   params, relation, "prefix P(ins_k x) = ins_k P(x) and every block B(ins_k h) = ins_k B(h) at "
                   "each sub-layer, for all inputs x, all states h and all k (closure of the host by induction)",
                   argument=CLOSURE_ARGUMENT, fallback=lambda: closure_whole_host(op, contract, n, d, mode),
                   exact=contract.exact)


def closure_whole_host(op, contract, n, d, mode, *, output=False):
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
    return Problem(contract.name, op.name, dict(n=n, d=d, inserted=1, blocks=len(params["blocks"]), heads=1), sym,
                   inputs, params, relation, f"the whole host: H(ins_k x) = ins_k H(x) at every layer{last}, for "
                   "all inputs x and all k (direct, no induction)",
                   argument=f"Direct: the composed model's every layer{last}, traced from a symbolic input x.",
                   exact=contract.exact)


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


def layered_insertion(op, contract, n, d, mode):
    """Null insertion through a host, layer by layer (:func:`_layered_insertion`): the contract's declared
    statement's symbols and wording, with the layers' facts as the relation."""
    problem = instantiate(op, contract, n, d, mode)

    def relation(xp, v):
        return _layered_insertion(op, xp, v["x"], v.get("mask"), v["params"], n)

    return dataclasses.replace(problem, relation=relation)


@dataclasses.dataclass(frozen=True)
class HostStrategy:
    """A proof strategy for hosts: ``induction(op, contract, n, d, mode) -> Problem`` and the direct
    statement ``whole(...)`` that judges a host whose declared pieces do not check out (``host_check``)."""

    induction: Callable
    whole: Callable


# A host whose declarations do not check out is judged by ``whole``, never by the induction: closure on
# every layer and the output, null insertion on op.fn's output.
HOST_STRATEGIES = {
    "layered_insertion": HostStrategy(layered_insertion, instantiate),
    "closure_induction": HostStrategy(
        closure, lambda op, contract, n, d, mode: closure_whole_host(op, contract, n, d, mode, output=True)),
}
