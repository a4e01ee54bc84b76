"""Mark, then collect: declaring operators and building the registry.

``@declare(...)`` only attaches an :class:`OperatorSpec` to the function it
decorates.  :func:`collect` imports the given modules, picks up every marked
function, validates each declaration against the contract catalogue and
returns a fresh :class:`Registry`.  Import order never matters and a test can
build its own registry from a scratch module.

Example::

    @declare(
        name="double",
        traits={"token_local"},
        domain=Domain(kind="tokens"),
        claims={"zero_absorption": "2*0 = 0"},
    )
    def double(xp, x, **params):
        return x + x
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import sys
import types
from typing import Any, Callable, Iterable, Mapping

from .errors import DeclarationError

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
class Domain:
    """How to build valid inputs for an operator.

    kind:       "tokens" (x is B x N x D hidden states).
    params:     ``params(gen, d_model, dtype) -> dict`` builds parameters
                (weights, tau, eps_den...) from a torch.Generator.
    d_model:    model widths to draw from.
    n_max:      longest sequence drawn by default.
    heads:      head counts (must divide d_model).
    mask:       "none", "random" or "causal": what masks the operator accepts.
    dtypes:     dtypes the operator supports.
    scale:      typical magnitude of drawn token entries.
    """

    params: Callable[..., dict] | None = None
    kind: str = "tokens"
    d_model: tuple = (4, 8)
    n_max: int = 6
    mask: str = "none"
    dtypes: tuple = ("float64", "float32", "float16", "bfloat16")
    scale: float = 1.0
    depth: tuple = ()


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
    kernel: str | None = None
    reference: Callable[..., Any] | None = None
    errors: Callable[..., Any] | None = None
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
            kernel: str | None = None, reference: Callable | None = None,
            errors: Callable | None = None):
    """Mark ``fn(xp, x, **params)`` as an operator; nothing is validated yet.

    ``claims`` and ``violates`` map contract names to a one-line reason.
    ``weights(xp, S, mask=None, **params)`` exposes the row normaliser of a
    score-normalising attention; ``layers(xp, x, **params)`` returns the
    per-layer hidden states of a host.  ``errors(kwargs)`` yields the bad
    calls the operator must reject (:class:`~tokenlaw.operators.arguments.ErrorInput`)
    beyond the generated ones (:func:`~tokenlaw.operators.arguments.error_inputs`).
    """

    def mark(fn):
        setattr(fn, MARK, dict(
            name=name, domain=domain, traits=frozenset(traits),
            claims=dict(claims or {}), violates=dict(violates or {}),
            weights=weights, layers=layers, kernel=kernel, reference=reference,
            errors=errors, doc=inspect.getdoc(fn) or ""))
        return fn

    return mark


class Registry:
    """Validated, ordered collection of :class:`OperatorSpec`."""

    def __init__(self, specs: Iterable[OperatorSpec]):
        self._specs = {s.name: s for s in specs}

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
    for kind in ("claims", "violates"):
        for c, reason in opts[kind].items():
            if c not in contracts:
                raise DeclarationError(f"{where}: {kind} unknown contract {c!r}; known: {sorted(contracts)}")
            if not isinstance(reason, str) or not reason.strip():
                raise DeclarationError(f"{where}: {kind}[{c!r}] needs a one-line reason")
    both = set(opts["claims"]) & set(opts["violates"])
    if both:
        raise DeclarationError(f"{where}: contracts both claimed and expected violated: {sorted(both)}")
    if not opts["claims"]:
        raise DeclarationError(f"{where}: claims no contract")
    for c in list(opts["claims"]) + list(opts["violates"]):
        missing = contracts[c].requires - opts["traits"]
        if missing:
            raise DeclarationError(f"{where}: contract {c!r} needs traits {sorted(missing)}")
        for attr in sorted(contracts[c].needs):
            if opts.get(attr) is None:
                raise DeclarationError(f"{where}: contract {c!r} needs {attr}=")
    return OperatorSpec(source=source, **opts)


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


def collect(*targets, contracts: Mapping[str, Any] | None = None) -> Registry:
    """Build a registry from modules or packages (names or module objects).

    With no target: tokenlaw's own ``tokenlaw.operators`` package plus any
    package registered under the ``tokenlaw.operators`` entry-point group.
    """
    from tokenlaw.properties.catalogue import CONTRACTS

    contracts = CONTRACTS if contracts is None else contracts
    if not targets:
        targets = ("tokenlaw.operators", *_entry_point_modules())
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
    return Registry(specs)


def _entry_point_modules():
    from importlib.metadata import entry_points

    return [ep.value for ep in entry_points(group="tokenlaw.operators")]


def default_registry() -> Registry:
    """The registry of tokenlaw's own operators and installed plug-ins (cached)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = collect()
    return _DEFAULT


_DEFAULT = None
