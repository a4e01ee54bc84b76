"""Mark, then collect: declaring operators and building the registry.

``@declare(...)`` only attaches an :class:`OperatorSpec` to the function it
decorates.  :func:`collect` imports the given modules, picks up every marked
function, validates each declaration against the contract catalogue it is
given and returns a fresh :class:`Registry`
(``tokenlaw.properties.catalogue.collect`` / ``default_registry`` pass the
catalogue).  Import order never matters and a test can
build its own registry from a scratch module.

Example::

    @declare(
        name="double",
        traits={"token_local"},
        domain=Domain(),
        claims={"zero_absorption": "2*0 = 0"},
    )
    def double(xp, x, **params):
        return x + x
"""
from __future__ import annotations

import dataclasses
import difflib
import importlib
import inspect
import math
import pkgutil
import sys
import types
from importlib.metadata import entry_points
from typing import Any, Callable, Iterable, Mapping

import torch

from .errors import DeclarationError
from .external import External
from . import dtypes as _dtypes
from . import tree as _tree
from .roles import Adjustments, Roles, adjust

MARK = "__tokenlaw_operator__"

# Traits decide which contracts make sense for an operator.
TRAITS = frozenset({
    "token_local",       # maps each token on its own: f(H)_i = f(h_i)
    "token_mixing",      # output i depends on other tokens
    "masked",            # takes an external visibility mask m_ij
    "causal",            # output t depends only on inputs <= t
    "presence",          # gates by presence rho(h)
    "score_normaliser",  # exposes weights(S) row normaliser
    "filter",            # linear sequence filter (FIR)
    "host",              # a composition of blocks with per-layer states
    "positional",        # depends on token positions
})


@dataclasses.dataclass(frozen=True)
class Interval:
    """A real interval: the declared domain of one scalar parameter.

    ``lo``/``hi`` may be infinite; ``lo_open``/``hi_open`` exclude the end.
    Both tiers read it: the prover's premise on the parameter's symbol and the
    fuzz tier's draws come from here and nowhere else.
    """

    lo: float = -math.inf
    hi: float = math.inf
    lo_open: bool = False
    hi_open: bool = False

    def __post_init__(self):
        if not (isinstance(self.lo, (int, float)) and isinstance(self.hi, (int, float))) \
                or self.lo != self.lo or self.hi != self.hi or self.lo > self.hi \
                or (self.lo == self.hi and (self.lo_open or self.hi_open)):
            raise DeclarationError(f"Interval: expected lo <= hi (an empty interval is no domain), got {self}")

    def __contains__(self, value) -> bool:
        v = float(value)
        above = v > self.lo if self.lo_open else v >= self.lo
        below = v < self.hi if self.hi_open else v <= self.hi
        return above and below and math.isfinite(v)

    def text(self, name: str = "x") -> str:
        """The premise in words: ``tau > 0``, ``0 <= eps <= 1``, ``tau real`` (every real)..."""
        lo, hi = math.isfinite(self.lo), math.isfinite(self.hi)
        low = f"{self.lo:g} {'<' if self.lo_open else '<='} "
        high = f" {'<' if self.hi_open else '<='} {self.hi:g}"
        if lo and hi:
            return f"{low}{name}{high}"
        if lo:
            return f"{name} {'>' if self.lo_open else '>='} {self.lo:g}"
        if hi:
            return f"{name}{high}"
        return f"{name} real"


