"""Deliberately wrong operators and declarations (one per file, each with a one-line REASON).

A canary module exposes ``REASON`` (why it is wrong, one line), ``OPERATOR``
(the operator name it defines or replaces) and ``registry(base)``, which
returns a *fresh* registry holding the wrong operator (the default registry
is never mutated).  ``tests/fuzz/test_canaries_fuzz.py`` runs the fuzz tier on
each ``fuzz_*`` canary and asserts that no row of it is green.
"""
