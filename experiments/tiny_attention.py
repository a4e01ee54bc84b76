"""Tiny attention models trained on the CPU with the registry's own row maps (the pn_fir_tau paper's experiments).

Every attention layer here calls :func:`tokenlaw.operators.fir_attention.fir_attention` (the body the FIR
family's registered operators run) on :data:`~tokenlaw.operators.xp.TORCH`, with the row map a registered
operator declares (``OperatorSpec.weights``): the attention trained is the one ``tokenlaw check`` verifies.
A row map is named by a :class:`RowMap`:

* ``softmax``: ``sm_fir``'s softmax with a one-tap filter ``(1.0,)``, i.e. plain causal softmax attention;
* ``sm_fir``, ``pn``, ``pn_fir_c``, ``pn_fir_tau``: the registered FIR operators (7-tap half-Gaussian keys);
  ``pn_fir_tau``'s threshold tau is one learnable scalar per layer, initialised at 0 (pn's point);
* ``sparsemax``, ``entmax15``, ``softmax_one`` (the virtual sink: a constant 1 in the denominator),
  ``sink_softmax`` (a learned sink logit per head, initialised at 0) and ``sigmoid_attn`` from the zoo, run
  over the same FIR keys (a single layer recalls nothing without them, so the comparison is of the row maps).

Training is seeded and deterministic: one CPU thread, ``torch.use_deterministic_algorithms``, the model's
initialisation from ``torch.manual_seed(seed)`` and every batch from its own ``torch.Generator``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import statistics
import time

import torch
from torch import nn

from tokenlaw.operators import arguments
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.fir import TAPS
from tokenlaw.operators.fir_attention import fir_attention
from tokenlaw.operators.xp import TORCH
from tokenlaw.properties import catalogue

IDENTITY_TAPS = (1.0,)


@dataclasses.dataclass(frozen=True)
class RowMap:
    """A named row map: the registered operator whose ``weights`` it is, over FIR or plain keys, and what it learns."""

    name: str
    operator: str
    fir: bool = True
    learns: str | None = None        # "tau" (one scalar per layer) or "sinks" (one logit per head)

    @property
    def taps(self) -> tuple:
        return TAPS if self.fir else IDENTITY_TAPS


ROW_MAPS = {r.name: r for r in (
    RowMap("softmax", "sm_fir", fir=False),
    RowMap("sm_fir", "sm_fir"),
    RowMap("pn", "pn"),
    RowMap("pn_fir_c", "pn_fir_c"),
    RowMap("pn_fir_tau", "pn_fir_tau", learns="tau"),
    RowMap("sparsemax", "sparsemax"),
    RowMap("entmax15", "entmax15"),
    RowMap("softmax_one", "softmax_one"),
    RowMap("sink_softmax", "sink_softmax", learns="sinks"),
    RowMap("sigmoid_attn", "sigmoid_attn"),
)}


@functools.cache
def registry():
    """The built-in operators and the normaliser zoo (collected once)."""
    return catalogue.collect("tokenlaw.operators", "tokenlaw.operators.zoo")


def row_map(name) -> RowMap:
    """The :class:`RowMap` called ``name``; an unknown name is refused, naming the argument."""
    if name not in ROW_MAPS:
        raise InvalidArgument(f"normaliser: expected one of {sorted(ROW_MAPS)}, got {name!r}")
    return ROW_MAPS[name]


def check_row_maps(names, argument: str) -> tuple:
    """``names`` as a non-empty tuple of known row-map names, else InvalidArgument naming ``argument``."""
    names = tuple(names)
    if not names:
        raise InvalidArgument(f"{argument}: expected at least one normaliser")
    for n in names:
        if n not in ROW_MAPS:
            raise InvalidArgument(f"{argument}: expected names from {sorted(ROW_MAPS)}, got {n!r}")
    return names


class Attention(nn.Module):
    """One causal multi-head attention layer: ``fir_attention`` with a registered row map.

    ``forward`` returns the output (B, N, D) and the weights the row map produced (B, H, N, N).

    >>> layer = Attention(8, 2, "pn_fir_tau")
    >>> out, w = layer(torch.randn(3, 5, 8))
    >>> tuple(out.shape), tuple(w.shape)
    ((3, 5, 8), (3, 2, 5, 5))
    """

    def __init__(self, d_model: int, heads: int, normaliser: str):
        super().__init__()
        arguments.count(d_model, "d_model")
        arguments.heads(heads, d_model)
        self.row_map = row_map(normaliser)
        self.weights = registry()[self.row_map.operator].weights
        self.heads = heads
        s = 1.0 / math.sqrt(d_model)
        for name in ("wq", "wk", "wv", "wo"):
            setattr(self, name, nn.Parameter(torch.randn(d_model, d_model) * s))
        for name in ("bq", "bk", "bv"):
            setattr(self, name, nn.Parameter(torch.zeros(d_model)))
        if self.row_map.learns == "tau":
            self.tau = nn.Parameter(torch.zeros(()))
        elif self.row_map.learns == "sinks":
            self.sinks = nn.Parameter(torch.zeros(heads))

    def forward(self, x):
        seen = []

        def recorded(xp, s, mask=None, **norm):
            w = self.weights(xp, s, mask, **norm)
            seen.append(w)
            return w

        norm = {self.row_map.learns: getattr(self, self.row_map.learns)} if self.row_map.learns else {}
        out = fir_attention(TORCH, x, recorded, wq=self.wq, bq=self.bq, wk=self.wk, bk=self.bk, wv=self.wv,
                            bv=self.bv, wo=self.wo, heads=self.heads, taps=self.row_map.taps, **norm)
        return out, seen[0]


class Recaller(nn.Module):
    """One attention layer over token embeddings, a residual, and a linear read-out at the last position.

    No positional embedding: the FIR's delay line is the only position signal (the paper's single-layer setting).
    """

    def __init__(self, vocab: int, classes: int, d_model: int, heads: int, normaliser: str):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.attn = Attention(d_model, heads, normaliser)
        self.norm = nn.LayerNorm(d_model)
        self.readout = nn.Linear(d_model, classes)

    def forward(self, tokens, replace=None, where=None):
        """Logits (B, classes) at the last position and the attention weights; where ``where`` (B, N) is true
        the token's embedding is replaced by ``replace`` (B, N, D) (the distractor slots)."""
        x = self.embed(tokens)
        if replace is not None:
            x = torch.where(where[..., None], replace, x)
        out, w = self.attn(x)
        return self.readout(self.norm(x[:, -1] + out[:, -1])), w


