"""The eager mutant catalogue: seeded bugs the suite must catch in the operators that ship.

Every eager :class:`~tokenlaw.properties.mutants.Mutant` is an edit of the
code that ships (:class:`~tokenlaw.fuzz.mutants.source_edit.SourceEdit`): exact
snippets of one operator module's source are replaced (each must occur
exactly once, so a refactor that removes one fails loudly) and the module is
loaded as a fresh copy under its own name.  Modules that import the mutated
helper (``presence``, ``normalisers``, ``fir``) are reloaded with the mutated
one bound in its place.  ``mutant.apply(registry)`` returns a *new* registry
in which the affected operators are the mutated ones; the registry it is
given, and every module, stay as they are.

``tokenlaw mutate`` (:mod:`tokenlaw.fuzz.mutants.mutate`) runs those operators'
declared cells on the mutated registry: a mutant is *killed* when some row
no longer matches its declaration.  A survivor is a defect of the suite (a
law missing, or a strategy that never reaches the input that shows the bug).

A backend plug-in's mutants are its own (``Backend.mutants()``: the Triton backend's come from
its ``kernels/mutants.py``), of the same type; the app's ``mutate`` command gathers this catalogue
and every backend's (fuzz/ never imports a plug-in).
"""
from __future__ import annotations

from tokenlaw.properties.backends import EAGER
from tokenlaw.properties.mutants import Mutant, select

from .source_edit import SourceEdit


def _edit(name, operators, description, module, edits, users=()):
    return Mutant(name, tuple(operators), description, EAGER.name, SourceEdit(module, tuple(edits), tuple(users)))


# -- OAttention: edits of oattention_core --------------------------------------------

_DEN = "    den = xp.exp(log_eps - top) + xp.sum(e, axis=-1, keepdims=True)"


def _oattn(name, description, *edits):
    return _edit(name, ("oattention",), description, "oattention", edits)


# -- helpers used by several operator modules -------------------------------------------

_PRESENCE_USERS = tuple((m, ("presence",)) for m in ("oattention", "ostandardize", "norms", "ffn", "oinject"))
_NORMALISER_USERS = (("fir_attention", ("normalisers",)), ("sdpa", ("normalisers",)))
_FIR_USERS = (("fir_attention", ("fir", "TAPS")),)
_PRESENCE_OPS = ("presence", "oattention", "onorm_ln", "oinject")
_FIR_ATTENTION = ("sm_fir", "pn", "pn_fir_c", "pn_fir_tau")
_PN_FAMILY = ("pn", "pn_fir_c", "pn_fir_tau")
_TAPS_SNIPPET = "    return tuple(r / total for r in raw)"
_RELU_TAU = "    return xp.where(xp.gt(m, 0), xp.relu(s * scale - tau * scale), xp.zeros_like(s)) * m\n"   # pn_tau's one S - tau (normalisers._shifted)

