"""A subtle seeded bug the default check misses at seed 0, found by a campaign of 2 minutes, after which the
check fails with the campaign's counterexample.

The mutant (``oattn_running_max_two_tiles``, fuzz/mutants/seeded.py SUBTLE_MUTANTS): OAttention's running max
covers the first two 64-key tiles only, so only a row of more than 128 keys whose late key scores above
every earlier one by more than log(max) of the dtype overflows.  The default profile (100 examples a
cell) at seed 0 never draws one; the campaign's rounds (fresh seeds, budgets that double where the
search still moves) do, and store it in the example database; the next check replays it first.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.fuzz.commands import tokenlaw as bounded

pytestmark = pytest.mark.slow

MUTANT = "oattn_running_max_two_tiles"
SELECTION = ["--operator", "oattention", "--contract", "finite", "--contract", "differential"]
LIMIT = 420


def tokenlaw(where: Path, *argv) -> subprocess.CompletedProcess:
    return bounded(where, *argv, limit=LIMIT)


def check(where: Path, out: str, *extra) -> tuple[subprocess.CompletedProcess, dict]:
    run = tokenlaw(where, "check", *SELECTION, "--seed", "0", "--workers", "2", "--progress", "off", "--out", out,
                   *extra)
    return run, json.loads((where / out / "conformance.json").read_text())


def failing_cells(doc: dict) -> dict:
    return {c["id"]: c["verdict"] for r in doc["rows"] for c in r["cells"]
            if r["outcome"] == "UNEXPECTED violation" and c["verdict"]["status"] == "violated"}


def test_a_campaign_finds_what_the_default_check_misses_and_the_check_then_fails_with_it(tmp_path):
    missed, doc = check(tmp_path, "before", "--mutant", MUTANT)
    assert missed.returncode == 0 and doc["meta"]["profile"] == "ci", missed.stdout[-2000:] + missed.stderr[-2000:]
    assert doc["meta"]["mutant"] == MUTANT and not failing_cells(doc)         # the default check misses it

    camp = tokenlaw(tmp_path, "campaign", *SELECTION, "--mutant", MUTANT, "--minutes", "2", "--workers", "2",
                    "--database", "db", "--out", "camp")
    assert camp.returncode == 1, camp.stdout[-2000:] + camp.stderr[-3000:]    # a claimed law broken
    report = json.loads((tmp_path / "camp" / "campaign.json").read_text())
    assert report["meta"]["seconds"] <= 150 and report["unexpected"]
    found = {c["id"]: v for c in report["cells"] for v in c["violations"]}
    assert set(found) == set(report["unexpected"])
    for v in found.values():
        replay = tokenlaw(tmp_path, "replay", v["replay"], "--replays", "camp/replays")
        assert replay.returncode == 0 and f"mutant {MUTANT}" in replay.stdout, replay.stdout + replay.stderr

    failed, doc = check(tmp_path, "after", "--mutant", MUTANT, "--database", "db")
    assert failed.returncode == 1, failed.stdout[-2000:] + failed.stderr[-2000:]
    cells = failing_cells(doc)
    assert cells and set(cells) <= set(found), (sorted(cells), sorted(found))
    for cid, v in cells.items():              # the campaign's counterexample, replayed as stored
        assert v["extra"]["from_database"], cid
        assert (v["replay"], v["counterexample"]) == (found[cid]["replay"], found[cid]["counterexample"]), cid

    clean, doc = check(tmp_path, "clean", "--database", "db")   # the mutant's findings are its own
    assert clean.returncode == 0 and not failing_cells(doc), clean.stdout[-2000:]
