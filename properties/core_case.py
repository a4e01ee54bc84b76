"""A drawn example at the attention core: q (B, Hq, L, E), k (B, Hkv, S, E), v (B, Hkv, S, Ev) and a mask.

A :class:`CoreCase` is a :class:`~tokenlaw.properties.case.Case` (so the fuzz
engine, the report and a replay handle it as any case) with the core's own
small fields: L (``n``), S (``s``), E (``d``), Ev (``ev``), Hq (``heads``),
Hkv (``hkv``), the batch, whether ``is_causal`` is passed, the mask's kind
(``none`` / ``bool`` / ``additive``) and shape (``operators.core.MASK_SHAPES``),
rows hidden from every key (``hidden_rows``), a (batch 0) head hidden from
every key (``hidden_head``), the ``scale`` passed (None: the default), and the
magnitude of q and k (``scale``, inherited).  Its tensors are drawn from the
seed, in float64, on first use.
"""
from __future__ import annotations

import dataclasses
import functools
import math

import torch

from tokenlaw.operators.core import visibility

from .case import VARIANTS, Case

SHAPES = {"full": lambda b, h, L, S: (b, h, L, S), "square": lambda b, h, L, S: (L, S),
          "rows": lambda b, h, L, S: (b, h, L, 1), "cols": lambda b, h, L, S: (b, h, 1, S),
          "padding": lambda b, h, L, S: (b, 1, 1, S)}


@dataclasses.dataclass(frozen=True)
class CoreCase(Case):
    """One drawn core example (frozen; the fields are small so a shrunk case reads well)."""

    variant: str = "core"
    s: int = 1
    ev: int = 4
    hkv: int = 1
    causal: bool = False
    core_mask: str = "none"          # none | bool | additive
    mask_shape: str = "full"         # operators.core.MASK_SHAPES
    hidden_rows: tuple = ()          # query rows hidden from every key (shapes with a row axis)
    hidden_head: int | None = None   # a head of batch 0 hidden from every key ("full" masks)
    scale_value: float | None = None  # the scale= passed (None: the function's default, 1/sqrt(E))

    def __post_init__(self):
        object.__setattr__(self, "hidden_rows", tuple(self.hidden_rows))

    @property
    def core(self):
        return self.op.core

    @property
    def hq(self) -> int:
        return self.heads or 1

    def shape_axes(self) -> dict:
        """The shape axes a row reports as searched (``fuzz.engine``)."""
        return {"L": self.n, "S": self.s, "E": self.d, "Ev": self.ev, "batch": self.batch, "Hq": self.hq,
                "Hkv": self.hkv}

    # -- drawn tensors (float64) --------------------------------------------
    @functools.cached_property
    def qkv(self) -> tuple:
        g = self.generator(2)
        b, hq, hkv, L, S, E, Ev = self.batch, self.hq, self.hkv, self.n, self.s, self.d, self.ev
        q = torch.randn(b, hq, L, E, generator=g, dtype=torch.float64) * self.scale
        k = torch.randn(b, hkv, S, E, generator=g, dtype=torch.float64) * self.scale
        v = torch.randn(b, hkv, S, Ev, generator=g, dtype=torch.float64)
        return q, k, v

    @functools.cached_property
    def visible(self):
        """The drawn mask as bool visibility in its drawn shape (None: no mask)."""
        if self.core_mask == "none":
            return None
        shape = SHAPES[self.mask_shape](self.batch, self.hq, self.n, self.s)
        m = torch.rand(shape, generator=self.generator(3), dtype=torch.float64) < self.mask_density
        if self.mask_shape in ("full", "square", "rows"):
            for i in self.hidden_rows:
                m[..., i % self.n, :] = False
        if self.mask_shape == "full" and self.hidden_head is not None:
            m[0, self.hidden_head % self.hq] = False
        return m

    def mask_as(self, kind: str | None = None, visible=None):
        """The mask in ``kind`` (default: the drawn mask): bool visibility, or additive float64, -inf where
        hidden and where visible a drawn finite bias (the drawn mask) or 0 (``kind`` given: a converted form)."""
        drawn = kind is None and visible is None
        visible = self.visible if visible is None else visible
        if visible is None:
            return None
        kind = self.core_mask if kind is None else kind
        if kind == "bool":
            return visible
        bias = (torch.randn(visible.shape, generator=self.generator(4), dtype=torch.float64)
                if drawn else torch.zeros(visible.shape, dtype=torch.float64))
        return torch.where(visible, bias, torch.full_like(bias, -math.inf))

    @property
    def attn_mask(self):
        return self.mask_as()

    def seen(self, mask="drawn", causal=None) -> torch.Tensor:
        """(B, Hq, L, S) bool: the keys each row sees (mask and causality under the declared alignment)."""
        mask = self.attn_mask if isinstance(mask, str) else mask
        causal = self.causal if causal is None else causal
        vis = visibility(mask, self.n, self.s, causal=causal, alignment=self.core.conventions.causal)
        return vis.expand(self.batch, self.hq, self.n, self.s)

    def keywords(self, **override) -> dict:
        """The keywords of the drawn call (only those the function takes are ever set)."""
        kw = dict(attn_mask=self.attn_mask, is_causal=self.causal, scale=self.scale_value,
                  enable_gqa=self.hkv != self.hq and "enable_gqa" in self.core.takes)
        kw.update(override)
        return kw

    def describe(self) -> dict:
        d = dict(operator=self.op.name, **self.fields())
        q, k, v = self.qkv
        if q.numel() + k.numel() + v.numel() <= 48:
            d.update(q=q.tolist(), k=k.tolist(), v=v.tolist())
            if self.attn_mask is not None and self.attn_mask.numel() <= 32:
                d["attn_mask"] = self.attn_mask.tolist()
        return d


VARIANTS["core"] = CoreCase
