"""Prove, refute or report unknown: one (operator, contract) cell on the symbolic tier.

For a cell, :func:`prove_cell` instantiates the contract's symbolic law
(``tokenlaw.symbolic.laws``) at small shapes, traces the operator's own code
through a fresh :class:`~tokenlaw.symbolic.z3_ns.Z3Namespace`, and asks z3
for a counterexample to

    premises  and  axioms  ->  law  and  every obligation

(premises: the inputs' and parameters' domains; axioms: definitions of the
fresh quotient / root symbols and true facts about exp/erf; obligations:
every denominator non-zero, every radicand non-negative).

* unsat   -> ``proved`` (reals; floating point is out of scope);
* sat     -> ``refuted``: a second query asks for a violation larger than
  ``MARGIN`` (so it survives float64), the model becomes float64 tensors and
  the law's relation is replayed on the eager code; if it does not reproduce
  (e.g. the model interprets exp unlike exp), up to ``ATTEMPTS`` other
  models are tried, then the cell is flagged ``mismatch`` (a suite failure);
* unknown / timeout -> ``unknown`` with z3's reason (never proved).

The proof is about the code that runs: the law calls ``op.fn`` /
``op.weights`` / ``op.layers`` / ``op.reference`` from the registry entry,
and a ``proved`` / sampled verdict is then tied to the eager float64 code
(:func:`tied_to_eager`, ``symbolic/coverage.py``): the same source lines,
the same values at random in-domain points, and no other line at a sweep of
other shapes; otherwise it is ``trace_differs`` (never green).  A
counterexample the eager code's validation rejects (``InvalidArgument``
during the replay) is ``domain_mismatch``: the declared domain is wider than
the code accepts.

Hosts (closure, null_source_insertion): before any induction the host's
declared pieces are checked against what it runs (``host_check``: prefix then
blocks = ``op.layers``, ``op.fn`` = its last state); a mismatch judges the host
as a whole (the strategy's ``whole``, ``laws.HOST_STRATEGIES``).  A refuted induction step is searched for a
host input that reaches it (``host_witness``), replayed on the eager whole
host: found, the host is refuted; else the direct statement decides.
"""
from __future__ import annotations

import dataclasses
import os
import sysconfig
import time
import traceback

import numpy as np
import sympy
import torch
import z3

from tokenlaw.operators import tree
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import CONTRACTS
from tokenlaw.properties.contract import Contract
from tokenlaw.properties.evidence import ProofEvidence
from tokenlaw.properties.plan import contracts_of

from . import host_check
from . import host_witness
from . import coverage
from . import effort
from . import laws as L
from .replay import concrete_inputs, measure, reproduces
from .objarray import NotTraceable, traced
from .z3_ns import Z3Namespace

DEFAULT_TIMEOUT = 5.0
MARGIN = z3.Q(1, 100)
ATTEMPTS = 3
CELL_BUDGET = 6        # a cell (all its queries) stops after this many per-proof budgets (in z3 steps: effort.py)
FIRST_SHARE = 0.04     # of the timeout, for the whole conjunction before the split
MARGIN_SEARCH = 8      # how many claims, in order, to try for the earliest robust failure
SOLVER = f"z3 {z3.get_version_string()}"

# Everything the tier needs about a contract -- its statement, shapes (tokens n, width d: as small as
# the law needs, n <= 3 (+1 inserted)), a host proof strategy, the reason it has no symbolic form -- is
# declared with the contract: @contract(symbolic=SymbolicOptions(...)).  No contract is named here.


def _contract(contract) -> Contract | None:
    """A contract given by name (the catalogue's) or as a :class:`Contract` (e.g. one a test declares)."""
    return contract if isinstance(contract, Contract) else CONTRACTS.get(contract)


def _name(contract) -> str:
    return contract.name if isinstance(contract, Contract) else contract


@dataclasses.dataclass
class Query:
    """The z3 side of a problem: claim, violation margin and side conditions."""

    problem: L.Problem
    ns: Z3Namespace
    claims: list          # (BoolRef, description)
    margins: list         # BoolRef: a violation larger than MARGIN
    obligations: list     # (BoolRef, description)
    background: list      # (constraint, keys): premises + definitions + axiom instances
    assumed: list         # (obligation, keys): assumed while proving a claim on its own
    equalities: dict      # claim id -> (lhs, rhs) of an equality claim
    rewrites: dict        # claim id -> [(term, equal term)] it may rewrite once proved
    lemmas: list          # (BoolRef, description): tried in order; used if proved, never a refutation
    order: dict           # claim/lemma id -> position in the law's order
    steps: set = dataclasses.field(default_factory=set)   # claim ids of induction steps (Fact.step)


