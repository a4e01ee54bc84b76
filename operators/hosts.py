"""Hosts: pre-norm residual blocks of configurable depth, declared as compositions (docs/mathematics.md#hosts).

* standard:     h + SDPA(LN(h)),       then h + FFN(LN(h))
* OA-only:      h + OAttn(LN(h); p from h), then h + FFN(LN(h))
* OTransformer: h + OAttn(ONorm(h); p from h), then h + rho(h) FFN(ONorm(h))
* tabular:      standardise rows, inject (x W + b), then host blocks

Every host is one :class:`~tokenlaw.operators.composition.Composition`;
its eager function and its ``layers`` (the hidden state after every
sub-layer, which the closure contract compares layer by layer) are
generated from it.  The depth-2 hosts keep their historical names
(``standard_host``, ``oa_only_host``, ``otransformer`` and the
``*_layers`` functions); ``<host>_l1``, ``_l3``, ``_l4`` are the depth
variants.
"""
from __future__ import annotations

import functools

import torch

from .composition import Composition, block_layers, compose_layers
from .composition import host_params as _composition_params
from .composition import prefix_layers
from . import limits, references
from .registry import Domain, declare

DEPTH = 2

STANDARD = Composition("standard_host", norm="layernorm", attention="sdpa", ffn="ffn_update")
OA_ONLY = Composition("oa_only_host", norm="layernorm", attention="oattention", ffn="ffn_update")
OTRANSFORMER = Composition("otransformer", norm="onorm_ln", attention="oattention", ffn="offn")
TABULAR_STANDARD = Composition("tabular_standard", norm="layernorm", attention="sdpa", ffn="ffn_update",
                               standardize="standardize", inject="linear_inject")
TABULAR_OTRANSFORMER = Composition("tabular_otransformer", norm="onorm_ln", attention="oattention", ffn="offn",
                                   standardize="ostandardize", inject="oinject")

# Each host's independent reference (spec_reference): a loop over the blocks written from the component
# references in operators/references.py, sharing no code with the composition (keyed by the depth-2 name;
# the depth variants run the same reference on their own L blocks).
REFERENCES = {"standard_host": references.standard_host_reference,
              "oa_only_host": references.oa_only_host_reference,
              "otransformer": references.otransformer_reference,
              "tabular_standard": references.tabular_standard_reference,
              "tabular_otransformer": references.tabular_otransformer_reference}


def host_params(gen, d_model, dtype=None, *, depth=DEPTH, inject=False):
    """Parameters of a host: ``dict(blocks=[{attn, norm1, norm2, ffn}] * depth, tau, eps_den[, inject])``."""

    return _composition_params(gen, d_model, torch.float64 if dtype is None else dtype, depth=depth, inject=inject)


def _layers_of(comp):
    def layers(xp, x, mask=None, *, blocks, tau=None, eps_den=None, inject=None):
        return compose_layers(comp, xp, x, mask, blocks=blocks, tau=tau, eps_den=eps_den, inject=inject)

    layers.__name__ = layers.__qualname__ = f"{comp.name}_layers"
    layers.__doc__ = f"Hidden state after every sub-layer of {comp.name}: {comp.describe()}."
    layers.composition = comp
    # the pieces, separately callable: the symbolic tier proves closure by induction over them
    layers.prefix = functools.partial(prefix_layers, comp)
    layers.block = functools.partial(block_layers, comp)
    # importable by its name: a Dask worker then unpickles the registry's host and its layers as this
    # module's own objects, so ``host.last_state_of is layers`` holds there too (pickled by value, the two
    # became two copies and every closure cell computed each host's layers twice: measured 1.6x slower)
    globals()[layers.__name__] = layers
    return layers


def _host_of(comp, layers):
    def host(xp, x, mask=None, *, blocks, tau=None, eps_den=None, inject=None):
        return layers(xp, x, mask, blocks=blocks, tau=tau, eps_den=eps_den, inject=inject)[-1]

    host.__name__ = host.__qualname__ = comp.name
    host.__doc__ = f"Host {comp.name}: {comp.describe()} (the last sub-layer's state)."
    host.composition = comp
    host.last_state_of = layers     # fn(...) is layers(...)[-1] by construction: a closure check reuses that state
    return host


# Public layer functions of the depth-2 hosts (the symbolic tier traces these).
standard_layers = _layers_of(STANDARD)
oa_only_layers = _layers_of(OA_ONLY)
otransformer_layers = _layers_of(OTRANSFORMER)

_HOST_TRAITS = frozenset({"token_mixing", "masked", "host"})
_REACTIVATE = "LayerNorm(0) = beta and FFN(beta) != 0 reactivate the null, a source in the next block"
_SMOOTH = {"gradcheck": "smooth"}
_EQUIVARIANT = {"permutation_equivariance": "no position terms in any component (masks permuted alike)"}
_EMPTY_ROW = "SDPA of a fully masked row is 0/0 = NaN"

_STANDARD_CLAIMS = _SMOOTH | _EQUIVARIANT
_STANDARD_VIOLATES = {"closure": "LN(0) = beta and SDPA make a null token active at the first sub-layer",
                      "null_source_insertion": "the null key adds softmax mass in block 1",
                      "null_receiver": "SDPA gives a null query the mean of the values",
                      "finite": _EMPTY_ROW}
_OA_ONLY_CLAIMS = _SMOOTH | _EQUIVARIANT
_OA_ONLY_VIOLATES = {"closure": _REACTIVATE, "null_source_insertion": _REACTIVATE,
                     "null_receiver": "FFN(LN(0)) = FFN(beta) != 0 is added to the null token"}
