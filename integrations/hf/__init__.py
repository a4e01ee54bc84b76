"""Hugging Face ``transformers`` models under the laws (optional extra: ``pip install 'tokenlaw[hf]'``).

* :mod:`.models`: tiny Llama / BERT / GPT-2 built from a config (no download), run from the hidden
  state right after their embeddings, with the padding mask and position ids as call arguments;
* :mod:`.closure`: ``tokenlaw closure --hf-config llama``: where such a model stops being O-closed,
  per layer (norm, attention, MLP, residual);
* :mod:`.attention`: tokenlaw's OAttention as ``attn_implementation="tokenlaw_oattention"``;
* :mod:`.declared`: any function with HF's attention signature as a declared tokenlaw operator
  (``declare_hf_attention``).

Without ``transformers`` importing this package still works and :func:`require` raises the one-line
:class:`~tokenlaw.operators.errors.InvalidArgument` saying how to install it (the commands exit 2).

Example::

    >>> from tokenlaw.integrations import hf
    >>> hf.available() in (True, False)
    True
"""
from __future__ import annotations

import importlib.util
import sys

from tokenlaw.operators.errors import InvalidArgument

INSTALL = ("transformers is not installed (the Hugging Face bridge needs it): "
           "pip install 'tokenlaw[hf]'  (or: pip install 'transformers>=5')")


def available() -> bool:
    """Whether ``transformers`` can be imported (a test hides it with ``sys.modules['transformers'] = None``)."""
    if "transformers" in sys.modules:
        return sys.modules["transformers"] is not None
    return importlib.util.find_spec("transformers") is not None


def require() -> None:
    """Raise the one-line install hint when ``transformers`` is missing."""
    if not available():
        raise InvalidArgument(INSTALL)
