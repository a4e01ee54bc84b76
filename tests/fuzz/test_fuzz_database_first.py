"""A cell with an example database replays the counterexamples stored there first, then searches with its seed.

What a campaign stores is what the next ``check`` replays, as stored (no search, no shrinking); a cell
with nothing (still) failing in the database searches with its own seed, so a campaign's fresh seeds
apply with a database too, and the same seed and database contents give the same verdict.
"""
from __future__ import annotations

import torch
from hypothesis.database import DirectoryBasedExampleDatabase

from tokenlaw.fuzz.engine import database_key, run_cell
from tokenlaw.properties.catalogue import CONTRACTS, default_registry

REG = default_registry()
SDPA, NULL_RECEIVER = REG["sdpa"], CONTRACTS["null_receiver"]          # sdpa violates it by design
KEY = database_key("sdpa", "null_receiver", "eager", "float32")


def test_a_stored_counterexample_is_replayed_first_as_stored(tmp_path):
    db = DirectoryBasedExampleDatabase(tmp_path / "db")
    first = run_cell(SDPA, NULL_RECEIVER, torch.float32, examples=40, seed=3, database=db, replay_dir=None)
    assert first.violated and not first.evidence.from_database
    assert len(list(db.fetch(KEY))) == 1                   # the shrunk counterexample, stored by the search
    again = run_cell(SDPA, NULL_RECEIVER, torch.float32, examples=40, seed=99, database=db, replay_dir=None)
    # no search: the stored example is judged by its replay and by Hypothesis' final run of the failure
    assert again.evidence.from_database and again.evidence.found_at == 1 and again.examples == 2
    assert again.counterexample == first.counterexample
    assert (again.discrepancy, again.bound) == (first.discrepancy, first.bound)
    assert "replayed from the example database" in again.written_detail
    alone = run_cell(SDPA, NULL_RECEIVER, torch.float32, examples=40, seed=99, database=None, replay_dir=None)
    assert alone.examples > 1                             # without the database, seed 99 searches


def test_with_a_database_the_seed_orders_the_search(tmp_path):
    """Same seed and database contents: the same draws; another seed: other draws (a campaign's fresh seed)."""
    db = DirectoryBasedExampleDatabase(tmp_path / "db")
    op, law = REG["presence"], CONTRACTS["zero_absorption"]
    runs = [run_cell(op, law, torch.float64, examples=15, seed=s, database=db, replay_dir=None) for s in (1, 1, 2)]
    assert all(not v.violated for v in runs)
    assert runs[0].evidence.draws == runs[1].evidence.draws != runs[2].evidence.draws
    assert list(db.fetch(database_key("presence", "zero_absorption", "eager", "float64"))) == []


def test_a_stored_example_that_holds_now_is_kept_and_the_search_runs(tmp_path):
    """A stored counterexample of another cell's key (here: the same bytes under the float64 key, where they
    draw an example that holds) is replayed, does not fail, stays stored, and the seeded search then runs."""
    db = DirectoryBasedExampleDatabase(tmp_path / "db")
    op, law = REG["presence"], CONTRACTS["zero_absorption"]
    key = database_key("presence", "zero_absorption", "eager", "float64")
    found = run_cell(SDPA, NULL_RECEIVER, torch.float32, examples=40, seed=3, database=db, replay_dir=None)
    assert found.violated
    stored = list(db.fetch(KEY))
    db.save(key, stored[0])
    v = run_cell(op, law, torch.float64, examples=15, seed=1, database=db, replay_dir=None)
    plain = run_cell(op, law, torch.float64, examples=15, seed=1, database=None, replay_dir=None)
    assert not v.violated and not v.evidence.from_database
    assert v.examples == plain.examples + 1                # the replay, then the same seeded search
    assert list(db.fetch(key)) == stored[:1]               # replaying never edits the database


def test_a_mutants_cells_keep_their_own_keys():
    assert database_key("pn", "silence", "eager", "float32", "pn_rectification_dropped") != \
        database_key("pn", "silence", "eager", "float32")