def build_query(problem: L.Problem, assignment: dict | None = None, premises=None) -> Query:
    """Trace the problem's relation with a fresh z3 namespace (enumerated inputs fixed by ``assignment``)."""
    ns = Z3Namespace(exp_product=problem.exp_product)
    v = dict(problem.inputs)
    v.update(assignment or {})
    v["params"] = problem.params
    facts = problem.relation(ns, traced(v))     # Terms: an untraceable construct raises NotTraceable
    claims, margins, equalities, rewrites, lemmas, all_facts, roots, steps = [], [], {}, {}, [], [], [], set()
    for f in facts:
        if f.replay_only or (f.guard is not None and not L.selected(f.guard[0], f.guard[1])):
            continue
        lhs, rhs = np.broadcast_arrays(ns._arr(f.lhs), ns._arr(f.rhs))
        for idx in np.ndindex(*lhs.shape):
            a, b = ns._term(lhs[idx]), ns._term(rhs[idx])
            roots += [a, b]
            if f.kind == "eq":
                c, m = a == b, z3.Or(a - b > MARGIN, b - a > MARGIN)
            else:
                c, m = a <= b, a - b > MARGIN
            all_facts.append((c, f.what))
            if f.lemma:
                lemmas.append((c, f"{f.what} at {idx}"))
            else:
                claims.append((c, f"{f.what} at {idx}"))
                margins.append(m)
                if f.step:
                    steps.add(c.get_id())
            if f.kind == "eq":
                equalities[c.get_id()] = (a, b)
            if f.rewrite:
                rewrites[c.get_id()] = [(ns._term(x), ns._term(y)) for src, dst in f.rewrite
                                        for x, y in zip(*(t.flat for t in np.broadcast_arrays(ns._arr(src), ns._arr(dst))))]
    premises = problem.sym.premises if premises is None else premises
    background = [(p, ()) for p, _ in premises] + ns.axioms()
    # an obligation binds only where its value can reach the law (a where() branch: z3_ns)
    guarded = ns.guarded_obligations(roots)
    obligations = [(c, what) for c, what, _ in guarded]
    order = {c.get_id(): i for i, (c, _) in enumerate(all_facts)}
    assumed = [(c, keys) for c, _, keys in guarded]
    return Query(problem, ns, claims, margins, obligations, background, assumed, equalities, rewrites, lemmas, order,
                 steps)


def fresh_symbols(expr, memo: dict) -> frozenset:
    """Names of the namespace's fresh symbols (``div!3``, ``exp!7``...) occurring in expr."""
    key = expr.get_id()
    if key in memo:
        return memo[key][1]
    if z3.is_const(expr):
        name = expr.decl().name()
        out = frozenset({name}) if "!" in name else frozenset()
    else:
        out = frozenset().union(*(fresh_symbols(c, memo) for c in expr.children())) if expr.num_args() else frozenset()
    memo[key] = (expr, out)      # holding expr keeps its id from being recycled by z3
    return out


def relevant(q: Query, goal, assume_obligations=False, rewrite=(), refine=False) -> list:
    """The background a goal needs: premises, plus every definition / axiom instance whose
    fresh symbols are reachable from the goal (a cone of influence).  Dropping the others
    only weakens the assumptions, so an unsat answer stays a proof.  ``rewrite`` pairs
    (proved equal, see _decide) are substituted in every item, as in the goal.  ``refine`` adds the
    namespace's refinements (true facts for the counterexample search: ``Z3Namespace.refinements``)."""
    memo = q.ns.__dict__.setdefault("_fresh_memo", {})
    pool = q.background + (q.assumed if assume_obligations else []) + (q.ns.refinements() if refine else [])
    if rewrite:
        pool = [(z3.substitute(c, *rewrite), keys) for c, keys in pool]
    seen = q.ns.__dict__.setdefault("_item_memo", {})    # (id, key ids) -> (item, key names, mentions)

    def item(c, keys):
        k = (c.get_id(), tuple(x.get_id() for x in keys))
        if k not in seen:
            seen[k] = (c, frozenset(x.decl().name() for x in keys), fresh_symbols(c, memo), keys)
        return seen[k][:3]

    items = [item(c, keys) for c, keys in pool]
    live = set(fresh_symbols(goal, memo))
    chosen, pending = [], list(range(len(items)))
    changed = True
    while changed:
        changed, rest = False, []
        for i in pending:
            c, keys, mentions = items[i]
            if keys <= live:
                chosen.append(c)
                if not mentions <= live:
                    live |= mentions
                    changed = True
            else:
                rest.append(i)
        pending = rest
    return chosen


# Portfolio: nlsat decides most of our real-arithmetic queries; the smt core
# (congruence closure and case splits first) wins where a claim is true by
# structure, e.g. a gate that folds to 0, or an obligation deep in a host.
# Most queries are decided in milliseconds by one of the two and time out in
# the other, so each first gets a short slice, then the long ones follow.
PORTFOLIO = (("qfnra-nlsat", 0.02), ("smt", 0.02), ("qfnra-nlsat", 0.48), ("smt", 0.48))


