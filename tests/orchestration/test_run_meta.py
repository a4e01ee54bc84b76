"""A run's meta is a typed record (RunMeta): made by check and prove, written as the schema's meta, read back once."""
from __future__ import annotations

import pytest

from tokenlaw.errors import InvalidArgument
from tokenlaw.orchestration import gate, runs
from tokenlaw.properties.verdict import Tier


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    out = tmp_path_factory.mktemp("meta")
    settings = runs.CheckSettings(operators=["oattention"], contracts=["null_receiver"], dtypes=["float64"],
                                  examples=2, workers=1, out=str(out))
    return settings, runs.check(settings)


def test_a_check_meta_reads_back_as_the_record_it_was_written_from(checked):
    settings, doc = checked
    record = runs.RunMeta.from_json(doc.meta, out=settings.out)
    assert record.tier is Tier.FUZZ
    assert record.settings == settings                       # the settings object itself, not a dict of it
    assert list(record.to_json().items()) == list(doc.meta.items())      # every key, value and their order
    assert record.environment.cpu_paths == doc.meta["cpu_paths"] and record.execution.shard == "1/1"


def test_the_gate_re_runs_the_recorded_settings_object(checked):
    settings, doc = checked
    (again,) = gate.baseline_settings(doc, out=settings.out)
    assert again == settings and again.tier is Tier.FUZZ


def test_a_prove_meta_reads_back_with_its_own_settings_type(tmp_path):
    settings = runs.ProveSettings(operators=["ostandardize"], contracts=["null_receiver"], out=str(tmp_path))
    doc = runs.prove(settings)
    record = runs.RunMeta.from_json(doc.meta, out=str(tmp_path))
    assert record.tier is Tier.SYMBOLIC and type(record.settings) is runs.ProveSettings
    assert record.settings == settings
    assert list(record.to_json().items()) == list(doc.meta.items())


def test_fields_the_record_does_not_model_are_kept_as_read(checked):
    _, doc = checked
    merged = {**doc.meta, "merged_from": ["a.json", "b.json"]}
    assert runs.RunMeta.from_json(merged).to_json() == merged


def test_an_unknown_tier_is_refused_naming_the_field(checked):
    _, doc = checked
    with pytest.raises(InvalidArgument, match="meta.tier"):
        runs.RunMeta.from_json({**doc.meta, "tier": "combined"})
