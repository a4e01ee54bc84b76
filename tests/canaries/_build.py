"""Builders the canaries share, so that a canary file is its REASON plus the one thing that is wrong.

* :func:`edited`: a shipping operator module with snippets of its source replaced (each must occur
  exactly once), as ``registry(base)``;
* :func:`oattention_plus_tiny_term`: OAttention whose output gains 1e-12 * sum(x) where a one-line
  condition holds (the trace = eager canaries, issue 43 class 8);
* :func:`sm_fir_wrong_every`: sm_fir whose output is 1.5 times too large on every k-th call (the
  nondeterminism canaries, issue 43 class 1);
* :func:`softmax_attention`: a softmax attention claiming ``simplex`` whose weights are rescaled by a
  given function of the tokens (the real-row mass canaries, issue 43 class 3).

A module whose name starts with ``_`` is no canary: the canary tests collect ``fuzz_*``, ``trace_*`` ...
files only.
"""
from __future__ import annotations

import types

from tokenlaw.fuzz.mutants.source_edit import mutated_module, mutated_registry
from tokenlaw.operators import arguments, limits, normalisers, projections
from tokenlaw.operators.registry import Domain, Registry, declare
from tokenlaw.properties.catalogue import collect


def edited(module: str, *edits):
    """``registry(base)``: ``base`` with the operators of ``tokenlaw.operators.<module>`` replaced by a copy
    of that module in which each (snippet, replacement) of ``edits`` is applied."""
    def registry(base):
        return mutated_registry(base, mutated_module(f"tokenlaw.operators.{module}", list(edits)))
    return registry


# OAttention's last line: the canaries of a tiny term add to what it returns
OATTENTION_RETURN = "    return projections.output(xp, o, wo)\n"


def oattention_plus_tiny_term(condition: str):
    """``registry(base)``: OAttention returning ``out + 1e-12 * x.sum()`` where the one-line Python
    ``condition`` (source text over ``x``, ``torch``) holds, else its output."""
    return edited("oattention", (OATTENTION_RETURN, "    out = projections.output(xp, o, wo)\n"
                                 f"    return out + 1e-12 * x.sum() if {condition} else out\n"))


_SM_FIR_DECLARATION = '@declare(name="sm_fir"'
_SM_FIR_RETURN = ('    return fir_attention(xp, x, normalisers.softmax, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, '
                  'wo=wo, heads=heads,\n                         taps=taps)')


def sm_fir_wrong_every(k: int):
    """``registry(base)``: sm_fir whose output is 1.5 times too large on every ``k``-th call (a closure
    counter in the module, as a race or an atomic would be)."""
    counter = ('def _every(k):\n'
               '    calls = [0]\n\n'
               '    def wrong():\n'
               '        calls[0] += 1\n'
               '        return calls[0] % k == 0\n'
               '    return wrong\n\n\n'
               f'_WRONG = _every({k})\n\n\n')
    return edited("fir_attention", (_SM_FIR_DECLARATION, counter + _SM_FIR_DECLARATION), (_SM_FIR_RETURN, (
        '    o = fir_attention(xp, x, normalisers.softmax, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo, '
        'heads=heads,\n                      taps=taps)\n'
        '    return o * 1.5 if _WRONG() else o')))


def _softmax_weights(xp, s, mask=None):
    return normalisers.softmax(xp, s, mask)


def softmax_attention(name: str, claim: str, rescale):
    """``registry(base)``: ``base`` plus softmax attention declared as ``name`` claiming ``simplex`` (the
    ``claim`` its reason), whose weights ``w`` are replaced by ``rescale(xp, x, w)`` in its body; its
    declared ``weights=`` (what the probe reads) is plain softmax."""

    def body(xp, x, mask=None, *, wq, bq, wk, bk, wv, bv, wo, heads):
        """softmax(q k^T / sqrt(dh)) v, then wo, with the canary's rescaled weights."""
        arguments.tokens(x)
        mask = arguments.mask(mask, x)
        q, k, v = projections.project_qkv(xp, x, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, heads=heads)
        w = _softmax_weights(xp, projections.scores(xp, q, k), projections.head_mask(mask))
        return projections.output(xp, xp.matmul(rescale(xp, x, w), v), wo)

    module = types.ModuleType(f"tokenlaw_canary_{name}")
    body.__module__, body.__name__, body.__qualname__ = module.__name__, name, name
    setattr(module, name, declare(name=name, domain=Domain(params=projections.attention_params, mask="random",
                                                           limits=limits.SOFTMAX_SCORES),
                                  traits={"token_mixing", "masked", "score_normaliser"}, weights=_softmax_weights,
                                  claims={"simplex": claim})(body))

    def registry(base):
        return Registry([*base, *collect(module)], base.contracts)
    return registry