def _formulas(q: Query, goal, assume_obligations=False, rewrite=(), refine=False) -> list:
    """The query as a list of formulas: the goal's relevant background, then the goal."""
    # simplify after any rewrite: canonical forms let equal sub-terms coincide
    memo = q.ns.__dict__.setdefault("_simplified", {})     # id -> (term, simplified): keeps ids alive

    def simplified(c):
        if c.get_id() not in memo:
            memo[c.get_id()] = (c, z3.simplify(c))
        return memo[c.get_id()][1]

    return [simplified(c) for c in relevant(q, goal, assume_obligations, rewrite, refine)] + [z3.simplify(goal)]


def _solver(q: Query, timeout: float, goal, tactic="smt", assume_obligations=False, rewrite=(), formulas=None,
            refine=False):
    s = effort.limit(z3.Tactic(tactic).solver(), timeout, tactic)
    s.add(*(formulas if formulas is not None else _formulas(q, goal, assume_obligations, rewrite, refine)))
    return s


class ProofCache:
    """The queries one run has proved, keyed by the exact set of their formulas.

    z3 hash-conses terms, so equal ids are equal formulas; the formulas are
    held so their ids are never recycled.  The same formulas are unsat
    wherever they come from: an obligation that does not depend on the
    enumerated mask is proved once, not once per mask (or per row).  A run
    (``prove_rows``) makes one and passes it down; nothing is kept between runs.
    """

    def __init__(self):
        self._proved: dict = {}

    def __len__(self) -> int:
        return len(self._proved)

    def tactic(self, formulas) -> str | None:
        """The tactic that proved exactly these formulas, or None."""
        hit = self._proved.get(frozenset(f.get_id() for f in formulas))
        return hit[1] if hit else None

    def add(self, formulas, tactic: str) -> None:
        self._proved[frozenset(f.get_id() for f in formulas)] = (formulas, tactic)


def _check(q: Query, timeout: float, goal, assume_obligations=False, rewrite=(), *, cache: ProofCache):
    """(result, solver, reason): the first portfolio member that decides, else unknown."""
    formulas = _formulas(q, goal, assume_obligations, rewrite)
    known = cache.tactic(formulas)
    if known is not None:
        return z3.unsat, None, known + " (same query proved before)"
    reasons = []
    for tactic, share in PORTFOLIO:
        s = _solver(q, timeout * share, goal, tactic, formulas=formulas)
        r = effort.check(s)
        if r == z3.unsat:
            cache.add(formulas, tactic)
        if r != z3.unknown:
            return r, s, tactic
        reasons.append(f"{tactic}: {effort.reason(s)}")
    return z3.unknown, s, "; ".join(reasons)


def _decide(q: Query, timeout: float, budget: effort.Budget | None = None, *, cache: ProofCache):
    """(result, model, how) for "some claim or obligation fails".

    First the whole conjunction with a slice of the budget; if z3 cannot
    decide it, split: each obligation O_k on its own, then each claim C
    assuming the obligations its cone of influence mentions (valid(O) and
    valid(O -> C) give valid(O and C)), each with the full budget.  ``budget``: what is left of the cell's (counted in z3 steps).
    """
    all_ok = z3.And([c for c, _ in q.claims + q.obligations])
    result, s, how = _check(q, timeout * FIRST_SHARE, z3.Not(all_ok), cache=cache)
    if result != z3.unknown:
        return result, (s.model() if result == z3.sat else None), how
    seen, proved_eq = set(), set()
    ordered = sorted(q.lemmas + q.claims, key=lambda cw: q.order[cw[0].get_id()])
    for group, assume in ((q.obligations, False), (ordered, True)):
        for c, what in group:
            lemma = assume and any(c.eq(x) for x, _ in q.lemmas)
            if c.get_id() in seen:
                continue
            seen.add(c.get_id())
            # Rewrite sub-terms by terms an *earlier proved* equality made equal (a sound
            # cut: replacing a term by a provably equal one preserves validity).  Closure
            # uses it to restart each sub-layer from the previous layer's old states.
            rewrite = [(a, b) for a, b in q.rewrites.get(c.get_id(), ()) if (a.get_id(), b.get_id()) in proved_eq]
            goal = z3.Not(z3.substitute(c, *rewrite)) if rewrite else z3.Not(c)
            left = budget.left() if budget is not None else timeout
            if left <= 0:
                return z3.unknown, None, f"cell budget spent before '{what}'"
            r, s, why = _check(q, min(timeout, left), goal, assume, rewrite, cache=cache)
            if r == z3.sat and rewrite:
                r, s, why = _check(q, min(timeout, left), z3.Not(c), assume, cache=cache)  # a model must be of the original
            if lemma and r != z3.unsat:
                continue                      # an unproved lemma is simply not used
            if r == z3.sat:
                return r, s.model(), why
            if r == z3.unknown:
                return r, None, f"{why} on '{what}'"
            if c.get_id() in q.equalities:
                a, b = q.equalities[c.get_id()]
                proved_eq.add((a.get_id(), b.get_id()))
            # A proved conjunct is valid under the premises: later conjuncts may use it
            # as a lemma.  Keyed by its own fresh symbols, so it joins only the queries
            # whose cone of influence contains all of them.
            memo = q.ns.__dict__.setdefault("_fresh_memo", {})
            q.background.append((c, tuple(z3.Real(nm) for nm in fresh_symbols(c, memo))))
    return z3.unsat, None, "split"


