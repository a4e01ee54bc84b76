"""Canary (class 5): SDPA wrong only at large scores, declared against the naive formula exp(s) / sum exp(s).

The naive reference overflows (or underflows to 0 / 0) exactly where the bug is, so spec_reference set
every such row aside and read ``holds`` on the others (269 rows set aside).  A regime every one of whose
rows was set aside judged nothing: the cell must read vacuous, never holds.
"""
from tokenlaw.fuzz.mutants.source_edit import mutated_module, mutated_registry
from tokenlaw.properties import verdict as V

REASON = ("a row's weights are 1.01 times softmax where exp of its scores over- or underflows, where the declared naive reference "
          "is NaN: spec_reference set every such row aside")
OPERATOR = "sdpa"
CAUGHT_BY = ("spec_reference",)
OUTCOME = V.Outcome.VACUOUS          # the regime where the bug lives was never judged (no oracle is finite there)
# ... and exactly why: the regimes where the bug lives (top score past exp's overflow edge, or below its
# underflow edge) are the blind ones, every row of them set aside without a finite oracle.  Not violated:
# the same search with a correct SDPA and this reference reads the same (test_canaries_fuzz), and where a
# fill pinned scores_low in float64 (-780.8) the reference is finite but 1e-5 off, and a correct SDPA read
# violated at the same counterexample as this canary (fuzz.regimes._offset_pin): a false alarm, no catch.
BLIND = ("scores_low", "scores_high")
NAIVE = '''
def _naive_reference(xp, x, mask=None, *, wq, bq, wk, bk, wv, bv, wo, heads):
    q, k, v = references._qkv(xp, x, wq, bq, wk, bk, wv, bv, heads)
    s = references._scores(xp, q, k)
    m = xp.ones_like(s) if mask is None else (mask[None, None] if mask.ndim == 2 else mask[:, None]) * xp.ones_like(s)
    e = xp.exp(s) * m
    return xp.matmul(references._unheads(xp, xp.matmul(xp.div(e, xp.sum(e, axis=-1, keepdims=True)), v)), wo)


@declare('''
WEIGHTS = "    w = sdpa_weights(xp, projections.scores(xp, q, k), hm)\n"
# a row is wrong exactly where exp of its largest score overflows float64 or every exp underflows to 0
WRONG = ("    s_ = projections.scores(xp, q, k)\n"
         "    w = sdpa_weights(xp, s_, hm)\n"
         "    top_ = s_.amax(-1, keepdim=True)\n"
         "    w = w * (1 + 0.01 * ((top_ > 709) | (top_ < -745)).to(w.dtype))\n")


def registry(base):
    return mutated_registry(base, mutated_module("tokenlaw.operators.sdpa", [
        ("\n@declare(", NAIVE),
        ("reference=references.sdpa_reference,", "reference=_naive_reference,"),
        (WEIGHTS, WRONG)]))
