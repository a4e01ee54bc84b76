"""What the fuzz tier draws at the attention core: :class:`~tokenlaw.properties.core_case.CoreCase` strategies.

Every size is a Hypothesis integer whose smallest value is where it shrinks
(a counterexample that needs no long sequence, no second head or no wide
head shrinks to 1), and the rare large values are a tier drawn first
(tier 0, short, is where it shrinks):

* L and S independently: 1..8 (24 in 40 draws), 9..64 (8 in 40), 65..257 (8 in 40; nine in ten of them
  on the block edges 128, 129 and 257, the others anywhere in 65..257); one draw in eight is a decode step,
  L = 1, against 9..257 keys (half of them past 64);
* Hq 1..8, Hkv a divisor of Hq (only Hq unless the declaration draws grouped heads), batch 1..4;
* E: 1..8, an odd or prime width up to 251, or any width up to the declared ``max_head_dim`` (256);
  Ev = E, or drawn the same way independently where the declaration allows Ev != E;
* is_causal (where taken); the mask's kind (none or each accepted kind), shape (each accepted shape),
  density (1, 0.6, 0.3), up to two rows hidden from every key and a head of batch 0 hidden from every key;
* scale (where taken): the default or 1, 0.5, 2, 0.125, 1/32; q and k magnitudes 1, 1/4 or 4.

A declaration with ``square=True`` (a self-attention path) draws S = L only.
``form="square"`` draws S = L (the decode law compares causal rows with their own prefix);
``form="grouped"`` draws Hkv < Hq only (Hq 2..8; the GQA law judges nothing without grouping);
``form="masked"`` always draws a mask (where one is accepted: the mask laws judge nothing without one).
"""
from __future__ import annotations

from hypothesis import strategies as st

from tokenlaw.operators import dtypes
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties import backends
from tokenlaw.properties.core_case import CoreCase

from .composite import composite

LONG = 257                                   # past two 128-blocks plus one
EDGES = (128, 129, 257)                      # a 128-key block, one past it, one past two
ODD_HEAD_DIMS = (3, 5, 7, 11, 13, 17, 31, 61, 127, 251)
SCALES = (1.0, 0.5, 2.0, 0.125, 1.0 / 32)
MAGNITUDES = (1.0, 0.25, 4.0)
FORMS = ("plain", "square", "grouped", "masked")
HEADS = 8                                    # Hq 1..8: 4, 6 and 8 have two or more ways to group


def tiered(short: int = 8, medium: int = 64, longest: int = LONG, *, weights=(24, 8, 8)):
    """1..short most often, short+1..medium and medium+1..longest (mostly the block edges) less often; the
    tier is drawn first and shrinks to 0 (short)."""
    # sampled_from picks its items uniformly and shrinks to the first: the tier (0 first) and, in the long
    # tier, an edge or None (then any length past ``medium``)
    edges = tuple(n for n in EDGES if medium < n <= longest)
    anywhere = st.integers(medium + 1, longest)
    tiers = (st.integers(1, short), st.integers(short + 1, medium),
             st.sampled_from(edges * 3 + (None,)).flatmap(lambda e: anywhere if e is None else st.just(e)))
    pick = st.sampled_from(sum(((t,) * w for t, w in enumerate(weights)), ()))
    return pick.flatmap(lambda t: tiers[t])


def head_dims(top: int):
    """1..8, an odd or prime head dim, or any up to ``top``; the first tier is where it shrinks."""
    odd = tuple(e for e in ODD_HEAD_DIMS if e <= top) or (1,)
    return st.integers(0, 7).flatmap(lambda t: st.integers(1, min(8, top)) if t < 5
                                     else st.sampled_from(odd) if t < 7 else st.integers(1, top))


def core_cases(op, dtype, *, form: str = "plain", backend: str = backends.EAGER.name):
    """Strategy of CoreCases for the core operator ``op`` in ``dtype`` (see the module docstring)."""
    if getattr(op, "core", None) is None:
        raise InvalidArgument(f"op: expected an operator declared with declare_core, got {op.name!r}")
    if dtype not in dtypes.FLOATS:
        raise InvalidArgument(f"dtype: expected a floating torch dtype, got {dtype!r}")
    if form not in FORMS:
        raise InvalidArgument(f"form: expected one of {FORMS}, got {form!r}")
    core = op.core
    conv = core.conventions
    lengths, dims = tiered(), head_dims(core.max_head_dim)
    decode_keys = tiered(weights=(0, 1, 1))            # a decode step reads a cache: 9..257 keys
    masked = "attn_mask" in core.takes and conv.mask_kinds and conv.mask_shapes
    kinds = (st.sampled_from(conv.mask_kinds if form == "masked" else ("none",) + conv.mask_kinds) if masked
             else st.just("none"))
    shapes = st.sampled_from(conv.mask_shapes) if masked else st.just("full")
    causal = st.booleans() if "is_causal" in core.takes else st.just(False)
    scales = st.none() | st.sampled_from(SCALES) if "scale" in core.takes else st.none()

    def build(draw):
        square = form == "square" or core.square
        decode = draw(st.sampled_from((False,) * 7 + (True,))) and not square
        n = 1 if decode else draw(lengths)
        s = n if square else draw(decode_keys if decode else lengths)
        grouped = form == "grouped"
        hq = draw(st.integers(2 if grouped else 1, HEADS))
        fewer = tuple(h for h in range(1, hq) if hq % h == 0)
        hkv = draw(st.sampled_from(fewer if grouped else (hq,) + fewer)) if core.gqa else hq
        e = draw(dims)
        ev = draw(dims) if core.distinct_ev and draw(st.booleans()) else e
        kind = draw(kinds)
        shape = draw(shapes) if kind != "none" else "full"
        rows = tuple(draw(st.lists(st.integers(0, n - 1), max_size=2, unique=True))) if kind != "none" else ()
        head = draw(st.none() | st.integers(0, hq - 1)) if kind != "none" and shape == "full" else None
        return CoreCase(
            op=op, dtype=dtype, backend=backend, n=n, s=s, d=e, ev=ev, heads=hq, hkv=hkv,
            batch=draw(st.integers(1, 4)),
            seed=draw(st.integers(0, 2 ** 16)),
            pos=draw(st.integers(0, 10_000)),
            perm_seed=draw(st.integers(0, 10_000)),
            causal=draw(causal) if kind == "none" or conv.mask_with_causal else False,
            core_mask=kind, mask_shape=shape,
            mask_density=draw(st.sampled_from((1.0, 0.6, 0.3))) if kind != "none" else 1.0,
            hidden_rows=rows, hidden_head=head,
            scale_value=draw(scales),
            scale=draw(st.sampled_from(MAGNITUDES)),
        )

    return composite(build)