def _failed(q: Query, model) -> list:
    out = []
    for c, what in q.claims:
        if z3.is_false(model.eval(c, model_completion=True)):
            out.append(what)
    for c, what in q.obligations:
        if z3.is_false(model.eval(c, model_completion=True)):
            out.append(f"obligation failed: {what}")
    return out


def _counterexample(problem, v: dict, failed: list) -> dict:
    def j(t):
        return t.tolist() if hasattr(t, "tolist") else t

    ce = {k: j(val) for k, val in v.items() if k != "params"}
    ce["params"] = _jsonable(v["params"])
    ce["failed"] = failed[:5]
    return ce


def _jsonable(p):
    return tree.map(lambda u: u.tolist() if hasattr(u, "tolist") else u, p, sequence=list)


def shapes_text(problem) -> str:
    """The traced shapes, batch and heads included (1 unless the law says otherwise)."""
    shapes = {"batch": 1, "heads": 1, **problem.shapes}
    return ", ".join(f"{k}={v}" for k, v in shapes.items() if k not in ("batch", "heads")) + \
        f", batch={shapes['batch']}, heads={shapes['heads']}"


def prove_problem(problem: L.Problem, timeout: float = DEFAULT_TIMEOUT, budget: effort.Budget | None = None,
                  cache: ProofCache | None = None) -> V.Verdict:
    """Run the three-way decision of the module docstring on one problem.

    Enumerated inputs (masks, case selectors) give one query each: proved
    needs every query unsat; the first sat query is refuted and replayed;
    otherwise an unknown query makes the cell unknown.  ``cache``: the run's
    proved queries (a fresh one when None).
    """
    cache = ProofCache() if cache is None else cache
    start = time.perf_counter()
    evidence = ProofEvidence().add(solver=SOLVER, shapes=problem.shapes, statement=problem.statement,
                                   premises=sorted({why for _, why in problem.sym.premises}))
    if problem.argument:
        evidence = evidence.add(argument=problem.argument)
    base = dict(tier="symbolic", dtype="real", evidence=evidence)
    queries = unknown = 0
    reason = ""
    for assignment, premises in problem.sym.assignments():
        q = build_query(problem, assignment, premises)
        queries += 1
        result, model, how = _decide(q, timeout, budget if budget is not None else effort.Budget(CELL_BUDGET * timeout),
                                     cache=cache)
        if result == z3.sat:
            base["evidence"] = evidence.add(queries=queries)
            return _refute(q, assignment, model, timeout, start, base)
        if result == z3.unknown:
            unknown += 1
            reason = how
            break                      # one undecided query decides the cell: stop spending time
    base["evidence"] = evidence.add(queries=queries)
    where = f"at {shapes_text(problem)}" + (f" ({queries} enumerated mask/case queries)" if queries > 1 else "")
    if queries == 0:
        return V.Verdict(V.Status.VACUOUS, detail=f"vacuous {where}: no enumerated input (mask, case) satisfies the premises, "
                         f"so nothing was checked: {problem.statement}", seconds=time.perf_counter() - start, **base)
    if unknown:
        return V.Verdict(V.Status.UNKNOWN, detail=f"z3 undecided ({reason}) on query {queries} {where} "
                         f"(budget {timeout:g}s each, counted in z3 steps): {problem.statement}", seconds=time.perf_counter() - start, **base)
    return V.Verdict(V.Status.PROVED, detail=f"proved {where}: {problem.statement}",
                     seconds=time.perf_counter() - start, **base)


