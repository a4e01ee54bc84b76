"""Pin the CPU code paths that decide float rounding, so a verdict does not depend on the machine.

A tolerance bound is predicted from the operator's own float32 (and float64)
error on an input (``properties/tolerance.py``).  That error depends on the
order in which a matmul or a softmax sums its terms, and on a CPU that order
is chosen at run time from the instruction set: MKL picks an AVX-512, AVX2 or
SSE kernel for ``sgemm`` / ``dgemm`` (measured on an AVX-512 CPU: a 3 x 5 @ 5 x 4
float32 product differs in its last bits between ``MKL_CBWR`` unset, ``AVX2``
and ``COMPATIBLE``), and ATen's vectorised kernels (softmax among them) differ
between its AVX-512 and AVX2 builds.  So the same code, seed and input gave a
different bound, a different verdict and a baseline that was bit-identical on
one CPU model only (issue 19: two gradient tests failed on an AVX-512 + AMX CPU
and passed with ``MKL_CBWR=COMPATIBLE``).

:func:`pin` fixes both, for this process, before the first BLAS call:

* ``MKL_CBWR=COMPATIBLE``: MKL's conditional numerical reproducibility mode,
  the same results on every x86 CPU (MKL reads it at its first call, so setting
  it after ``import torch`` but before any matmul takes effect);
* ``ATEN_CPU_CAPABILITY=avx2``: ATen's vectorised kernels at AVX2 width on
  every CPU that has AVX2 (read at the first dispatch of such a kernel);
* ``ONEDNN_MAX_CPU_ISA=AVX2``: oneDNN (torch's bfloat16 / float16 matmuls on
  the CPU) at AVX2 too.  Measured on an AMX CPU: its AMX bfloat16 GEMM spreads a
  NaN in one row of A to *other* rows of A @ B at n = 17, 33 and 113 (an SDPA
  host's fully masked row then poisoned the rows permutation equivariance
  compares: inf); capped at AVX2 (or AVX512_CORE) only the NaN row is NaN.
  The cap does not decide *whether* torch takes oneDNN for a half matmul (it
  checks the CPU itself: AVX-512 yes, AVX2-only no, then ATen's fallback GEMM,
  which rounds differently), so tokenlaw's own eager half matmul does not call
  torch's half GEMM at all (``xp.TorchNamespace.matmul``: float32 product,
  rounded once); the cap still covers torch functions an operator calls, such
  as ``scaled_dot_product_attention``.

A value the user set is overridden (and the pin is recorded in every report's
``meta.cpu_paths``); ``TOKENLAW_CPU_PATHS=native`` leaves the machine's choice
alone, recorded as ``native`` (the gate then compares bits only between runs
with the same record).  Importing ``tokenlaw.operators`` pins: every tier,
the CLI and the pytest plug-in import it before any tensor arithmetic.
"""
from __future__ import annotations

import contextlib
import hashlib
import os

import torch

PINNED = {"MKL_CBWR": "COMPATIBLE", "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
OPT_OUT = "TOKENLAW_CPU_PATHS"


@contextlib.contextmanager
def one_thread():
    """torch on one thread inside the block (the thread count it had is restored after).

    The thread count is a code path too: a parallel reduction sums in an order that depends on it
    (measured: an oattention cell's float32 bound and the example the search steered to differed between
    2 threads and 1), so a verdict would depend on the machine's cores and on ``--workers``.  And a tiny
    model's matmuls are microseconds: on a loaded machine two threads waiting on each other made each
    forward of a tiny Hugging Face model 0.55 s instead of 2.5 ms.  The fuzz runs, every Dask cell
    and the model laws' searches run under it.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def native() -> bool:
    """True when the user asked to keep the machine's own code paths."""
    return os.environ.get(OPT_OUT, "").strip().lower() == "native"


def pin() -> None:
    """Set the reproducible code paths in this process's environment (unless opted out)."""
    if not native():
        os.environ.update(PINNED)


def probe(extra=()) -> str:
    """A short digest of fixed float32 and bfloat16 matmuls and a softmax (and of the ``extra`` tensors: the
    hosts' states of :mod:`.path_probe`): equal on two machines when their paths agree on these computations.

    The inputs are exact functions of the indices (no random generator, no
    transcendental), so only the summation order of the two ops can move
    the digest.
    """
    parts = []
    for m, k, n in ((64, 37, 29), (3, 5, 4), (2, 6, 6), (17, 8, 8)):      # MKL picks kernels by shape too
        i = torch.arange(m * k, dtype=torch.float64).reshape(m, k)
        j = torch.arange(k * n, dtype=torch.float64).reshape(k, n)
        a = (((i * 31) % 101) / 101 - 0.5).to(torch.float32)
        b = (((j * 17) % 89) / 89 - 0.5).to(torch.float32)
        parts += [(a @ b).flatten(), torch.softmax(a * 8, dim=-1).flatten(),
                  (a.to(torch.bfloat16) @ b.to(torch.bfloat16)).float().flatten()]     # oneDNN's path
    out = torch.cat(parts + [t.double().flatten() for t in extra])
    return hashlib.sha256(out.numpy().tobytes()).hexdigest()[:16]


def record(extra=()) -> dict:
    """What a report records: the paths this process runs with, and the probe's digest (of ``extra`` too)."""
    if native():
        return {"mode": "native", "ATEN_CPU_CAPABILITY": torch.backends.cpu.get_cpu_capability(),
                "probe": probe(extra)}
    return {"mode": "pinned", "MKL_CBWR": os.environ.get("MKL_CBWR"),
            "ATEN_CPU_CAPABILITY": torch.backends.cpu.get_cpu_capability(),
            "ONEDNN_MAX_CPU_ISA": os.environ.get("ONEDNN_MAX_CPU_ISA"), "probe": probe(extra)}
