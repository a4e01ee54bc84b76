"""tokenlaw's OAttention as a Hugging Face attention implementation: ``attn_implementation="tokenlaw_oattention"``.

:func:`register` adds the attention function and its mask function to
``transformers``' two interfaces; :func:`attach` gives a model's layers the
hidden state they read presence from and selects the implementation::

    register()
    model = LlamaForCausalLM(config)
    attach(model, tau=1e-6, eps_den=1e-6)      # or attn_implementation="tokenlaw_oattention" + attach
    model(input_ids, attention_mask=...)

Four things a plain registration gets wrong (each met in practice):

* the *mask* interface must be registered under the same name, else
  ``create_causal_mask`` has no mask function for it and the padding mask never
  arrives; Hugging Face's own boolean ``sdpa_mask`` is registered (True = attend);
* that mask function returns ``None`` when the mask is purely causal (no
  padding), so causality is applied here from ``module.is_causal``;
* keys and values come with the key/value head count (GQA): they are repeated
  to the query heads, head g serving query heads g*r .. g*r + r - 1 as in
  ``repeat_kv``;
* presence comes from the hidden state *entering the decoder layer* (the
  residual stream), recorded by a forward pre-hook of the layer: q, k and v
  alone do not say whether a token is null (a bias makes a null's key non-zero).

Learned sinks (gpt-oss's ``s_aux``), dropout in training and a KV cache are
refused with one clear error: OAttention has no sink, no dropout, and the
presence of cached tokens is not kept.
"""
from __future__ import annotations

import dataclasses
import math
import weakref

import torch
from torch import nn

try:
    import transformers  # optional: pip install 'tokenlaw[hf]'
except ImportError:       # hidden or absent: register() calls require() first
    transformers = None

from tokenlaw.operators import arguments
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.oattention import oattention_core
from tokenlaw.operators.presence import presence
from tokenlaw.operators.xp import TORCH

from . import require

NAME = "tokenlaw_oattention"


@dataclasses.dataclass(frozen=True)
class Settings:
    """OAttention's parameters in a model: presence scale tau and denominator floor eps_den (both > 0)."""

    tau: float = 1e-6
    eps_den: float = 1e-6

    def __post_init__(self):
        arguments.positive(self.tau, "tau")
        arguments.positive(self.eps_den, "eps_den")


# attention module -> (hidden state entering its decoder layer, Settings), written by attach()'s pre-hook.
# Weak keys: a model that goes away takes its entries with it; a deep copy's layers write their own.
_CARRIERS: "weakref.WeakKeyDictionary[nn.Module, tuple]" = weakref.WeakKeyDictionary()


def is_attention(module: nn.Module) -> bool:
    """An attention module of a transformers model (LlamaAttention, GPT2Attention, BertSelfAttention, ...)."""
    return type(module).__name__.endswith("Attention")


def visible(attention_mask, query, key, is_causal: bool) -> torch.Tensor:
    """The 0/1 visibility (B|1, 1, Nq, Nk) in query's dtype, from HF's mask, or causality when it is None."""
    nq, nk = query.shape[-2], key.shape[-2]
    if attention_mask is None:
        if not is_causal:
            return torch.ones(1, 1, nq, nk, dtype=query.dtype, device=query.device)
        # query i is token nk - nq + i of the keys (a prefix already seen), like sdpa's is_causal
        return torch.ones(nq, nk, dtype=query.dtype, device=query.device).tril(nk - nq)[None, None]
    if attention_mask.dtype == torch.bool:
        m = attention_mask
    elif attention_mask.is_floating_point():
        m = attention_mask == 0          # an additive mask (eager's): 0 attends, a large negative does not
    else:
        raise InvalidArgument(f"attention_mask: expected a bool or additive float mask, got {attention_mask.dtype}")
    if m.ndim != 4 or m.shape[-2:] != (nq, nk):
        raise InvalidArgument(f"attention_mask: expected (B, 1|H, {nq}, {nk}), got {tuple(m.shape)}")
    return m.to(query.dtype)