def _refute(q: Query, assignment, first_model, timeout, start, base) -> V.Verdict:
    """Find a robust model, replay it on the eager code, and judge the refutation."""
    problem = q.problem
    # The earliest claim (in the law's order: layer by layer for closure) that can fail by
    # more than MARGIN gives the most telling counterexample; else any failure at all.
    obligations_hold = z3.And([o for o, _ in q.obligations])
    s = None
    for margin in q.margins[:MARGIN_SEARCH]:
        s = _solver(q, timeout / 4, z3.And(margin, obligations_hold), "qfnra-nlsat", refine=True)
        if effort.check(s) == z3.sat:
            break
        s = None
    if s is None:
        not_ok = z3.Or(z3.Or(q.margins) if q.margins else z3.BoolVal(False), z3.Not(obligations_hold))
        s = _solver(q, timeout, not_ok, "qfnra-nlsat", refine=True)
    tried = []
    for attempt in range(ATTEMPTS):
        model = s.model() if effort.check(s) == z3.sat else (first_model if attempt == 0 else None)
        if model is None:
            break
        values = problem.sym.values(model)
        for name, val in assignment.items():
            values[name] = torch.as_tensor(np.asarray(val, dtype=float)) if isinstance(val, np.ndarray) else float(val)
        v = concrete_inputs(problem, values)
        failed = _failed(q, model)
        try:
            disc, bound, what = measure(problem, v)
        except InvalidArgument as err:
            return _domain_mismatch(problem, v, err, _failed(q, model), start, base)
        tried.append(disc)
        if reproduces(disc, bound):
            ce = _counterexample(problem, v, failed)
            host = [w for c, w in q.claims if c.get_id() not in q.steps
                    and z3.is_false(model.eval(c, model_completion=True))]
            if q.steps and not host:
                # only induction steps fail: a block is not closed on some state, which is
                # no counterexample of the composed model (the caller then decides directly)
                return V.Verdict(V.Status.REFUTED, disc, bound,
                                 f"induction step refuted at {shapes_text(problem)} (not a counterexample of the "
                                 f"whole): '{failed[0] if failed else '?'}', replayed on the eager code: {what}: "
                                 f"discrepancy {disc:.3g} > {bound:.3g}", counterexample=ce,
                                 seconds=time.perf_counter() - start, step=True, **base)
            return V.Verdict(V.Status.REFUTED, disc, bound,
                             f"refuted at {shapes_text(problem)}: z3 model violates '{failed[0] if failed else '?'}'; "
                             f"replayed on the eager float64 code: {what}: discrepancy {disc:.3g} > {bound:.3g}",
                             counterexample=ce, seconds=time.perf_counter() - start, **base)
        # block this assignment of the inputs and ask again
        s.add(z3.Or([sym != model.eval(sym, model_completion=True) for sym in _input_terms(problem)]))
    return V.Verdict(V.Status.UNKNOWN, max(tried, default=0.0), 0.0,
                     f"MISMATCH: z3 found counterexamples at {shapes_text(problem)} but none of {len(tried)} replayed "
                     f"on the eager code (discrepancies {tried}): model/implementation mismatch",
                     seconds=time.perf_counter() - start, mismatch=True, **base)


def _domain_mismatch(problem, v, err, failed, start, base) -> V.Verdict:
    """A z3 counterexample inside the declared domain that the eager code's validation rejects:
    the declaration's domain is wider than the code accepts (a failing status, with the value)."""
    argument = str(err).split(":", 1)[0].strip()
    value = v["params"].get(argument, v.get(argument)) if isinstance(v.get("params"), dict) else v.get(argument)
    shown = f"{argument} = {value:.6g}" if isinstance(value, float) else f"argument {argument!r}"
    declared = [why for _, why in problem.sym.premises if argument and argument in why]
    base = {**base, "evidence": base["evidence"].add(rejected=dict(
        argument=argument, value=value if isinstance(value, float) else None, error=str(err)))}
    return V.Verdict(V.Status.DOMAIN_MISMATCH, detail=f"domain mismatch at {shapes_text(problem)}: z3's counterexample has "
                     f"{shown}, inside the declared domain ({'; '.join(declared) or 'no premise bounds it'}), but the "
                     f"eager code's validation rejects it ({err}): the declared domain is wider than the code "
                     f"accepts (the claim fails there: '{failed[0] if failed else '?'}')",
                     counterexample=_counterexample(problem, v, failed), seconds=time.perf_counter() - start, **base)


def _input_terms(problem) -> list:
    out = []
    for arr in problem.sym.arrays.values():
        if isinstance(arr, np.ndarray):
            out += list(arr.flat)
        else:
            out.append(arr)
    return out


def default_shape(op, contract) -> tuple:
    """(n, d) for a cell: the contract's declared shape, smaller for hosts (two blocks of everything) and for
    normalisers whose random mask is enumerated (2**(n*n - n) masks)."""
    c = _contract(contract)
    options = c.symbolic if c is not None else None
    if "host" in op.traits and options is not None and options.host_shape is not None:
        return options.host_shape
    if options is None or options.shape is None:
        raise ValueError(f"contract {_name(contract)!r} declares no symbolic shape "
                         "(@contract(symbolic=SymbolicOptions(shape=...)))")
    n, d = options.shape
    if "score_normaliser" in op.traits and "causal" not in op.traits and op.domain.mask != "none" and d == 0:
        n = min(n, 2)
    return n, d


