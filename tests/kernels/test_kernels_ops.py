"""The kernels as torch custom ops: opcheck (autograd registration included), the fused backward, the nn.Module backend."""
from __future__ import annotations


import pytest
import torch

from tokenlaw.kernels import capabilities, implementation, ops
from tokenlaw.operators.modules import FIRAttention, OAttention
from tokenlaw.properties.catalogue import default_registry

pytestmark = pytest.mark.skipif(not capabilities.interpreting(), reason="these tests run the CPU interpreter")


def _args(name, grad=True, mask=True, causal=False):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 9, 4, generator=g).requires_grad_(grad) for _ in range(3))
    if name == "oattention_fwd":
        p = torch.rand(1, 9, generator=g)
        p[0, 3] = 0.0
        m = (torch.rand(1, 9, 9, generator=g) < 0.6).float() + torch.eye(9)
        return (q, k, v, p.requires_grad_(grad), m.clamp(max=1) if mask else None, 0.1, causal)
    if name == "sm_fir_fwd":
        return (q, k, v)
    return (q, k, v, torch.tensor(-0.2, requires_grad=grad))


CASES = [("oattention_fwd", dict(mask=True)), ("oattention_fwd", dict(mask=False, causal=True)),
         ("sm_fir_fwd", {}), ("pn_fir_tau_fwd", {})]


@pytest.mark.slow  # reason: opcheck's aot_dispatch test traces the op with torch.compile machinery (~5-10 s per op)
@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_opcheck(name, kw):
    torch.library.opcheck(ops.OPS[name], _args(name, **kw))


@pytest.mark.parametrize("name", ["oattention_fwd", "sm_fir_fwd", "pn_fir_tau_fwd"])
def test_schema_and_fake_tensor(name):
    # the fast half of opcheck (always run); the full opcheck is marked slow above
    torch.library.opcheck(ops.OPS[name], _args(name, grad=False),
                          test_utils=("test_schema", "test_faketensor"))


@pytest.mark.parametrize("name", ["oattention_fwd", "sm_fir_fwd", "pn_fir_tau_fwd"])
def test_backward_ops_schema_and_fake_tensor(name):
    """The backward custom ops on the statistics their forward saved: schema and fake-tensor checks."""
    args = _args(name, grad=False)
    out, *stats = ops.OPS[name](*args)
    do = torch.randn(out.shape, generator=torch.Generator().manual_seed(2))
    q, k, v, *rest = args
    if name == "oattention_fwd":                 # (do, q, k, v, p, mask, *stats, eps_den, causal)
        bwd_args = (do, q, k, v, rest[0], rest[1], *stats, rest[2], rest[3])
    else:                                        # (do, q, k, v, [tau], *stats)
        bwd_args = (do, q, k, v, *rest, *stats)
    torch.library.opcheck(ops.BACKWARD_OPS[name], bwd_args, test_utils=("test_schema", "test_faketensor"))


@pytest.mark.parametrize("name", ["oattention_fwd", "sm_fir_fwd", "pn_fir_tau_fwd"])
def test_backward_equals_the_eager_reference_gradient(name):
    args = _args(name)
    leaves = [a for a in args if torch.is_tensor(a) and a.requires_grad]
    w = torch.randn(1, 2, 9, 4, generator=torch.Generator().manual_seed(5))
    grads = torch.autograd.grad((getattr(ops, name)(*args) * w).sum(), leaves)
    ref_args = [a.detach().double().requires_grad_(True) if torch.is_tensor(a) and a.requires_grad else a
                for a in args]
    ref_leaves = [a for a in ref_args if torch.is_tensor(a) and a.requires_grad]
    reference = getattr(ops, name.replace("_fwd", "_reference"))
    ref_grads = torch.autograd.grad((reference(*ref_args) * w.double()).sum(), ref_leaves)
    for g, r in zip(grads, ref_grads):
        assert (g.double() - r).abs().max() <= 1e-4 * max(1.0, float(r.abs().max()))


@pytest.mark.parametrize("make", [lambda: OAttention(16, heads=2, tau=0.5, eps_den=1e-3),
                                  lambda: FIRAttention(16, heads=2, variant="pn_fir_tau", tau=-0.1),
                                  lambda: FIRAttention(16, heads=4, variant="sm_fir")])
def test_module_with_the_kernel_implementation_matches_eager_forward_and_gradients(make):
    torch.manual_seed(0)
    layer = make()
    x = torch.randn(2, 10, 16)
    x[0, 4] = 0.0
    eager = layer(x)
    g_eager = torch.autograd.grad(eager.sum(), list(layer.parameters()))
    layer.implementation = implementation(default_registry()[getattr(layer, "variant", "oattention")])
    fused = layer(x)
    g_fused = torch.autograd.grad(fused.sum(), list(layer.parameters()))
    assert (fused - eager).abs().max() < 1e-5
    for a, b in zip(g_fused, g_eager):
        assert (a - b).abs().max() <= 1e-4 * max(1.0, float(b.abs().max()))
    if isinstance(layer, OAttention):
        assert torch.equal(fused[0, 4], torch.zeros_like(fused[0, 4]))
