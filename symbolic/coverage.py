"""Trace = eager: a symbolic verdict covers the code the eager tier runs (issue 19, point 1).

The prover traces an operator through the z3 namespace at small shapes and
proves something about *that trace*.  The trace is the eager code only if
both take the same path.  A ``proved`` (or ``holds_for_sampled_weights``)
verdict is therefore tied to the eager float64 code by three checks, run
after the solver has answered (:func:`check`):

1. **Lines.**  ``sys.settrace`` records the source lines executed while the
   law's relation is traced with a fresh :class:`~.z3_ns.Z3Namespace` (the
   prover's own trace, same inputs, same enumerated mask) and while the same
   relation runs on float64 tensors (``TORCH``) at a random in-domain point
   (:func:`sample_point`), at each of ``POINTS`` points.  Both sets must be
   equal.  Counted: every file under ``tokenlaw/operators`` and the files of
   the operator's own callables (``fn``, ``weights``, ``reference``: a user's
   module, a canary, a mutated copy).  Not counted: the namespace
   implementations (``operators/xp.py``, ``operators/ordered_xp.py``,
   ``tokenlaw/symbolic``) whose job is to differ, the law's harness
   (``tokenlaw/properties``: it runs the same statement on both), and
   ``operators/arguments.py``: its checks only raise ``InvalidArgument`` or
   return their argument (a mask cast to x's dtype, same 0/1 values), and
   skip the value checks on traced values by design; and ``operators/tree.py``,
   the parameter-tree walk, which only rebuilds containers.  A type branch in
   *operator* code is never excluded: where floating point needs another
   step than exact reals, that step is a namespace primitive
   (``xp.log_full``, ``xp.denominator_floor``).
2. **Values.**  Every output the operator returns (each call of ``fn`` /
   ``layers`` in the relation, in order) and both sides of every fact the
   trace states are evaluated in float64 at each point (:class:`Program`:
   exp / log / erf / tanh / sqrt and the fresh quotient and root symbols as
   their definitions) and must equal the eager values within rounding
   (``SLACK`` times a float64 rounding bound derived at the point from the traced
   term's own operations, :func:`_bound`: 0 where the term is exact, then bit for bit).
   Points are traced at their own enumerated
   mask (:func:`assignments_to_check`).
3. **Shapes.**  The eager operator runs on a sweep of other shapes
   (:func:`sweep_shapes`: n 1..20 and 130, odd and prime widths 1..128 with
   heads dividing them, batch 1..4), with and without a mask.  A line the
   eager code runs at one of them that it does not run at the trace's own
   shape (same call structure) and that the trace never ran means the proof
   covers another path there; so does a line both run at the trace's shape
   that the eager code skips at a shape at least as long and wide.

4. **Values at other shapes.**  A one-line branch on the shape runs the same lines
   everywhere, so the law is traced again (``rebuild``) at up to six other shapes
   (:func:`value_shapes`), and at a random point of each, checks 1 and 2 run again and the
   law itself is replayed on the eager code (``replay.measure``).

Any difference is ``trace_differs`` (never green) naming the first divergent
file:line and the shape or point; a random in-domain point that the eager
validation rejects is ``domain_mismatch``.  Eager line sets per operator and
shape are cached (:data:`_EAGER`): the same for every contract.
"""
from __future__ import annotations

import dataclasses
import fractions
import math
import os
import sys

import numpy as np
import torch
import z3

import tokenlaw.operators as _operators
from tokenlaw.operators import tree
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.xp import TORCH
from tokenlaw.properties import verdict as V

from . import effort
from . import relations as R
from .inputs import draw_params, to_float
from .objarray import raw, traced
from .replay import concrete_inputs, measure, reproduces
from .z3_ns import Z3Namespace

POINTS = 3            # random in-domain points per problem (lines and values at each)
SWEEP_POINTS = 1      # random points at each further traced shape (check 4)
CASES = 2             # enumerated inputs (masks, case selectors) traced: the prover's first and one more
SEED = 1234

# Values: the traced term and the eager code evaluate the same real expression in float64, in
# different orders (z3 reassociates, folds max/min into If, splits exp over If).  Each is compared
# with a bound derived at the point itself from the traced term's own operations and magnitudes
# (:func:`_bound`: running error analysis, the float64 rounding of the actual operation count):
# E bounds the traced evaluation's distance from the exact real value, and an evaluation of the
# same operations in another order is within the same bound, so |traced - eager| <= 2 E; SLACK = 4
# allows the eager code twice the traced term's bound for the association z3 changed.  Where the
# traced term is exact (a constant 0, an input passed through, integer arithmetic on exact values)
# the bound is 0 and the two must agree bit for bit.  No fixed relative tolerance: a term of 1e-12
# added on one side is caught wherever it exceeds a few ulps of the output (tests/symbolic/test_coverage.py).
SLACK = 4.0

_OPERATORS = os.path.dirname(os.path.realpath(_operators.__file__)) + os.sep
# Namespace implementations (their job is to differ between backends) and validation-only code
# (module docstring): never counted.
# operators/tree.py walks the containers of a parameter tree and computes nothing: the trace's
# inputs pass through it (objarray.traced) where the eager run's floats need no walk.
_NOT_COUNTED = frozenset(os.path.join(_OPERATORS, f) for f in ("xp.py", "ordered_xp.py", "arguments.py", "tree.py"))


