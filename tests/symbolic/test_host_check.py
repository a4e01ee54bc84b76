"""Hosts checked before induction (issue 19, point 2): the declarations the induction rests on are
tested, and a refuted induction step becomes a refutation of the host when a host input reaches it.

The canaries are in ``tests/canaries/host_*.py`` (their statuses are pinned in
``test_canaries_symbolic.py``); here: each half of the check on its own, its tolerance, and the
witness search, each with the wrong host it must reject and the right one it must accept.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import pathlib

import torch

from tokenlaw.operators.xp import TORCH
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import collect, default_registry
from tokenlaw.symbolic import host_check as H
from tokenlaw.symbolic.prover import prove_cell

HERE = pathlib.Path(__file__).resolve().parents[1] / "canaries"
BASE = default_registry()


def _op(stem):
    spec = importlib.util.spec_from_file_location(f"tokenlaw_canary_{stem}", HERE / f"{stem}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (op,) = list(collect(module))
    return op


def test_registry_hosts_pass_the_check():
    for name in ("otransformer", "oa_only_host", "standard_host", "tabular_otransformer", "otransformer_l3"):
        c = H.check(BASE[name], 1, 1)
        assert c.ok, (name, c.detail)


def test_a_block_that_is_not_the_real_last_one_is_found_at_its_state():
    c = H.check(_op("host_wrong_block"), 1, 1)
    # states: P = 2x (0), C = 6x (1), then O = 6x + 1 where .block gives 18x (2)
    assert not c.ok and c.failed == "pieces" and c.state == 2, c.detail
    assert "state 2" in c.detail and c.difference > 0.5


def test_an_output_that_is_not_the_last_state_is_found_by_its_difference():
    c = H.check(_op("host_output_shift"), 1, 1)
    assert not c.ok and c.failed == "output" and c.state == 2, c.detail
    assert abs(c.difference - 0.1) < 1e-12           # 0.1 n at the prover's shape, n = 1


def test_the_symbolic_half_alone_finds_the_output_shift():
    c = H._symbolic(_op("host_output_shift"), 1, 1)
    assert c is not None and c.failed == "output" and "different" in c.detail, c


def _refactored_output(op, extra):
    """op with fn = the last state written another way, plus ``extra(x)`` (0 for an equal rewrite)."""
    def fn(xp, x, mask=None, *, blocks):
        u = op.layers(xp, x, mask, blocks=blocks)[0] / 2          # the input x, through the prefix 2x
        return (u + 1) * (u - 1) - u * u + 1 + 17 * u + u + extra(x)   # = 18x (+ extra) in the reals
    return dataclasses.replace(op, fn=fn)


def test_an_equal_output_written_differently_passes_numerically_and_symbolically():
    # Float64 rounding makes fn and the last state differ by a few ulps (the tolerance model bounds
    # it from float32); the traced terms differ syntactically, and z3 proves them equal.
    op = _refactored_output(_op("host_output_shift"), lambda x: 0.0)
    p = op.domain.params(torch.Generator(), 2)
    x = torch.randn(1, 3, 2, dtype=torch.float64) * 3
    a, b = op.fn(TORCH, x, None, **p), op.layers(TORCH, x, None, **p)[-1]
    assert 0 < float((a - b).abs().max()) < 1e-12          # not bit-identical: the bound is exercised
    c = H.check(op, 1, 1)
    assert c.ok, c.detail


def test_a_tiny_output_offset_is_above_the_derived_bound():
    # The canary of the tolerance: 1e-9 per token is far below any "looks equal" tolerance, far above rounding.
    op = _refactored_output(_op("host_output_shift"), lambda x: 1e-9 * x.shape[1])
    c = H.check(op, 1, 1)
    assert not c.ok and c.failed == "output", c.detail


def test_open_last_block_host_is_refuted_on_a_host_input_replayed_on_eager():
    op = _op("host_open_last")
    assert H.check(op, 1, 1).ok                              # the declarations are right: the host is wrong
    for contract in ("closure", "null_source_insertion"):
        v = prove_cell(op, contract, timeout=5)
        assert v.status == V.Status.REFUTED and v.discrepancy > v.bound, v.detail
        assert "host" in v.detail and v.witness, v.detail
        # the counterexample is a host input: the eager host on it, with a null inserted at 0
        ce = v.counterexample
        x = torch.as_tensor(ce["x"], dtype=torch.float64)
        p = _params(op, ce["params"])
        grown = torch.cat([torch.zeros_like(x[:, :1]), x], dim=1)
        mask = torch.ones(1, grown.shape[1], grown.shape[1], dtype=torch.float64)
        out = op.fn(TORCH, grown, mask, **p)
        assert float(out[:, 0].abs().max()) > 1e-3, (contract, out)   # the inserted null is not 0


def _params(op, jsonable):
    p = op.domain.params(torch.Generator(), 1)

    def walk(t, v):
        if torch.is_tensor(t):
            return torch.as_tensor(v, dtype=torch.float64)
        if isinstance(t, dict):
            return {k: walk(t[k], v[k]) for k in t}
        if isinstance(t, list):
            return [walk(a, b) for a, b in zip(t, v)]
        return v
    return walk(p, jsonable)


def test_an_unreachable_refuted_step_finds_no_witness_and_the_whole_host_decides():
    # The control of the witness search: it must not make up a refutation for a closed host.
    op = _op("host_unreached_step")
    v = prove_cell(op, "closure", timeout=5)
    assert v.status == V.Status.PROVED, v.detail
    assert "induction step refuted" in v.detail and "no host input found" in v.detail, v.detail
    assert "direct, no induction" in v.detail


def test_controls_keep_their_verdicts_after_the_check():
    for name, status in (("otransformer", V.Status.PROVED), ("oa_only_host", V.Status.REFUTED), ("standard_host", V.Status.REFUTED)):
        for contract in ("closure", "null_source_insertion"):
            v = prove_cell(BASE[name], contract, timeout=5)
            assert v.status == status, (name, contract, v.detail)
            assert v.evidence.host_check.startswith("checked before the induction"), v.extra
            assert "judged as a whole" not in v.detail


def test_without_a_witness_the_open_last_host_is_unknown_with_the_reason(monkeypatch):
    # If the search finds nothing, the direct statement decides: refuted with a counterexample that
    # replays on eager (z3 finds one since the counterexample search has exp's refinements, when its
    # steps finish before the 1 s wall-clock backstop: load-dependent on a slow machine), else unknown
    # -- never proved -- and either way the row says what the search tried.
    from tokenlaw.symbolic import host_witness

    monkeypatch.setattr(host_witness, "search", lambda *a: (None, "no host input found (forced by the test)"))
    v = prove_cell(_op("host_open_last"), "closure", timeout=1, mode="symbolic")
    assert v.status in (V.Status.UNKNOWN, V.Status.REFUTED), v.detail
    if v.status == V.Status.REFUTED:
        assert not v.mismatch and "replayed on the eager float64 code" in v.detail, v.detail
    assert "no host input found (forced by the test)" in v.detail and "induction step refuted" in v.detail