@dataclasses.dataclass(frozen=True)
class Limit:
    """A per-dtype bound on the drawn inputs of one operator, with the reason it is there.

    ``scores``: the largest attention-score magnitude |S| drawn in that dtype (the score offsets,
    and the token and bias scales whose nominal score would pass it, stop there);
    ``norm2``: the largest squared token norm |h|^2 drawn (token scales whose nominal |h|^2 would
    pass it are not drawn);
    ``offset``: the largest row-wide score offset |c| drawn (every score of a row near c): past it the
    dtype's spacing at c exceeds the scores' spread, so the scores themselves are rounding noise.
    ``predicate``: ``predicate(x, params) -> bool``, True where a drawn example is inside the domain, for an
    operator whose limit is not a magnitude of softmax's scores (a linear attention's sums of feature
    products, say): ``x`` is the drawn float64 tokens (batch, n, d), ``params`` the drawn float64 parameters.
    An example it refuses is set aside before it is judged, and counted (the verdict's
    ``extra.outside_limit``; the cell is vacuous when too few examples were left to judge).
    At least one is given.
    ``reason``: one line saying why the computation the formula is written in is not representable
    in the dtype past it.  Declare one only for that; a representable result that comes out wrong is
    a defect to fix.

    >>> Limit(predicate=lambda x, params: float(x.abs().max()) <= 100.0, reason="phi(q) . sum phi(k) v "
    ...       "overflows float16 past |x| = 100").inside(torch.zeros(1, 2, 4), {})
    True
    """

    reason: str
    scores: float | None = None
    norm2: float | None = None
    offset: float | None = None
    predicate: Callable[..., bool] | None = None

    def __post_init__(self):
        for name in ("scores", "norm2", "offset"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
                                  or v <= 0):
                raise DeclarationError(f"Limit.{name}: expected a positive finite magnitude or None, got {v!r}")
        if self.predicate is not None and not callable(self.predicate):
            raise DeclarationError(f"Limit.predicate: expected a function (x, params) -> bool, got {self.predicate!r}")
        if self.scores is None and self.norm2 is None and self.offset is None and self.predicate is None:
            raise DeclarationError("Limit: expected scores=, norm2=, offset= or predicate= (a limit that bounds "
                                   "nothing is no limit)")
        if not isinstance(self.reason, str) or not self.reason.strip() or "\n" in self.reason:
            raise DeclarationError(f"Limit.reason: expected a one-line reason, got {self.reason!r}")

    def inside(self, x, params) -> bool:
        """Whether a drawn example (float64 tokens ``x``, parameters ``params``) is inside the predicate (True
        without one); the magnitudes are honoured where the strategies draw, not here."""
        if self.predicate is None:
            return True
        try:
            ok = self.predicate(x, params)
        except Exception as err:  # noqa: BLE001 -- the user's predicate: its error names it
            raise DeclarationError(f"Limit.predicate: {self.predicate_name}(x, params) raised "
                                   f"{type(err).__name__}: {err}") from err
        if not isinstance(ok, (bool, torch.Tensor)) or (isinstance(ok, torch.Tensor) and ok.numel() != 1):
            raise DeclarationError(f"Limit.predicate: expected a bool from {self.predicate_name}(x, params), "
                                   f"got {ok!r}")
        return bool(ok)

    @property
    def predicate_name(self) -> str | None:
        """The predicate's name, as the report shows it (None without one)."""
        if self.predicate is None:
            return None
        return getattr(self.predicate, "__qualname__", None) or repr(self.predicate)

    def bounds(self) -> str:
        """``|scores| <= 65504, |h|^2 <= 65504, |score offset| <= 1024`` (and ``inside(x, params)``)."""
        parts = [f"|scores| <= {self.scores:g}"] if self.scores is not None else []
        parts += [f"|h|^2 <= {self.norm2:g}"] if self.norm2 is not None else []
        parts += [f"|score offset| <= {self.offset:g}"] if self.offset is not None else []
        parts += [f"{self.predicate_name}(x, params)"] if self.predicate is not None else []
        return ", ".join(parts)

    def text(self, dtype: str) -> str:
        """``float16: |scores| <= 65504 (reason)``."""
        return f"{dtype}: {self.bounds()} ({self.reason})"


REALS = Interval()
POSITIVE = Interval(0.0, math.inf, lo_open=True)
NONNEGATIVE = Interval(0.0, math.inf)


