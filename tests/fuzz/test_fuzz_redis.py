"""The Hypothesis example database on a real redis-server on loopback (started and stopped here)."""
from __future__ import annotations

import socket

import pytest
import torch

from tokenlaw.fuzz.database import KEY_PREFIX, open_database
from tokenlaw.fuzz.engine import run_cell
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties.catalogue import default_registry
from tokenlaw.properties.catalogue import CONTRACTS

from tests.fuzz.redis_server import redis_url  # noqa: F401 -- the fixture


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_failing_examples_are_saved_to_and_replayed_from_redis(redis_url, tmp_path):
    url, client = redis_url
    db = open_database(url)
    op, law = default_registry()["sdpa"], CONTRACTS["null_receiver"]
    first = run_cell(op, law, torch.float32, examples=30, seed=3, database=db, replay_dir=None)
    assert first.violated
    keys = client.keys(KEY_PREFIX + b"*")
    assert keys, "the shrunk failing example must be stored in Redis"
    # a second campaign (another process or machine in practice) replays it first, and searches no further
    second = run_cell(op, law, torch.float32, examples=30, seed=99, database=open_database(url), replay_dir=None)
    assert second.violated and second.evidence.from_database
    assert second.counterexample == first.counterexample


def test_unreachable_redis_is_a_clear_error():
    with pytest.raises(InvalidArgument, match="cannot reach"):
        open_database(f"redis://127.0.0.1:{_free_port()}/0")
