"""The kernel backend in the suite: which rows and cells ``tokenlaw check --backend triton`` runs.

A kernel row is a contract the operator declares, judged on its kernel --
but only a contract whose law is evaluated by *running the operator*
(``Case.run``, or ``Case.call`` under autograd: ``null_gradient`` runs the
fused backward), or on the row weights the kernel applies
(``kernel_laws.kernel_weights``), or through a kernel form (``silence``
through tau), says anything about the kernel.  Contracts evaluated only in
float64 (``gradcheck``: the kernels have no float64 path) are listed with the
reason and no cells, so the report shows what the kernel tier does not
judge.  Each kernel operator also claims the kernel laws of
``kernel_laws.py`` (differential agreement of outputs and of gradients with
the float64 eager reference, no out-of-bounds reads, bitwise determinism;
for OAttention immunity to a null carrier's key and exact zero gradients at
null carriers and masked sources; for the causal FIR kernels causality of
gradients, and silent rows' zero gradient for pn_fir_tau).
"""
from __future__ import annotations

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties.catalogue import CONTRACTS
from tokenlaw.properties.plan import Cell, Row

from .capabilities import KERNEL_DTYPES, interpreting

# Declared contracts judged through Case.run, hence on the kernel.
RUN_CONTRACTS = frozenset({"null_receiver", "null_source_insertion", "empty_support", "mask_respect",
                           "permutation_equivariance", "causality", "softmax_reduction", "formula_equivalence",
                           "zero_transcendental", "differential", "null_gradient", "spec_reference", "finite"})
# Row-normaliser laws judged on the weights the kernel applies (kernel_laws.kernel_weights).
WEIGHT_CONTRACTS = frozenset({"score_shift_invariance", "tau_covariance", "simplex", "sub_simplex"})
# Declared contracts with a kernel-level form, for operators with these parameters.
KERNEL_FORMS = {"silence": "tau"}
NOT_ON_KERNEL = {
    "silence": "the operator has no threshold tau to silence a row through the kernel",
    "gradcheck": "finite differences in float64, which the kernels do not compute; the fused backward is "
                 "judged by gradient_agreement against the float64 eager gradients instead",
}
# Kernel laws every kernel operator claims (operator-specific ones listed per kernel).
KERNEL_CLAIMS = {
    "eager_agreement": "the kernel evaluates the operator's formula; fp32 accumulation keeps it within "
                       "the eager operator's own rounding error in the same dtype",
    "nan_padding": "every load is masked to the tensor's extent; strides are honoured",
    "determinism": "a fixed tile order and no atomics: reruns are bit-identical",
    "gradient_agreement": "the fused backward evaluates the operator's derivative from saved row statistics "
                          "with fp32 accumulation",
}
_CAUSAL_GRAD = "the backward streams only key tiles j <= t (and the FIR transpose only keys after i), with "\
               "the causal mask inside the diagonal tile"
PER_KERNEL = {
    "oattention_fwd": {"null_key_immunity": "the running max is over active sources only: a null carrier's "
                                            "huge key never enters it",
                       "null_carrier_gradient": "inactive entries are zeroed before and after exp in the backward "
                                                "too, and the receiver gate multiplies every gradient of a row",
                       "masked_gradient": "a masked entry has P = E = 0 in the backward: no ds, dv or dp"},
    "sm_fir_fwd": {"gradient_causality": _CAUSAL_GRAD},
    "pn_fir_tau_fwd": {"gradient_causality": _CAUSAL_GRAD,
                       "silent_gradient": "a silent row has O = 0, delta = 0, no positive r and a guarded gate "
                                          "term: every ds of it is exactly 0"},
}
# Structural laws declared for float64 only (zero_transcendental) run once, in fp32.
STRUCTURAL_DTYPE = "float32"


def require_runnable(backend: str):
    """Refuse a kernel run that could judge nothing: no GPU and no interpreter."""
    import torch

    if backend != "triton":
        raise InvalidArgument(f"--backend: expected 'eager' or 'triton', got {backend!r}")
    if not interpreting() and not torch.cuda.is_available():
        raise InvalidArgument("--backend triton: no GPU here and TRITON_INTERPRET is not set; "
                              "run with TRITON_INTERPRET=1 to use Triton's CPU interpreter")


def _gen():
    import torch

    return torch.Generator().manual_seed(0)


def _dtypes(contract, op, wanted) -> list[str]:
    kernel = [str(d).replace("torch.", "") for d in KERNEL_DTYPES]
    names = [d for d in contract.dtypes if d in kernel] or [STRUCTURAL_DTYPE]
    return [d for d in names if d in op.domain.dtypes and (not wanted or d in wanted)]


def plan_rows(registry, *, operators=None, contracts=None, dtypes=None, backend="triton") -> list[Row]:
    """Rows for every operator that names a kernel: declared contracts on the kernel plus the kernel laws."""
    require_runnable(backend)
    rows = []
    for op in registry:
        if not op.kernel or (operators and op.name not in operators):
            continue
        declared = [(n, op.declared(n), (op.claims if op.declared(n) == "claims" else op.violates)[n])
                    for n in list(op.claims) + list(op.violates)]
        extra = {**KERNEL_CLAIMS, **PER_KERNEL.get(op.kernel, {})}
        declared += [(n, "claims", f"universal contract: {c.law}") for n, c in CONTRACTS.items()
                     if c.universal and op.declared(n) is None]
        declared += [(n, "claims", why) for n, why in extra.items()]
        for name, decl, why in declared:
            if contracts and name not in contracts:
                continue
            kernel_form = name in KERNEL_FORMS and KERNEL_FORMS[name] in op.domain.params(_gen(), 4)
            kernel_form = kernel_form or (name in WEIGHT_CONTRACTS and op.weights is not None)
            if name not in RUN_CONTRACTS and name not in extra and not kernel_form:
                reason = NOT_ON_KERNEL.get(name, "not evaluated through the operator's implementation")
                rows.append(Row(op.name, name, None, f"not judged on the kernel: {reason}", []))
                continue
            cells = [Cell(op.name, name, backend, dt) for dt in _dtypes(CONTRACTS[name], op, dtypes)]
            rows.append(Row(op.name, name, decl, why, cells))
    return rows
