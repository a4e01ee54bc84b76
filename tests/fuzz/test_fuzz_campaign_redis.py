"""Two campaigns share one Redis database: what one finds, the other replays, and so does the next ``check``.

A real redis-server on loopback (``redis_url``, tests/fuzz/redis_server.py) and the real commands, each a
process of its own, bounded in time and killed with its process group if it overruns.  The cell is
sdpa's null_receiver in float32 (a declared violation: sdpa gives a null token an output).
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.fuzz.commands import tokenlaw as bounded

from tests.fuzz.redis_server import redis_url  # noqa: F401 -- the fixture

pytestmark = pytest.mark.slow

CELL = ["--operator", "sdpa", "--contract", "null_receiver", "--dtype", "float32"]
LIMIT = 240                    # seconds per command: a campaign of 0.25 min plus the Dask start on 2 busy cores


def tokenlaw(where: Path, *argv) -> subprocess.CompletedProcess:
    return bounded(where, *argv, limit=LIMIT)


def campaign(where: Path, url: str, seed: int) -> dict:
    run = tokenlaw(where, "campaign", *CELL, "--minutes", "0.25", "--workers", "1", "--seed", str(seed),
                   "--database", url, "--out", "reports")
    assert run.returncode == 0, run.stderr[-3000:]           # an expected violation: the campaign passes
    (cell,) = json.loads((where / "reports" / "campaign.json").read_text())["cells"]
    return cell


def test_a_failure_one_campaign_finds_is_replayed_by_the_other_and_by_check(redis_url, tmp_path):
    url, client = redis_url
    first = campaign(tmp_path / "a", url, seed=0)
    (found,) = first["violations"]                           # found in round 1, by the search
    assert found["round"] == 1 and not found["from_database"]
    assert client.keys(b"tokenlaw-example:tokenlaw:sdpa-null_receiver-eager-float32"), client.keys()

    other = campaign(tmp_path / "b", url, seed=1000)          # another seed, another machine in practice
    (again,) = other["violations"]
    assert again["round"] == 1 and again["from_database"]     # replayed from Redis, not searched for
    assert (again["replay"], again["counterexample"]) == (found["replay"], found["counterexample"])

    check = tokenlaw(tmp_path / "c", "check", *CELL, "--seed", "7", "--database", url, "--out", "reports",
                     "--progress", "off")
    assert check.returncode == 0, check.stderr[-3000:]      # expected violation reproduced
    (row,) = json.loads((tmp_path / "c" / "reports" / "conformance.json").read_text())["rows"]
    (cell,) = row["cells"]
    v = cell["verdict"]
    assert v["extra"]["from_database"] and v["counterexample"] == found["counterexample"], v
    assert v["replay"] == found["replay"]                    # the same artifact id: the same case, the same verdict
    replay = tokenlaw(tmp_path / "c", "replay", found["replay"], "--replays", "reports/replays")
    assert replay.returncode == 0 and "reproduced bit-for-bit" in replay.stdout, replay.stdout + replay.stderr
