"""Replay: a shrunk violation is stored as JSON and re-runs bit-for-bit by id."""
from __future__ import annotations

import json

import torch

from tokenlaw.fuzz import replay as R
from tokenlaw.fuzz.engine import run_cell
from tokenlaw.properties.catalogue import default_registry
from tokenlaw.properties.catalogue import CONTRACTS
from tokenlaw.app.cli import main

REG = default_registry()


def _violation(tmp_path, op="sdpa", contract="null_source_insertion", dtype=torch.bfloat16):
    v = run_cell(REG[op], CONTRACTS[contract], dtype, examples=20, seed=1, replay_dir=tmp_path)
    assert v.violated and v.replay, v
    return v


def test_violation_is_stored_with_inputs_seed_and_evidence(tmp_path):
    v = _violation(tmp_path)
    art = json.loads((tmp_path / f"{v.replay}.json").read_text())
    assert art["operator"] == "sdpa" and art["contract"] == "null_source_insertion"
    assert art["dtype"] == "bfloat16" and art["backend"] == "eager"
    assert art["case"]["seed"] == v.counterexample["seed"]
    assert float.fromhex(art["verdict"]["discrepancy"]) == v.discrepancy
    assert len(art["x"]["hex"]) == art["case"]["batch"] * art["case"]["n"] * art["case"]["d"]


def test_replay_reproduces_bit_for_bit(tmp_path):
    v = _violation(tmp_path)
    res = R.replay(v.replay, tmp_path)
    assert res.reproduced
    assert res.verdict.discrepancy == v.discrepancy and res.verdict.bound == v.bound
    # the cell's detail is the contract's own; the search's notes (shapes searched, regimes) are its evidence
    assert res.verdict.detail == res.artifact.verdict["detail"] == v.detail
    assert v.written_detail.startswith(v.detail + " [searched ")


def test_replay_cli_exit_codes(tmp_path, capsys):
    v = _violation(tmp_path, op="ffn_update", contract="zero_absorption", dtype=torch.float16)
    assert main(["replay", v.replay, "--replays", str(tmp_path)]) == 0
    assert "reproduced bit-for-bit" in capsys.readouterr().out
    # a tampered artifact no longer matches: replay says so and exits 1
    path = tmp_path / f"{v.replay}.json"
    art = json.loads(path.read_text())
    art["verdict"]["discrepancy"] = (v.discrepancy * 2).hex()
    path.write_text(json.dumps(art))
    assert main(["replay", v.replay, "--replays", str(tmp_path)]) == 1
    assert main(["replay", "no-such-id", "--replays", str(tmp_path)]) == 2


def test_same_failure_gets_the_same_id(tmp_path):
    a = _violation(tmp_path)
    b = _violation(tmp_path)
    assert a.replay == b.replay