def counted_files(op):
    """The predicate ``filename -> counted?`` for one operator (module docstring).

    Paths are compared resolved (a checkout may import ``tokenlaw`` through symlinks); a
    mutated copy compiles as ``<path> (mutated copy)`` and counts as a file of its directory."""
    own = set()
    for fn in (op.fn, op.weights, op.reference):
        code = getattr(fn, "__code__", None)
        if code is not None:
            own.add(code.co_filename)
    memo: dict = {}

    def counted(filename: str) -> bool:
        hit = memo.get(filename)
        if hit is None:
            path = os.path.realpath(filename)
            hit = memo[filename] = filename in own or (path.startswith(_OPERATORS) and path not in _NOT_COUNTED)
        return hit

    return counted


def output_codes(op) -> frozenset:
    """The code objects whose return values are the operator's outputs: ``fn``, and ``layers``
    (a function or a callable object) for a host."""
    out = set()
    for fn in (op.fn, op.layers):
        if fn is None:
            continue
        code = getattr(fn, "__code__", None) or getattr(getattr(type(fn), "__call__", None), "__code__", None)
        if code is not None:
            out.add(code)
    return frozenset(out)


class LineRecorder:
    """Context manager: the (file, line) pairs executed in counted files, in first-execution order,
    and the values returned by the code objects in ``outputs`` (the operator's own outputs), in order."""

    def __init__(self, counted, outputs=frozenset()):
        self.counted = counted
        self.outputs_of = outputs
        self.lines: dict = {}
        self.outputs: list = []

    def _call(self, frame, event, arg):
        if event == "call" and (self.counted(frame.f_code.co_filename) or frame.f_code in self.outputs_of):
            return self._line
        return None

    def _line(self, frame, event, arg):
        if event == "line":
            self.lines.setdefault((frame.f_code.co_filename, frame.f_lineno), None)
        elif event == "return" and arg is not None and frame.f_code in self.outputs_of:
            self.outputs.append(arg)
        return self._line

    def __enter__(self):
        self._old = sys.gettrace()
        sys.settrace(self._call)
        return self

    def __exit__(self, *exc):
        sys.settrace(self._old)
        return False


def where(line) -> str:
    return f"{line[0]}:{line[1]}"


@dataclasses.dataclass(frozen=True)
class Finding:
    """Why a verdict is not tied to the eager code: ``status`` (trace_differs / domain_mismatch)."""

    status: str
    detail: str
    where: str = ""
    shape: str = ""
    point: dict | None = None              # the random point's inputs and parameters (JSON-able), if any


# -- random in-domain points -----------------------------------------------------------------

def _flatten(params, prefix="") -> dict:
    return {tree.dotted(path, prefix): v for path, v in tree.leaves(params) if torch.is_tensor(v) or isinstance(v, float)}


def _spread(op, name: str, gen) -> float:
    """A draw of scalar ``name`` across its declared Interval: decades 1e-2..1e2 on a half-line or
    the real line (either sign), uniform on a bounded interval."""
    iv = op.domain.scalar(name.rsplit(".", 1)[-1])
    u = float(torch.rand((), generator=gen, dtype=torch.float64))
    mag = 10 ** (4 * float(torch.rand((), generator=gen, dtype=torch.float64)) - 2)
    if iv is None:
        return mag
    lo, hi = iv.lo, iv.hi
    if math.isfinite(lo) and math.isfinite(hi):
        return lo + (hi - lo) * (0.02 + 0.96 * u)
    if math.isfinite(lo):
        return lo + mag
    if math.isfinite(hi):
        return hi - mag
    return mag if u < 0.5 else -mag


def sample_point(op, problem, assignment: dict, premises, seed: int) -> dict | None:
    """{symbol name: float64 tensor / float}: a point of the premises near a random draw.

    Weights and scalars start from the operator's own ``Domain.params`` at a fresh seed (at odd
    seeds the scalars spread over their declared domain: :func:`_spread`), inputs from N(0, 1); z3 keeps every pin consistent with the premises (the law's and the
    declared domains) and moves the others (e.g. a token the law sets to 0).  None when z3
    cannot find one in time (the value check is then skipped at this point, and said so)."""
    gen = torch.Generator().manual_seed(seed)
    drawn = _flatten(draw_params(op, problem.shapes.get("d", 1), seed))
    if seed % 2:
        # every other point spreads the scalars over their whole declared domain, not only where
        # Domain.params draws them: a declaration wider than the code shows there
        drawn.update({k: _spread(op, k, gen) for k, v in drawn.items() if isinstance(v, float)})
    pins = []                             # (symbol, exact rational value)
    for name, arr in problem.sym.arrays.items():
        if name in assignment:
            continue
        terms = list(arr.flat) if isinstance(arr, np.ndarray) else [arr]
        target = drawn.get(name)
        if target is None or (torch.is_tensor(target) and target.numel() != len(terms)):
            target = torch.randn(len(terms), generator=gen, dtype=torch.float64)
        vals = [float(target)] if isinstance(target, float) else [float(t) for t in torch.as_tensor(target).flatten()]
        pins += [(t, z3.RealVal(fractions.Fraction(val).limit_denominator(10 ** 12))) for t, val in zip(terms, vals)]
    model = _substituted(premises, pins) or _solved(premises, pins)
    if model is None:
        return None
    values = problem.sym.values(model)
    for name, val in assignment.items():
        values[name] = torch.as_tensor(np.asarray(val, dtype=float)) if isinstance(val, np.ndarray) else float(val)
    return values


