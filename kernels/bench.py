"""The Triton backend's benchmark: throughput and peak memory of the kernels vs the eager reference and SDPA.

``tokenlaw bench`` (the backend's :attr:`~tokenlaw.properties.backends.Backend.benchmark`).  Needs a
CUDA GPU.  Without one :meth:`TritonBench.prepare` says so and the command
exits 3: no number is ever estimated or invented.  ``smoke`` runs the same
harness on tiny shapes on Triton's CPU interpreter to test the harness
itself; its output is labelled SMOKE everywhere and is not a benchmark.

Measured per (kernel, N, head dim), bf16, batch 1, 8 heads, for the forward
alone and for forward + backward (``mode``): tokens/s (batch * N / median
time) and the peak memory allocated during the call beyond its inputs
(with the backward: the autograd graph's saved tensors plus the backward's
own buffers); for the Triton kernels, the eager reference (autograd through
the N x N weights) and torch SDPA with its flash backend; plus a 6-layer
multi-head stack at N = 1024 (d_model = heads * head dim), forward +
backward.  The growth exponent of peak memory in N (a log-log fit over the
measured points) is reported, never assumed.
"""
from __future__ import annotations

import math
import os
import platform
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from tokenlaw.operators.modules import FIRAttention, OAttention
from tokenlaw.properties.backends import Benchmark
from tokenlaw.properties.catalogue import default_registry

from .capabilities import interpreting

KERNELS = ("oattention", "sm_fir", "pn_fir_tau")
FULL = dict(ns=(1024, 2048, 4096, 8192, 16384), head_dims=(64, 128), dtype="bfloat16", heads=8, stack_n=1024,
            layers=6)
SMOKE = dict(ns=(16, 32), head_dims=(16,), dtype="float32", heads=2, stack_n=16, layers=2)


class TritonBench(Benchmark):
    """The fused kernels against the eager reference and torch SDPA (``FULL`` on a GPU, ``SMOKE`` interpreted).

    ``implementation(op)`` gives the backend's layer for an operator (the multi-layer stack runs it).
    """

    def __init__(self, implementation):
        self.implementation = implementation

    def prepare(self, smoke: bool) -> str | None:
        if smoke:
            os.environ.setdefault("TRITON_INTERPRET", "1")
            if not interpreting():
                return "--smoke: TRITON_INTERPRET must be 1 before the kernels are imported"
            return None
        if not torch.cuda.is_available():
            return ("no CUDA GPU is available on this machine, so there is nothing to measure and no number is "
                    "reported. Run it on a GPU machine (or `tokenlaw bench --smoke` to test the harness on the CPU "
                    "interpreter; its output is not a benchmark).")
        return None

    def run(self, *, smoke: bool, skip_eager_above: int) -> dict:
        return run(SMOKE if smoke else FULL, "cpu" if smoke else "cuda", smoke=smoke,
                   skip_eager_above=skip_eager_above, implementation=self.implementation)

    def table(self, results: dict) -> str:
        return table(results)


# -- the measured functions ------------------------------------------------------
def _inputs(kernel, b, h, n, dh, dtype, device):

    g = torch.Generator(device=device).manual_seed(0)
    q, k, v = (torch.randn(b, h, n, dh, generator=g, device=device).to(dtype).requires_grad_() for _ in range(3))
    p = torch.rand(b, n, generator=g, device=device).requires_grad_()
    return q, k, v, p


def _sdpa_flash(q, k, v, causal):

    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def _callables(kernel, q, k, v, p):
    """{impl: forward()} for the fused kernel, the eager reference and torch SDPA (flash)."""

    from . import ops  # optional: Triton; loading the backend does not import it

    causal = kernel != "oattention"
    if kernel == "oattention":
        fused = lambda: ops.oattention_fwd(q, k, v, p, None, 1e-6, False)              # noqa: E731
        eager = lambda: ops.oattention_reference(q, k, v, p, None, 1e-6, False)         # noqa: E731
    elif kernel == "sm_fir":
        fused = lambda: ops.sm_fir_fwd(q, k, v)                                          # noqa: E731
        eager = lambda: ops.sm_fir_reference(q, k, v)                                    # noqa: E731
    else:
        tau = torch.tensor(0.0, device=q.device, requires_grad=True)
        fused = lambda: ops.pn_fir_tau_fwd(q, k, v, tau)                                 # noqa: E731
        eager = lambda: ops.pn_fir_tau_reference(q, k, v, tau)                           # noqa: E731
    sdpa = (lambda: _sdpa_flash(q, k, v, causal)) if q.is_cuda else \
        (lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal))  # noqa: E731
    return {"triton": fused, "eager": eager, "torch_sdpa": sdpa}


def _modes(forward):
    """{mode: fn}: the forward alone (no graph kept), and forward + backward with a fixed output gradient."""

    def fwd():
        with torch.no_grad():
            return forward()

    def fwd_bwd():
        out = forward()
        out.backward(torch.ones_like(out))

    return {"forward": fwd, "forward+backward": fwd_bwd}


