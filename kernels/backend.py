"""tokenlaw's Triton kernels as a backend plug-in: ``tokenlaw check --backend triton``.

:class:`TritonBackend` implements the backend protocol of
``tokenlaw.properties.backends`` exactly as a third party's backend would,
and registers itself through the ``tokenlaw.backends`` entry-point group
(``pyproject.toml``: ``triton = "tokenlaw.kernels.backend:TRITON"``).  The
suite then judges, for every operator of its binding table (:data:`BINDINGS`:
operator name -> the kernel that runs it), the contracts the operator declares that are
evaluated through its implementation, plus the implementation laws every
backend owes (``tokenlaw.properties.implementation_laws``) and the
operator's own ``implementation_claims``.  Nothing in the suite asks for
this backend by name, and no operator names a kernel: everything about the
kernels is declared here --

* ``run_env`` ``TRITON_INTERPRET`` (Triton interprets a kernel on the CPU when it
  is set as the kernel is decorated, i.e. when ``triton`` is first imported:
  ``env_fixed_by``), recorded in a run's report and set again by the gate;
* provenance: the hashes of ``kernels/*.py`` and, per binding, its own file
  (the protocol's default over this package's folder);
* ``mutants()``: the seeded kernel bugs of ``kernels/mutants.py``;
* ``benchmark``: ``kernels/bench.py`` (``tokenlaw bench``).

What it declares about itself:

* ``dtypes`` fp32 / fp16 / bf16 (float64 is the reference precision: the
  kernels have no float64 path, see :meth:`TritonBackend.run`); bf16 is not
  runnable under the CPU interpreter (``capabilities.BF16_INTERPRETER_BUG``);
* ``max_n`` = ``capabilities.N_MAX``: sequences long enough to cross the
  interpreter's tile edges;
* ``weights``: the row weights a FIR kernel applies, read off its output
  with a probe built for it; ``transcendentals``: the interpreter's trace
  (or, compiled, the kernel's source).
"""
from __future__ import annotations

import importlib.util

import torch

from tokenlaw.operators import projections
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.fir import TAPS
from tokenlaw.operators.presence import presence
from tokenlaw.operators.xp import TORCH
from tokenlaw.properties.backends import Backend

from . import capabilities
from .bench import TritonBench
from .capabilities import interpreting
from .inspection import trace_transcendentals, transcendental_names

# The binding table: operator name -> the forward kernel (``ops.<name>``, source ``kernels/<name>.py``)
# that runs its attention core; and the variant of layers.fir_attention_layer that launches each FIR kernel.
BINDINGS = {"oattention": "oattention_fwd", "sm_fir": "sm_fir_fwd", "pn_fir_tau": "pn_fir_tau_fwd"}
FIR_VARIANTS = {"sm_fir_fwd": "sm_fir", "pn_fir_tau_fwd": "pn_fir_tau"}


def _dtype(name: str) -> torch.dtype:
    return getattr(torch, name)


def _eager_here(dtype: torch.dtype) -> bool:
    """Dtypes evaluated by the eager operator: float64 (the reference precision; the kernels have none)
    and, under the interpreter, bf16 (its tl.dot is wrong: such cells are reported not runnable, and the
    only bf16 runs left are the tolerance model's probes, for which an independent evaluation of the
    same formula is exactly what they need)."""
    return dtype == torch.float64 or (dtype == torch.bfloat16 and interpreting())