class _Pinned:
    """The model of a point whose pins satisfy every premise as they are (no solver needed)."""

    def __init__(self, pins):
        self.pins = pins

    def eval(self, t, model_completion=True):
        v = z3.simplify(z3.substitute(t, *self.pins)) if self.pins else z3.simplify(t)
        # an unpinned symbol (an enumerated mask entry, set from the assignment afterwards)
        # completes to 0, as z3's model_completion does
        return v if z3.is_rational_value(v) or z3.is_algebraic_value(v) else z3.RealVal(0)


def _substituted(premises, pins):
    """The pins themselves when every premise holds at them (the usual case: only declared domains)."""
    for p, _ in premises:
        if not z3.is_true(z3.simplify(z3.substitute(p, *pins) if pins else p)):
            return None
    return _Pinned(pins)


SAMPLE_BUDGET = 8.0   # seconds (counted in z3 steps: effort.py) to move the pins onto the premises, all rounds


def _solved(premises, pins):
    """A model of the premises keeping as many pins as it can: drop the pins in an unsat core, ask
    again, within SAMPLE_BUDGET.  None when z3 cannot (then this point is skipped, and said so)."""
    budget = effort.Budget(SAMPLE_BUDGET, None)
    s = z3.Solver()
    s.add(*[p for p, _ in premises])
    lits = {}
    for i, (t, val) in enumerate(pins):
        lit = z3.Bool(f"pin!{i}")
        s.add(z3.Implies(lit, t == val))
        lits[lit.get_id()] = lit
    while True:
        left = budget.left()
        if left <= 0:
            return None
        r = effort.check(effort.limit(s, left), *lits.values())
        if r == z3.sat:
            return s.model()
        if r != z3.unsat:
            return None
        core = s.unsat_core()
        if not len(core):
            return None                   # the premises alone are unsatisfiable (a vacuous problem)
        for lit in core:
            lits.pop(lit.get_id(), None)


# -- the traced facts evaluated in float64 ---------------------------------------------------

class Program:
    """A traced namespace's terms compiled once for float64 evaluation at many points.

    A node per term: a constant, an input symbol (read from the point), a fresh symbol of the
    namespace (its definition: exp / log / erf / tanh / sqrt of its argument, or the quotient
    a / b), or an application of its children.  z3's Python API is slow to walk; the walk is
    done once per trace and shared by every point (:class:`Evaluator`)."""

    _FUNCS = {"exp": math.exp, "log": math.log, "erf": math.erf, "tanh": math.tanh, "sqrt": math.sqrt}

    def __init__(self, ns: Z3Namespace):
        self.defs = {}
        for kind, apps in ns._apps.items():
            for t, f in apps.values():
                self.defs[f.decl().name()] = (kind, (t,))
        for (a, b), q in ns._div_terms:
            self.defs[q.decl().name()] = ("div", (a, b))
        for t, r in ns._sqrt_terms:
            self.defs[r.decl().name()] = ("sqrt", (t,))
        self.nodes: dict = {}             # id -> (term, op, payload, child terms, child ids); the term keeps its id

    def _compile(self, e):
        if z3.is_rational_value(e):
            return (e, "const", float(e.as_fraction()), (), ())
        if z3.is_algebraic_value(e) or z3.is_true(e) or z3.is_false(e):
            return (e, "const", to_float(e), (), ())
        k = e.decl().kind()
        if z3.is_const(e) and k == z3.Z3_OP_UNINTERPRETED:
            name = e.decl().name()
            if name not in self.defs:
                return (e, "symbol", name, (), ())
            kind, args = self.defs[name]
            return (e, "fresh", kind, tuple(args), tuple(a.get_id() for a in args))
        children = tuple(e.children())
        return (e, "app", k, children, tuple(c.get_id() for c in children))

    def value(self, root, env: dict, memo: dict) -> tuple:
        """(value, error bound) of ``root`` at the point ``env`` (symbol name -> float); ``memo``: this
        point's pairs.  The bound: see :func:`_bound`."""
        nodes = self.nodes
        rid = root.get_id()
        if rid not in nodes:
            nodes[rid] = self._compile(root)
        stack = [rid]                     # an explicit stack: a host's terms nest thousands deep
        while stack:
            i = stack[-1]
            if i in memo:
                stack.pop()
                continue
            e, op, payload, kids, ids = nodes[i]
            missing = False
            for c, ci in zip(kids, ids):
                if ci not in memo:
                    if ci not in nodes:
                        nodes[ci] = self._compile(c)
                    stack.append(ci)
                    missing = True
            if missing:
                continue
            memo[i] = self._compute(e, op, payload, [memo[ci] for ci in ids], env)
            stack.pop()
        return memo[rid]

    def _compute(self, e, op, payload, args, env):
        if op == "const":
            return payload, _const_error(e, payload)
        if op == "symbol":
            if payload not in env:
                raise KeyError(f"no value for symbol {payload!r}")
            return env[payload], 0.0      # the point's inputs are float64 numbers, given to both sides as they are
        vals = [a for a, _ in args]
        try:
            if op == "fresh":
                if payload == "div":
                    v = vals[0] / vals[1] if vals[1] != 0 else math.nan
                    return v, _bounded("div", v, args)
                v = self._FUNCS[payload](vals[0])
                return v, _bounded(payload, v, args)
            v = self._apply(payload, e, vals)
            return v, _bounded(payload, v, args)
        except OverflowError:
            return math.inf, math.inf
        except ValueError:                 # log / sqrt outside their domain
            return math.nan, math.inf

    @staticmethod
    def _apply(k, e, args):
        if k == z3.Z3_OP_ITE:
            return args[1] if args[0] else args[2]
        if k == z3.Z3_OP_AND:
            return all(args)
        if k == z3.Z3_OP_OR:
            return any(args)
        if k == z3.Z3_OP_NOT:
            return not args[0]
        if k == z3.Z3_OP_IMPLIES:
            return (not args[0]) or args[1]
        if k == z3.Z3_OP_ADD:
            return math.fsum(args) if all(math.isfinite(a) for a in args) else sum(args)
        if k == z3.Z3_OP_SUB:
            return args[0] - sum(args[1:])
        if k == z3.Z3_OP_UMINUS:
            return -args[0]
        if k == z3.Z3_OP_MUL:
            return math.prod(args)
        if k == z3.Z3_OP_DIV:
            return args[0] / args[1] if args[1] != 0 else math.nan
        if k == z3.Z3_OP_POWER:
            return args[0] ** args[1]
        if k == z3.Z3_OP_TO_REAL:
            return args[0]
        compare = {z3.Z3_OP_LE: lambda a, b: a <= b, z3.Z3_OP_LT: lambda a, b: a < b,
                   z3.Z3_OP_GE: lambda a, b: a >= b, z3.Z3_OP_GT: lambda a, b: a > b,
                   z3.Z3_OP_EQ: lambda a, b: a == b, z3.Z3_OP_DISTINCT: lambda a, b: a != b}
        if k in compare:
            return compare[k](*args)
        raise NotImplementedError(f"cannot evaluate z3 term of kind {k}: {e}")   # loud: a tier bug


