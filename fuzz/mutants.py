"""A catalogue of seeded bugs: does the suite catch a plausibly wrong operator?

Each :class:`Mutant` names the operators whose cells must catch it and a
``patch`` returning a context manager that swaps one module attribute (a
helper the registered operator calls through its module) or one registered
operator function for a subtly wrong version, and restores it on exit.
``tokenlaw mutate`` (:mod:`tokenlaw.fuzz.mutation`) runs those operators'
declared cells under each patch: a mutant is *killed* when some row no
longer matches its declaration.  A survivor is a defect of the suite (a law
missing, or a strategy that never reaches the input that shows the bug).

Kernel mutants come from ``tokenlaw.kernels.mutants.KERNEL_MUTANTS`` (same
fields, ``backend="triton"``) when that module exists.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
from typing import Callable

from tokenlaw.operators import fir as fir_mod
from tokenlaw.operators import normalisers, presence as presence_mod
from tokenlaw.operators.fir import TAPS

OPS = "tokenlaw.operators."


@dataclasses.dataclass(frozen=True)
class Mutant:
    name: str
    operators: tuple          # operator names whose declared cells are run against the mutant
    description: str
    patch: Callable           # () -> context manager applying the bug
    backend: str = "eager"


_SPEC_HOOKS = ("fn", "weights", "layers", "reference")


@contextlib.contextmanager
def patched(*targets):
    """Set ``module.attr = value`` for each (module name, attr, value); restore on exit.

    A registered operator may hold the patched function itself (e.g.
    ``weights=normalisers.pn`` is bound at declaration), so every spec hook
    of the default registry that *is* the old function is swapped too.
    """
    from tokenlaw.operators.registry import default_registry

    saved, hooks = [], []
    try:
        for module_name, attr, value in targets:
            module = importlib.import_module(module_name)
            old = getattr(module, attr)
            saved.append((module, attr, old))
            setattr(module, attr, value)
            for spec in default_registry():
                for hook in _SPEC_HOOKS:
                    if getattr(spec, hook) is old:
                        hooks.append((spec, hook, old))
                        object.__setattr__(spec, hook, value)   # frozen spec: a deliberate, undone swap
        yield
    finally:
        for spec, hook, old in reversed(hooks):
            object.__setattr__(spec, hook, old)
        for module, attr, old in reversed(saved):
            setattr(module, attr, old)


@contextlib.contextmanager
def swapped_operator(name: str, fn):
    """Replace the registered function of operator ``name`` in the default registry."""
    from tokenlaw.operators.registry import default_registry

    spec = default_registry()[name]
    old = spec.fn
    object.__setattr__(spec, "fn", fn)      # OperatorSpec is frozen: the swap is deliberate and undone
    try:
        yield
    finally:
        object.__setattr__(spec, "fn", old)


def _patch(*targets):
    return lambda: patched(*targets)


# -- OAttention -----------------------------------------------------------------

def _core(*, use_mass_in_den=True, gate=True, rescale_eps=True, max_over_all=False):
    """oattention_core with one seeded defect (the correct body, switches flipped)."""
    from tokenlaw.operators import projections

    def core(xp, q, k, v, p_src, p_rcv, mask, *, eps_den):
        s = projections.scores(xp, q, k)
        mass = p_src * (xp.ones_like(s) if mask is None else mask * xp.ones_like(s))
        active = xp.gt(mass, 0)
        floor = xp.min(s, axis=-1, keepdims=True)
        if max_over_all:
            top = xp.max(s, axis=-1, keepdims=True)            # nulls and masked keys set the max
        else:
            top = xp.max(xp.where(active, s, floor), axis=-1, keepdims=True)
        unweighted = xp.exp(xp.where(active, s - top, xp.zeros_like(s)))
        e = unweighted * mass
        num = xp.matmul(e, v)
        den_terms = e if use_mass_in_den else unweighted * (xp.ones_like(s) if mask is None else mask * xp.ones_like(s))
        eps = eps_den * xp.exp(-top) if rescale_eps else eps_den
        den = eps + xp.sum(den_terms, axis=-1, keepdims=True)
        den = xp.where(xp.gt(den, 0), den, xp.ones_like(den))
        out = xp.div(num, den)
        return p_rcv * out if gate else out

    return core


def _oattn(**switches):
    return _patch((OPS + "oattention", "oattention_core", _core(**switches)))


# -- presence and the O-maps ----------------------------------------------------

def _presence_floor(xp, h, *, tau):
    """rho with a small floor: a null token gets presence 1e-3 instead of 0."""
    sq = xp.sum(h * h, axis=-1, keepdims=True)
    return xp.div(sq + 1e-3 * tau, tau + sq)


_PRESENCE_USERS = ("oattention", "ostandardize", "norms", "ffn", "oinject", "presence")


def _onorm_ungated(xp, x, *, carrier=None, gamma, beta, tau, kind="layer", eps=1e-5):
    from tokenlaw.operators.norms import NORMS

    return NORMS[kind](xp, x, gamma=gamma, beta=beta, eps=eps)


def _offn_bias_outside(xp, x, *, carrier=None, w1, b1, w2, b2, tau):
    from tokenlaw.operators.ffn import ffn
    from tokenlaw.operators.presence import presence

    gate = presence(xp, x if carrier is None else carrier, tau=tau)
    return gate * (ffn(xp, x, w1=w1, b1=b1, w2=w2, b2=b2) - b2) + b2      # b2 escapes the gate


# -- OStandardize ---------------------------------------------------------------

def _ostd(*, weighted_stats=True, guard=True):
    from tokenlaw.operators import arguments
    from tokenlaw.operators.presence import presence

    def ostandardize(xp, x, *, tau, eps=1e-5):
        arguments.tokens(x)
        p = presence(xp, x, tau=tau)
        w = p if weighted_stats else xp.ones_like(p)          # unweighted: nulls carry mass
        mass = xp.sum(w, axis=-2, keepdims=True)
        safe = xp.where(xp.gt(mass, 0), mass, xp.ones_like(mass)) if guard else mass
        mu = xp.div(xp.sum(w * x, axis=-2, keepdims=True), safe)
        c = x - mu
        var = xp.div(xp.sum(w * c * c, axis=-2, keepdims=True), safe)
        return p * xp.div(c, xp.sqrt(var + eps))

    return ostandardize


# -- FIR ------------------------------------------------------------------------

_shift = fir_mod.shift


def _shift_off_by_one(xp, x, k):
    return _shift(xp, x, k + 1) if k > 0 else x               # every tap but the first one slot late


def _shift_ahead(xp, x, k):
    """out_t = x_{t+k}: the filter reads the future (zero padding at the end)."""
    n = x.shape[-2]
    if k == 0:
        return x
    if k >= n:
        return xp.zeros_like(x)
    return xp.concat([x[..., k:, :], xp.zeros_like(x[..., :k, :])], axis=-2)


_fir = fir_mod.fir


def _fir_unnormalised(xp, x, *, taps=TAPS):
    return _fir(xp, x, taps=tuple(t / taps[0] for t in taps))   # raw Gaussian weights: DC gain ~ 3.1


# -- pn family -----------------------------------------------------------------

_power_norm, _gate = normalisers.power_norm, normalisers.silence_gate


def _pn_tau_flipped(xp, s, mask=None, *, tau):
    m = normalisers._visible(xp, s, mask)
    r = xp.relu(s + tau) * m
    return _gate(xp, xp.max(r, axis=-1, keepdims=True)) * _power_norm(xp, r)


def _pn_tau_centred(xp, s, mask=None, *, tau):
    m = normalisers._visible(xp, s, mask)
    count = xp.sum(m, axis=-1, keepdims=True)
    mean = xp.div(xp.sum(s * m, axis=-1, keepdims=True), normalisers._safe(xp, count))
    r = xp.relu(s - mean - tau) * m
    return _gate(xp, xp.max(r, axis=-1, keepdims=True)) * _power_norm(xp, r)


def _gate_reaches_one(xp, peak):
    return xp.minimum(2.0 * peak, 1.0)        # zero at 0, non-decreasing, but saturates at m = 1/2


def _pn_unrectified(xp, s, mask=None, *, tau=0.0):
    m = normalisers._visible(xp, s, mask)
    return _power_norm(xp, xp.abs(s - tau) * m)                # |S| instead of max(S, 0)


def _pn_centred_all_keys(xp, s, mask=None):
    m = normalisers._visible(xp, s, mask)
    mean = xp.mean(s, axis=-1, keepdims=True)                  # the mean includes masked (future) keys
    return _power_norm(xp, xp.relu(s - mean) * m)


def _softmax_naive(xp, s, mask=None):
    m = normalisers._visible(xp, s, mask)
    e = xp.exp(s) * m                                          # no max subtraction: overflows
    return xp.div(e, xp.sum(e, axis=-1, keepdims=True))


_PN_FIR = ("pn", "pn_fir_c", "pn_fir_tau")

EAGER_MUTANTS = (
    Mutant("oattn_source_presence_not_in_den", ("oattention",),
           "the denominator sums exp(s_ij) without the source presence p_j: a null source still adds mass",
           _oattn(use_mass_in_den=False)),
    Mutant("oattn_receiver_gate_dropped", ("oattention",),
           "the output is not multiplied by the receiver presence p_i", _oattn(gate=False)),
    Mutant("oattn_eps_den_not_rescaled", ("oattention",),
           "after subtracting the running max M, eps_den is added as is instead of eps_den * exp(-M)",
           _oattn(rescale_eps=False)),
    Mutant("oattn_running_max_over_nulls", ("oattention",),
           "the running max is taken over every key, null and masked ones included: a null token with a "
           "huge key underflows every real source", _oattn(max_over_all=True)),
    Mutant("presence_floor", ("presence", "oattention", "onorm_ln", "oinject"),
           "rho(0) = 1e-3 instead of 0 (a floor added to |h|^2)",
           _patch(*[(OPS + m, "presence", _presence_floor) for m in _PRESENCE_USERS])),
    Mutant("onorm_gate_dropped", ("onorm_ln", "onorm_rms"),
           "ONorm returns Norm(h) without the presence gate", _patch((OPS + "norms", "onorm", _onorm_ungated))),
    Mutant("offn_bias_outside_gate", ("offn",),
           "OFFN adds the output bias b2 after the presence gate", _patch((OPS + "ffn", "offn", _offn_bias_outside))),
    Mutant("ostd_unweighted_statistics", ("ostandardize",),
           "OStandardize's mean and variance weight every token by 1 instead of its presence",
           lambda: swapped_operator("ostandardize", _ostd(weighted_stats=False))),
    Mutant("ostd_empty_support_unguarded", ("ostandardize",),
           "OStandardize divides by the total presence without guarding 0: all-null input gives 0/0",
           lambda: swapped_operator("ostandardize", _ostd(guard=False))),
    Mutant("fir_tap_off_by_one", ("fir", "sm_fir"),
           "every FIR tap after the first reads one token too far back", _patch((OPS + "fir", "shift", _shift_off_by_one))),
    Mutant("fir_non_causal", ("fir", "sm_fir", "pn_fir_tau"),
           "the FIR reads k_{t+k} instead of k_{t-k}: keys from the future", _patch((OPS + "fir", "shift", _shift_ahead))),
    Mutant("fir_taps_not_normalised", ("fir",),
           "the half-Gaussian taps are not normalised to sum 1 (DC gain ~ 3.1)",
           _patch((OPS + "fir", "fir", _fir_unnormalised), (OPS + "fir_attention", "fir", _fir_unnormalised))),
    Mutant("pn_tau_sign_flipped", ("pn_fir_tau",),
           "pn_fir_tau rectifies S + tau instead of S - tau", _patch((OPS + "normalisers", "pn_tau", _pn_tau_flipped))),
    Mutant("pn_tau_centred", ("pn_fir_tau",),
           "pn_fir_tau centres the scores by their row mean before subtracting tau (pn_fir_c's centring)",
           _patch((OPS + "normalisers", "pn_tau", _pn_tau_centred))),
    Mutant("gate_reaches_one", ("pn_fir_tau",),
           "the silence gate min(2m, 1) saturates: a weakly matching row gets full mass",
           _patch((OPS + "normalisers", "silence_gate", _gate_reaches_one))),
    Mutant("pn_rectification_dropped", ("pn",),
           "pn powers |S| instead of max(S, 0): negative scores receive weight",
           _patch((OPS + "normalisers", "pn", _pn_unrectified))),
    Mutant("pn_centred_mean_over_future", ("pn_fir_c",),
           "pn_fir_c's row mean includes the masked (future) keys",
           _patch((OPS + "normalisers", "pn_centred", _pn_centred_all_keys))),
    Mutant("softmax_without_max_subtraction", ("sm_fir", "sdpa"),
           "softmax evaluates exp(s) without subtracting the row max: large scores overflow",
           _patch((OPS + "normalisers", "softmax", _softmax_naive))),
)


def catalogue(*, include_kernels: bool = True, backend: str | None = None) -> tuple:
    """The eager mutants plus the kernel mutants when ``tokenlaw.kernels.mutants`` imports.

    ``backend`` keeps only the mutants of that backend ("eager", "triton").
    """
    out = list(EAGER_MUTANTS)
    if include_kernels:
        try:
            from tokenlaw.kernels.mutants import KERNEL_MUTANTS
        except ImportError:
            KERNEL_MUTANTS = ()
        out += list(KERNEL_MUTANTS)
    if backend is not None:
        out = [m for m in out if m.backend == backend]
    return tuple(out)
