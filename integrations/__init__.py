"""Bridges to code people already run: torch's SDPA implementations, FlexAttention, Hugging Face.

A peer of ``fuzz``, ``symbolic`` and ``kernels`` (layer 3): it builds on the
operator registry and the properties, and never imports the other tiers.
Optional dependencies (``transformers``) are imported where they are used, and
a missing one is a clear one-line error, never an import failure of tokenlaw.
"""
