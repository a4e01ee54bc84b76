"""Every Triton kernel's outputs on fixed inputs, saved, and two saves compared bit for bit.

A refactor of ``kernels/`` that moves code into ``@triton.jit`` helpers should change no bit of any output:

    (cd MAIN && source .dev-setup.sh && python3 benchmarks/arch/kernel_outputs.py save /tmp/main.pt)
    (cd BRANCH && source .dev-setup.sh && python3 benchmarks/arch/kernel_outputs.py save /tmp/branch.pt)
    python3 benchmarks/arch/kernel_outputs.py same /tmp/main.pt /tmp/branch.pt

``save`` runs under the CPU interpreter (TRITON_INTERPRET=1, set here) unless a GPU is asked for with
``--gpu``; it runs each forward and backward wrapper (OAttention with and without a mask, causal or not;
sm_fir; pn_fir_tau) on 4 shapes (n from 1 to 17, dh 4 to 16, ragged tiles, fp32 and fp16): 40 cases,
184 tensors, about 30 s interpreted.  ``same`` exits 0 when every tensor has the same dtype, shape and
bytes, 1 naming the cases that differ.
"""
from __future__ import annotations

import os
import sys

SHAPES = [(1, 1, 1, 8, "float32"), (2, 2, 12, 5, "float32"), (1, 2, 17, 16, "float32"), (1, 1, 9, 4, "float16")]


def save(path: str) -> int:
    import torch
    from tokenlaw.kernels import oattention_bwd, oattention_fwd, pn_fir_tau_bwd, pn_fir_tau_fwd, sm_fir_bwd, sm_fir_fwd
    out = {}
    g = torch.Generator().manual_seed(0)
    for b, h, n, dh, dtype in SHAPES:
        dt = getattr(torch, dtype)
        q, k, v, do = (torch.randn(b, h, n, dh, generator=g).to(dt) for _ in range(4))
        p = torch.rand(b, n, generator=g)
        p[:, 0] = 0.0                                              # a null token
        mask = (torch.rand(b, n, n, generator=g) > 0.3).to(torch.int32)
        for causal in (False, True):
            for m in (None, mask):
                key = f"oattention-{b}-{h}-{n}-{dh}-{dtype}-causal={causal}-mask={m is not None}"
                o, *stats = oattention_fwd.oattention_fwd(q, k, v, p, m, eps_den=1e-3, causal=causal)
                out[key + "-fwd"] = (o, *stats)
                out[key + "-bwd"] = oattention_bwd.oattention_bwd(do, q, k, v, p, m, *stats, eps_den=1e-3,
                                                                  causal=causal)
        o, *stats = sm_fir_fwd.sm_fir_fwd(q, k, v)
        out[f"sm_fir-{b}-{h}-{n}-{dh}-{dtype}"] = (o, *stats, *sm_fir_bwd.sm_fir_bwd(do, q, k, v, *stats))
        tau = torch.tensor(0.1)
        o, *stats = pn_fir_tau_fwd.pn_fir_tau_fwd(q, k, v, tau)
        out[f"pn_fir_tau-{b}-{h}-{n}-{dh}-{dtype}"] = (o, *stats, *pn_fir_tau_bwd.pn_fir_tau_bwd(do, q, k, v, tau, *stats))
    torch.save(out, path)
    print(f"{len(out)} cases, {sum(len(t) for t in out.values())} tensors from {oattention_fwd.__file__}: {path}")
    return 0


def same(path_a: str, path_b: str) -> int:
    import torch
    a, b = torch.load(path_a), torch.load(path_b)

    def bits(x):
        return x.contiguous().reshape(-1).view(torch.uint8)

    differ = sorted(set(a) ^ set(b))
    differ += [k for k in sorted(set(a) & set(b)) if len(a[k]) != len(b[k]) or not all(
        x.dtype == y.dtype and x.shape == y.shape and torch.equal(bits(x), bits(y)) for x, y in zip(a[k], b[k]))]
    tensors = sum(len(t) for t in a.values())
    print(f"{len(a)} cases, {tensors} tensors; bitwise different: {', '.join(differ) if differ else 'none'}")
    return 1 if differ else 0


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "save":
        if "--gpu" not in argv:
            os.environ["TRITON_INTERPRET"] = "1"
        return save(argv[1])
    if len(argv) == 3 and argv[0] == "same":
        return same(argv[1], argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
