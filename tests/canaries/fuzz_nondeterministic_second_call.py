"""Canary: sm_fir wrong (output x 1.5) on every second call only: a closure counter, as a race or an atomic would be."""
from ._build import sm_fir_wrong_every

REASON = ("wrong on every second call: the same input judged twice disagrees; a violation found is never "
          "un-found, so the row is an UNEXPECTED violation stating the nondeterminism, never holds nor exit 70")
OPERATOR = "sm_fir"
CAUGHT_BY = ("spec_reference",)
NONDETERMINISTIC = True      # the violation's verdict must say so (extra["nondeterministic"])

registry = sm_fir_wrong_every(2)
