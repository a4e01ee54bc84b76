"""The z3 namespace: operators traced to z3 real terms plus side conditions.

A :class:`Z3Namespace` is stateful: one instance per proof.  Tracing an
operator through it returns object arrays of z3 terms and leaves behind

* ``definitions`` -- constraints that *define* fresh symbols (a quotient, a
  square root), each guarded so it never forces anything false;
* ``obligations`` -- facts the code silently relies on (a denominator is
  non-zero, a radicand is non-negative).  A law counts as proved only if
  every obligation is proved too: z3's own ``x / 0`` is an arbitrary total
  function, so we never divide by a term that might be zero;
* ``axioms()`` -- the instances of true facts about the transcendental
  functions, generated for the ground terms that occur (below).

Transcendental functions are uninterpreted, with only these *true* axioms.
Each application f(t) is a fresh real (Ackermann's reduction), so the query
stays pure real arithmetic; congruence ``a = b -> f(a) = f(b)`` is
instantiated for every pair of occurring applications, which is exactly an
uninterpreted function on those terms.

exp (``Exp``)
    E1  Exp(a) > 0                                   (positivity)
    E2  a = 0  ->  Exp(a) = 1
    E3  a < b  ->  Exp(a) < Exp(b)                   (strict monotonicity)
    E4  a + b = c  ->  Exp(a) * Exp(b) = Exp(c)      (only with ``exp_product``:
        instantiated for occurring a, b, c whose sum is syntactically c)
    E6  Exp(a) >= 1 + a;  a < 0 -> Exp(a) < 1;  a > 0 -> Exp(a) > 1
        (the tangent at 0 and E3 against Exp(0) = 1, for every occurring Exp(a) whether
        or not Exp(0) occurs: without them z3's models may give exp(-|t|) a value above 1,
        counterexamples that do not replay, as sigmoid_attn's sub_simplex did).  E6 and
        its log twin are :meth:`Z3Namespace.refinements`, added only when the prover looks
        for a counterexample: in proofs they cost time and proved nothing new (with them,
        oattention's null_source_insertion and formula_equivalence fell to sampled weights).
    E5  t > 0  ->  Exp(z) = Exp(z - Log(t)) * t   (only with ``exp_product``; E4 with
        exp(log t) = t, for occurring Exp(z) whose argument has the summand Log(t))
        The summand may also be guarded, If(c, Log(t), 0) (log of a where()): then
        c and t > 0 -> Exp(z) = Exp(z - If(c, Log(t), 0)) * t, and
        not c -> Exp(z) = Exp(z - If(c, Log(t), 0)).
    and f(If(c, a, b)) = If(c, f(a), f(b)), exp(0) = 1 and log(1) = 0 are applied as
    rewrites (identities: no axiom needed).
erf / tanh (``Erf``, ``Tanh``)
    -1 < f(a) < 1;  a = 0 -> f(a) = 0;  a < b -> f(a) < f(b);  a = -b -> f(a) = -f(b)
log (``Log``)
    obligation a > 0;  a = 1 -> Log(a) = 0;  a < b -> Log(a) < Log(b);
    a > 0 -> Log(a) <= a - 1;  0 < a < 1 -> Log(a) < 0;  a > 1 -> Log(a) > 0   (as E6: a refinement)

Everything else is exact: ``max``/``min``/``relu``/``where``/``abs`` are
``If``; ``sqrt(a)`` is a fresh r with a >= 0 -> (r >= 0 and r * r = a);
``div(a, b)`` is a fresh q with b != 0 -> q * b = a (folded to ``a / c`` for
a non-zero numeral c, and to 0 when a simplifies to 0).
"""
from __future__ import annotations

import fractions
import itertools

import z3

from .objarray import Need, ObjectNamespace, Term



def canonical(t):
    """t simplified with sums and products in a canonical argument order (AC-normal form).

    Used only to *decide* (memo keys, folding): two terms with the same canonical
    form are equal for every assignment, so sharing one fresh symbol between them
    is sound, and F(pi x) traced after F(x) reuses F(x)'s quotients and
    applications wherever the code only reorders a sum.
    """
    return z3.simplify(t, sort_sums=True)


def log_summand(u, lt):
    """The condition under which summand u equals the log term lt (and is 0 otherwise):
    True for u = lt, c for u = If(c, lt, 0), Not(c) for u = If(c, 0, lt); else None."""
    if u.eq(lt):
        return z3.BoolVal(True)
    if not z3.is_app_of(u, z3.Z3_OP_ITE):
        return None
    c, a, b = u.children()
    if a.eq(lt) and is_zero(b):
        return c
    if b.eq(lt) and is_zero(a):
        return z3.Not(c)
    return None


