"""Deliberately broken OAttention variants make `tokenlaw check` exit non-zero with the cell UNEXPECTED."""
from __future__ import annotations

import json

import pytest

from tokenlaw.operators import oattention as oa_module
from tokenlaw.operators import projections
from tokenlaw.app.cli import main


def _no_presence_in_denominator(xp, q, k, v, p_src, p_rcv, mask, *, eps_den):
    s = projections.scores(xp, q, k)
    vis = xp.ones_like(s) if mask is None else mask * xp.ones_like(s)
    e = xp.exp(s - xp.max(s, axis=-1, keepdims=True))
    num = xp.matmul(e * p_src * vis, v)
    den = eps_den + xp.sum(e * vis, axis=-1, keepdims=True)      # BUG: p_j left out
    return p_rcv * xp.div(num, den)


def _receiver_gate_dropped(xp, q, k, v, p_src, p_rcv, mask, *, eps_den):
    return ORIGINAL(xp, q, k, v, p_src, xp.ones_like(p_rcv), mask, eps_den=eps_den)


def _eps_not_rescaled(xp, q, k, v, p_src, p_rcv, mask, *, eps_den):
    s = projections.scores(xp, q, k)
    vis = xp.ones_like(s) if mask is None else mask * xp.ones_like(s)
    mass = p_src * vis
    top = xp.max(s, axis=-1, keepdims=True)
    e = xp.exp(s - top) * mass
    den = eps_den + xp.sum(e, axis=-1, keepdims=True)              # BUG: eps_den, not eps_den * exp(-M)
    return p_rcv * xp.div(xp.matmul(e, v), xp.where(xp.gt(den, 0), den, xp.ones_like(den)))


ORIGINAL = oa_module.oattention_core


@pytest.mark.parametrize("broken, killed", [
    (_no_presence_in_denominator, "null_source_insertion"),
    (_receiver_gate_dropped, "null_receiver"),
    (_eps_not_rescaled, "formula_equivalence"),
])
def test_broken_oattention_fails_check(broken, killed, monkeypatch, tmp_path):
    monkeypatch.setattr(oa_module, "oattention_core", broken)
    # --workers 1: the patch lives in this process; a Dask worker imports tokenlaw's own modules afresh
    # (with --workers 2 the run stops: that worker's CPU-path probe differs from this patched process's)
    code = main(["check", "--operator", "oattention", "--profile", "smoke", "--dtype", "float64",
                 "--workers", "1", "--out", str(tmp_path), "--json"])
    assert code == 1
    rows = {r["contract"]: r for r in json.loads((tmp_path / "conformance.json").read_text())["rows"]}
    assert rows[killed]["outcome"] == "UNEXPECTED violation"
    assert "UNEXPECTED" in (tmp_path / "conformance.md").read_text()


def test_intact_oattention_passes_check(tmp_path):
    code = main(["check", "--operator", "oattention", "--profile", "smoke", "--dtype", "float64",
                 "--out", str(tmp_path), "--json"])
    assert code == 0
