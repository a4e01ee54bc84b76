"""Any function with Hugging Face's attention signature as a declared tokenlaw operator.

Hugging Face models call their attention through one signature,
``fn(module, query, key, value, attention_mask, scaling=..., dropout=..., **kwargs) -> (out, weights)``
with q, k, v of shape (B, H, N, dh), out (B, N, H, dh), and the mask as the
model's mask function made it: boolean (True attends; ``sdpa``) or additive
(0 attends, ``finfo.min`` does not; ``eager``).  :func:`declare_hf_attention`
puts such a function between the standard projections
(``operators/projections.py``) and judges it like any operator::

    from tokenlaw.integrations.hf.declared import declare_hf_attention

    def my_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kw):
        ...

    mine = declare_hf_attention("mine", fn=my_attention)          # tokenlaw --operators mymod.py check

``fn`` is the function itself or the name of a built-in (``"eager"``,
``"sdpa"``).  The claims it is held to by default, each with its reason:
mask respect (the padding / causal mask HF passes is the ground truth),
permutation equivariance (no position terms inside attention; not with
``causal=True``), causality (with ``causal=True``: the mask is ANDed with
causality as HF's causal mask function does, and ``module.is_causal`` is
set), agreement with the plain softmax formula over the visible keys in
float64 (``spec_reference``, ``references.sdpa_reference``), ``finite`` and
``differential``.  HF's own ``eager`` takes its softmax in float32 whatever
the input dtype: in float64 it is float32-accurate, and the suite shows it
(:data:`EAGER_IN_FLOAT64`, its expected violations, each reproduced).  As softmax
attention with biased projections it is expected to break the null laws:
a null query still averages the values, a null key takes softmax mass, a
null token gets gradient.  ``claims=`` / ``violates=`` add or override any
contract with a one-line reason.  The body calls torch, not the ``xp``
primitives: the symbolic tier reports it as not traceable, never proved.
"""
from __future__ import annotations

import inspect
import math
from typing import Callable

import torch

from tokenlaw.operators import arguments, limits, projections, references
from tokenlaw.operators.errors import DeclarationError, InvalidArgument
from tokenlaw.operators.registry import Domain, Interval, declare

from . import require

MASK_FORMATS = ("bool", "additive")
BUILT_IN = {"eager": "additive", "sdpa": "bool"}     # the built-ins and the mask each is given in HF


class Site:
    """The ``module`` argument: what HF attention functions read from the attention layer that calls them."""

    def __init__(self, *, is_causal: bool):
        self.is_causal = is_causal
        self.training = False             # no dropout: inference
        self.num_key_value_groups = 1     # q, k, v come with the same head count (no GQA here)


def hf_function(name: str) -> Callable:
    """The built-in HF attention function called ``name`` (``eager`` is Llama's ``eager_attention_forward``)."""
    require()
    import transformers  # optional: pip install 'tokenlaw[hf]'
    if name == "eager":
        from transformers.models.llama.modeling_llama import eager_attention_forward  # optional: tokenlaw[hf]
        return eager_attention_forward
    mapping = transformers.AttentionInterface._global_mapping
    if name not in BUILT_IN or name not in mapping:
        raise DeclarationError(f"fn: expected a function or one of {sorted(BUILT_IN)}, got {name!r}")
    return mapping[name]


def hf_mask(mask, like: torch.Tensor, fmt: str, causal: bool):
    """tokenlaw's 0/1 visibility (B|1, N, N) as HF hands it to an attention function: (B|1, 1, N, N), bool
    (True attends) or additive in ``like``'s dtype (0 attends, finfo.min does not); causality ANDed in."""
    n = like.shape[-2]
    if mask is None and not causal:
        return None
    seen = torch.ones(1, 1, n, n, dtype=torch.bool, device=like.device) if mask is None else \
        projections.head_mask(mask) > 0
    if causal:
        seen = seen & torch.ones(n, n, dtype=torch.bool, device=like.device).tril()
    if fmt == "bool":
        return seen
    return torch.zeros(seen.shape, dtype=like.dtype, device=like.device).masked_fill(~seen, torch.finfo(like.dtype).min)


def attention_mask(mask, like: torch.Tensor, fmt: str, causal: bool, broadcast: bool = False):
    """The ``attention_mask`` argument HF hands the function for tokenlaw's ``mask``: with no mask, ``None`` --
    also for a causal model in the bool (sdpa) format, as HF's ``sdpa_mask`` skips a causal mask that hides
    no padding (``allow_is_causal_skip``) and the function must read ``module.is_causal``; the additive (eager)
    format always gets the causal mask (HF builds eager's with ``allow_is_causal_skip=False``).
    ``broadcast``: a mask the same for every batch element is handed over as (1, 1, Nq, Nk), the function
    broadcasting it (HF's masks without padding); otherwise (B|1, 1, Nq, Nk) as built."""
    if mask is None and (not causal or fmt == "bool"):
        return None
    m = hf_mask(mask, like, fmt, causal)
    if broadcast and m.shape[0] > 1 and bool((m == m[:1]).all()):
        m = m[:1].clone()
    return m


