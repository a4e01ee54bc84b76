"""``st.composite`` without its per-decoration source parse (:func:`composite`)."""
from __future__ import annotations

from hypothesis import strategies as st

try:        # optional: Hypothesis internals (the source check of @st.composite)
    from hypothesis.strategies._internal import core as _st_core
except ImportError:
    _st_core = None


def composite(build):
    """``st.composite(build)()``: the same strategy object, built without re-reading ``build``'s source.

    At each decoration ``st.composite`` parses the function's source (``inspect.getsource`` of the module,
    then ``ast.parse``) only to warn when the function never calls ``draw``.  :func:`cases` defines its
    ``build`` afresh per call (``tokenlaw.fuzz.strategies.cases``), and the engine calls it once per band, edge and regime it searches: measured
    on sm_fir (all contracts, seed 0) 176 parses, 0.6 s of 42 s CPU.  A ``build`` here always draws, so the
    check is skipped (it is answered "draws") while the decoration runs; the strategy, its label (from the
    function's code) and so every draw are those of ``st.composite``.  Where the internals are absent
    (another Hypothesis) it is ``st.composite`` as is.
    """
    check = getattr(_st_core, "is_first_param_referenced_in_function", None)
    if check is None:
        return st.composite(build)()
    _st_core.is_first_param_referenced_in_function = lambda f: True
    try:
        return st.composite(build)()
    finally:
        _st_core.is_first_param_referenced_in_function = check
