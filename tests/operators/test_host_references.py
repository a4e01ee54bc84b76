"""Every host declares an independent reference (spec_reference), and it agrees with the host in float64.

The references (operators/references.py, "hosts") are loops over the blocks written from the component
references; they must not be the composition's own code path, else spec_reference compares a host with itself.
"""
from __future__ import annotations

import pytest
import torch

from tokenlaw.operators import composition, hosts, references
from tokenlaw.operators.registry import MARK
from tokenlaw.operators.xp import TORCH
from tokenlaw.properties.catalogue import default_registry


def _declared(name):
    return getattr(hosts.HOSTS[name], MARK)


def test_every_host_declares_a_reference_outside_the_composition(monkeypatch):
    """Each host's reference lives in operators/references.py and runs with the composition's code path broken."""
    assert len(hosts.HOSTS) == 14
    assert not any(getattr(v, "__module__", None) == composition.__name__ or v is composition
                   for v in vars(references).values())

    def broken(*args, **kwargs):
        raise AssertionError("a host reference called the composition's code path")

    for helper in ("compose_layers", "_run_layers", "_prefix", "_block", "residual_block", "block_layers",
                   "prefix_layers"):
        monkeypatch.setattr(composition, helper, broken)
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(1, 4, 4, generator=gen, dtype=torch.float64)
    for name in hosts.HOSTS:
        spec = _declared(name)
        ref = spec["reference"]
        assert ref is not None and ref.__module__ == references.__name__, name
        with pytest.raises(AssertionError, match="composition's code path"):
            hosts.HOSTS[name](TORCH, x, None, **spec["domain"].params(gen, 4))
        assert torch.isfinite(ref(TORCH, x, None, **spec["domain"].params(gen, 4))).all(), name


@pytest.mark.parametrize("name", sorted(hosts.HOSTS))
def test_host_equals_its_reference_in_float64(name):
    """Agreement to float64 rounding with and without a mask, at the host's own drawn parameters; and a 1 %
    error in the host is 1e10 times past that agreement (the comparison can fail)."""
    fn, spec = hosts.HOSTS[name], _declared(name)
    gen = torch.Generator().manual_seed(7)
    params = spec["domain"].params(gen, 6)
    x = torch.randn(2, 5, 6, generator=gen, dtype=torch.float64)
    mask = (torch.rand(5, 5, generator=gen) < 0.6).double()
    mask.fill_diagonal_(1.0)
    for m in (None, mask):
        a, r = fn(TORCH, x, m, **params), spec["reference"](TORCH, x, m, **params)
        scale = float(r.abs().max())
        assert scale > 0.1
        # a few hundred float64 roundings through <= 4 blocks of width 6: 1e-13 relative is far above them
        assert float((a - r).abs().max()) <= 1e-13 * scale, name
        assert float((1.01 * a - r).abs().max()) > 1e-3 * scale
    # the mask matters to the reference: dropping it changes the output (a reference blind to it is caught)
    assert float((spec["reference"](TORCH, x, mask, **params) - spec["reference"](TORCH, x, None, **params))
                 .abs().max()) > 1e-6


def test_the_registry_runs_every_host_reference_row():
    reg = default_registry()
    for name in hosts.HOSTS:
        assert reg[name].reference is _declared(name)["reference"], name