def repeat_heads(t: torch.Tensor, heads: int, name: str) -> torch.Tensor:
    """(B, Hkv, N, dh) -> (B, heads, N, dh): key/value head g serves query heads g*r .. g*r + r - 1."""
    if heads % t.shape[1]:
        raise InvalidArgument(f"{name}: {t.shape[1]} key/value heads do not divide {heads} query heads")
    return t.repeat_interleave(heads // t.shape[1], dim=1)


def oattention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0, s_aux=None,
                       **kwargs):
    """HF's attention signature: q (B, H, Nq, dh), k / v (B, Hkv, Nk, dh) -> ((B, Nq, H, dh), None)."""
    if s_aux is not None:
        raise InvalidArgument(f"{NAME}: learned sinks (s_aux) are not part of OAttention; use another "
                              f"attn_implementation for this model")
    if dropout and module.training:
        raise InvalidArgument(f"{NAME}: attention dropout {dropout} in training; OAttention has none (call "
                              f"model.eval() or set the config's attention dropout to 0)")
    entry = _CARRIERS.get(module)
    if entry is None:
        raise InvalidArgument(f"{NAME}: {type(module).__name__} has no hidden state to read presence from; "
                              f"call tokenlaw.integrations.hf.attention.attach(model) first")
    carrier, settings = entry
    nq, nk = query.shape[-2], key.shape[-2]
    if carrier.shape[:2] != (query.shape[0], nk) or nq != nk:
        raise InvalidArgument(f"{NAME}: presence is known for the {carrier.shape[1]} tokens entering the layer, "
                              f"got {nq} queries over {nk} keys (a KV cache is not supported)")
    heads = query.shape[1]
    k, v = repeat_heads(key, heads, "key"), repeat_heads(value, heads, "value")
    if scaling is not None:
        # oattention_core divides scores by sqrt(dh); the model's own scale replaces that
        query = query * (scaling * math.sqrt(query.shape[-1]))
    p = presence(TORCH, carrier.to(query.dtype), tau=settings.tau)        # (B, N, 1)
    mask = visible(attention_mask, query, k, bool(getattr(module, "is_causal", False)))
    o = oattention_core(TORCH, query, k, v, p.transpose(-1, -2)[:, None], p[:, None], mask,
                        eps_den=settings.eps_den)
    return o.transpose(1, 2).contiguous(), None


def register(name: str = NAME, fn=oattention_forward) -> str:
    """Register ``fn`` (OAttention by default) and HF's boolean ``sdpa_mask`` under ``name``; returns it."""
    require()
    transformers.AttentionInterface.register(name, fn)
    transformers.masking_utils.AttentionMaskInterface.register(name, transformers.masking_utils.sdpa_mask)
    return name


def _record(settings: Settings):
    def pre_hook(layer, args, kwargs):
        h = args[0] if args else kwargs.get("hidden_states")
        if not torch.is_tensor(h):
            raise InvalidArgument(f"{NAME}: {type(layer).__name__} was called without a hidden-state tensor")
        for m in layer.modules():            # the layer the hook runs on: a deep copy's own modules
            if is_attention(m):
                _CARRIERS[m] = (h, settings)
    return pre_hook


def decoder_layers(model: nn.Module) -> list:
    """The decoder layers: the elements of the model's longest ModuleList holding an attention module."""
    lists = [m for m in model.modules() if isinstance(m, nn.ModuleList)
             and any(is_attention(s) for s in m.modules())]
    if not lists:
        raise InvalidArgument(f"model: {type(model).__name__} has no list of layers with attention modules")
    return list(max(lists, key=len))


def attach(model: nn.Module, *, tau: float = Settings.tau, eps_den: float = Settings.eps_den,
           name: str = NAME) -> list:
    """Record each decoder layer's input for presence and select ``name``; returns the hook handles.

    ``name`` is OAttention's (registered here) or one already registered with :func:`register`.
    """
    if name == NAME:
        register()
    elif name not in transformers.AttentionInterface._global_mapping:
        raise InvalidArgument(f"name: {name!r} is not a registered attention implementation; register(name, fn) first")
    settings = Settings(tau, eps_den)
    handles = [layer.register_forward_pre_hook(_record(settings), with_kwargs=True)
               for layer in decoder_layers(model)]
    model.set_attn_implementation(name)
    return handles
