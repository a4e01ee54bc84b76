"""A character-level language-modelling corpus read from disk: the running Python's own standard library.

The pn_fir_tau paper measures attention sinks on WikiText-2, which cannot be downloaded here. The text
used instead is the source (code, comments and docstrings) of the standard library's top-level ``*.py``
modules, in file-name order, read from ``sysconfig.get_paths()["stdlib"]``. Characters outside printable
ASCII (plus newline) become ``?``; tabs become four spaces. The first ``train_chars`` characters train, the
next ``eval_chars`` evaluate. Id 0 is a BOS token put first in every window (the paper's sinks sit on
BOS). The text depends on the interpreter's version: :func:`load` reports it and a SHA-256 of the text.
"""
from __future__ import annotations

import dataclasses
import hashlib
import platform
import sysconfig
from pathlib import Path

import torch

from tokenlaw.operators import arguments
from tokenlaw.operators.errors import InvalidArgument

ALPHABET = "\n" + "".join(chr(c) for c in range(32, 127))
BOS = 0
VOCAB = len(ALPHABET) + 1        # BOS, then the alphabet
_INDEX = {c: i + 1 for i, c in enumerate(ALPHABET)}


@dataclasses.dataclass(frozen=True)
class Corpus:
    train: torch.Tensor       # int64 ids (no BOS)
    eval: torch.Tensor
    source: str               # where the text came from: Python version, files, SHA-256


def encode(text: str) -> torch.Tensor:
    """Ids of ``text`` (tabs as four spaces, anything else outside the alphabet as '?')."""
    text = text.replace("\t", "    ")
    unknown = _INDEX["?"]
    return torch.tensor([_INDEX.get(c, unknown) for c in text], dtype=torch.int64)


def load(train_chars: int, eval_chars: int, root: str | None = None) -> Corpus:
    """The first ``train_chars + eval_chars`` characters of the standard library's modules, split in two."""
    arguments.count(train_chars, "train_chars")
    arguments.count(eval_chars, "eval_chars")
    folder = Path(root or sysconfig.get_paths()["stdlib"])
    parts, total, files = [], 0, 0
    for path in sorted(folder.glob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        parts.append(text)
        total += len(text)
        files += 1
        if total >= train_chars + eval_chars:
            break
    if total < train_chars + eval_chars:
        raise InvalidArgument(f"train_chars: {folder} holds {total} characters of *.py, fewer than "
                              f"train_chars + eval_chars = {train_chars + eval_chars}")
    text = "".join(parts)[: train_chars + eval_chars]
    ids = encode(text)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    source = (f"Python {platform.python_version()} standard library, first {files} top-level modules of {folder} "
              f"in name order, {train_chars} + {eval_chars} characters (sha256 {digest})")
    return Corpus(ids[:train_chars], ids[train_chars:], source)


def windows(ids: torch.Tensor, gen: torch.Generator, count: int, context: int):
    """``count`` windows: inputs ``[BOS, c_0 .. c_{N-2}]`` and targets ``[c_0 .. c_{N-1}]``, N = ``context``,
    at starts drawn from ``gen``."""
    if ids.numel() <= context:
        raise InvalidArgument(f"context: expected fewer than {ids.numel()} characters, got {context}")
    starts = torch.randint(0, ids.numel() - context, (count,), generator=gen)
    rows = ids[starts[:, None] + torch.arange(context)]
    inputs = torch.cat([torch.full((count, 1), BOS, dtype=torch.int64), rows[:, :-1]], dim=1)
    return inputs, rows