_OTRANSFORMER_CLAIMS = {"closure": "every sub-layer is O-closed: zero absorption and contextual erasure",
                        "null_source_insertion": "closure at the last layer",
                        "null_receiver": "every residual update of a null token is gated by rho(0) = 0",
                        "gradcheck": "smooth"} | _EQUIVARIANT
_OTRANSFORMER_VIOLATES = {"null_gradient": "the residual stream's identity path passes gradient to a null token"}


def _limits(comp, traits):
    """A host's draws stop where its components' do (presence's |h|^2, SDPA's score offsets, float16's scores),
    and at float32's score spacing (every block's exp of a score: operators/limits.py)."""
    if "presence" in traits:
        return limits.PRESENCE_HOST_LIMITS
    return limits.SOFTMAX_HOST_LIMITS if comp.attention == "sdpa" else limits.STANDARD_HOST_LIMITS


def _declare(comp, traits, claims, violates, layers=None, reference=None):
    """Declare host ``comp`` (its eager function generated from the composition) for the registry."""
    layers = _layers_of(comp) if layers is None else layers
    params = functools.partial(host_params, depth=comp.depth, inject=comp.inject is not None)
    # d_max: a host stacks depth x (attention + FFN) blocks of full width, each block judged at every
    # width up to 128 as an operator of its own; the host's rows search widths 1..8 (cost)
    domain = Domain(params=params, mask="random", d_model=(4,), n_max=5, d_max=8, positive=("tau", "eps_den"),
                    limits=_limits(comp, traits))
    return declare(name=comp.name, domain=domain, traits=_HOST_TRAITS | traits, layers=layers,
                   reference=REFERENCES[comp.name] if reference is None else reference,
                   claims=claims, violates=violates)(_host_of(comp, layers))


def _depth_variant(comp, depth, traits, claims, violates):
    """The depth-L variant declares closure, the law it exists for (the closure contract judges every
    sub-layer's state, so L = 4 also checks the states of the first three blocks).  Laws that do not
    depend on the depth are claimed by the depth-2 host: a permutation claim here cost a sixth of the
    default check (a 4-block host at n up to 130 in four dtypes) and judged the same components."""
    variant = comp.with_depth(depth, f"{comp.name}_l{depth}")
    # a variant whose host breaks closure states the universal differential claim it is judged on anyway
    kept = {k: v for k, v in claims.items() if k == "closure"} or {
        "differential": "each dtype agrees with float64 within its predicted rounding at depth L too"}
    return _declare(variant, traits, kept, {k: v for k, v in violates.items() if k in ("closure", "finite")},
                    reference=REFERENCES[comp.name])


# -- the hosts the registry collects, each declared by name --------------------------------------
# The depth-2 hosts, then their depth variants L = 1, 3, 4.

standard_host = _declare(STANDARD, set(), _STANDARD_CLAIMS, _STANDARD_VIOLATES, standard_layers)
standard_host_l1 = _depth_variant(STANDARD, 1, set(), _STANDARD_CLAIMS, _STANDARD_VIOLATES)
standard_host_l3 = _depth_variant(STANDARD, 3, set(), _STANDARD_CLAIMS, _STANDARD_VIOLATES)
standard_host_l4 = _depth_variant(STANDARD, 4, set(), _STANDARD_CLAIMS, _STANDARD_VIOLATES)

oa_only_host = _declare(OA_ONLY, {"presence"}, _OA_ONLY_CLAIMS, _OA_ONLY_VIOLATES, oa_only_layers)
oa_only_host_l1 = _depth_variant(OA_ONLY, 1, {"presence"}, _OA_ONLY_CLAIMS, _OA_ONLY_VIOLATES)
oa_only_host_l3 = _depth_variant(OA_ONLY, 3, {"presence"}, _OA_ONLY_CLAIMS, _OA_ONLY_VIOLATES)
oa_only_host_l4 = _depth_variant(OA_ONLY, 4, {"presence"}, _OA_ONLY_CLAIMS, _OA_ONLY_VIOLATES)

otransformer = _declare(OTRANSFORMER, {"presence"}, _OTRANSFORMER_CLAIMS, _OTRANSFORMER_VIOLATES,
                        otransformer_layers)
otransformer_l1 = _depth_variant(OTRANSFORMER, 1, {"presence"}, _OTRANSFORMER_CLAIMS, _OTRANSFORMER_VIOLATES)
otransformer_l3 = _depth_variant(OTRANSFORMER, 3, {"presence"}, _OTRANSFORMER_CLAIMS, _OTRANSFORMER_VIOLATES)
otransformer_l4 = _depth_variant(OTRANSFORMER, 4, {"presence"}, _OTRANSFORMER_CLAIMS, _OTRANSFORMER_VIOLATES)

# The tabular hosts: standardisation over rows and an input embedding first.
tabular_standard = _declare(
    TABULAR_STANDARD, set(), _SMOOTH,
    {"closure": "a null row shifts the standardisation mean and enters as the embedding bias",
     "null_receiver": "standardize maps a null row to -mu / sigma, then x W + b",
     "finite": _EMPTY_ROW})
tabular_otransformer = _declare(
    TABULAR_OTRANSFORMER, {"presence"},
    {"closure": "OStandardize gives a null row zero mass, OInject keeps it 0, O-blocks are closed",
     "null_receiver": "every stage is gated by the presence of a null row, 0",
     "null_source_insertion": "closure at the last layer", "gradcheck": "smooth"},
    {})

HOSTS: dict = {fn.__name__: fn for fn in (
    standard_host, standard_host_l1, standard_host_l3, standard_host_l4,
    oa_only_host, oa_only_host_l1, oa_only_host_l3, oa_only_host_l4,
    otransformer, otransformer_l1, otransformer_l3, otransformer_l4,
    tabular_standard, tabular_otransformer)}
COMPOSITIONS = {name: fn.composition for name, fn in HOSTS.items()}
