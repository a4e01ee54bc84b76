"""Train one single-layer :class:`~tokenlaw.experiments.tiny_attention.Recaller` on a recall task and evaluate it.

The three recall experiments (``recall``, ``distractors``, ``unanswerable``) are settings of this one run:
a model is initialised from ``torch.manual_seed(seed)``, trained on batches drawn from
``torch.Generator().manual_seed(seed)`` with cross-entropy at the query, and evaluated on ``eval_size``
fresh sequences from a generator seeded ``EVAL_SEED + seed`` (never seen in training).

Distractor slots (``Task.decoys``) hold ``eps * rms(E) * g``, ``g ~ N(0, I)`` drawn per slot, with ``rms(E)``
the root-mean-square entry of the model's token-embedding table at that step (detached): the distractor's
amplitude relative to a token's. In training each sequence's ``eps`` is drawn uniformly from
``Task.train_eps``; evaluation uses each ``eps`` of ``eval_eps`` on the same sequences and the same ``g``.
"""
from __future__ import annotations

import dataclasses
import time

import torch

from tokenlaw.operators import arguments
from tokenlaw.operators.errors import InvalidArgument

from . import recall_tasks
from .tiny_attention import Recaller, deterministic, train

EVAL_SEED = 1_000_000


@dataclasses.dataclass(frozen=True)
class Task:
    pairs: int = 8
    keys: int = 32
    values: int = 32
    unanswerable: float = 0.0        # fraction of queries asking for an absent key
    decoys: bool = False             # a distractor slot after every pair
    train_eps: tuple = ()            # distractor amplitudes drawn from in training (with decoys)

    def check(self):
        recall_tasks.check_task(self.pairs, self.keys, self.values, self.unanswerable)
        if self.decoys and not self.train_eps:
            raise InvalidArgument("train_eps: expected at least one distractor amplitude when decoys are on")
        for e in self.train_eps:
            if arguments.scalar_value(e, "train_eps") is None or not e >= 0:
                raise InvalidArgument(f"train_eps: expected amplitudes >= 0, got {e!r}")

    @property
    def classes(self) -> int:
        return self.values + (1 if self.unanswerable > 0 else 0)

    def draw(self, gen, size):
        return recall_tasks.batch(gen, size, pairs=self.pairs, keys=self.keys, values=self.values,
                                  unanswerable=self.unanswerable, decoys=self.decoys)


@dataclasses.dataclass(frozen=True)
class Training:
    d_model: int = 32
    heads: int = 1
    steps: int = 800
    batch: int = 64
    lr: float = 3e-3
    eval_size: int = 2000

    def check(self):
        for name in ("d_model", "heads", "steps", "batch", "eval_size"):
            arguments.count(getattr(self, name), name)
        arguments.positive(self.lr, "lr")
        arguments.heads(self.heads, self.d_model)


def _distractors(model, b, gen, eps):
    """The distractor vectors (B, N, D): eps (per row) x rms(E) x N(0, I)."""
    rms = model.embed.weight.detach().pow(2).mean().sqrt()
    g = torch.randn(*b.tokens.shape, model.embed.embedding_dim, generator=gen)
    return g * (eps[:, None, None] * rms)


def _row_mass(w):
    """The query row's total weight, averaged over heads: (B,)."""
    return w[:, :, -1, :].sum(-1).mean(1)


def run_one(normaliser: str, seed: int, task: Task, training: Training, eval_eps=(0.0,), log=None) -> dict:
    """Train and evaluate one model; per evaluated ``eps``: accuracy, and split by answerable / unanswerable
    queries the accuracy, the hallucination rate (an unanswerable query answered with a value) and the
    query row's attention mass."""
    task.check()
    training.check()
    start = time.perf_counter()
    with deterministic():
        torch.manual_seed(seed)
        vocab = recall_tasks.vocabulary(task.keys, task.values, task.decoys)
        model = Recaller(vocab, task.classes, training.d_model, training.heads, normaliser)
        gen = torch.Generator().manual_seed(seed)
        choices = torch.tensor(task.train_eps or (0.0,), dtype=torch.float32)

        def loss_of(step):
            b = task.draw(gen, training.batch)
            replace = None
            if task.decoys:
                eps = choices[torch.randint(0, len(choices), (training.batch,), generator=gen)]
                replace = _distractors(model, b, gen, eps)
            logits, _ = model(b.tokens, replace, b.decoy)
            return torch.nn.functional.cross_entropy(logits, b.targets)

        curve = train(model, loss_of, training.steps, training.lr, log)
        egen = torch.Generator().manual_seed(EVAL_SEED + seed)
        b = task.draw(egen, training.eval_size)
        base = _distractors(model, b, egen, torch.ones(training.eval_size)) if task.decoys else None
        evaluation = {}
        with torch.no_grad():
            for eps in eval_eps:
                logits, w = model(b.tokens, None if base is None else base * eps, b.decoy)
                evaluation[f"{eps:g}"] = _scores(logits.argmax(-1), b, _row_mass(w), task.values)
        tau = float(model.attn.tau.detach()) if hasattr(model.attn, "tau") else None
    return dict(normaliser=normaliser, seed=seed, curve=curve, evaluation=evaluation, learned_tau=tau,
                seconds=time.perf_counter() - start)


def _scores(pred, b, mass, none_class) -> dict:
    correct = (pred == b.targets).double()
    out = dict(accuracy=float(correct.mean()))
    ans, una = b.answerable, ~b.answerable
    if bool(una.any()):
        out.update(answerable_accuracy=float(correct[ans].mean()) if bool(ans.any()) else None,
                   hallucination=float((pred[una] != none_class).double().mean()),
                   unanswerable_mass=float(mass[una].double().mean()),
                   answerable_mass=float(mass[ans].double().mean()) if bool(ans.any()) else None,
                   unanswerable_masses=[float(m) for m in mass[una]])
    return out
