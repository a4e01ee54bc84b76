"""Canary (hosts' references): a correct host judged against a wrong reference, one that ignores the mask.

The comparison must work in both directions: a reference that disagrees with the host (here: every key
visible to every query, whatever the mask) makes ``spec_reference`` violated, never ``holds``.
"""
from ._build import edited

REASON = "otransformer's declared reference drops the mask (the host itself is right)"
OPERATOR = "otransformer_l1"
CAUGHT_BY = ("spec_reference",)
LINE = '              "otransformer": references.otransformer_reference,\n'
WRONG = ('              "otransformer": lambda xp, x, mask=None, **p: references.otransformer_reference(xp, x, None, '
         '**p),\n')


registry = edited("hosts", (LINE, WRONG))
