"""The symbolic tier on the mask=None canaries (issue 43, class 2): ``unmasked`` traces both modes
(``mask=None`` and the all-visible mask), so a body wrong only without a mask is refuted, never proved."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import default_registry
from tokenlaw.symbolic.prover import prove_cell

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# canary -> what the symbolic tier must say about its `unmasked` row
EXPECTED = {
    "fuzz_unmasked_drop_key": V.Status.REFUTED,          # sdpa hiding its last key when mask is None
    "fuzz_unmasked_acausal": V.Status.REFUTED,           # causal only together with a mask tensor
    "fuzz_hf_unmasked_drop": V.Status.NOT_TRACEABLE,     # HF functions call torch: never proved
    "fuzz_hf_unmasked_acausal": V.Status.NOT_TRACEABLE,
}


def _op(stem):
    c = importlib.import_module(f"canaries.{stem}")
    return c.registry(default_registry())[c.OPERATOR]


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_symbolic_tier_never_proves_a_mask_none_canary(stem):
    v = prove_cell(_op(stem), "unmasked", timeout=5)
    assert v.status == EXPECTED[stem], v.detail
    if v.status == V.Status.REFUTED:                      # the counterexample replays on the eager code
        assert v.discrepancy != v.discrepancy or v.discrepancy > v.bound, v.detail


def test_the_shipping_sdpa_is_proved_in_both_modes():
    v = prove_cell(default_registry()["sdpa"], "unmasked", timeout=5)
    assert v.status == V.Status.PROVED, v.detail
    assert "mask=None" in v.detail or "mask=None" in str(v.evidence), v.detail


# Issue 43, class 3: the row-mass laws also state the operator's own rows at tokens of width 1 (n > d, any
# norm), so a body that is a distribution only on the probe's tokens is refuted, never proved.
@pytest.mark.parametrize("stem", ["fuzz_mass_token_norm", "fuzz_mass_long_narrow"])
def test_symbolic_tier_never_proves_simplex_of_a_probe_only_distribution(stem):
    v = prove_cell(_op(stem), "simplex", timeout=5)
    assert v.status == V.Status.REFUTED, v.detail
    assert "real rows" in v.detail, v.detail