def build_problem(op, contract, *, n=None, d=None, mode=None, whole=False):
    """The contract's symbolic law (``laws.build``: its declared statement, or its host strategy) for this
    operator at the default (or given) shapes, or None.  ``contract``: a name or a :class:`Contract`.

    ``whole``: a host's direct whole-host statement (``laws.HOST_STRATEGIES``), never its induction."""
    c = _contract(contract)
    if c is None or not _stated(op, c):
        return None
    n0, d0 = default_shape(op, c)
    mode = mode or "symbolic"
    return L.build(op, c, n or n0, d or d0 or 1, mode, whole=whole)


def _stated(op, c: Contract) -> bool:
    """Does the contract declare a symbolic statement for op (its own, or a host strategy)?"""
    return c.symbolic.statement is not None or (bool(c.symbolic.host) and op.layers is not None)


MODES = ("symbolic", "concrete")


_SYMBOLIC_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
# Where a library raises from (its frames are skipped to find the operator's line): the
# array and solver libraries and the standard library, wherever tokenlaw itself is installed.
_LIBRARIES = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in (np, torch, z3, sympy))
_STDLIB = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep


def _library(filename: str) -> bool:
    path = os.path.abspath(filename)
    return path.startswith(_LIBRARIES) or (path.startswith(_STDLIB) and "-packages" + os.sep not in path)


def untraceable(op, contract, err: BaseException, start: float) -> V.Verdict | None:
    """The ``not_traceable`` verdict for an exception raised while tracing the operator's code, or
    None when the exception is the symbolic tier's own (then it propagates: a bug of the tier is loud).

    A :class:`NotTraceable` names the construct and its line.  Any other exception counts
    when its innermost frame outside the libraries (torch, numpy, stdlib) is not in
    ``tokenlaw/symbolic``: e.g. ``torch.relu`` called on an object array raises a TypeError
    inside torch, on the operator's line.
    """
    if isinstance(err, NotTraceable):
        what, where = err.what, err.where
    else:
        frames = [f for f in traceback.extract_tb(err.__traceback__)
                  if not _library(f.filename)]
        if not frames or os.path.abspath(frames[-1].filename).startswith(_SYMBOLIC_DIR):
            return None
        what = f"the code raised {type(err).__name__} on traced values ({str(err)[:160]}); a direct torch.* / " \
               f"math.* / numpy call cannot be traced: use the xp primitives"
        where = f"{os.path.abspath(frames[-1].filename)}:{frames[-1].lineno}"
    return V.Verdict(V.Status.NOT_TRACEABLE, detail=f"not symbolically traceable: {what} at {where}", tier="symbolic",
                     seconds=time.perf_counter() - start, evidence=ProofEvidence().add(where=where, construct=what))


def prove_cell(op, contract: str | Contract, *, timeout: float = DEFAULT_TIMEOUT, n=None, d=None, mode=None,
               cache: ProofCache | None = None) -> V.Verdict:
    """Verdict of the symbolic tier for one (operator, contract) cell.

    Parameters are first symbols (the strongest statement); if z3 cannot
    decide that, the weights become concrete rationals (scalars such as tau
    and eps_den stay symbols): a proof then only covers that sample, and its
    status is ``holds_for_sampled_weights``, never ``proved``.  Code the
    namespaces cannot model soundly gives ``not_traceable`` (file:line).
    ``cache``: the proved queries of the run this cell belongs to (a fresh one when None).
    """
    start = time.perf_counter()
    cache = ProofCache() if cache is None else cache
    try:
        verdict = _prove_cell(op, contract, timeout=timeout, n=n, d=d, mode=mode, start=start, cache=cache)
    except Exception as err:  # noqa: BLE001 -- classified, or re-raised as the tier's own bug
        verdict = untraceable(op, contract, err, start)
        if verdict is None:
            raise
        return verdict
    return tied_to_eager(op, contract, verdict, n=n, d=d, start=start)


def tied_to_eager(op, contract: str | Contract, verdict: V.Verdict, *, n=None, d=None, start: float) -> V.Verdict:
    """A proved / sampled verdict, checked against the eager code (``coverage.check``): the same
    lines, the same values at random points, no other path at other shapes.  Otherwise
    ``trace_differs`` (or ``domain_mismatch``), never green.  Other statuses pass unchanged
    (a refutation already replays on the eager code)."""
    if verdict.status not in (V.Status.PROVED, V.Status.SAMPLED):
        return verdict
    mode = "concrete" if (verdict.params or "symbols") != "symbols" else "symbolic"
    problem = build_problem(op, contract, n=n, d=d, mode=mode)
    found, summary = coverage.check(op, problem, rebuild=_rebuild(op, contract, verdict, problem, mode),
                                    law=_proved_statement(op, contract, verdict, problem, mode) is not None)
    evidence = verdict.evidence or ProofEvidence()
    if found is None:
        return dataclasses.replace(verdict, evidence=evidence.add(trace_check=summary),
                                   seconds=time.perf_counter() - start)
    evidence = evidence.add(trace_check=found.detail, where=found.where, solver_said=verdict.status)
    if found.point is not None:
        evidence = evidence.add(point=found.point)
    what = "trace differs from eager" if found.status == V.Status.TRACE_DIFFERS else "domain mismatch"
    return dataclasses.replace(verdict, status=found.status, evidence=evidence, seconds=time.perf_counter() - start,
                               detail=f"{what}: {found.detail}; so the solver's '{verdict.status}' covers other code "
                                      f"than the eager run (it said: {verdict.detail[:300]})")