# The draw that picks, per example, the mask's kind (where the declaration accepts both) and whether a mask the
# same for every batch element comes in the broadcast shape (1, 1, N, N): a float in [0, 1), drawn with the
# parameters (``scaled_params``) so that it is replayed and shrunk with the example.
MASK_DRAW = "mask_draw"


def mask_form(formats: tuple, draw: float) -> tuple[str, bool]:
    """(kind, broadcast) for the drawn ``draw`` in [0, 1): the kind from the accepted ``formats`` (low half of
    each slot: broadcast where the mask allows it).

    >>> mask_form(("bool", "additive"), 0.1), mask_form(("bool", "additive"), 0.8)
    (('bool', True), ('additive', False))
    """
    slot = min(int(draw * len(formats)), len(formats) - 1)
    return formats[slot], draw * len(formats) - slot < 0.5


def _body(fn: Callable, formats: tuple, causal: bool, name: str):
    def hf_attention(xp, x, mask=None, *, wq, bq, wk, bk, wv, bv, wo, heads, scaling, mask_draw=0.75):
        """The HF attention function on the projected heads, with the drawn ``scaling`` and mask form, then wo."""
        arguments.tokens(x)
        mask = arguments.mask(mask, x)
        q, k, v = projections.project_qkv(xp, x, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, heads=heads)
        dh = q.shape[-1]
        fmt, broadcast = mask_form(formats, mask_draw)
        got = fn(Site(is_causal=causal), q, k, v, attention_mask(mask, q, fmt, causal, broadcast), scaling=scaling,
                 dropout=0.0)
        out = got[0] if isinstance(got, (tuple, list)) else got
        want = (q.shape[0], q.shape[2], q.shape[1], dh)
        if not torch.is_tensor(out) or tuple(out.shape) != want:
            raise InvalidArgument(f"{name}: the attention function returned {getattr(out, 'shape', type(out))}, "
                                  f"expected (output of shape {want}, weights) as HF's signature has it")
        return projections.output(xp, out.transpose(1, 2), wo)
    return hf_attention


# What the suite found HF's eager attention to break (docs/hf.md, "What the suite finds"): it takes its softmax
# in float32 whatever the input dtype (``softmax(..., dtype=torch.float32).to(query.dtype)``).
_FLOAT32_SOFTMAX = "HF's eager takes its softmax in float32 for every input dtype: a float64 run is float32-accurate"
EAGER_IN_FLOAT64 = {
    "gradcheck": _FLOAT32_SOFTMAX + " (gradcheck's Jacobian does not converge)",
    "permutation_equivariance": _FLOAT32_SOFTMAX + " (a permuted row sums in another order, ~1e-7 apart)",
    "spec_reference": _FLOAT32_SOFTMAX + " (~1e-7 from the float64 formula)",
    "finite": "a fully masked row in float64: the additive mask's finfo(float64).min is -inf in the float32 softmax, "
              "and a row of -inf is NaN",
}


SCALING_OCTAVES = 3     # scaling is drawn in [2^-3, 1] / sqrt(d_model): at most 1 / sqrt(dh), never only it


def scaled_params(gen, d_model, dtype=torch.float64, **kw):
    """The standard projections (``projections.attention_params``) and HF's ``scaling``, drawn log-uniform in
    [2^-3, 1] / sqrt(d_model): every test used to pass 1 / sqrt(dh), so a function that ignored ``scaling``
    passed them all.  The top, 1 / sqrt(d_model), is at most 1 / sqrt(dh) for every head count, so the scores
    stay within the magnitudes the domain's score limits were written for.  ``mask_draw`` (uniform in [0, 1)) picks
    the mask's kind and shape per example (:func:`mask_form`)."""
    params = projections.attention_params(gen, d_model, dtype, **kw)
    u = float(torch.rand((), generator=gen, dtype=torch.float64))
    params["scaling"] = 2.0 ** (-SCALING_OCTAVES * u) / math.sqrt(d_model)
    params[MASK_DRAW] = float(torch.rand((), generator=gen, dtype=torch.float64))
    return params