# -- the error bound of a float64 evaluation ----------------------------------------------------

U = 2.0 ** -53        # float64 unit roundoff
LIB_ULPS = 2          # exp / log / erf / tanh of a float64 library: within 1 ulp each (glibc, torch's SLEEF
                      # or vectorised paths); 2 ulps = 2 u relative covers both sides' libraries
_COMPARE = frozenset((z3.Z3_OP_LE, z3.Z3_OP_LT, z3.Z3_OP_GE, z3.Z3_OP_GT, z3.Z3_OP_EQ, z3.Z3_OP_DISTINCT))
_LOGIC = frozenset((z3.Z3_OP_AND, z3.Z3_OP_OR, z3.Z3_OP_NOT, z3.Z3_OP_IMPLIES))


def _gamma(k: int) -> float:
    """Higham's gamma_k = k u / (1 - k u): the relative error bound of k float64 roundings."""
    return k * U / (1 - k * U) if k * U < 1 else math.inf


def _const_error(e, value) -> float:
    """0 for a constant float64 holds exactly (the eager code holds it exactly too), else the
    rounding of both sides: the eager code may compute it (1 / sqrt(d)) in two roundings."""
    if isinstance(value, bool):
        return 0.0
    if z3.is_rational_value(e) and fractions.Fraction(value) == e.as_fraction():
        return 0.0
    return 2 * U * abs(value)


def _bounded(k, v, args) -> float:
    e = _bound(k, v, args)
    return math.inf if e != e else e      # an undefined bound (inf * 0) bounds nothing


def _bound(k, v, args) -> float:
    """A bound on |float64 evaluation - exact value| of one node, from its arguments' (value, bound).

    Running error analysis (Higham, *Accuracy and Stability*, ch. 3), first order in u but with
    the exact propagation of the arguments' bounds through each operation: a sum of k terms in
    *any* order is within gamma_(k-1) * sum |terms|, a product of k factors within
    prod(|a| + e) - prod|a| + gamma_(k-1) * prod|a|, a quotient, exp, log, sqrt, erf and tanh
    propagate their argument's bound through their derivative and add LIB_ULPS u of their own.
    An ``If`` whose condition is closer to its boundary than the bounds of its sides may take
    either branch: the bound then covers both.  Booleans carry 0 (decided) or 1 (either way).
    Both the traced term (evaluated here, in the trace's order) and the eager code (in its own
    order: z3 reassociates, distributes and folds max into If) compute the same real number, so
    each is within this bound of it -- up to a cancellation the trace simplified away, which
    makes the bound too small and the check say ``trace_differs``: never a false proof."""
    if isinstance(v, bool):
        if k in _COMPARE:
            (a, ea), (b, eb) = args
            if not (math.isfinite(ea) and math.isfinite(eb)):
                return 1.0
            return 1.0 if (ea + eb > 0 and abs(a - b) <= ea + eb) else 0.0
        return max((e for _, e in args), default=0.0)
    if not math.isfinite(v):
        return 0.0 if all(e == 0 for _, e in args) else math.inf
    av = abs(v)
    if k == z3.Z3_OP_ITE:
        (_, amb), (v1, e1), (v2, e2) = args
        if amb:
            return max(e1, e2) + abs(v1 - v2)
        return e1 if v == v1 else e2
    if k in (z3.Z3_OP_ADD, z3.Z3_OP_SUB):
        return sum(e for _, e in args) + _gamma(len(args) - 1) * sum(abs(a) for a, _ in args)
    if k in (z3.Z3_OP_UMINUS, z3.Z3_OP_TO_REAL):
        return args[0][1]
    if k == z3.Z3_OP_MUL:
        if any(a == 0 and e == 0 for a, e in args) and all(math.isfinite(a) for a, _ in args):
            return 0.0                     # an exact 0 factor: every evaluation order gives 0
        exact, widened = 1.0, 1.0
        for a, e in args:
            exact *= abs(a)
            widened *= abs(a) + e
        return (widened - exact) + _gamma(len(args) - 1) * exact
    if k in ("div", z3.Z3_OP_DIV):
        (a, ea), (b, eb) = args
        if abs(b) <= eb:
            return math.inf
        return (ea + av * eb) / (abs(b) - eb) + U * av
    (a, ea) = args[0]
    if k == "exp":
        return av * math.expm1(ea) + LIB_ULPS * U * av * math.exp(ea) if ea < 700 else math.inf
    if k == "log":
        return ea / (abs(a) - ea) + LIB_ULPS * U * av if abs(a) > ea else math.inf
    if k == "sqrt":
        return ea / (math.sqrt(a) + math.sqrt(max(a - ea, 0.0))) + U * av if a > 0 else math.sqrt(ea) + U * av
    if k == "erf":
        return 2 / math.sqrt(math.pi) * ea + LIB_ULPS * U * av
    if k == "tanh":
        return ea + LIB_ULPS * U * av
    if k == z3.Z3_OP_POWER:
        p, ep = args[1]
        if ep == 0 and float(p).is_integer() and p >= 0:
            return (abs(a) + ea) ** p - abs(a) ** p + _gamma(int(p)) * av
        return math.inf                    # no bound derived: never seen in a trace; loud rather than loose
    raise NotImplementedError(f"no error bound for z3 term of kind {k}")  # loud: a tier bug


