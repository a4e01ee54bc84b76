"""The correct core attention the core canaries (core_*.py) each change in one place, and their registry."""
import math
import types

import torch

from tokenlaw.operators.core import declare_core


def attention(q, k, v, *, attn_mask=None, is_causal=False, scale=None, alignment="top_left", heads="group",
              mask_shapes="all", scale_twice=False, swallow_nan=False, any_kv_length=False, drop_at=None):
    """softmax(q k^T scale + mask) v with each canary's defect behind one switch (all off: correct)."""
    if any_kv_length:
        v = v[:, :, :k.shape[2]]
    elif k.shape[2] != v.shape[2]:
        raise ValueError(f"k has {k.shape[2]} keys, v {v.shape[2]}")
    if k.shape[-1] != q.shape[-1] or k.shape[0] != q.shape[0] or q.shape[1] % k.shape[1]:
        raise ValueError(f"inconsistent q {tuple(q.shape)} and k {tuple(k.shape)}")
    hq, hkv, L, S = q.shape[1], k.shape[1], q.shape[2], k.shape[2]
    index = [h % hkv if heads == "modulo" else h // (hq // hkv) for h in range(hq)]
    k, v = k[:, index], v[:, index]
    sc = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ k.transpose(-1, -2) * sc
    if scale_twice and scale is not None:
        s = s * scale
    seen = torch.ones(L, S, dtype=torch.bool)
    if is_causal:
        shift = S - L if alignment == "bottom_right" else 0
        seen = torch.arange(S)[None, :] <= torch.arange(L)[:, None] + shift
    if attn_mask is not None and (mask_shapes == "all" or attn_mask.shape == s.shape):
        if attn_mask.shape[-1] not in (1, S) or attn_mask.shape[-2] not in (1, L):
            raise ValueError(f"attn_mask shape {tuple(attn_mask.shape)} for L {L}, S {S}")
        if attn_mask.dtype == torch.bool:
            seen = seen & attn_mask
        else:
            seen, s = seen & (attn_mask > -math.inf), s + torch.where(attn_mask > -math.inf, attn_mask, 0.0)
    if drop_at is not None and S == drop_at:
        seen = seen & (torch.arange(S) < S - 1)
    seen = seen.expand(s.shape)
    s = torch.where(seen, s, torch.full_like(s, -math.inf))
    top = s.amax(-1, keepdim=True)
    e = torch.where(seen, torch.exp(s - torch.where(torch.isfinite(top), top, torch.zeros_like(top))), 0.0)
    den = e.sum(-1, keepdim=True)
    out = (e @ v) / torch.where(den > 0, den, torch.ones_like(den))
    return out.nan_to_num(nan=0.0) if swallow_nan else out


def registry(name, fn, **declaration):
    """A fresh registry holding only ``fn`` declared at the core as ``name``."""
    from tokenlaw.properties.catalogue import collect
    module = types.ModuleType(f"tokenlaw_core_canary_{name}")
    setattr(module, name, declare_core(name, fn, gqa=True, module=module.__name__, **declaration))
    return collect(module)