def derived_claims(*, causal: bool) -> tuple[dict, dict]:
    """The claims and expected violations of an HF attention function, each with its reason."""
    claims = {
        "mask_respect": "the attention_mask HF passes is the ground truth: a key it hides never reaches that query",
        "spec_reference": "agrees with the plain softmax formula over the visible keys, computed in float64",
        "gradcheck": "softmax attention is smooth in its inputs",
    }
    if causal:
        claims["causality"] = "declared causal: the mask HF passes hides every later key"
    else:
        claims["permutation_equivariance"] = "no position terms inside attention: permuting tokens permutes outputs"
    violates = {
        "null_receiver": "a null query still gets a convex combination of the values",
        "null_source_insertion": "a null key adds exp(s_ij) mass to every denominator",
        "null_gradient": "a null token's q, k, v receive gradient like any other token",
    }
    return claims, violates


def declare_hf_attention(name: str, *, fn: Callable | str, mask_format: str | None = None, causal: bool = False,
                         claims: dict | None = None, violates: dict | None = None, module: str | None = None):
    """Declare an HF attention function as operator ``name``; returns the marked function (assign it in your module).

    ``fn``: a function with HF's attention signature, or ``"eager"`` / ``"sdpa"``; ``mask_format``: how
    it wants the mask, ``"bool"`` (default, sdpa's), ``"additive"`` (eager's; the default for
    ``"eager"``) or both, ``("bool", "additive")``, each drawn per example; either way a mask the same for
    every batch element is drawn in the broadcast shape (1, 1, N, N) too, and a padding mask as (B, 1, N, N); ``causal``: the model is causal (HF's causal mask and ``module.is_causal``);
    ``claims`` / ``violates``: further contracts or overrides, each with a one-line reason; ``module``:
    the module that holds it (default: the caller's, where ``collect`` finds it).
    """
    if isinstance(fn, str):
        fmt = mask_format or BUILT_IN.get(fn)
        fn_name, fn = fn, hf_function(fn)
    elif callable(fn):
        fmt, fn_name = mask_format or "bool", getattr(fn, "__name__", repr(fn))
    else:
        raise DeclarationError(f"fn: expected a function or one of {sorted(BUILT_IN)}, got {fn!r}")
    formats = (fmt,) if isinstance(fmt, str) else tuple(fmt) if isinstance(fmt, (tuple, list)) else ()
    if not formats or len(set(formats)) != len(formats) or not all(f in MASK_FORMATS for f in formats):
        raise DeclarationError(f"mask_format: expected one of {MASK_FORMATS} or a tuple of them, got {mask_format!r}")
    if not isinstance(causal, bool):
        raise DeclarationError(f"causal: expected a bool, got {causal!r}")
    for arg, value in (("claims", claims), ("violates", violates)):
        if value is not None and not isinstance(value, dict):
            raise DeclarationError(f"{arg}: expected a dict of contract name -> one-line reason, got {value!r}")
    hf_attention = _body(fn, formats, causal, name)

    def reference(xp, x, mask=None, *, wq, bq, wk, bk, wv, bv, wo, heads, scaling, mask_draw=0.75):
        """softmax(scaling q k^T) v per head over the keys the mask (and causality) leave visible, then W_o."""
        seen = None if mask is None and not causal else hf_mask(mask, x[:, :, :1], "bool", causal)[:, 0]
        c = scaling * math.sqrt(x.shape[-1] // heads)        # the formula's 1/sqrt(dh) times c is scaling
        return references.sdpa_reference(xp, x, None if seen is None else seen.to(x.dtype), wq=wq * c, bq=bq * c,
                                          wk=wk, bk=bk, wv=wv, bv=bv, wo=wo, heads=heads)

    hf_attention.__name__ = hf_attention.__qualname__ = name
    hf_attention.__doc__ = f"HF attention function {fn_name} between the standard projections, then wo."
    hf_attention.__module__ = module or inspect.currentframe().f_back.f_globals.get("__name__", "__main__")
    stated, expected = derived_claims(causal=causal)
    if getattr(fn, "__name__", "") == "eager_attention_forward":
        expected.update(EAGER_IN_FLOAT64)
    expected.update(violates or {})
    stated = {**{k: v for k, v in stated.items() if k not in expected}, **dict(claims or {})}
    expected = {k: v for k, v in expected.items() if k not in (claims or {})}
    traits = {"token_mixing", "masked"} | ({"causal"} if causal else set())
    domain = Domain(params=scaled_params, mask="random", limits=limits.SOFTMAX_SCORES, positive=("scaling",),
                    intervals={MASK_DRAW: Interval(0.0, 1.0, hi_open=True)})
    return declare(name=name, domain=domain, traits=traits, claims=stated, violates=expected,
                   reference=reference)(hf_attention)


__all__ = ["declare_hf_attention", "hf_function", "hf_mask", "Site", "MASK_FORMATS"]