class Evaluator:
    """Float64 value of a traced z3 term at one point, the namespace's fresh symbols by their definitions."""

    def __init__(self, ns: Z3Namespace, env: dict, program: Program | None = None):
        self.env = env
        self.program = program if program is not None else Program(ns)
        self.memo: dict = {}
        self.worst = 0.0                  # the largest |traced - eager| / bound this evaluator compared

    def __call__(self, root) -> float:
        return self.program.value(root, self.env, self.memo)[0]

    def bounded(self, root) -> tuple:
        """(float64 value, bound on its distance from the exact value and from any float64 evaluation's)."""
        return self.program.value(root, self.env, self.memo)


def _env(problem, values: dict) -> dict:
    env = {}
    for name, arr in problem.sym.arrays.items():
        val = values[name]
        if isinstance(arr, np.ndarray):
            flat = torch.as_tensor(val, dtype=torch.float64).flatten().tolist()
            for t, x in zip(arr.flat, flat):
                env[t.decl().name()] = x
        else:
            env[arr.decl().name()] = float(val)
    return env


def _close(a: float, b: float, bound: float) -> bool:
    """Equal within ``bound`` (0: bit for bit); NaN matches NaN, an infinity only itself."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return (a != a and b != b) or a == b
    return abs(a - b) <= bound


def _arrays(value) -> list:
    """The arrays in an output (an array, or a host's list of layer states)."""
    return [a for _, a in tree.leaves(value) if torch.is_tensor(a) or isinstance(a, np.ndarray)]


def _compare(ns, ev, traced_value, eager_value, what: str) -> str | None:
    z = np.asarray(ns._arr(traced_value), dtype=object)
    e = torch.as_tensor(eager_value, dtype=torch.float64).detach()
    if tuple(z.shape) != tuple(e.shape):
        try:
            shape = np.broadcast_shapes(z.shape, tuple(e.shape))
        except ValueError:
            return f"{what}: traced shape {z.shape} vs eager {tuple(e.shape)}"
        z, e = np.broadcast_to(z, shape), e.broadcast_to(shape)
    for idx in np.ndindex(*z.shape):
        tv, err = ev.bounded(ns._term(raw(z[idx])))
        tv, evv = float(tv), float(e[idx])
        bound = SLACK * err
        if not _close(tv, evv, bound):
            return (f"{what} at {idx}: traced term = {tv:.17g}, eager float64 = {evv:.17g}: |diff| = "
                    f"{abs(tv - evv):.3g} > {bound:.3g}, the float64 rounding bound of the traced term"
                    + (" (0: both sides must be equal bit for bit)" if bound == 0 else ""))
        ev.worst = max(ev.worst, abs(tv - evv) / bound if bound else 0.0)
    return None


def compare_values(ns, traced_run, eager_run, env, program: Program | None = None,
                   stats: dict | None = None) -> str | None:
    """None when every output the operator returned (each call, in order) and both sides of every
    fact the trace states equal the eager ones within SLACK times their rounding bound, else what
    differs.  ``stats["worst"]``: the largest |traced - eager| / bound seen (kept over calls).

    ``traced_run`` / ``eager_run``: (facts, outputs) of the two runs of the relation; ``program``:
    the trace's compiled terms, shared by the points of one trace."""
    (facts_z, out_z), (facts_e, out_e) = traced_run, eager_run
    if len(facts_z) != len(facts_e):
        return f"the trace states {len(facts_z)} facts, the eager run {len(facts_e)}"
    arrays_z = [a for o in out_z for a in _arrays(o)]
    arrays_e = [a for o in out_e for a in _arrays(o)]
    if len(arrays_z) != len(arrays_e):
        return f"the trace returned {len(arrays_z)} output arrays, the eager run {len(arrays_e)}"
    ev = Evaluator(ns, env, program)
    try:
        for i, (z, e) in enumerate(zip(arrays_z, arrays_e)):
            differs = _compare(ns, ev, z, e, f"operator output {i + 1} of {len(arrays_z)}")
            if differs:
                return differs
        for fz, fe in zip(facts_z, facts_e):
            for side in ("lhs", "rhs"):
                differs = _compare(ns, ev, getattr(fz, side), getattr(fe, side), f"'{fz.what}' ({side})")
                if differs:
                    return differs
        return None
    finally:
        if stats is not None:
            stats["worst"] = max(stats.get("worst", 0.0), ev.worst)


# -- the shape sweep -------------------------------------------------------------------------

SWEEP_N = tuple(range(1, 21)) + (130,)
SWEEP_D = (1, 2, 3, 4, 5, 7, 8, 11, 13, 16, 17, 31, 32, 61, 64, 127, 128)
SWEEP_BATCH = (1, 2, 3, 4)
_EAGER: dict = {}     # (fn, weights, call key) -> ordered line dict: eager line sets, shared by every contract


def _divisors(d: int) -> list:
    small = next((p for p in range(2, d + 1) if d % p == 0), d)
    return sorted({1, small, d})


SWEEP_AT = (3, 2)     # (n, d) the other axes sit at while one axis is swept


def sweep_shapes() -> list:
    """(batch, n, d, heads): every n at d = 2, every width at n = 3 (each with 1 head, its
    smallest prime factor and d heads), every batch at (3, 2), and the corners (4, 130, 128)
    and (3, 12, 7).  One set for every trace shape, so the eager runs are shared by every
    contract of an operator (:func:`eager_lines` caches them)."""
    n_at, d_at = SWEEP_AT
    out = [(1, n, d_at, 1) for n in SWEEP_N]
    out += [(1, n_at, d, h) for d in SWEEP_D for h in _divisors(d)]
    out += [(b, n_at, d_at, 1) for b in SWEEP_BATCH]
    out += [(4, 130, 128, 2), (3, 12, 7, 7)]
    return list(dict.fromkeys(out))


def _standard_call(op, shape, masked: bool, seed: int = 0):
    """(x, mask, params) of one eager call at ``shape``: x ~ N(0, 1), a random 0/1 mask with a
    visible diagonal (or the causal one), the declared parameters (heads overridden); None when
    the operator has no heads to vary or its ``Domain.params`` cannot build parameters there."""
    b, n, d, h = shape
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(b, n, d, generator=gen, dtype=torch.float64)
    try:
        params = draw_params(op, d, seed)
    except Exception:  # noqa: BLE001 -- the domain builds no parameters at this width: not a shape of it
        return None
    if op.domain.roles.heads in params:
        params = {**params, op.domain.roles.heads: h}
    elif h != 1:
        return None                       # no heads to vary: the h = 1 row covers this width
    mask = None
    if masked:
        if op.domain.mask == "causal":
            mask = torch.tril(torch.ones(1, n, n, dtype=torch.float64))
        else:
            mask = (torch.rand(b, n, n, generator=gen) < 0.7).to(torch.float64)
            mask = torch.maximum(mask, torch.eye(n, dtype=torch.float64))
    return x, mask, params


@dataclasses.dataclass(frozen=True)
class EagerRun:
    """One standard eager call's executed lines (ordered), or why it did not run."""

    lines: dict | None = None
    skipped: str = ""                     # the code or the domain rejects this shape: not a path of the domain
    raised: str = ""                      # any other exception: the eager code breaks at an in-domain shape


def eager_lines(op, shape, masked: bool) -> EagerRun:
    """The standard eager call at ``shape`` (cached per operator, shape and call structure)."""
    key = (op.fn, op.weights, op.name, shape, masked)
    if key not in _EAGER:
        call = _standard_call(op, shape, masked)
        if call is None:
            run = EagerRun(skipped="no parameters / heads at this shape")
        else:
            x, mask, params = call
            rec = LineRecorder(counted_files(op))
            try:
                with torch.no_grad(), rec:
                    R.run(op, TORCH, x, mask, params)
                run = EagerRun(lines=rec.lines)
            except InvalidArgument as err:
                run = EagerRun(skipped=str(err))
            except Exception as err:  # noqa: BLE001 -- reported as a divergence, not a crash of the run
                run = EagerRun(raised=f"{type(err).__name__}: {str(err)[:200]}")
        if len(_EAGER) > 4096:
            _EAGER.clear()
        _EAGER[key] = run
    return _EAGER[key]


def _shape_text_of(shape, masked) -> str:
    b, n, d, h = shape
    return f"batch={b}, n={n}, d={d}, heads={h}" + (", mask given" if masked else "")


def shape_divergence(op, problem, traced_lines) -> Finding | None:
    """The first line the eager code runs at a swept shape, not at the trace's own shape (same
    call), and that the trace never ran; a line the trace and the eager code run at the trace's
    shape that the eager code skips at a larger swept shape; or an exception at a swept shape."""
    n0, d0 = problem.shapes.get("n", 1), problem.shapes.get("d", 1)
    structures = (False, True) if op.domain.mask != "none" else (False,)
    for masked in structures:
        base = eager_lines(op, (1, n0, d0, 1), masked)
        if base.lines is None:
            continue
        for shape in sweep_shapes():
            run = eager_lines(op, shape, masked)
            text = _shape_text_of(shape, masked)
            if run.raised:
                return Finding(V.Status.TRACE_DIFFERS, f"at {text} the eager code raises {run.raised}, where it runs at the "
                               f"trace's shape (batch=1, n={n0}, d={d0}): the proof does not cover that path", "", text)
            for line in run.lines or ():
                if line not in base.lines and line not in traced_lines:
                    return Finding(V.Status.TRACE_DIFFERS,
                                   f"at {text} the eager code runs {where(line)}, which it does not run at the "
                                   f"trace's shape (batch=1, n={n0}, d={d0}) and the trace never ran: the proof "
                                   f"covers another path than the code takes there", where(line), text)
            # The other direction only at shapes at least as large as the trace's: a loop over
            # tokens or features legitimately skips its body at n = 1, never at a larger n.
            if run.lines is not None and shape[1] >= n0 and shape[2] >= d0:
                for line in base.lines:
                    if line in traced_lines and line not in run.lines:
                        return Finding(V.Status.TRACE_DIFFERS,
                                       f"at {text} the eager code skips {where(line)}, which it and the trace run "
                                       f"at the trace's shape (batch=1, n={n0}, d={d0}): the proof covers another "
                                       f"path than the code takes there", where(line), text)
    return None


# -- the check -------------------------------------------------------------------------------

def _line_divergence(traced_lines, eager, at: str) -> Finding | None:
    only_e = [ln for ln in eager if ln not in traced_lines]
    only_t = [ln for ln in traced_lines if ln not in eager]
    if not (only_e or only_t):
        return None
    side, line = ("eager only", only_e[0]) if only_e else ("trace only", only_t[0])
    more = f"; {len(only_e)} eager-only and {len(only_t)} trace-only lines in all"
    return Finding(V.Status.TRACE_DIFFERS, f"first divergent line {where(line)} ({side}) {at}{more}", where(line), at)


def _jsonable(values: dict) -> dict:
    return {k: v.tolist() if torch.is_tensor(v) else v for k, v in values.items()}


def _point_text(values: dict, assignment: dict) -> str:
    scalars = {k: round(v, 6) for k, v in values.items() if isinstance(v, float) and k not in assignment}
    fixed = {k: np.asarray(v).tolist() for k, v in assignment.items()}
    return f"random point (scalars {scalars}" + (f"; enumerated {fixed}" if fixed else "") + ")"


def _feasible(sym, combo: dict):
    """(assignment, premises) when the enumerated values ``combo`` satisfy the premises, else None
    (the substitution ``Symbols.assignments`` makes, for one combination)."""
    subst = []
    for k, val in combo.items():
        arr = sym.arrays[k]
        if isinstance(arr, np.ndarray):
            subst += [(arr[idx], z3.RealVal(int(val[idx]))) for idx in np.ndindex(*arr.shape)]
        else:
            subst.append((arr, z3.RealVal(int(val))))
    premises = []
    for p, why in sym.premises:
        q = z3.simplify(z3.substitute(p, *subst)) if subst else p
        if z3.is_false(q):
            return None
        if not z3.is_true(q):
            premises.append((q, why))
    return combo, premises


def assignments_to_check(sym, count: int, seed: int) -> list:
    """Up to ``count`` distinct feasible (assignment, premises) of the enumerated inputs: the
    prover's first one, the last candidates (all-ones masks: every source visible), then random
    ones -- a degenerate first mask (each token sees only itself) hides what a gate does."""
    first = next(iter(sym.assignments()), None)
    if first is None:
        return []
    out, seen = [first], {_combo_key(first[0])}
    names = list(sym.finite)
    rng = np.random.default_rng(seed)
    tries = [{k: sym.finite[k][-1] for k in names}]
    tries += [{k: sym.finite[k][int(rng.integers(len(sym.finite[k])))] for k in names} for _ in range(48)]
    for combo in tries:
        if len(out) >= count:
            break
        if _combo_key(combo) in seen:
            continue
        hit = _feasible(sym, combo)
        if hit is not None:
            out.append(hit)
            seen.add(_combo_key(combo))
    return out


def _combo_key(combo: dict):
    return tuple((k, tuple(np.asarray(v).flatten().tolist()) if isinstance(v, np.ndarray) else v)
                 for k, v in sorted(combo.items()))


def _trace(op, problem, assignment):
    """(namespace, facts, ordered lines) of the prover's trace of the relation at ``assignment``."""
    ns = Z3Namespace(exp_product=problem.exp_product)
    v = dict(problem.inputs)
    v.update(assignment)
    v["params"] = problem.params
    with LineRecorder(counted_files(op), output_codes(op)) as rec:
        facts = problem.relation(ns, traced(v))
    return ns, (facts, rec.outputs), rec.lines, Program(ns)


def _values_at(op, problem, points: int, seed: int, stats: dict, law: bool = False):
    """(finding, points checked, traces, lines traced): lines and values of the trace against the
    eager code at ``points`` random points of ``problem`` (module docstring, checks 1 and 2); with
    ``law``, also the law itself at each point, replayed on the eager code (check 4)."""
    cases = assignments_to_check(problem.sym, CASES, seed)
    traces: dict = {}
    all_lines: dict = {}
    checked = 0
    for k in range(points if cases else 0):
        assignment, premises = cases[k % len(cases)]
        key = _combo_key(assignment)
        if key not in traces:
            traces[key] = _trace(op, problem, assignment)
        ns, traced_run, traced_lines, program = traces[key]
        all_lines.update(traced_lines)
        values = sample_point(op, problem, assignment, premises, seed + k)
        if values is None:
            continue
        concrete = concrete_inputs(problem, values)
        at = f"at {_shape_text(problem)}, {_point_text(values, assignment)}"
        erec = LineRecorder(counted_files(op), output_codes(op))
        try:
            with torch.no_grad(), erec:
                facts_e = problem.relation(TORCH, concrete)
        except InvalidArgument as err:
            return Finding(V.Status.DOMAIN_MISMATCH, f"the eager code rejects a point of the declared domain {at}: {err} "
                           f"(the declared domain is wider than the code accepts)", "", at,
                           _jsonable(values)), checked, traces, all_lines
        except Exception as err:  # noqa: BLE001 -- the trace ran, the eager code did not: they differ
            return Finding(V.Status.TRACE_DIFFERS, f"the eager code raised {type(err).__name__} ({str(err)[:200]}) {at}, "
                           f"where the trace ran", "", at, _jsonable(values)), checked, traces, all_lines
        found = _line_divergence(traced_lines, erec.lines, at)
        if found:
            return dataclasses.replace(found, point=_jsonable(values)), checked, traces, all_lines
        differs = compare_values(ns, traced_run, (facts_e, erec.outputs), _env(problem, values), program, stats)
        if differs:
            return Finding(V.Status.TRACE_DIFFERS, f"traced value differs from the eager float64 value {at}: {differs}",
                           "", at, _jsonable(values)), checked, traces, all_lines
        if law:
            disc, bound, what = measure(problem, concrete)
            if reproduces(disc, bound):
                return Finding(V.Status.TRACE_DIFFERS, f"the law fails on the eager code {at}: {what}: discrepancy "
                               f"{disc:.3g} > {bound:.3g} (replayed in float64)", "", at,
                               _jsonable(values)), checked, traces, all_lines
        checked += 1
    return None, checked, traces, all_lines


def value_shapes(op, problem) -> list:
    """(n, d) of the further traces (check 4): one axis at a time from the trace's own shape, n in
    {1, n0 + 1, n0 + 2} and, where the law has a width the operator can vary, d in {1, d0 + 1, d0 + 2}."""
    n0, d0 = problem.shapes.get("n"), problem.shapes.get("d")
    if n0 is None:
        return []
    out = [(n, d0) for n in (1, n0 + 1, n0 + 2) if n != n0]
    if d0 and not getattr(op.domain, "fixed_width", False):
        out += [(n0, d) for d in (1, d0 + 1, d0 + 2) if d != d0]
    return list(dict.fromkeys(out))


def check(op, problem, *, points: int = POINTS, seed: int = SEED, rebuild=None,
          law: bool = True) -> tuple[Finding | None, str]:
    """(finding, summary): None when the problem's trace is tied to the eager code (module docstring).

    Point k uses the k-th of :func:`assignments_to_check` (cycling) and is traced there.
    ``rebuild(n, d)``: the proved law at another shape (a fresh problem), for check 4; None skips it
    (and the summary says so).  ``law``: replay the law itself there (False when the statement the
    solver proved is not one ``rebuild`` can state: then only lines and values are compared)."""
    if not assignments_to_check(problem.sym, CASES, seed):
        return None, "no enumerated input satisfies the premises: nothing traced"
    stats: dict = {}
    found, checked, traces, all_lines = _values_at(op, problem, points, seed, stats)
    if found:
        return found, ""
    if checked == 0:
        return Finding(V.Status.TRACE_DIFFERS, f"no random point of the premises was found at {_shape_text(problem)}, so "
                       f"the trace could not be compared with the eager code (not tied: never green)"), ""
    found = shape_divergence(op, problem, all_lines)
    if found:
        return found, ""
    swept, unbuilt = [], []
    for n, d in (value_shapes(op, problem) if rebuild is not None else []):
        try:
            other = rebuild(n, d)
        except Exception as err:  # noqa: BLE001 -- the law cannot be stated there: said in the summary
            unbuilt.append(f"n={n}, d={d} ({type(err).__name__}: {str(err)[:80]})")
            continue
        if other is None or not assignments_to_check(other.sym, CASES, seed):
            unbuilt.append(f"n={n}, d={d} (no enumerated input)")
            continue
        found, got, _, _ = _values_at(op, other, SWEEP_POINTS, seed, stats, law=law)
        if found:
            return dataclasses.replace(found, detail=found.detail + f" (a second trace at another shape than the "
                                       f"proof's {_shape_text(problem)}: the proof does not cover the code there)"), ""
        at = f"n={n}" + (f", d={d}" if d else "")
        (swept if got else unbuilt).append(at + ("" if got else " (no point found)"))
    values_at = (f"; values also equal{', and the law holds at a random point,' if law else ''} at {len(swept)} "
                 f"other traced shapes "
                 f"({'; '.join(swept)})" if swept else
                 "; values compared at the proof's shape only" + (" (no second trace asked)" if rebuild is None else ""))
    if unbuilt:
        values_at += f"; not traced at {'; '.join(unbuilt)}"
    return None, (f"trace = eager: the same lines ({len(all_lines)}) and values within {SLACK:g} x their float64 "
                  f"rounding bound (worst |diff| / bound {stats.get('worst', 0.0):.2g}) at {checked} random points "
                  f"({len(traces)} enumerated mask/case inputs){values_at}; no other line at "
                  f"{len(sweep_shapes())} swept shapes")


def _shape_text(problem) -> str:
    return ", ".join(f"{k}={v}" for k, v in problem.shapes.items()) + ", batch=1"