@dataclasses.dataclass(frozen=True)
class Domain:
    """How to build valid inputs for an operator.

    Inputs are tokens: x is B x N x D hidden states.

    params:     ``params(gen, d_model, dtype) -> dict`` builds parameters
                (weights, tau, eps_den...) from a torch.Generator.
    d_model:    the widths drawn most often (the first one validates ``params``); the search
                also draws every width 1..128 unless ``fixed_width``.
    n_max:      the top of the short lengths (1..n_max) a contract that asks for short lengths only
                draws (``FuzzOptions(n_long=0)``) and the symbolic host check's shapes; otherwise the
                fuzz tier draws n by length band, up to past two 128-token blocks (``fuzz/strategies.py``).
    fixed_width: True when the parameters only exist at the ``d_model`` widths.
    d_max:      the widest model the search draws (None: the search's own top, 128); a bound
                for cost, shown on every row through the ranges it searched.
    mask:       "none", "random" or "causal": what masks the operator accepts.
    dtypes:     dtypes the operator supports.
    roles:      which parameters are the projection biases, the head count, tau, eps_den and the
                query / key projections (:class:`~tokenlaw.operators.roles.Roles`; the default is
                the convention of ``operators/projections.py``), so a drawn example adjusts them by role.

    The domain of every real scalar parameter (a float in ``params``, named by
    its key at any nesting level) is declared here, once:
    ``positive=("tau", "eps_den")`` (> 0), ``nonnegative=(...)`` (>= 0),
    ``reals=(...)`` (every real) or ``intervals={"name": Interval(...)}``.
    The prover's premises and the fuzz tier's draws both come from it;
    ``collect()`` rejects a name the parameters do not have, a drawn scalar
    with no declared domain and a drawn value outside its domain.

    ``limits={"float16": Limit(scores=..., reason=...)}``: per-dtype bounds on
    what the fuzz tier draws, each with its reason (shown on the report's rows
    and in its legend).  Without one, the search draws the dtype's whole range.
    """

    params: Callable[..., dict] | None = None
    d_model: tuple = (4, 8)
    n_max: int = 6
    mask: str = "none"
    dtypes: tuple = _dtypes.NAMES
    positive: tuple = ()
    nonnegative: tuple = ()
    reals: tuple = ()
    intervals: Any = ()
    fixed_width: bool = False
    d_max: int | None = None
    limits: Any = ()
    roles: Roles = Roles()

    def __post_init__(self):
        if not isinstance(self.roles, Roles):
            raise DeclarationError(f"Domain.roles: expected a roles.Roles, got {self.roles!r}")
        limits = dict(self.limits)
        for dt, lim in limits.items():
            if dt not in self.dtypes:
                raise DeclarationError(f"Domain.limits: {dt!r} is not one of the declared dtypes {self.dtypes}")
            if not isinstance(lim, Limit):
                raise DeclarationError(f"Domain.limits: expected {{dtype: Limit}}, got {dt!r}: {lim!r}")
        object.__setattr__(self, "limits", tuple(sorted(limits.items())))
        if not isinstance(self.fixed_width, bool):
            raise DeclarationError(f"Domain.fixed_width: expected a bool, got {self.fixed_width!r}")
        if self.d_max is not None and (isinstance(self.d_max, bool) or not isinstance(self.d_max, int)
                                       or self.d_max < max(self.d_model)):
            raise DeclarationError(f"Domain.d_max: expected None or an int >= every d_model {self.d_model}, "
                                   f"got {self.d_max!r}")
        pairs = list(dict(self.intervals).items())
        for kind, iv in (("positive", POSITIVE), ("nonnegative", NONNEGATIVE), ("reals", REALS)):
            names = getattr(self, kind)
            if isinstance(names, str) or not all(isinstance(n, str) for n in names):
                raise DeclarationError(f"Domain.{kind}: expected a tuple of parameter names, got {names!r}")
            pairs += [(n, iv) for n in names]
        seen = [n for n, _ in pairs]
        twice = sorted({n for n in seen if seen.count(n) > 1})
        if twice:
            raise DeclarationError(f"Domain: parameters declared with two domains: {twice}")
        if not all(isinstance(iv, Interval) for _, iv in pairs):
            raise DeclarationError(f"Domain.intervals: expected {{name: Interval}}, got {self.intervals!r}")
        object.__setattr__(self, "intervals", tuple(sorted(dict(self.intervals).items())))
        object.__setattr__(self, "_scalars", dict(pairs))

    @property
    def scalars(self) -> dict:
        """{parameter name: Interval} for every declared scalar parameter."""
        return dict(self._scalars)

    def limit(self, dtype: str) -> Limit | None:
        """The declared limit on the draws in ``dtype`` (a name such as "float16"), or None."""
        return dict(self.limits).get(dtype)

    def scalar(self, name: str) -> Interval | None:
        """The declared domain of scalar parameter ``name`` (None if the operator has none)."""
        return self._scalars.get(name)

    def adjust(self, params, how: Adjustments):
        """``params`` (a draw) with a drawn example's :class:`~tokenlaw.operators.roles.Adjustments`
        applied to the parameters this domain's ``roles`` name, at every nesting level."""
        return adjust(params, self.roles, how)

    def draw(self, gen, d_model: int, dtype=torch.float64) -> dict:
        """The parameters ``params`` builds at width ``d_model`` ({} for an operator declared without any).

        >>> Domain().draw(torch.Generator().manual_seed(0), 4)
        {}
        """
        return {} if self.params is None else self.params(gen, d_model, dtype)


