"""Input transformations the metamorphic contracts are built from."""
from __future__ import annotations

import torch


def insert_null(x: torch.Tensor, k: int) -> torch.Tensor:
    """(h_1..h_{k-1}, 0, h_k..h_n): a zero row inserted at index k."""
    zero = torch.zeros_like(x[:, :1])
    return torch.cat([x[:, :k], zero, x[:, k:]], dim=1)


def insert_visible(mask, k: int):
    """Grow a (B, n, n) mask to n+1 with row and column k fully visible."""
    if mask is None:
        return None
    b, n, _ = mask.shape
    out = torch.ones(b, n + 1, n + 1, dtype=mask.dtype)
    keep = [i for i in range(n + 1) if i != k]
    out[:, torch.tensor(keep)[:, None], torch.tensor(keep)[None, :]] = mask
    return out


def others(n_new: int, k: int) -> list:
    """Indices of the old tokens after inserting at k."""
    return [i for i in range(n_new) if i != k]


def permute(x: torch.Tensor, perm: torch.Tensor) -> torch.Tensor:
    return x[:, perm]


def permute_mask(mask, perm):
    if mask is None:
        return None
    return mask[:, perm][:, :, perm]
