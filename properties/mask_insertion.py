"""Grow a model's masks when a null token is inserted, by the mask's convention.

A null token must be *visible* (so the model is tested on it) and never
padding.  What "visible" means depends on the convention:

* ``visibility``: 0/1 or bool, (N, N) or (B, N, N), 1 = may attend (tokenlaw's modules);
* ``blocked``:    bool, (N, N) or (B*heads, N, N), True = may not attend (torch ``attn_mask`` / ``mask``);
* ``additive``:   float, same shapes, 0 = visible, -inf = blocked (torch float masks);
* ``padding``:    bool, (B, N), True = padding (torch ``key_padding_mask``);
* ``positions``:  integer position ids, (N,) or (B, N) (Hugging Face ``position_ids``): every old token
  keeps its id and the null repeats its left neighbour's (0 at the front), so the distances between old
  tokens, all a rotary or relative encoding sees, are unchanged.
"""
from __future__ import annotations

import torch

from tokenlaw.operators.errors import InvalidArgument

CONVENTIONS = {"visibility": True, "blocked": False, "additive": 0.0, "padding": False, "positions": None}


def insert_slice(t: torch.Tensor, axis: int, k: int, value=0) -> torch.Tensor:
    """``t`` with one slice filled with ``value`` inserted before index k along ``axis``: a null token
    (value 0) in a model's input, or its visible row / column in a mask (the relation's torch form for any
    model; the laws' own form over ``xp`` is ``statement.insert_null``)."""
    shape = list(t.shape)
    shape[axis] = 1
    fill = torch.full(shape, value, dtype=t.dtype, device=t.device)
    head = t.narrow(axis, 0, k)
    tail = t.narrow(axis, k, t.shape[axis] - k)
    return torch.cat([head, fill, tail], dim=axis)


def insert_into_mask(mask: torch.Tensor, convention: str, k: int, name: str = "mask") -> torch.Tensor:
    """The mask for a sequence with a null token inserted at position k."""
    if convention not in CONVENTIONS:
        raise InvalidArgument(f"{name}: mask convention must be one of {sorted(CONVENTIONS)}, got {convention!r}")
    if not torch.is_tensor(mask):
        raise InvalidArgument(f"{name}: expected a tensor mask, got {type(mask).__name__}")
    if convention == "positions":
        if mask.ndim not in (1, 2) or mask.is_floating_point() or mask.dtype == torch.bool:
            raise InvalidArgument(f"{name}: position ids are integer (N,) or (B, N), got "
                                  f"{mask.dtype} of shape {tuple(mask.shape)}")
        left = mask.narrow(-1, k - 1, 1) if k > 0 else torch.zeros_like(mask.narrow(-1, 0, 1))
        return torch.cat([mask.narrow(-1, 0, k), left, mask.narrow(-1, k, mask.shape[-1] - k)], dim=-1)
    value = CONVENTIONS[convention]
    if mask.dtype != torch.bool and isinstance(value, bool):
        value = float(value)
    if convention == "padding":
        if mask.ndim != 2:
            raise InvalidArgument(f"{name}: a padding mask is (batch, tokens), got shape {tuple(mask.shape)}")
        return insert_slice(mask, 1, k, value)
    if mask.ndim not in (2, 3) or mask.shape[-1] != mask.shape[-2]:
        raise InvalidArgument(f"{name}: a {convention} mask is (N, N) or (B, N, N), got shape {tuple(mask.shape)}")
    return insert_slice(insert_slice(mask, mask.ndim - 2, k, value), mask.ndim - 1, k, value)