def scalar_parameters(tree):
    """[(path, value)] of every real scalar (a Python float) in a parameter tree."""
    return [(path, v) for path, v in _tree.leaves(tree) if isinstance(v, float)]


@dataclasses.dataclass(frozen=True)
class OperatorSpec:
    """One declared operator: its eager math, domain, traits and contracts."""

    name: str
    fn: Callable[..., Any]
    domain: Domain
    traits: frozenset
    claims: Mapping[str, str]
    violates: Mapping[str, str]
    weights: Callable[..., Any] | None = None
    layers: Callable[..., Any] | None = None
    reference: Callable[..., Any] | None = None
    errors: Callable[..., Any] | None = None
    implementation_claims: Mapping[str, str] = dataclasses.field(default_factory=dict)
    mods: Any = None        # a FlexAttention pair (operators/flex.py: Mods), read by properties/flex_laws.py
    core: Any = None        # a core q/k/v kernel (operators/core.py: Core), read by properties/core_laws.py
    masked_row: float | None = None
    external: Any = None
    doc: str = ""
    source: str = "<unknown>"

    def declared(self, contract: str) -> str | None:
        """'claims', 'violates' or None for a contract name."""
        if contract in self.claims:
            return "claims"
        if contract in self.violates:
            return "violates"
        return None

    def __call__(self, xp, x, **kwargs):
        return self.fn(xp, x, **kwargs)