def _measure(fn, device, smoke):
    """(median seconds, peak bytes allocated beyond what was live before the call or None on CPU)."""

    if smoke:
        fn()
        times = []
        for _ in range(2):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return sorted(times)[len(times) // 2], None
    import triton.testing  # optional: Triton (compiled runs only)

    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    ms = triton.testing.do_bench(fn, warmup=10, rep=50, return_mode="median")
    return ms / 1e3, peak


def _stack(kernel, layers, n, heads, dh, dtype, device, backend, implementation):
    torch.manual_seed(0)
    d = heads * dh
    impl = None if backend == "eager" else implementation(default_registry()[kernel])
    make = (lambda: OAttention(d, heads, implementation=impl)) if kernel == "oattention" else \
        (lambda: FIRAttention(d, heads, variant=kernel, implementation=impl))
    blocks = torch.nn.ModuleList(make() for _ in range(layers)).to(device=device, dtype=dtype)
    x = torch.randn(1, n, d, device=device, dtype=dtype)

    def forward():
        h = x
        for blk in blocks:
            h = h + blk(h)
        return h

    return forward


def run(cfg, device, *, smoke, skip_eager_above, implementation):

    dtype = getattr(torch, cfg["dtype"])
    rows = []
    for kernel in KERNELS:
        for dh in cfg["head_dims"]:
            for n in cfg["ns"]:
                q, k, v, p = _inputs(kernel, 1, cfg["heads"], n, dh, dtype, device)
                for impl, forward in _callables(kernel, q, k, v, p).items():
                    if impl == "eager" and n > skip_eager_above:
                        continue
                    for mode, fn in _modes(forward).items():
                        row = dict(kernel=kernel, impl=impl, mode=mode, n=n, head_dim=dh)
                        try:
                            secs, peak = _measure(fn, device, smoke)
                            rows.append(dict(row, seconds=secs, tokens_per_s=n / secs, peak_bytes=peak))
                        except torch.cuda.OutOfMemoryError as err:  # recorded, not hidden
                            rows.append(dict(row, error=f"OOM: {err}"[:200]))
                        q.grad = k.grad = v.grad = p.grad = None
    stack = []
    for kernel in KERNELS:
        for backend in ("triton", "eager"):
            fwd = _stack(kernel, cfg["layers"], cfg["stack_n"], cfg["heads"], cfg["head_dims"][0], dtype, device,
                         backend, implementation)
            secs, peak = _measure(_modes(fwd)["forward+backward"], device, smoke)
            stack.append(dict(kernel=kernel, impl=backend, mode="forward+backward", layers=cfg["layers"],
                              n=cfg["stack_n"], seconds=secs, tokens_per_s=cfg["stack_n"] / secs, peak_bytes=peak))
    return dict(smoke=smoke, label="SMOKE TEST on the CPU interpreter: NOT a benchmark" if smoke else "GPU benchmark",
                device=torch.cuda.get_device_name() if device == "cuda" else f"CPU interpreter ({platform.machine()}, {os.cpu_count()} cores)",
                torch=torch.__version__, config=cfg, rows=rows, stack=stack, memory_growth=growth(rows))


def growth(rows) -> list:
    """Least-squares exponent e in peak_bytes ~ N^e per (kernel, impl, mode, head dim); only measured points."""
    out = []
    keys = sorted({(r["kernel"], r["impl"], r["mode"], r["head_dim"]) for r in rows if r.get("peak_bytes")})
    for key in keys:
        pts = [(math.log(r["n"]), math.log(r["peak_bytes"])) for r in rows
               if (r["kernel"], r["impl"], r["mode"], r["head_dim"]) == key and r.get("peak_bytes")]
        if len(pts) < 2:
            continue
        mx = sum(x for x, _ in pts) / len(pts)
        my = sum(y for _, y in pts) / len(pts)
        e = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
        out.append(dict(kernel=key[0], impl=key[1], mode=key[2], head_dim=key[3], exponent=e, points=len(pts)))
    return out


def table(results) -> str:
    lines = [f"# tokenlaw bench - {results['label']} - {results['device']}", "",
             "| kernel | impl | mode | N | head dim | tokens/s | peak MB |", "|---|---|---|---|---|---|---|"]
    for r in results["rows"] + [dict(s, head_dim=f"stack x{s['layers']}") for s in results["stack"]]:
        head = f"| {r['kernel']} | {r['impl']} | {r['mode']} | {r['n']} | {r['head_dim']} |"
        if "error" in r:
            lines.append(f"{head} {r['error']} | |")
            continue
        mb = "n/a (CPU)" if r["peak_bytes"] is None else f"{r['peak_bytes'] / 2**20:.1f}"
        lines.append(f"{head} {r['tokens_per_s']:.4g} | {mb} |")
    if results["memory_growth"]:
        lines += ["", "peak memory ~ N^e:"] + [
            f"  {g['kernel']}/{g['impl']}/{g['mode']}/dh{g['head_dim']}: e = {g['exponent']:.2f}"
            for g in results["memory_growth"]]
    return "\n".join(lines)
