"""A contract: mark a law with ``@contract``; ``tokenlaw.properties.catalogue`` collects them into ``CONTRACTS``.

A contract is a small pure function ``law(case) -> Verdict`` whose
docstring's first line states the law.  Its options say whether it is exact
(bit-for-bit) or tolerance-based (``tokenlaw.properties.tolerance``), which
operator traits it needs, in which dtypes it is judged -- and every other
fact a tier needs about it, declared here once instead of in name-keyed
tables of each tier:

* ``evaluated`` -- what the law looks at, hence whether it says anything about
  a backend other than the reference (``tokenlaw.properties.plan``):
  ``"output"`` (the backend's ``run``), ``"weights"`` (the row weights the
  backend applies, ``Backend.weights``), ``"autograd"`` (gradients through
  the backend's ``run``), ``"trace"`` (what the implementation evaluates,
  ``Backend.transcendentals``) or ``"reference"`` (the operator's own eager
  code only: ``unjudged`` says why it cannot be judged on another backend);
* ``form`` -- ``form(op) -> reason or None``: the operator cannot be judged
  on a non-reference backend (e.g. no parameter to reach the law through);
* ``implementation`` -- the law is claimed by *every* non-reference backend
  for every operator it implements; the string is the reason (why an
  implementation of a declared operator must obey it);
* ``fuzz`` -- :class:`FuzzOptions`: bounds on the fuzz tier's drawn domain
  (keywords of ``tokenlaw.fuzz.strategies.cases``), each for a stated reason;
* ``symbolic`` -- :class:`SymbolicOptions`: the statement the symbolic tier
  instantiates, at which positions, with which further symbolic inputs and
  premises, at which shapes -- or ``none="reason"`` for a law with no
  real-arithmetic statement.  The tier instantiates every contract from these
  options alone (``tokenlaw.symbolic.laws.build``); only a genuine proof
  strategy of its own (a host's induction) is named, by strategy, in ``host=``.

Adding a contract is therefore one function with one ``@contract(...)`` in a
``*_laws.py`` module of this package (found by ``catalogue``, like operators),
plus a claim on an operator.
"""
from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable

from tokenlaw.operators import dtypes as _dtypes
from tokenlaw.operators.errors import NotRunnableHere
from tokenlaw.operators.roles import Roles

from . import verdict as V

MARK = "__tokenlaw_contract__"
ALL_DTYPES = _dtypes.NAMES


@dataclasses.dataclass(frozen=True, init=False)
class FuzzOptions:
    """Bounds on the fuzz tier's drawn domain: keywords of ``tokenlaw.fuzz.strategies.cases``.

    ``FuzzOptions(near_null=False, wide_params=False)``; ``bounds`` holds them as sorted items (hashable)."""

    bounds: tuple = ()

    def __init__(self, **bounds):
        object.__setattr__(self, "bounds", tuple(sorted(bounds.items())))   # the frozen record's one field


# The predicate axes true on both sides of a law that compares the operator only with itself at the same dtype,
# batch, width and head count (AdversaryOptions.scale_blind)
SHARED_AXES = frozenset({"control", "dtype", "batch", "width", "head_count"})


@dataclasses.dataclass(frozen=True)
class AdversaryOptions:
    """What ``tokenlaw adversary`` (``tokenlaw.fuzz.mutants.adversary``) needs about a contract.

    ``sees``: names of the conditional wrongnesses (``tokenlaw.fuzz.mutants.conditional.WRONGNESSES``) that are not a
    plain change of value and that this law is meant to see (``position``, ``leak_future``, ``leak_null``,
    ``drop_key``); ``scale_blind``: the predicate axes on which a uniform scale of the output cancels from the
    law (it compares the operator only with itself, the predicate alike on both sides); ``rank``: where the
    adversary tries the law's rows (lower first: a mutant stops at its first kill; None: after the ranked
    ones); ``last``: tried after every other row (slow, and blind to a change that is smooth in x)."""

    sees: frozenset = frozenset()
    scale_blind: frozenset = frozenset()
    rank: int | None = None
    last: bool = False


@dataclasses.dataclass(frozen=True)
class Instance:
    """Where a symbolic statement is instantiated: ``n`` tokens of width ``d``, whether the operator takes
    a mask, its (symbolic) parameter tree, whether it is declared causal and which parameter plays which
    part (``roles``: read ``at.params[at.roles.taps]``, never a parameter by name).  What the callables of
    :class:`SymbolicOptions` receive."""

    n: int
    d: int
    masked: bool
    params: Any = None
    roles: Roles = Roles()
    causal: bool = False        # the operator is declared causal (its "causal" trait)