class Block(nn.Module):
    """Pre-norm transformer block: h + Attn(LN(h)), then h + MLP(LN(h)) (GELU, 4 x width)."""

    def __init__(self, d_model: int, heads: int, normaliser: str):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = Attention(d_model, heads, normaliser)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, h):
        out, w = self.attn(self.norm1(h))
        h = h + out
        return h + self.mlp(self.norm2(h)), w


class TinyLM(nn.Module):
    """A causal character-level language model: token + learned position embeddings, ``depth`` blocks, read-out."""

    def __init__(self, vocab: int, context: int, d_model: int, heads: int, depth: int, normaliser: str):
        super().__init__()
        arguments.count(depth, "depth")
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.randn(context, d_model) * 0.02)
        self.blocks = nn.ModuleList(Block(d_model, heads, normaliser) for _ in range(depth))
        self.norm = nn.LayerNorm(d_model)
        self.readout = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        """Logits (B, N, vocab) and each layer's attention weights (B, H, N, N)."""
        h = self.embed(tokens) + self.pos[: tokens.shape[1]]
        weights = []
        for block in self.blocks:
            h, w = block(h)
            weights.append(w)
        return self.readout(self.norm(h)), weights


@contextlib.contextmanager
def deterministic():
    """One thread and deterministic kernels for the duration (the machine is shared; reruns are bit-identical)."""
    threads, det = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(det)
        torch.set_num_threads(threads)


def lr_at(step: int, steps: int, peak: float) -> float:
    """Linear warm-up over 5 % of the steps, then cosine decay to 10 % of the peak."""
    warm = max(1, steps // 20)
    if step < warm:
        return peak * (step + 1) / warm
    t = (step - warm) / max(1, steps - warm)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def train(model: nn.Module, loss_of, steps: int, lr: float, log=None) -> list:
    """AdamW on ``loss_of(step) -> loss`` for ``steps`` steps (gradient norm clipped at 1); the loss curve.

    The curve holds (step, mean loss over the last stretch) at 20 evenly spaced points.
    """
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    every = max(1, steps // 20)
    curve, stretch, start = [], [], time.perf_counter()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, steps, lr)
        loss = loss_of(step)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        stretch.append(loss.item())
        if (step + 1) % every == 0 or step + 1 == steps:
            curve.append((step + 1, statistics.fmean(stretch)))
            stretch = []
            if log is not None and (step + 1) % (5 * every) == 0:
                log(f"    step {step + 1}/{steps}  loss {curve[-1][1]:.4f}  {time.perf_counter() - start:.1f}s")
    return curve


def summary(values) -> dict:
    """Mean, sample standard deviation (0 for one value), min and max of per-seed numbers."""
    values = [float(v) for v in values]
    return dict(mean=statistics.fmean(values), std=statistics.stdev(values) if len(values) > 1 else 0.0,
                min=min(values), max=max(values), per_seed=values)


def pm(s: dict, digits: int = 1, scale: float = 1.0, unit: str = "") -> str:
    """'mean ± std unit (min-max)' of a :func:`summary`, each value times ``scale``."""
    f = f"{{:.{digits}f}}"
    return (f"{f.format(s['mean'] * scale)} ± {f.format(s['std'] * scale)}{unit} "
            f"(range {f.format(s['min'] * scale)}-{f.format(s['max'] * scale)})")


def seeds_of(count: int, name: str = "seeds") -> tuple:
    """Seeds 0 .. count-1, after validating ``count``."""
    return tuple(range(arguments.count(count, name)))


def every_run(experiment: str, normalisers, seeds: int, one, log=None) -> list:
    """``one(normaliser, seed)`` for every normaliser at every seed 0 .. seeds-1, in that order (each announced on
    ``log`` as ``[experiment] normaliser seed S``): the runs an experiment's figures are summarised from."""
    runs = []
    for normaliser in normalisers:
        for seed in seeds_of(seeds):
            if log is not None:
                log(f"[{experiment}] {normaliser} seed {seed}")
            runs.append(one(normaliser, seed))
    return runs


def check_fraction(value, name: str) -> float:
    """A real in [0, 1]."""
    v = arguments.scalar_value(value, name)
    if v is None or not 0.0 <= v <= 1.0:
        raise InvalidArgument(f"{name}: expected a number in [0, 1], got {value!r}")
    return v
