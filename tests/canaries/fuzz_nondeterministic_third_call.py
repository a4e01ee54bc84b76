"""Canary: sm_fir wrong (output x 1.5) on every third call only: a closure counter, as a race or an atomic would be."""
from tokenlaw.fuzz.source_mutation import mutated_module, mutated_registry

REASON = ("wrong on every third call: the same input judged twice disagrees; a violation found is never "
          "un-found, so the row is an UNEXPECTED violation stating the nondeterminism, never holds nor exit 70")
OPERATOR = "sm_fir"
CAUGHT_BY = ("spec_reference",)
NONDETERMINISTIC = True      # the violation's verdict must say so (extra["nondeterministic"])


def registry(base):
    return mutated_registry(base, mutated_module("tokenlaw.operators.fir_attention", [
        ('@declare(name="sm_fir"',
         'def _every(k):\n'
         '    calls = [0]\n\n'
         '    def wrong():\n'
         '        calls[0] += 1\n'
         '        return calls[0] % k == 0\n'
         '    return wrong\n\n\n'
         '_WRONG = _every(3)\n\n\n'
         '@declare(name="sm_fir"'),
        ('    return fir_attention(xp, x, normalisers.softmax, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo, heads=heads,\n'
         '                         taps=taps)',
         '    o = fir_attention(xp, x, normalisers.softmax, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo, heads=heads,\n'
         '                      taps=taps)\n'
         '    return o * 1.5 if _WRONG() else o')]))