def _proved_statement(op, contract, verdict: V.Verdict, problem, mode):
    """``whole`` (False / True) of the problem whose statement the solver proved, or None when it is
    neither (a host's contract proved via another contract: its own statement was not what was proved)."""
    said = verdict.evidence.statement if verdict.evidence is not None else None
    if said is None or problem.statement == said:
        return False
    if op.layers is not None:
        whole = build_problem(op, contract, n=problem.shapes.get("n"), d=problem.shapes.get("d"), mode=mode,
                              whole=True)
        if whole is not None and whole.statement == said:
            return True
    return None


def _rebuild(op, contract, verdict: V.Verdict, problem, mode):
    """``rebuild(n, d)`` for coverage.check's further traces: the statement the solver proved (a host's
    whole-host statement when the induction was not what was proved) at another shape."""
    whole = bool(_proved_statement(op, contract, verdict, problem, mode))
    return lambda n2, d2: build_problem(op, contract, n=n2, d=d2, mode=mode, whole=whole)


def _prove_cell(op, contract, *, timeout, n, d, mode, start, cache) -> V.Verdict:
    c = _contract(contract)
    none = c.symbolic.none if c is not None else ""
    if none:
        return V.Verdict(V.Status.NOT_RUNNABLE, detail=f"no symbolic form: {none}", tier="symbolic")
    if c is None or not _stated(op, c):
        return V.Verdict(V.Status.NOT_RUNNABLE, detail=f"no symbolic law for {_name(contract)}", tier="symbolic")
    contract = c
    checked = _host_checked(op, contract, n, d)
    whole = checked is not None and not checked.ok
    implied_by = _contract(contract.symbolic.implied_by)
    if implied_by is not None and checked is not None and checked.ok and _stated(op, implied_by):
        via = _via(op, contract, implied_by, timeout=timeout, mode=mode, start=start, cache=cache)
        if via is not None:
            return via
    verdict = None
    for m in ((mode,) if mode else MODES):
        try:
            problem = build_problem(op, contract, n=n, d=d, mode=m, whole=whole)
        except NotTraceable:
            raise
        except Exception as err:  # a law that cannot be stated for this operator is reported, not hidden
            if untraceable(op, contract, err, start) is not None:
                raise
            return V.Verdict(V.Status.NOT_RUNNABLE, detail=f"cannot state {contract.name} for {op.name}: "
                             f"{type(err).__name__}: {err}", tier="symbolic", seconds=time.perf_counter() - start)
        verdict = prove_problem(problem, timeout, effort.Budget(CELL_BUDGET * timeout), cache)
        if verdict.step and problem.fallback is not None:
            verdict = _after_step(op, problem, verdict, timeout, start, cache)
        params = "symbols" if m == "symbolic" else \
            "weights: drawn values rounded to rationals /100; scalars (tau, eps_den, taps) symbols"
        status, detail = verdict.status, verdict.detail
        if m == "concrete" and status == V.Status.PROVED:
            # one drawn sample of the weights: evidence, not a proof for every weight
            status, detail = V.Status.SAMPLED, "holds for sampled weights (NOT proved for all weights): " + detail
        verdict = dataclasses.replace(verdict, status=status, detail=detail + f" [parameters: {params}]",
                                      params=params)
        if verdict.status != V.Status.UNKNOWN or verdict.mismatch:
            break
    verdict = dataclasses.replace(verdict, seconds=time.perf_counter() - start)
    if checked is not None:
        verdict = dataclasses.replace(verdict, evidence=(verdict.evidence or ProofEvidence()).add(
            host_check=checked.detail))
        if whole:
            verdict = dataclasses.replace(verdict, detail=f"judged as a whole, not by induction: host check failed: "
                                                          f"{checked.detail}; " + verdict.detail)
    return verdict


# -- hosts: the declarations checked first, step refutations turned into host refutations --------

def _host_checked(op, contract: Contract, n=None, d=None) -> host_check.HostCheck | None:
    """For a host's contract with a host proof strategy (closure, null_source_insertion): do its prefix,
    blocks and fn match its layers (``host_check``, at the cell's shape)?  None for every other cell.  A
    failed check means the host is judged as a whole (the strategy's ``whole``), never by the induction."""
    if op.layers is None or not contract.symbolic.host:
        return None
    n0, d0 = default_shape(op, contract)
    return host_check.check(op, n or n0, d or d0 or 1)


