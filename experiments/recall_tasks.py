"""Synthetic associative-recall sequences (the pn_fir_tau paper's recall tasks, as this project defines them).

A sequence is ``pairs`` key-value pairs and one query, ``k_1 v_1 k_2 v_2 ... k_P v_P q``: the keys are
distinct tokens drawn from ``keys`` key tokens (ids 0 .. keys-1), the values are drawn independently from
``values`` value tokens (ids keys .. keys+values-1). An *answerable* query repeats one of the context's keys,
chosen uniformly; its target is that key's value (class 0 .. values-1). An *unanswerable* query is a key that
is not in the context; its target is the extra class ``values`` ("no answer").

With ``decoys`` a distractor slot follows every pair, ``k_1 v_1 d k_2 v_2 d ... k_P v_P d q``: its token id is
``keys + values`` and :attr:`Batch.decoy` marks it, so the caller can put a distractor vector there (the
experiments put noise of a stated amplitude). Under the causal FIR the slot's smoothed key is mostly the
pair before it, so it is a decoy the query partly matches, carrying no value of its own.

Everything is drawn from the caller's ``torch.Generator``: the same generator state gives the same batch.
"""
from __future__ import annotations

import dataclasses

import torch

from tokenlaw.operators import arguments
from tokenlaw.operators.errors import InvalidArgument


@dataclasses.dataclass(frozen=True)
class Batch:
    tokens: torch.Tensor        # (B, 2 * pairs + 1), or (B, 3 * pairs + 1) with decoys; int64
    targets: torch.Tensor       # (B,) class: a value index, or ``values`` for "no answer"
    answerable: torch.Tensor    # (B,) bool
    decoy: torch.Tensor         # (B, N) bool: the distractor slots (all False without decoys)


def check_task(pairs: int, keys: int, values: int, unanswerable: float = 0.0) -> None:
    """Refuse a task that cannot be built, naming the argument."""
    arguments.count(pairs, "pairs")
    arguments.count(values, "values")
    arguments.count(keys, "keys")
    if keys < pairs + (1 if unanswerable > 0 else 0):
        raise InvalidArgument(f"keys: expected at least pairs (+1 when some queries are unanswerable) = "
                              f"{pairs + (1 if unanswerable > 0 else 0)} distinct keys, got {keys}")
    if not 0.0 <= unanswerable <= 1.0:
        raise InvalidArgument(f"unanswerable: expected a fraction in [0, 1], got {unanswerable!r}")


def vocabulary(keys: int, values: int, decoys: bool = False) -> int:
    """The number of token ids a task uses (keys, values, and the distractor id with decoys)."""
    return keys + values + (1 if decoys else 0)


def batch(gen: torch.Generator, size: int, *, pairs: int, keys: int, values: int, unanswerable: float = 0.0,
          decoys: bool = False) -> Batch:
    """``size`` recall sequences; a fraction ``unanswerable`` of them (each drawn independently) ask for a key
    that is absent from the context."""
    check_task(pairs, keys, values, unanswerable)
    arguments.count(size, "size")
    order = torch.rand(size, keys, generator=gen).argsort(dim=-1)            # a random permutation per row
    ctx_keys = order[:, :pairs]
    vals = torch.randint(0, values, (size, pairs), generator=gen)
    pick = torch.randint(0, pairs, (size,), generator=gen)
    absent = torch.rand(size, generator=gen) < unanswerable
    rows = torch.arange(size)
    query = torch.where(absent, order[:, pairs % keys], ctx_keys[rows, pick])
    targets = torch.where(absent, torch.full_like(pick, values), vals[rows, pick])
    slots = [ctx_keys, vals + keys] + ([torch.full_like(vals, keys + values)] if decoys else [])
    tokens = torch.cat([torch.stack(slots, dim=-1).reshape(size, len(slots) * pairs), query[:, None]], dim=1)
    decoy = tokens == keys + values if decoys else torch.zeros_like(tokens, dtype=torch.bool)
    return Batch(tokens, targets, ~absent, decoy)
