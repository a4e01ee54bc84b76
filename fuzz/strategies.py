"""Hypothesis strategies over an operator's declared domain.

A drawn :class:`~tokenlaw.properties.case.Case` is a few small integers and
floats (sequence length first, so shrinking shortens the sequence first);
the tensors are generated from its seed.  A shrunk counterexample therefore
reads as "n=2, null=[0], seed=0" and replays from those numbers alone.
"""
from __future__ import annotations

from hypothesis import strategies as st

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties.case import Case


def cases(op, dtype, *, n_max: int | None = None, batch_max: int = 2, scales=(1.0,), backend: str = "eager"):
    """Strategy of Cases for ``op`` in ``dtype`` on ``backend`` (keyword-only bounds, validated)."""
    if n_max is None and backend != "eager":
        from tokenlaw.kernels.capabilities import N_MAX   # long enough to cross the interpreter's tile edges

        n_max = max(op.domain.n_max, N_MAX)
    n_max = op.domain.n_max if n_max is None else n_max
    if not isinstance(n_max, int) or n_max < 1:
        raise InvalidArgument(f"n_max: expected an int >= 1, got {n_max!r}")
    if not isinstance(batch_max, int) or batch_max < 1:
        raise InvalidArgument(f"batch_max: expected an int >= 1, got {batch_max!r}")
    if not scales or any(not (s > 0) for s in scales):
        raise InvalidArgument(f"scales: expected positive magnitudes, got {scales!r}")

    @st.composite
    def build(draw):
        n = draw(st.integers(1, n_max))
        null = tuple(draw(st.lists(st.integers(0, n - 1), max_size=n, unique=True)))
        return Case(
            op=op, dtype=dtype, n=n, null=null,
            batch=draw(st.integers(1, batch_max)),
            d=draw(st.sampled_from(op.domain.d_model)),
            seed=draw(st.integers(0, 2 ** 16)),
            pos=draw(st.integers(0, n)),
            perm_seed=draw(st.integers(0, 10_000)),
            shift=draw(st.floats(-5.0, 5.0, allow_nan=False, allow_infinity=False)),
            mask_density=draw(st.sampled_from((1.0, 0.6, 0.3))),
            scale=draw(st.sampled_from(tuple(scales))),
            backend=backend,
        )

    return build()
