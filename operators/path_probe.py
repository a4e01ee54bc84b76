"""The CPU-path record a report carries: ``cpu_paths``' probe plus the built-in hosts' own arithmetic.

``cpu_paths.probe`` digests a few fixed matmuls and a softmax; they agreed on an AVX2-only AMD EPYC and an
AVX-512 Intel Xeon whose host bounds differed at one seed (issue 19), so the gate took the two runs for
comparable.  :func:`record` digests, besides, every sub-layer state of two built-in hosts (each norm, the
FFN's erf, presence, softmax's exp, float64 and batched products) in the four dtypes, on parameters and
inputs from torch's CPU generator (the same numbers on every machine): two machines whose records agree
computed those bit for bit.  (It lives apart from ``cpu_paths``, which ``tokenlaw.operators`` imports first
to pin the paths before any operator exists.)
"""
from __future__ import annotations

import torch

from tokenlaw.process import cpu_paths

from . import dtypes, hosts, tree
from .xp import TORCH

SEED = 20261203
SHAPES = ((hosts.standard_layers, 33, 8), (hosts.otransformer_layers, 17, 6))   # (layers, n, d): odd, past 32


def host_states() -> list:
    """Every layer state of the probe hosts in every dtype (NaN / inf mapped to fixed values, so they digest)."""
    gen = torch.Generator().manual_seed(SEED)
    out = []
    for layers, n, d in SHAPES:
        params = hosts.host_params(gen, d)
        x = torch.randn(2, n, d, generator=gen, dtype=torch.float64) * 3
        for dtype in dtypes.FLOATS:
            cast = tree.map(lambda v: v.to(dtype) if torch.is_tensor(v) and v.is_floating_point() else v, params)
            with torch.no_grad():
                out += [torch.nan_to_num(s.double(), nan=7.0, posinf=8.0, neginf=9.0)
                        for s in layers(TORCH, x.to(dtype), None, **cast)]
    return out


def record() -> dict:
    """``cpu_paths.record()`` whose probe also digests :func:`host_states`."""
    return cpu_paths.record(extra=host_states())