EAGER_MUTANTS = (
    _oattn("oattn_source_presence_not_in_den",
           "the denominator sums exp(s_ij - M) over visible keys without the source presence p_j: a null source "
           "still adds mass",
           (_DEN, "    den = xp.exp(log_eps - top) + xp.sum(xp.exp(s - top) * "
                  "(xp.ones_like(s) if mask is None else mask * xp.ones_like(s)), axis=-1, keepdims=True)")),
    _oattn("oattn_receiver_gate_dropped", "the output is not multiplied by the receiver presence p_i",
           ("    return p_rcv * xp.div(num, den)", "    return xp.div(num, den)")),
    _oattn("oattn_eps_den_not_rescaled",
           "after subtracting the running max M, eps_den is added as is instead of exp(log eps_den - M)",
           (_DEN, "    den = xp.exp(log_eps) + xp.sum(e, axis=-1, keepdims=True)")),
    _oattn("oattn_log_eps_after_rounding",
           "log(eps_den) is taken after eps_den is rounded to the dtype (0 or subnormal in float16): the eps_den "
           "term leaves every row whose scores sit near log(eps_den), and a row with no active source is NaN",
           ("    log_eps = xp.log_full(a[..., :1], eps_den)", "    log_eps = xp.log(xp.ones_like(a[..., :1]) * eps_den)")),
    _oattn("oattn_running_max_over_nulls",
           "the running max is taken over every key, null and masked ones included: a null token with a huge key "
           "underflows every real source",
           ("    top = xp.max(xp.where(active, a, log_eps), axis=-1, keepdims=True)",
            "    top = xp.max(s, axis=-1, keepdims=True)")),
    _edit("presence_floor", _PRESENCE_OPS, "rho(0) = 1e-3 instead of 0 (a floor added to |h|^2)",
           "presence", (("    return xp.norm_ratio(h, tau)", "    return xp.norm_ratio(h, tau) * (1.0 - 1e-3) + 1e-3"),),
           _PRESENCE_USERS),
    _edit("presence_miscalibrated", _PRESENCE_OPS,
           "rho = |h|^2 / (2 tau + |h|^2): zero at 0 and below 1, but 1/3 (not 1/2) at |h|^2 = tau",
           "presence", (("    return xp.norm_ratio(h, tau)", "    return xp.norm_ratio(h, 2.0 * tau)"),),
           _PRESENCE_USERS),
    _edit("onorm_gate_dropped", ("onorm_ln", "onorm_rms"), "ONorm returns Norm(h) without the presence gate",
           "norms", (("    return presence(xp, x if carrier is None else carrier, tau=tau) * NORMS[kind]",
                      "    return NORMS[kind]"),)),
    _edit("offn_bias_outside_gate", ("offn",), "OFFN adds the output bias b2 after the presence gate",
           "ffn", (("    return gate * ffn(xp, x, w1=w1, b1=b1, w2=w2, b2=b2)",
                    "    return gate * (ffn(xp, x, w1=w1, b1=b1, w2=w2, b2=b2) - b2) + b2"),)),
    _edit("ostd_unweighted_statistics", ("ostandardize",),
           "OStandardize's mean and variance weight every token by 1 / N instead of its presence",
           "ostandardize", (("    w = xp.div(p, safe)",
                             "    w = xp.div(xp.ones_like(p), xp.sum(xp.ones_like(p), axis=-2, keepdims=True))"),)),
    _edit("ostd_empty_support_unguarded", ("ostandardize",),
           "OStandardize divides by the total presence without guarding 0: all-null input gives 0/0",
           "ostandardize", (("    safe = xp.where(xp.gt(mass, 0), mass, xp.ones_like(mass))\n",
                             "    safe = mass\n"), ("    safe = xp.denominator_floor(safe)\n", ""))),
    _edit("fir_tap_off_by_one", ("fir",) + _FIR_ATTENTION,
           "every FIR tap after the first reads one token too far back",
           "fir", (("        out = out + taps[k] * shift(xp, x, k)", "        out = out + taps[k] * shift(xp, x, k + 1)"),),
           _FIR_USERS),
    _edit("fir_non_causal", ("fir",) + _FIR_ATTENTION, "the FIR reads k_{t+k} instead of k_{t-k}: keys from the future",
           "fir", (("    return xp.concat([xp.zeros_like(x[..., :k, :]), x[..., : n - k, :]], axis=-2)",
                    "    return xp.concat([x[..., k:, :], xp.zeros_like(x[..., :k, :])], axis=-2)"),), _FIR_USERS),
    _edit("fir_taps_not_normalised", ("fir",), "the half-Gaussian taps are not normalised to sum 1 (DC gain ~ 3.1)",
           "fir", ((_TAPS_SNIPPET, "    return tuple(raw)"),), _FIR_USERS),
    _edit("fir_taps_reversed", ("fir",) + _FIR_ATTENTION,
           "the tap constant is stored reversed: w_6 on the current key, w_0 six tokens back",
           "fir", ((_TAPS_SNIPPET, "    return tuple(r / total for r in reversed(raw))"),), _FIR_USERS),
    _edit("fir_taps_reordered", ("fir",) + _FIR_ATTENTION,
           "taps 1 and 2 swapped: still positive, summing to 1, but no longer decreasing",
           "fir", (("    raw = [math.exp(-k * k / (2 * sigma * sigma)) for k in range(n_taps)]",
                    "    raw = [math.exp(-k * k / (2 * sigma * sigma)) for k in range(n_taps)]\n"
                    "    raw[1], raw[2] = raw[2], raw[1]"),), _FIR_USERS),
    _edit("fir_applied_to_values", _FIR_ATTENTION, "the FIR smooths the values as well as the keys",
           "fir_attention", (("    return projections.output(xp, xp.matmul(w, v), wo)",
                              "    return projections.output(xp, xp.matmul(w, fir(xp, v, taps=taps)), wo)"),)),
    _edit("causal_mask_hides_diagonal", _PN_FAMILY,
           "the causal mask is strictly lower triangular (j < t): a token cannot see its own key",
           "fir_attention", (("xp.asarray(np.tril(np.ones((n, n))), like)", "xp.asarray(np.tril(np.ones((n, n)), -1), like)"),)),
    _edit("pn_tau_sign_flipped", ("pn_fir_tau",), "pn_fir_tau rectifies S + tau instead of S - tau",
           "normalisers", ((_RELU_TAU, _RELU_TAU.replace("- tau", "+ tau")),), _NORMALISER_USERS),
    _edit("pn_tau_centred", ("pn_fir_tau",),
           "pn_fir_tau centres the scores by their row mean before subtracting tau (pn_fir_c's centring)",
           "normalisers", ((_RELU_TAU, "    mean = xp.div(xp.sum(s * m, axis=-1, keepdims=True), "
                                       "_safe(xp, xp.sum(m, axis=-1, keepdims=True)))\n"
                                       + _RELU_TAU.replace("s * scale", "(s - mean) * scale")),), _NORMALISER_USERS),
    _edit("pn_tau_power_before_rectification", ("pn_fir_tau",),
           "pn_fir_tau takes the power of S - tau before rectifying it: relu((S - tau)^10) = |S - tau|^10, so "
           "negative scores keep weight and the gate sees |S - tau|",
           "normalisers", ((_RELU_TAU, _RELU_TAU.replace("xp.relu(", "xp.abs(")),),
           _NORMALISER_USERS),
    _edit("gate_reaches_one", ("pn_fir_tau",), "the silence gate min(2m, 1) saturates: a weakly matching row gets full mass",
           "normalisers", (("    return xp.div(peak, 1.0 + peak)", "    return xp.minimum(2.0 * peak, 1.0)"),),
           _NORMALISER_USERS),
    _edit("pn_rectification_dropped", ("pn",), "pn powers |S| instead of max(S, 0): negative scores receive weight",
           "normalisers", (("    return power_norm(xp, xp.relu(s - tau) * m)", "    return power_norm(xp, xp.abs(s - tau) * m)"),),
           _NORMALISER_USERS),
    _edit("pn_centred_mean_over_future", ("pn_fir_c",), "pn_fir_c's row mean includes the masked (future) keys",
           "normalisers", (("    mean = _row_mean(xp, s, m)",
                            "    mean = xp.mean(s, axis=-1, keepdims=True)"),), _NORMALISER_USERS),
    _edit("softmax_without_max_subtraction", ("sm_fir", "sdpa"),
           "softmax evaluates exp(s) without subtracting the row max: large scores overflow",
           "normalisers", (("    e = xp.exp(xp.where(active, s - top, xp.zeros_like(s))) * m", "    e = xp.exp(s) * m"),),
           _NORMALISER_USERS),
    _edit("body_differs_from_weights", ("pn_fir_tau",),
           "pn_fir_tau's body normalises with ungated pn while its declared weights= is the gated pn_tau",
           "fir_attention", (("    return fir_attention(xp, x, normalisers.pn_tau, wq=wq,",
                              "    return fir_attention(xp, x, normalisers.pn, wq=wq,"),)),
)


# Subtle mutants: seeded bugs the default check is known to miss (at seed 0), kept for what a campaign
# must find (``tokenlaw campaign --mutant NAME``; tests/fuzz/test_fuzz_campaign_mutant.py).  ``tokenlaw
# mutate`` runs them only when named: its promise is that the default profile kills EAGER_MUTANTS.
_TOP = "    top = xp.max(xp.where(active, a, log_eps), axis=-1, keepdims=True)"

SUBTLE_MUTANTS = (
    _oattn("oattn_running_max_two_tiles",
           "the running max covers the first two 64-key tiles only: a key past the 128th whose score exceeds "
           "every earlier one by more than log(max) of the dtype overflows exp",
           (_TOP, _TOP.replace("log_eps), axis", "log_eps)[..., :128], axis"))),
)


def catalogue(*, backend: str | None = None, subtle: bool = False) -> tuple:
    """The eager mutants (``backend`` other than "eager" or None: none); ``subtle``: the subtle ones too."""
    return select(EAGER_MUTANTS + (SUBTLE_MUTANTS if subtle else ()), backend=backend)