def is_zero(t) -> bool:
    """True when t is (simplifies to) the numeral 0."""
    return z3.is_rational_value(t) and t.numerator_as_long() == 0


class Z3Namespace(ObjectNamespace):
    """Sound z3 semantics for every primitive; see the module docstring for the axioms."""

    name = "z3"

    def __init__(self, *, exp_product: bool = False, tag: str = ""):
        self.exp_product = exp_product
        self.tag = tag
        self.definitions: list = []
        self.obligations: list = []        # (BoolRef, description, keys: the fresh symbol it guards)
        self.needs: list = []              # Need: obligations attached to a folded term (objarray.Need)
        self._apps = {f: {} for f in ("exp", "erf", "tanh", "log")}
        self._div: dict = {}
        self._sqrt: dict = {}
        self._div_terms: list = []
        self._alive: list = []
        self._sqrt_terms: list = []
        self._fresh = itertools.count()

    # -- constants -------------------------------------------------------------
    def const(self, v):
        if isinstance(v, bool) or type(v).__name__ == "bool_":
            return z3.BoolVal(bool(v))
        if isinstance(v, fractions.Fraction):
            return z3.RealVal(f"{v.numerator}/{v.denominator}")
        if isinstance(v, z3.ExprRef):
            return v
        return z3.RealVal(v)

    def rational(self, p, q):
        return z3.Q(p, q)

    def fresh(self, stem: str):
        return z3.Real(f"{stem}{self.tag}!{next(self._fresh)}")

    # -- transcendental (uninterpreted) ---------------------------------------
    def _key(self, t) -> int:
        """A memo key for term t.  z3 recycles the id of a freed term, so we keep t alive."""
        self._alive.append(t)
        return t.get_id()

    # Simplified forms only *decide* (folding, memo keys); definitions keep the
    # original terms, so a later proof can rewrite a sub-term it has shown equal
    # to another (prover: closure's sub-layer cut) and find it verbatim.
    def _apply(self, kind, t):
        st = canonical(t)
        if z3.is_app_of(st, z3.Z3_OP_ITE):       # f(If(c, a, b)) = If(c, f(a), f(b))
            c, a, b = st.children()
            return z3.If(c, self._apply(kind, a), self._apply(kind, b))
        if is_zero(st) and kind == "exp":
            return z3.RealVal(1)
        if is_zero(st) and kind in ("erf", "tanh"):
            return z3.RealVal(0)
        if kind == "log" and z3.is_rational_value(st) and st.as_fraction() == 1:
            return z3.RealVal(0)                  # log 1 = 0
        key = self._key(st)
        if key not in self._apps[kind]:
            # Ackermann's reduction: a fresh real per application plus the congruence
            # instances a = b -> f(a) = f(b) (in axioms()) is exactly an uninterpreted
            # function on the occurring terms, and keeps the query pure real arithmetic.
            self._apps[kind][key] = (t, self.fresh(kind))
        return self._apps[kind][key][1]

    def s_exp(self, t):
        return self._apply("exp", t)

    def s_erf(self, t):
        return self._apply("erf", t)

    def s_tanh(self, t):
        return self._apply("tanh", t)

    def s_log(self, t):
        out = self._apply("log", t)
        self.obligations.append((t > 0, "log argument > 0", (out,) if z3.is_const(out) else ()))
        return out

    # -- algebraic ---------------------------------------------------------------
    def s_sqrt(self, t):
        key = self._key(canonical(t))
        if key not in self._sqrt:
            r = self.fresh("sqrt")
            self.definitions.append((z3.Implies(t >= 0, z3.And(r >= 0, r * r == t)), (r,)))
            self.obligations.append((t >= 0, "radicand >= 0", (r,)))
            self._sqrt[key] = r
            self._sqrt_terms.append((t, r))
        return self._sqrt[key]

    def s_div(self, a, b):
        sa, sb = canonical(a), canonical(b)
        if is_zero(sa):
            # 0 / b = 0 once b != 0 holds; the obligation travels with the 0 (a where() may guard it)
            need = Need(b != 0, "denominator != 0")
            self.needs.append(need)
            return Term(z3.RealVal(0), (need,))
        if z3.is_rational_value(sb):
            self.obligations.append((sb != 0, "denominator != 0", ()))
            return a if is_zero(sb) else a / sb   # a non-zero numeral: exact; 0: the obligation fails
        key = (self._key(sa), self._key(sb))
        if key not in self._div:
            q = self.fresh("div")
            self.definitions.append((z3.Implies(b != 0, q * b == a), (q,)))
            self.obligations.append((b != 0, "denominator != 0", (q,)))
            self._div[key] = q
            self._div_terms.append(((a, b), q))
        return self._div[key]

    def s_abs(self, t):
        return z3.If(t >= 0, t, -t)

    # max and min are commutative and associative, so their arguments are put in a
    # canonical order (by the AC-normal form's AST id) before the If is built: the
    # same set of terms, in whatever order the code reduces them, gives one term.
    def _ordered(self, items):
        return sorted(items, key=lambda t: self._key(canonical(t)))

    def s_max(self, a, b):
        a, b = self._ordered([a, b])
        return self.s_where(a >= b, a, b)

    def s_min(self, a, b):
        a, b = self._ordered([a, b])
        return self.s_where(a <= b, a, b)

    def s_not(self, c):
        return z3.Not(c)

    def s_where(self, c, a, b):
        sc = z3.simplify(c)
        if z3.is_true(sc):
            return a
        if z3.is_false(sc):
            return b
        return z3.If(c, a, b)

    @staticmethod
    def _fold(c):
        sc = z3.simplify(c)
        return sc if z3.is_true(sc) or z3.is_false(sc) else c

    def s_gt(self, a, b):
        return self._fold(a > b)

    def s_lt(self, a, b):
        return self._fold(a < b)

    def s_eq(self, a, b):
        return self._fold(a == b)

    def s_and(self, a, b):
        return self._fold(z3.And(a, b))

    # -- axioms for the ground terms that occur ---------------------------------
    def axioms(self) -> list:
        """(constraint, keys): the definitions and the instances of the true axioms in the module
        docstring, for every occurring application.  ``keys`` are the fresh symbols an instance is
        about; the prover only adds an instance when all its keys are relevant to the goal."""
        out = list(self.definitions)
        # Functional consistency of the defined symbols (consequences of their definitions,
        # stated so the solver need not rediscover them): equal arguments, equal results.
        for ((a1, b1), q1), ((a2, b2), q2) in itertools.combinations(self._div_terms, 2):
            out.append((z3.Implies(z3.And(b1 != 0, a1 == a2, b1 == b2), q1 == q2), (q1, q2)))
        for (t1, r1), (t2, r2) in itertools.combinations(self._sqrt_terms, 2):
            out.append((z3.Implies(z3.And(t1 >= 0, t1 == t2), r1 == r2), (r1, r2)))
        if self.exp_product:
            # E5  t > 0  ->  Exp(z) = Exp(z - Log(t)) * t   (exp(a + b) = exp(a) exp(b) with
            # exp(log t) = t), for occurring Exp(z) whose argument has the summand Log(t);
            # Exp(z - Log(t)) becomes an occurring application, so E1-E4 and congruence apply.
            for t, lt in list(self._apps["log"].values()):
                for z, ez in list(self._apps["exp"].values()):
                    zs = canonical(z)
                    for u in (zs.children() if z3.is_add(zs) else [zs]):
                        c = log_summand(u, lt)               # u = Log(t) when c, else 0
                        if c is None:
                            continue
                        ed = self._apply("exp", canonical(zs - u))
                        axiom = z3.Implies(t > 0, ez == ed * t)
                        if not z3.is_true(c):
                            axiom = z3.And(z3.Implies(z3.And(c, t > 0), ez == ed * t), z3.Implies(z3.Not(c), ez == ed))
                        out.append((axiom, (ez, lt)))
        exp = list(self._apps["exp"].values())
        for a, ea in exp:
            out += [(ea > 0, (ea,)), (z3.Implies(a == 0, ea == 1), (ea,))]                # E1, E2
        for (a, ea), (b, eb) in itertools.combinations(exp, 2):
            out += [(z3.And(z3.Implies(a < b, ea < eb), z3.Implies(b < a, eb < ea),   # E3
                            z3.Implies(a == b, ea == eb)), (ea, eb))]                   # congruence
        if self.exp_product:
            for (a, ea), (b, eb) in itertools.combinations_with_replacement(exp, 2):
                for c, ec in exp:
                    if is_zero(canonical(a + b - c)):
                        out.append((ea * eb == ec, (ea, eb, ec)))                      # E4
        for kind in ("erf", "tanh"):
            apps = list(self._apps[kind].values())
            for a, fa in apps:
                out += [(z3.And(fa > -1, fa < 1, z3.Implies(a == 0, fa == 0)), (fa,))]
            for (a, fa), (b, fb) in itertools.combinations(apps, 2):
                out += [(z3.And(z3.Implies(a < b, fa < fb), z3.Implies(b < a, fb < fa),
                                z3.Implies(a == -b, fa == -fb), z3.Implies(a == b, fa == fb)), (fa, fb))]
        logs = list(self._apps["log"].values())
        for a, la in logs:
            out.append((z3.Implies(a == 1, la == 0), (la,)))
        for (a, la), (b, lb) in itertools.combinations(logs, 2):
            out += [(z3.And(z3.Implies(z3.And(a > 0, a < b), la < lb), z3.Implies(z3.And(b > 0, b < a), lb < la),
                            z3.Implies(a == b, la == lb)), (la, lb))]
        return out

    def refinements(self) -> list:
        """(constraint, keys): E6 and its log twin for every occurring application -- true facts that keep
        z3's models near the real functions, for the counterexample search only (module docstring).
        Built once per set of applications (the search asks for them on every solve; new terms each time
        would miss the prover's item memo and grow it)."""
        size = (len(self._apps["exp"]), len(self._apps["log"]))
        cached = self.__dict__.get("_refinements")
        if cached is not None and cached[0] == size:
            return cached[1]
        out = []
        for a, ea in self._apps["exp"].values():
            out.append((z3.And(ea >= 1 + a, z3.Implies(a < 0, ea < 1), z3.Implies(a > 0, ea > 1)), (ea,)))
        for a, la in self._apps["log"].values():
            out.append((z3.Implies(a > 0, z3.And(la <= a - 1, z3.Implies(a < 1, la < 0), z3.Implies(a > 1, la > 0))),
                        (la,)))
        self._refinements = (size, out)
        return out

    def guarded_obligations(self, roots) -> list:
        """The obligations, each required only where its value can matter: (BoolRef, description, keys).

        An obligation guards one fresh symbol (a quotient, a root, a log).  If every occurrence
        of that symbol in the traced terms reachable from ``roots`` (the law's two sides, and
        through the definitions the symbols they use) is a branch of an ``If`` -- as in the
        code's ``where(den > 0, div(num, den), 0)`` -- the division's value is selected only
        under those branches' conditions, so its obligation becomes
        ``Or(conditions) -> obligation``.  Any other occurrence (an argument of +, *, another
        definition...) keeps it unconditional, and so does a symbol that no root reaches.
        Weakening an obligation this way only drops a requirement on values the law never
        reads, so a proof stays a proof; the eager ``where`` selects the same branch.
        """
        def name(t):
            return t.decl().name()

        args: dict = {}
        for (a, b), q in self._div_terms:
            args[name(q)] = (a, b)
        for t, r in self._sqrt_terms:
            args[name(r)] = (t,)
        for apps in self._apps.values():
            for t, f in apps.values():
                args[name(f)] = (t,)
        guarded = {name(keys[0]) for _, _, keys in self.obligations if len(keys) == 1}
        conds: dict = {}          # symbol name -> [condition] while every occurrence is a branch, None after
        alive, seen = [], set()

        def occurs(t, cond):
            if z3.is_const(t) and name(t) in guarded:
                if cond is None:
                    conds[name(t)] = None
                elif conds.get(name(t), []) is not None:
                    conds.setdefault(name(t), []).append(cond)

        stack = []
        for r in roots:
            occurs(r, None)
            stack.append(r)
        while stack:
            e = stack.pop()
            if e.get_id() in seen:
                continue
            seen.add(e.get_id())
            alive.append(e)                    # keeps the id from being recycled during the walk
            if z3.is_const(e):
                for a in args.get(name(e), ()):
                    occurs(a, None)
                    stack.append(a)
                continue
            ite = z3.is_app_of(e, z3.Z3_OP_ITE)
            for i, ch in enumerate(e.children()):
                occurs(ch, None if not ite or i == 0 else e.arg(0) if i == 1 else z3.Not(e.arg(0)))
                stack.append(ch)
        out = []
        for c, what, keys in self.obligations:
            where = conds.get(name(keys[0])) if len(keys) == 1 else None
            if where:
                c, what = z3.Implies(z3.Or(where), c), f"{what} (where its where() branch is selected)"
            out.append((c, what, keys))
        for need in self.needs:                # a folded 0 / b: guarded only if every use was a where() branch
            c = need.cond
            if need.conditions and not need.unguarded:
                c = z3.Implies(z3.Or(need.conditions), c)
            out.append((c, need.what + ("" if c is need.cond else " (where its where() branch is selected)"), ()))
        return out

    def exp_terms(self) -> list:
        """(argument, application) pairs of every Exp that occurs."""
        return list(self._apps["exp"].values())
