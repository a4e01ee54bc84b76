"""Verdicts independent of the machine: tokenlaw pins the CPU code paths that decide float rounding.

Each check runs in a fresh interpreter (MKL and ATen read their settings at their first call), under the
settings a user or another CPU model would bring: MKL's AVX2 or compatible kernels, ATen's AVX-512 or AVX2
kernels.  Pinned, every one rounds alike; opted out (``TOKENLAW_CPU_PATHS=native``), the probe sees them differ,
so the probe is not blind.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tokenlaw.operators import path_probe
from tokenlaw.operators.xp import TorchNamespace
from tokenlaw.process import cpu_paths

ROOT = Path(__file__).resolve().parents[2]
RECORD = "import json; from tokenlaw.operators import path_probe; print(json.dumps(path_probe.record()))"
SETTINGS = ({}, {"MKL_CBWR": "COMPATIBLE"}, {"MKL_CBWR": "AVX2"}, {"MKL_CBWR": "AVX2", "ATEN_CPU_CAPABILITY": "avx512"},
            {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_AMX"})
PATH_VARS = ("MKL_CBWR", "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "TOKENLAW_CPU_PATHS")
# How many rows of A @ B are NaN when one row of A is (bfloat16, n = 17, 33, 113): one each is right.
LEAK = ("import torch, json; from tokenlaw.operators import cpu_paths\n"
        "out = []\n"
        "for n in (17, 33, 113):\n"
        "    a = torch.randn(n, n, generator=torch.Generator().manual_seed(n)).to(torch.bfloat16); a[1] = float('nan')\n"
        "    b = torch.randn(n, 4, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)\n"
        "    out.append(int(torch.isnan(a @ b).any(-1).sum()))\n"
        "print(json.dumps(out))")


def _run(code: str, env: dict) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in PATH_VARS}
    return subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def _record(env: dict) -> dict:
    out = _run(RECORD, env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_pinned_paths_round_alike_whatever_the_environment_says():
    records = [_record(env) for env in SETTINGS]
    assert all(r["mode"] == "pinned" and r["MKL_CBWR"] == "COMPATIBLE" for r in records), records
    assert len({r["probe"] for r in records}) == 1, records


def _runs_here(env: dict) -> bool:
    """Whether this CPU can take ``env``'s paths unpinned: forcing ATen's AVX-512 kernels on a CPU without
    AVX-512 ends the process with SIGILL (measured on an AMD EPYC with AVX2 only)."""
    if env.get("ATEN_CPU_CAPABILITY", "").lower() != "avx512":
        return True
    out = _run("import torch; print(torch.backends.cpu.get_cpu_capability())", {"TOKENLAW_CPU_PATHS": "native"})
    return out.returncode == 0 and out.stdout.strip().upper().startswith("AVX512")


def test_the_probe_sees_a_native_path_change():
    """The attack on the invariant: with the pin off, the same probe tells MKL's (or ATen's) paths apart."""
    native = [_record({**env, "TOKENLAW_CPU_PATHS": "native"}) for env in SETTINGS if _runs_here(env)]
    assert all(r["mode"] == "native" for r in native)
    if len({r["probe"] for r in native}) == 1:
        pytest.skip("this CPU's native MKL / ATen paths round alike for the probe (nothing to tell apart here)")
    assert len({r["probe"] for r in native}) > 1


def test_cpu_sensitive_gradient_cases_pass_under_mkl_avx2():
    """The two cases that failed on an AVX-512 + AMX CPU with MKL's default path (issue 19) hold under MKL_CBWR=AVX2."""
    ids = ["tests/kernels/test_kernels_grad.py::test_each_old_form_is_rejected_at_its_case[pn_fir_tau-tau-summed-as-is]",
           "tests/kernels/test_kernels_grad.py::test_each_old_form_is_rejected_at_its_case[sm_fir-uncentred-at-tied-keys]"]
    code = f"import sys, pytest; sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', *{ids!r}]))"
    out = _run(code, {"MKL_CBWR": "AVX2", "TRITON_INTERPRET": "1"})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]


def test_a_nan_row_stays_in_its_row_under_the_pinned_bfloat16_matmul():
    """oneDNN's AMX bfloat16 GEMM spread one NaN row of A to other rows of A @ B (issue 19's machine-dependence
    class: an SDPA host's fully masked row poisoned the rows a law compared); pinned to AVX2 it does not."""
    pinned = _run(LEAK, {})
    assert pinned.returncode == 0, pinned.stderr
    assert json.loads(pinned.stdout) == [1, 1, 1]
    native = _run(LEAK, {"TOKENLAW_CPU_PATHS": "native"})
    if json.loads(native.stdout) == [1, 1, 1]:
        pytest.skip("this CPU's native oneDNN path keeps a NaN row in its row (no AMX leak to show)")
    assert json.loads(native.stdout) != [1, 1, 1]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_matmul_is_float32_accumulation_rounded_once(dtype):
    """The namespace's half matmul is the float32 product rounded once, bit for bit, whatever GEMM torch
    would pick on this CPU (oneDNN with AVX-512, ATen's fallback without: they differ, issue 19).  At
    (2, 113, 64) @ (2, 64, 113) ATen's own bfloat16 GEMM differs from that in one entry on an AVX2-only
    AMD EPYC, so calling ``a @ b`` on the halves fails this test there."""
    import torch

    from tokenlaw.operators.xp import TORCH

    dt = getattr(torch, dtype)
    for (n, k) in ((3, 5), (17, 8), (113, 64)):
        g = torch.Generator().manual_seed(n * 100 + k)
        a = torch.randn(2, n, k, generator=g).to(dt)
        b = torch.randn(2, k, n, generator=g).to(dt)
        got = TORCH.matmul(a, b)
        assert got.dtype == dt
        assert torch.equal(got, (a.float() @ b.float()).to(dt)), (n, k)
    x = torch.randn(3, 4, dtype=torch.float32)
    assert torch.equal(TORCH.matmul(x, x.T), x @ x.T)          # float32 / float64 are untouched


def test_the_probe_covers_the_hosts_own_arithmetic(monkeypatch):
    """The matmul and softmax parts agreed on an AMD EPYC and an Intel Xeon whose host bounds differed, so the
    record also digests two hosts' layer states: a last-bit change in the FFN's erf alone moves it."""
    before, matmuls = path_probe.record()["probe"], cpu_paths.probe()
    assert path_probe.record()["probe"] == before != matmuls      # deterministic; more than the matmuls
    erf = TorchNamespace.erf
    monkeypatch.setattr(TorchNamespace, "erf", lambda self, x: torch.nextafter(erf(self, x), torch.full_like(x, 2.0)))
    assert path_probe.record()["probe"] != before
    assert cpu_paths.probe() == matmuls                    # the matmul / softmax part alone cannot see it