def _via(op, contract: Contract, implied_by: Contract, *, timeout, mode, start, cache) -> V.Verdict | None:
    """A checked host's contract from the contract that implies it (``implied_by``: null_source_insertion
    from closure), or None (then the contract's own host strategy decides).

    Closure (every layer, the last one being op.fn's output: host_check) implies the output
    statement.  A closure refutation on a host input (a witness, ``host_witness``) is replayed on
    the output statement itself: it refutes null insertion only if op.fn breaks it there.  Any other
    failure of closure proves nothing about the output."""
    via = prove_cell(op, implied_by, timeout=timeout, mode=mode, cache=cache)
    if via.status in (V.Status.PROVED, V.Status.SAMPLED, V.Status.NOT_TRACEABLE):
        return dataclasses.replace(via, detail=f"{via.status} via {implied_by.name} (which implies it for the "
                                               f"output): " + via.detail, seconds=time.perf_counter() - start)
    if via.status != V.Status.REFUTED or not via.witness:
        return None
    n, d = default_shape(op, contract)
    mode = "symbolic" if via.params == "symbols" else "concrete"
    direct = build_problem(op, contract, n=n, d=d, mode=mode, whole=True)
    ce = via.counterexample
    if ce is None or np.shape(ce["x"]) != (1, n, d or 1):
        return None
    v = {"x": torch.as_tensor(ce["x"], dtype=torch.float64),
         "params": host_witness.tensors(direct.params, ce["params"])}
    if "mask" in direct.inputs:
        v["mask"] = torch.as_tensor(ce["mask"], dtype=torch.float64)
    disc, bound, what = measure(direct, v)
    if not reproduces(disc, bound):
        return None
    return V.Verdict(V.Status.REFUTED, disc, bound,
                     f"refuted at {shapes_text(direct)} via {implied_by.name}'s host counterexample ({via.witness}), "
                     f"replayed on op.fn's output: {what}: discrepancy {disc:.3g} > {bound:.3g} "
                     f"[parameters: {via.params}]",
                     counterexample=_counterexample(direct, v, [what]), seconds=time.perf_counter() - start,
                     tier="symbolic", dtype="real",
                     evidence=ProofEvidence().add(solver=SOLVER, shapes=direct.shapes, statement=direct.statement),
                     witness=via.witness, params=via.params)


def _after_step(op, problem, first: V.Verdict, timeout, start, cache) -> V.Verdict:
    """closure: only an induction step is refuted (block b is not closed on some state h_b), which is
    no counterexample of the host by itself.  First a host input reaching a violating state is searched
    (``host_witness``) and replayed on the eager whole host: found, the host is refuted there.  Else
    the direct whole-host statement decides; unknown says what the search tried.  (An undecided
    induction goes on to the next mode instead: the direct statement is harder.)"""
    whole = problem.fallback()
    ce = first.counterexample or {}
    found, why = host_witness.search(op, ce, ce.get("failed", []), whole)
    if found is not None:
        evidence = (first.evidence or ProofEvidence()).without("argument").add(statement=whole.statement)
        return V.Verdict(V.Status.REFUTED, found.discrepancy, found.bound,
                         f"refuted at {shapes_text(whole)}: the induction was not proved (an induction step is "
                         f"refuted: '{ce.get('failed', ['?'])[0]}'), and a host input that reaches a violating "
                         f"state ({found.how}), replayed on the eager whole host: {found.what}: discrepancy "
                         f"{found.discrepancy:.3g} > {found.bound:.3g}",
                         counterexample=_counterexample(whole, found.values, [found.what]),
                         seconds=time.perf_counter() - start, tier="symbolic", dtype="real", evidence=evidence,
                         witness=found.how)
    verdict = prove_problem(whole, timeout, effort.Budget(CELL_BUDGET * timeout), cache)
    return dataclasses.replace(verdict, detail=verdict.detail + f" (the stronger statement was not proved: "
                                                                f"{first.status}: {first.detail[:400]}; {why})")


def prove_rows(registry, rows, *, timeout: float = DEFAULT_TIMEOUT, progress=None) -> list:
    """[(operator, contract, Verdict)] for planned rows (``properties.plan``): the symbolic column.

    The rows share one :class:`ProofCache`: a query proved for one row is not solved again for another.
    """
    out, cache, contracts = [], ProofCache(), contracts_of(registry)     # a user's own contracts included
    for r in rows:
        v = prove_cell(registry[r.operator], contracts[r.contract], timeout=timeout, cache=cache)
        if progress:
            progress(r, v)
        out.append((r.operator, r.contract, v))
    return out


def is_mismatch(verdict: V.Verdict) -> bool:
    """A refutation that did not replay: a failure of the suite, whatever the declaration."""
    return verdict.mismatch