def declare(*, name: str, domain: Domain, traits: Iterable[str] = (),
            claims: Mapping[str, str] | None = None,
            violates: Mapping[str, str] | None = None,
            weights: Callable | None = None, layers: Callable | None = None,
            reference: Callable | None = None,
            errors: Callable | None = None, implementation_claims: Mapping[str, str] | None = None,
            mods: Any = None, masked_row: float | None = None, external=None, core: Any = None):
    """Mark ``fn(xp, x, **params)`` as an operator; nothing is validated yet.

    ``claims`` and ``violates`` map contract names to a one-line reason.
    ``weights(xp, S, mask=None, **params)`` exposes the row normaliser of a
    score-normalising attention; ``layers(xp, x, **params)`` returns the
    per-layer hidden states of a host.  ``errors(kwargs)`` yields the bad
    calls the operator must reject (:class:`~tokenlaw.operators.arguments.ErrorInput`)
    beyond the generated ones (:func:`~tokenlaw.operators.arguments.error_inputs`).
    ``implementation_claims`` maps contract names to a reason: laws every
    implementation of the operator other than its own eager code (a backend:
    ``tokenlaw check --backend NAME``) is held to, e.g. exact zero gradients
    where the math has them.  ``mods`` is the ``score_mod`` / ``mask_mod`` pair of an operator declared
    through ``tokenlaw.operators.flex.declare_flex`` (the mod laws read it); ``core`` the q/k/v kernel of one
    declared through ``tokenlaw.operators.core.declare_core`` (the core laws read it).
    """

    def mark(fn):
        setattr(fn, MARK, dict(
            name=name, domain=domain, traits=frozenset(traits),
            claims=dict(claims or {}), violates=dict(violates or {}),
            weights=weights, layers=layers, reference=reference,
            errors=errors, implementation_claims=dict(implementation_claims or {}), mods=mods, core=core,
            masked_row=masked_row, external=external, doc=inspect.getdoc(fn) or ""))
        return fn

    return mark


class Registry:
    """Validated, ordered collection of :class:`OperatorSpec`, with the contracts it was validated against
    (``contracts``: name -> contract, read-only; the tiers look a row's contract up here, so a user's
    own contracts run wherever their operators do)."""

    def __init__(self, specs: Iterable[OperatorSpec], contracts: Mapping[str, Any] | None = None):
        self._specs = {s.name: s for s in specs}
        self.contracts = types.MappingProxyType(dict(contracts or {}))

    def __iter__(self):
        return iter(self._specs.values())

    def __len__(self):
        return len(self._specs)

    def __contains__(self, name):
        return name in self._specs

    def __getitem__(self, name) -> OperatorSpec:
        try:
            return self._specs[name]
        except KeyError:
            raise DeclarationError(
                f"operator={name!r}: no such operator; known: {sorted(self._specs)}") from None

    def names(self):
        return list(self._specs)


def _validate(opts: dict, source: str, contracts: Mapping[str, Any]) -> OperatorSpec:
    name = opts["name"]
    where = f"{source}: operator {name!r}"
    if not isinstance(name, str) or not name.replace("_", "").isalnum():
        raise DeclarationError(f"{where}: name must be an identifier, got {name!r}")
    if not isinstance(opts["domain"], Domain):
        raise DeclarationError(f"{where}: domain is missing or not a Domain")
    unknown_traits = opts["traits"] - TRAITS
    if unknown_traits:
        raise DeclarationError(f"{where}: unknown traits {sorted(unknown_traits)}; known: {sorted(TRAITS)}")
    for kind in ("claims", "violates", "implementation_claims"):
        for c, reason in opts[kind].items():
            if c not in contracts:
                close = difflib.get_close_matches(c, list(contracts), n=3)
                hint = f"did you mean {' or '.join(repr(n) for n in close)}? " if close else ""
                raise DeclarationError(f"{where}: {kind} unknown contract {c!r}; {hint}known: {sorted(contracts)}")
            if not isinstance(reason, str) or not reason.strip():
                raise DeclarationError(f"{where}: {kind}[{c!r}] needs a one-line reason")
    both = set(opts["claims"]) & set(opts["violates"])
    if both:
        raise DeclarationError(f"{where}: contracts both claimed and expected violated: {sorted(both)}")
    if not opts["claims"]:
        raise DeclarationError(f"{where}: claims no contract")
    row = opts["masked_row"]
    if row is not None and (isinstance(row, bool) or not isinstance(row, (int, float))):
        raise DeclarationError(f"{where}: masked_row must be a float (0.0, float('nan') or a stated value) "
                               f"or None, got {row!r}")
    if opts["external"] is not None and not isinstance(opts["external"], External):
        raise DeclarationError(f"{where}: external must be an operators.external.External, got {opts['external']!r}")
    _validate_scalars(opts["domain"], where)
    twice = set(opts["implementation_claims"]) & (set(opts["claims"]) | set(opts["violates"]))
    if twice:
        raise DeclarationError(f"{where}: contracts both declared and in implementation_claims: {sorted(twice)}")
    for c in list(opts["claims"]) + list(opts["violates"]) + list(opts["implementation_claims"]):
        missing = contracts[c].requires - opts["traits"]
        if missing:
            raise DeclarationError(f"{where}: contract {c!r} needs traits {sorted(missing)}")
        for attr in sorted(contracts[c].needs):
            if opts.get(attr) is None:
                raise DeclarationError(f"{where}: contract {c!r} needs {attr}=")
    return OperatorSpec(source=source, **opts)