class TritonBackend(Backend):
    """The fused Triton kernels (``kernels/*_fwd.py``, ``*_bwd.py``), compiled on a GPU or interpreted on CPU."""

    name = "triton"
    dtypes = tuple(str(d).replace("torch.", "") for d in capabilities.KERNEL_DTYPES)
    max_n = capabilities.N_MAX
    autograd = True
    run_env = ("TRITON_INTERPRET",)
    env_fixed_by = ("triton",)
    benchmark = TritonBench(lambda op: implementation(op))    # implementation: defined below

    def available(self) -> str | None:
        if importlib.util.find_spec("triton") is None:
            return "Triton is not installed (pip install triton)"
        if not interpreting() and not torch.cuda.is_available():
            return ("no GPU here and TRITON_INTERPRET is not set; run with TRITON_INTERPRET=1 to use "
                    "Triton's CPU interpreter")
        return None

    def binds(self) -> dict[str, str]:
        return dict(BINDINGS)

    def implements(self, op) -> str | None:
        if op.name in BINDINGS:
            return None
        return f"tokenlaw's Triton kernels implement {sorted(BINDINGS)}, not {op.name!r}"

    def mutants(self) -> tuple:
        """The seeded kernel bugs (``kernels/mutants.py``); none when Triton is not installed."""
        try:
            from .mutants import catalogue  # optional: Triton (the mutants patch its kernels)
        except ImportError:
            return ()
        return catalogue()

    def not_runnable(self, dtype: str) -> str | None:
        return capabilities.not_runnable(_dtype(dtype))

    def _layer(self, op):
        from . import layers  # optional: Triton; available() answers without it

        why = self.implements(op)
        if why:
            raise InvalidArgument(f"op: {why}")
        kernel = BINDINGS[op.name]
        if kernel == "oattention_fwd":
            return lambda x, mask=None, **params: layers.oattention_layer(x, mask, **params)
        variant = FIR_VARIANTS[kernel]
        return lambda x, **params: layers.fir_attention_layer(x, variant, **params)

    def run(self, op, x, **kwargs):
        """The operator's kernel layer (projections in torch, the attention core in the kernel).

        float64 inputs (and bf16 under the interpreter) are evaluated by the eager operator: see
        :func:`_eager_here`.
        """
        if _eager_here(x.dtype):
            return op.fn(TORCH, x, **kwargs)
        return self._layer(op)(x, **kwargs)

    def run_placed(self, op, x, place, **kwargs):
        """The kernel launched directly on the projected heads, each of its inputs passed through ``place``
        (the kernel's own loads are what a NaN-padded buffer tests; the torch projections before it are not
        the kernel's)."""
        from . import ops  # optional: Triton; available() answers without it

        dtype = x.dtype
        q, k, v = projections.project_qkv(TORCH, x, wq=kwargs["wq"], bq=kwargs["bq"], wk=kwargs["wk"],
                                          bk=kwargs["bk"], wv=kwargs["wv"], bv=kwargs["bv"], heads=kwargs["heads"])
        kernel = BINDINGS[op.name]
        with torch.no_grad():
            if kernel == "oattention_fwd":
                pres = presence(TORCH, x, tau=kwargs["tau"])[..., 0].float()
                mask = kwargs.get("mask")
                return ops.oattention_fwd(place(q), place(k), place(v), place(pres),
                                          None if mask is None else place(mask.to(dtype)),
                                          float(kwargs["eps_den"]), False)
            if kernel == "sm_fir_fwd":
                return ops.sm_fir_fwd(place(q), place(k), place(v))
            tau = torch.tensor(float(kwargs["tau"]), dtype=torch.float32)
            return ops.pn_fir_tau_fwd(place(q), place(k), place(v), tau)

    def weights(self, op, s, mask, dtype, **params):
        """The weights W(S) the operator's *kernel* applies to scores ``s`` (batch, n, n).

        The kernels take q, k, v, not scores, so the inputs are built to make the
        output equal W: one head of width n, values v = I, keys k = F^-1 (F the
        causal FIR as an n x n lower-triangular Toeplitz matrix, invertible since
        w_0 > 0, and well conditioned since the taps decrease), so the smoothed
        keys are I and q = sqrt(n) S gives scores S.  float64 (and bf16 under the
        interpreter) are evaluated by the eager operator, as :meth:`run` does.
        """
        from . import ops  # optional: Triton; available() answers without it

        if _eager_here(dtype):
            return super().weights(op, s, mask, dtype, **params)
        kernel = BINDINGS.get(op.name)
        if kernel not in FIR_VARIANTS:
            return None                       # OAttention's kernel exposes no row normaliser
        b, n, _ = s.shape
        fir_matrix = sum(w * torch.diag(torch.ones(n - t, dtype=torch.float64), -t)
                         for t, w in enumerate(TAPS) if t < n)
        keys = torch.linalg.solve_triangular(fir_matrix, torch.eye(n, dtype=torch.float64), upper=False)
        q = (s * n ** 0.5)[:, None].to(dtype)
        k = keys.expand(b, 1, n, n).to(dtype)
        v = torch.eye(n, dtype=torch.float64).expand(b, 1, n, n).to(dtype)
        with torch.no_grad():
            if kernel == "sm_fir_fwd":
                out = ops.sm_fir_fwd(q, k, v)
            else:
                out = ops.pn_fir_tau_fwd(q, k, v, torch.tensor(float(params["tau"]), dtype=torch.float32))
        return out[:, 0]

    def transcendentals(self, op, case) -> dict | None:
        """Under the interpreter: the exp/log/... it evaluated running the case in fp32 (the kernel and its jit
        helpers, traced); compiled: the ``tl.*`` transcendentals the kernel's source names."""
        from . import layers  # optional: Triton; available() answers without it

        name = BINDINGS[op.name]
        kernel = layers.KERNELS[name]
        if not interpreting():
            return {f"{name} source: {k}": v for k, v in transcendental_names(kernel).items()}
        with trace_transcendentals() as calls:
            case.runner.run(case.x, case.mask, dtype=torch.float32)
        return {f"{name}: {k}": v for k, v in calls.items()}

    def describe(self) -> dict:
        return {**super().describe(), **capabilities.describe()}


TRITON = TritonBackend()


def implementation(op, backend: str = "triton"):
    """A callable ``impl(x, mask=None, **params)`` running ``op`` on the Triton backend (float64 and, under
    the interpreter, bf16 by the eager operator: :meth:`TritonBackend.run`)."""
    if backend != TRITON.name:
        raise InvalidArgument(f"backend: expected {TRITON.name!r}, got {backend!r}")
    layer = TRITON._layer(op)

    def impl(x, *args, **kwargs):
        if _eager_here(x.dtype):
            return op.fn(TORCH, x, *args, **kwargs)
        return layer(x, *args, **kwargs)

    impl.__name__ = f"{op.name}_{backend}"
    return impl
