"""tokenlaw: the public face.  What a user or a plug-in author needs, from one import.

>>> import tokenlaw
>>> issubclass(tokenlaw.InvalidArgument, tokenlaw.TokenlawError)
True

Declaring an operator and its contracts::

    from tokenlaw import declare, Domain, Limit, contract, Backend
    from tokenlaw import declare_core, declare_flex, declare_hf_attention

Running the tiers as library calls (each returns a report ``Document``; nothing is written)::

    from tokenlaw import CheckSettings, ProveSettings, check, prove, verify, gate

Every name but the error types is loaded on first use (PEP 562), so ``import tokenlaw`` and
``from tokenlaw import InvalidArgument`` load no torch and pin no CPU paths; ``tokenlaw.declare``
loads the operators layer (which pins them, ``tokenlaw.operators``), ``tokenlaw.check`` the tiers.
The modules behind the names are internal: their paths may move, these names stay.
"""
from __future__ import annotations

import importlib

# absolute: pytest imports a checkout's root __init__.py by its file, outside any package
from tokenlaw.errors import DeclarationError, InvalidArgument, NotRunnableHere, TokenlawError

# name -> the module that defines it (loaded on first access); a module itself where the name is one:
# ``arguments`` (validating an operator's inputs: tokens, mask, positive ...), ``limits`` (a Domain's
# magnitude limits), ``cells`` (a registry's rows as plain pytest tests, what ``tokenlaw new`` writes),
# ``hf_attention`` (OAttention as a Hugging Face model's attention: ``hf_attention.attach(model, ...)``)
_MODULES = {"arguments": "tokenlaw.operators.arguments", "limits": "tokenlaw.operators.limits",
            "cells": "tokenlaw.app.cells", "hf_attention": "tokenlaw.integrations.hf.attention"}
_LAZY = {
    # declaring operators and contracts
    "declare": "tokenlaw.operators.registry",
    "Domain": "tokenlaw.operators.registry",
    "Limit": "tokenlaw.operators.registry",
    "collect": "tokenlaw.properties.catalogue",
    "default_registry": "tokenlaw.properties.catalogue",
    "contract": "tokenlaw.properties.contract",
    "Backend": "tokenlaw.properties.backends",
    "Mutant": "tokenlaw.properties.mutants",
    "Interval": "tokenlaw.operators.registry",
    "TORCH": "tokenlaw.operators.xp",                   # the array namespace an operator's math is written against
    # the declaration helpers: q, k, v kernels, FlexAttention mods, Hugging Face attention functions
    "declare_core": "tokenlaw.operators.core",
    "declare_flex": "tokenlaw.operators.flex",
    "declare_hf_attention": "tokenlaw.integrations.hf.declared",
    # an operator's cells under Hypothesis (HypoFuzz, your own @given tests)
    "strategy": "tokenlaw.fuzz.given",
    "claimed_cells": "tokenlaw.fuzz.given",
    "check_example": "tokenlaw.fuzz.given",
    # the tiers as library calls
    "CheckSettings": "tokenlaw.orchestration.runs",
    "ProveSettings": "tokenlaw.orchestration.runs",
    "check": "tokenlaw.orchestration.runs",
    "prove": "tokenlaw.orchestration.runs",
    "verify": "tokenlaw.orchestration.runs",
    "gate": "tokenlaw.orchestration.gate",
    # what they return
    "Document": "tokenlaw.reports.document",
    "Outcome": "tokenlaw.properties.verdict",
    "Status": "tokenlaw.properties.verdict",
    "Verdict": "tokenlaw.properties.verdict",
}

__all__ = ["TokenlawError", "InvalidArgument", "DeclarationError", "NotRunnableHere", *_LAZY, *_MODULES]


def __getattr__(name: str):
    if name in _MODULES:
        return importlib.import_module(_MODULES[name])
    if name not in _LAZY:
        raise AttributeError(f"module 'tokenlaw' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)


def __dir__():
    return sorted(set(globals()) | set(__all__))