def _validate_scalars(domain: Domain, where: str):
    """Every drawn real scalar has a declared domain, every declared name is a drawn scalar,
    and the drawn value lies in its domain (one draw at the first declared width)."""
    drawn = {}
    if domain.params is not None:
        tree = domain.params(torch.Generator().manual_seed(0), domain.d_model[0], torch.float64)
        for path, value in scalar_parameters(tree):
            drawn.setdefault(path[-1], []).append(value)
    unknown = sorted(set(domain.scalars) - set(drawn))
    if unknown:
        raise DeclarationError(f"{where}: Domain declares unknown parameter(s) {unknown}; "
                               f"its scalar parameters are {sorted(drawn)}")
    missing = sorted(set(drawn) - set(domain.scalars))
    if missing:
        raise DeclarationError(f"{where}: scalar parameter(s) {missing} have no declared domain "
                               f"(Domain(positive=..., nonnegative=..., reals=..., intervals=...))")
    for name, values in drawn.items():
        iv = domain.scalar(name)
        bad = [v for v in values if v not in iv]
        if bad:
            raise DeclarationError(f"{where}: Domain.params draws {name} = {bad[0]!r} outside its declared "
                                   f"domain {iv.text(name)}")


def _marked(module: types.ModuleType):
    for value in vars(module).values():
        opts = getattr(value, MARK, None)
        if opts is not None and getattr(value, "__module__", None) == module.__name__:
            yield value, opts


def _iter_modules(targets):
    for target in targets:
        module = importlib.import_module(target) if isinstance(target, str) else target
        yield module
        if hasattr(module, "__path__"):
            for info in pkgutil.iter_modules(module.__path__, module.__name__ + "."):
                if not info.name.rsplit(".", 1)[-1].startswith("_"):
                    yield importlib.import_module(info.name)


def collect(*targets, contracts: Mapping[str, Any]) -> Registry:
    """Build a registry from modules or packages (names or module objects), validated against ``contracts``
    (name -> contract with ``requires`` and ``needs``: the catalogue, which lives a layer above; callers use
    ``tokenlaw.properties.catalogue.collect``, which passes it).

    ``tokenlaw.properties.catalogue.collect`` with no target collects tokenlaw's own operators plus every
    package registered under the ``tokenlaw.operators`` entry-point group (:func:`entry_point_modules`).
    """
    if not targets:
        raise DeclarationError("collect: name the modules or packages to collect operators from")
    specs, seen = [], {}
    for module in _iter_modules(targets):
        source = getattr(module, "__file__", None) or module.__name__
        for fn, opts in _marked(module):
            spec = _validate(dict(opts, fn=fn), source, contracts)
            if spec.name in seen and seen[spec.name] != source:
                raise DeclarationError(
                    f"{source}: operator {spec.name!r} already declared in {seen[spec.name]}")
            if spec.name not in seen:
                seen[spec.name] = source
                specs.append(spec)
    return Registry(specs, contracts)


def entry_point_modules() -> list[str]:
    """The operator packages installed plug-ins register under the ``tokenlaw.operators`` entry-point group."""
    return [ep.value for ep in entry_points(group="tokenlaw.operators")]
