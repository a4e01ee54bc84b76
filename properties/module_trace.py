"""Record what every submodule of an ``nn.Module`` saw and produced, with forward hooks.

:func:`trace` runs a model once and returns one :class:`Call` per submodule
call, in completion order (a child finishes before its parent, so the
first call that misbehaves is the innermost, earliest one).  Only the first
tensor among the positional inputs and the first tensor in the output are
kept: the token stream for the layers that matter (attention returns
``(out, weights)``; norms, linears and blocks return a tensor).  A module
called with keywords only (Hugging Face's ``self_attn(hidden_states=...)``)
gives the first tensor among its keyword arguments, in call order.

Example::

    >>> import torch
    >>> calls = trace(torch.nn.Sequential(torch.nn.Linear(2, 2)), (torch.zeros(1, 3, 2),))
    >>> [c.name for c in calls]
    ['0', '']
"""
from __future__ import annotations

import dataclasses

import torch
from torch import nn

from tokenlaw.operators import tree


@dataclasses.dataclass
class Call:
    name: str                    # the submodule's qualified name ("" is the model itself)
    index: int                   # how many times this submodule was called before
    type: str                    # class name, e.g. "LayerNorm"
    input: torch.Tensor | None   # first tensor among the positional arguments (else the keyword ones)
    output: torch.Tensor | None  # first tensor in the output


def first_tensor(value):
    """The first tensor found in value (a tensor, or nested tuples / lists / dicts)."""
    return next((t for _, t in tree.leaves(value) if torch.is_tensor(t)), None)


def trace(model: nn.Module, args: tuple, kwargs: dict | None = None) -> list[Call]:
    """Run ``model(*args, **kwargs)`` once and record every submodule call.

    Runs with autograd *enabled*: PyTorch's fused inference fast paths
    (``TransformerEncoderLayer`` in eval mode under ``no_grad``) bypass the
    submodules, and their hooks would never fire.
    """
    calls, counts, handles = [], {}, []

    def hook_for(name):
        def hook(module, inputs, kwargs, output):
            i = counts.get(name, 0)
            counts[name] = i + 1
            inp, out = first_tensor(inputs), first_tensor(output)
            if inp is None:
                inp = first_tensor(list(kwargs.values()))
            calls.append(Call(name, i, type(module).__name__,
                              None if inp is None else inp.detach().clone(),
                              None if out is None else out.detach().clone()))
        return hook

    for name, module in model.named_modules():
        handles.append(module.register_forward_hook(hook_for(name), with_kwargs=True))
    try:
        with torch.enable_grad():
            model(*args, **(kwargs or {}))
    finally:
        for h in handles:
            h.remove()
    return calls
