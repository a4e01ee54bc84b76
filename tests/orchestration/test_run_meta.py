"""A run's meta is a typed record (RunMeta): made by check and prove, held by the Document as such (Document.meta:
a Meta), written as the schema's meta and read back once, at the JSON edge."""
from __future__ import annotations

import pytest

from tokenlaw.errors import InvalidArgument
from tokenlaw.orchestration import gate, runs
from tokenlaw.properties.verdict import Tier
from tokenlaw.reports import document
from tokenlaw.reports.meta import CheckRecord, Meta, ProveRecord, RunMeta


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    out = tmp_path_factory.mktemp("meta")
    settings = runs.CheckSettings(operators=["oattention"], contracts=["null_receiver"], dtypes=["float64"],
                                  examples=2, workers=1, out=str(out))
    return settings, runs.check(settings)


def test_a_check_meta_reads_back_as_the_record_it_was_written_from(checked):
    settings, doc = checked
    assert isinstance(doc.meta, Meta) and doc.meta.run.settings == settings     # the settings object itself
    written = doc.to_json()["meta"]
    record = RunMeta.from_json(written, out=settings.out)
    assert record.tier is Tier.FUZZ and type(record.settings) is CheckRecord
    assert runs.runnable(record) == settings and type(runs.runnable(record)) is runs.CheckSettings
    assert list(record.to_json().items()) == list(written.items())      # every key, value and their order
    assert record.environment.cpu_paths == written["cpu_paths"] and record.execution.shard == "1/1"
    assert Meta.from_json(written) == Meta(RunMeta.from_json(written))


def test_the_gate_re_runs_the_recorded_settings_object(checked):
    settings, doc = checked
    (again,) = gate.baseline_settings(doc, out=settings.out)
    assert again == settings and again.tier is Tier.FUZZ


def test_a_prove_meta_reads_back_with_its_own_settings_type(tmp_path):
    settings = runs.ProveSettings(operators=["ostandardize"], contracts=["null_receiver"], out=str(tmp_path))
    doc = runs.prove(settings)
    written = doc.to_json()["meta"]
    record = RunMeta.from_json(written, out=str(tmp_path))
    assert record.tier is Tier.SYMBOLIC and type(record.settings) is ProveRecord
    assert runs.runnable(record) == settings and type(runs.runnable(record)) is runs.ProveSettings
    assert list(record.to_json().items()) == list(written.items())
    assert record.environment.solver == written["solver"] and doc.meta.run.settings == settings


def test_fields_the_record_does_not_model_are_kept_as_read(checked):
    _, doc = checked
    written = {**doc.to_json()["meta"], "created": "2026-12-06"}
    assert RunMeta.from_json(written).to_json() == written


def test_a_merge_keeps_its_own_fields_typed_and_each_run(checked):
    _, doc = checked
    shards = document.merge_shards([doc, doc], ["a.json", "b.json"])
    assert shards.meta.merged_from == ("a.json", "b.json") and shards.meta.shards == ("1/1", "1/1")
    written = shards.to_json()["meta"]
    assert list(written)[-2:] == ["merged_from", "shards"] and written["seconds"] == 2 * doc.meta.run.execution.seconds
    back = Meta.from_json(written)
    assert (back.merged_from, back.shards) == (shards.meta.merged_from, shards.meta.shards)
    settings = shards.meta.run.settings
    assert back.to_json() == written and runs.runnable(back.run, out=settings.out) == settings
    runs_ = document.merge_runs([shards])
    written = runs_.to_json()["meta"]
    assert [r["merged_from"] for r in written["runs"]] == [["a.json", "b.json"]]
    assert Meta.from_json(written).to_json() == written and runs_.runs[0].extra["shards"] == ["1/1", "1/1"]


def test_an_unknown_tier_is_refused_naming_the_field(checked):
    _, doc = checked
    with pytest.raises(InvalidArgument, match="meta.tier"):
        RunMeta.from_json({**doc.to_json()["meta"], "tier": "combined"})
