"""A few architectures' tiny configs and traits, written to build on old and new ``transformers`` alike.

Each builder takes the drawn :class:`~.model_laws.Knobs` and returns a config of the installed
``transformers`` (no download); each is a top-level function, so a pinned version's subprocess
imports it by name.  The traits are read from the architecture's code, never from a result:

* ``mistral``: causal, rotary, takes position ids, a ``sliding_window`` on every layer, GQA;
* ``llama``: causal, rotary, position ids, GQA, no window;
* ``qwen2``: as Llama with ``use_sliding_window`` / ``max_window_layers`` (full layers below it);
* ``gpt2``: causal, learned absolute positions, takes ``position_ids``;
* ``bert``: bidirectional masked LM, learned absolute positions, takes ``position_ids``.

The all-architectures sweep (``integrations/hf/zoo.py``) covers the rest; :data:`ARCHES` is what
``tokenlaw hf bisect --arch`` and the bug benchmark name.

Example::

    >>> sorted(ARCHES)
    ['bert', 'gpt2', 'llama', 'mistral', 'qwen2']
"""
from __future__ import annotations

import dataclasses
from typing import Callable

try:
    import transformers  # optional: pip install 'tokenlaw[hf]'
except ImportError:       # hidden or absent: model_laws.judge() calls require() first
    transformers = None

from tokenlaw.operators.errors import InvalidArgument

from .model_laws import Knobs, Traits


def _sizes(k: Knobs) -> dict:
    return dict(hidden_size=k.hidden, intermediate_size=2 * k.hidden, num_hidden_layers=k.layers,
                num_attention_heads=k.heads, vocab_size=k.vocab, max_position_embeddings=128)


def mistral(k: Knobs):
    """A tiny MistralConfig; ``sliding_window`` None turns the window off."""
    return transformers.MistralConfig(**_sizes(k), num_key_value_heads=k.kv_heads, sliding_window=k.sliding_window)


def llama(k: Knobs):
    return transformers.LlamaConfig(**_sizes(k), num_key_value_heads=k.kv_heads)


def qwen2(k: Knobs):
    """A tiny Qwen2Config: with a window, layer 0 is full and the rest sliding (``max_window_layers=1``)."""
    on = k.sliding_window is not None
    return transformers.Qwen2Config(**_sizes(k), num_key_value_heads=k.kv_heads, use_sliding_window=on,
                                    sliding_window=k.sliding_window or 4, max_window_layers=1)


def gpt2(k: Knobs):
    return transformers.GPT2Config(n_embd=k.hidden, n_layer=k.layers, n_head=k.heads, n_inner=2 * k.hidden,
                                   vocab_size=k.vocab, n_positions=128, resid_pdrop=0.0, embd_pdrop=0.0,
                                   attn_pdrop=0.0)


def bert(k: Knobs):
    return transformers.BertConfig(**_sizes(k), hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


@dataclasses.dataclass(frozen=True)
class Arch:
    """An architecture: its config builder and what it is."""

    build: Callable
    traits: Traits


ARCHES = {
    "mistral": Arch(mistral, Traits(sliding_window=True, gqa=True)),
    "llama": Arch(llama, Traits(gqa=True)),
    "qwen2": Arch(qwen2, Traits(sliding_window=True, gqa=True)),
    "gpt2": Arch(gpt2, Traits(positions="absolute")),
    "bert": Arch(bert, Traits(causal=False, positions="absolute", kv_cache=False, head="masked_lm")),
}


def arch(name: str) -> Arch:
    """The architecture called ``name``, or InvalidArgument naming ``--arch``."""
    if name not in ARCHES:
        raise InvalidArgument(f"--arch: expected one of {', '.join(sorted(ARCHES))}, got {name!r}")
    return ARCHES[name]