@dataclasses.dataclass(frozen=True)
class SymbolicOptions:
    """How the symbolic tier states a contract (``tokenlaw.symbolic.laws.build`` reads nothing else).

    ``statement`` is the law as both tiers evaluate it (``tokenlaw.properties.statement``): its
    parameters are filled by name from the traced arrays (``x``, ``mask``, ``run`` over tokens;
    ``s``, ``mask``, ``weights`` over scores), the further ``inputs``, the keywords of one position
    and the operator's parameters by the part they play (``threshold``, ``taps``: the declaration's
    ``Domain(roles=...)``, ``tokenlaw.operators.roles``) or, failing a part, by name.  Overrides a
    statement passes to ``run`` / ``weights`` are by part too (``weights(s, threshold=t)``).  Where the fuzz tier judges one drawn
    position, the symbolic tier proves every position of ``at`` (or every enumerated case of ``cases``).
    """

    shape: tuple | None = None          # (n, d): tokens and width, as small as the law needs
    host_shape: tuple | None = None     # (n, d) for a host (two blocks of everything)
    none: str = ""                      # no real-arithmetic statement: why (the cell is not runnable symbolically)
    statement: Callable | None = None   # statement(xp, run | weights, ...) -> [Claim]
    over: str = "tokens"                # "tokens": x (1, n, d); "scores": s (1, n, n), the weights the code applies
    mask: str = "domain"                # "domain": m_ii = 1 (the domain of Case.mask); "free": any 0/1 mask
    inputs: tuple = ()                  # ((name, kind), ...) further symbols; kind in INPUT_KINDS
    at: Callable | None = None          # at(Instance) -> [keywords]: every position (default: one, no keywords)
    cases: Callable | None = None       # cases(Instance) -> [(keywords, hidden (i, j) mask entries)]: enumerated
    case_premise: str = ""              # the premise of a case, in words (its hidden entries are m_ij = 0)
    bounds: Callable | None = None      # bounds(v) -> [(array, upper or None for 0, why)]: premises array <= upper
                                        # (v: the inputs, "params" and "roles", the declaration's Roles)
    tokens: Callable | None = None      # tokens(Instance) -> n: the statement needs more tokens than shape says
    says: Callable | None = None        # says(Instance) -> the instantiated law, in words
    shapes: tuple = ()                  # further (name, value) entries of the reported shapes
    exp_product: bool = False           # instantiate the axiom exp(a) exp(b) = exp(a + b)
    real_rows: Callable | None = None   # over scores: real_rows(xp, run, x, mask, ones) -> [Claim] on the operator's
                                        # own rows at tokens x (1, n, 1), values all ones (``ones``: the overrides)
    host: str = ""                      # on a host: the tier's proof strategy of that name (e.g. "closure_induction")
    implied_by: str = ""                # on a checked host: a contract whose proof implies this one

    def __post_init__(self):
        if self.over not in OVER:
            raise ValueError(f"symbolic: over: expected one of {OVER}, got {self.over!r}")
        if self.mask not in MASKS:
            raise ValueError(f"symbolic: mask: expected one of {MASKS}, got {self.mask!r}")
        bad = [kind for _, kind in self.inputs if kind not in INPUT_KINDS]
        if bad:
            raise ValueError(f"symbolic: inputs: kinds {bad} not among {INPUT_KINDS}")
        if self.none and (self.statement or self.host):
            raise ValueError("symbolic: none= (no symbolic form) contradicts a statement= or host=")
        if (self.statement or self.host) and self.shape is None:
            raise ValueError("symbolic: a statement= or host= needs shape=(n, d) (tokens and width to trace at)")
        if self.statement is not None and self.says is None:
            raise ValueError("symbolic: a statement= needs says= (the instantiated law, in words, for the proofs)")


OVER = ("tokens", "scores")
MASKS = ("domain", "free")
# token: (1, d); sequence: (1, n, d); row: (1, n, 1) per-row constants; level: (1, 1, d); real: a scalar
INPUT_KINDS = ("token", "sequence", "row", "level", "real")


@dataclasses.dataclass(frozen=True)
class Contract:
    name: str
    fn: Callable
    exact: bool
    requires: frozenset
    dtypes: tuple = ALL_DTYPES
    needs: frozenset = frozenset()   # OperatorSpec attributes that must be set: weights, layers, reference
    universal: bool = False          # claimed by every operator with its requires= traits that does not declare it
                                     # otherwise
    skip: Callable | None = None     # skip(op, dtype_name, backend) -> reason the cell cannot run, or None
    regimes: tuple = ()              # numerical regimes (tokenlaw.fuzz.regimes) a search must visit to judge it
    evaluated: str = "output"        # output | weights | autograd | trace | reference (see the module docstring)
    unjudged: str = ""               # evaluated="reference": why another backend's implementation is not judged
    form: Callable | None = None     # form(op) -> why op cannot be judged on a non-reference backend, or None
    implementation: str = ""         # non-empty: claimed by every non-reference backend, for this reason
    fuzz: FuzzOptions = FuzzOptions()              # bounds of the fuzz tier's drawn domain
    symbolic: SymbolicOptions = SymbolicOptions()  # nothing declared: the symbolic tier has no law for it
    adversary: AdversaryOptions = AdversaryOptions()   # what tokenlaw adversary reads about the law

    @property
    def fuzz_bounds(self) -> dict:
        return dict(self.fuzz.bounds)

    @property
    def law(self) -> str:
        return (inspect.getdoc(self.fn) or "").splitlines()[0]

    def __call__(self, case):
        return self.fn(case)

    def judge(self, case) -> "V.Verdict":
        """The verdict on ``case``; an implementation that crashes on a valid input is *raised* (failing), and a
        backend that cannot answer what the law asks (e.g. which weights it applies: ``backends.Unanswerable``),
        or an operator that cannot evaluate it on this machine (no backward here), makes it not runnable."""
        runner = getattr(case, "__dict__", {}).get("runner")
        seen = len(getattr(runner, "non_finite", ()))
        try:
            verdict = self.fn(case)
        except NotRunnableHere as err:
            return V.Verdict(V.Status.NOT_RUNNABLE, detail=str(err))
        except Exception as err:  # noqa: BLE001 (a crash on a valid input is a finding: 'operator raised')
            op = getattr(case, "op", None)
            return V.raised(err, getattr(op, "source", None))
        if verdict.status == V.Status.VIOLATED and self.name != "finite":
            verdict = non_finite_first(case, verdict, seen)
        return verdict


def non_finite_first(case, verdict: "V.Verdict", seen: int = 0) -> "V.Verdict":
    """A violation on an example where the operator's output was not finite, said first: "output non-finite
    at ... for an input of the domain", as the ``finite`` law says it, before the law's own comparison
    (issue 47: an eps-free linear attention's 0/0 read as "causality |lhs - rhs| = inf vs bound 0", and the
    user went looking for a mask bug).  Every evaluation the law made through the case's runner counts
    (the example's input and the inputs the law derived from it: a causality change of the future tokens,
    an inserted token), from the ``seen``-th noted one on.  The status stays the law's (the example does
    violate it); ``extra`` gets ``non_finite_output``.
    """
    runner = getattr(case, "__dict__", {}).get("runner")         # only a runner the law used
    noted = list(getattr(runner, "non_finite", ())[seen:])
    if not noted:
        return verdict
    dtype, bad, total = noted[0]
    more = f"; {len(noted) - 1} more of the law's evaluations too" if len(noted) > 1 else ""
    return dataclasses.replace(
        verdict, extra={**verdict.extra, "non_finite_output": sum(b for _, b, _ in noted)},
        detail=f"output non-finite at {dtype} on {case.backend} for an input of the domain ({bad} of {total} "
               f"entries{more}), what the finite law reports; this law's comparison then read: {verdict.detail}")


class Gap(str):
    """A ``skip`` reason that is a gap in a declaration (e.g. no reference= given), not a design
    exclusion: the cell is reported *not runnable here*, never folded away as *not applicable by design*."""


EVALUATED = ("output", "weights", "autograd", "trace", "reference")


def contract(*, exact: bool, requires=(), dtypes=ALL_DTYPES, needs=(), universal=False, skip=None, regimes=(),
             evaluated="output", unjudged="", form=None, implementation="", fuzz=None, symbolic=None,
             adversary=None):
    """Mark ``law(case) -> Verdict`` as a contract named after the function.

    ``universal`` contracts (e.g. the differential check) are planned for
    every operator with their ``requires`` traits without being listed in its claims; ``skip`` names the
    cells where the law cannot be judged (reported as not runnable); ``regimes``
    names the numerical regimes the fuzz tier must visit before its "holds"
    covers them (a cell that never visited one says so).  ``evaluated``,
    ``unjudged``, ``form``, ``implementation``, ``fuzz`` and ``symbolic``: see
    the module docstring.  ``skip(op, dtype_name, backend)`` gets the
    :class:`~tokenlaw.properties.backends.Backend` the cell runs on.
    """
    if evaluated not in EVALUATED:
        raise ValueError(f"evaluated: expected one of {EVALUATED}, got {evaluated!r}")
    if evaluated == "reference" and not unjudged:
        raise ValueError("evaluated='reference' needs unjudged= (why another backend is not judged)")
    fuzz = FuzzOptions() if fuzz is None else fuzz
    symbolic = SymbolicOptions() if symbolic is None else symbolic
    if not isinstance(fuzz, FuzzOptions):
        raise ValueError(f"fuzz: expected FuzzOptions(...), got {fuzz!r}")
    if not isinstance(symbolic, SymbolicOptions):
        raise ValueError(f"symbolic: expected SymbolicOptions(...), got {symbolic!r}")
    adversary = AdversaryOptions() if adversary is None else adversary
    if not isinstance(adversary, AdversaryOptions):
        raise ValueError(f"adversary: expected AdversaryOptions(...), got {adversary!r}")

    def mark(fn):
        setattr(fn, MARK, dict(exact=exact, requires=frozenset(requires), dtypes=tuple(dtypes),
                               needs=frozenset(needs), universal=universal, skip=skip, regimes=tuple(regimes),
                               evaluated=evaluated, unjudged=unjudged, form=form, implementation=implementation,
                               fuzz=fuzz, symbolic=symbolic, adversary=adversary))
        return fn

    return mark
