"""One registry of formats and one writer (reports/formats.py): what each group writes, and what it refuses."""
from __future__ import annotations

import json

import pytest

from tokenlaw.errors import InvalidArgument
from tokenlaw.properties import verdict as V
from tokenlaw.properties.plan import Cell, Row
from tokenlaw.properties.mutants import MutantResult
from tokenlaw.reports import formats, proofs, verification, writers
from tokenlaw.reports.campaign import CampaignReport
from tokenlaw.reports.document import Document
from tokenlaw.reports.kill_matrix import Figure, KillMatrix, MutantRun, Tally
from tokenlaw.reports.mutations import MutationReport
from tokenlaw.reports.meta import Meta


def _fuzz():
    v = V.Verdict(V.Status.HOLDS, 0.1, 1.0, examples=3, seconds=0.25)
    return Document([Row("a", "simplex", "claims", "r", [Cell("a", "simplex", "eager", "float64", v)])],
                    Meta.from_json(dict(tier="fuzz", backend="eager", seed=0, profile="smoke", examples=3, seconds=1.5)))


def _proof():
    v = V.Verdict(V.Status.PROVED, tier="symbolic", dtype="real", seconds=0.5)
    rows = [Row("a", "simplex", "claims", "r", [Cell("a", "simplex", "symbolic", "real", v)])]
    return proofs.document(rows, Meta.from_json(dict(tier="symbolic", backend="z3", solver="z3", timeout=5, seconds=0.5)))


def test_every_group_names_registered_formats():
    for group in (formats.CONFORMANCE, formats.PROOFS, formats.VERIFICATION, formats.CAMPAIGN, formats.MUTATION,
                  formats.ADVERSARY):
        assert set(group) <= set(formats.FORMATS)


def test_a_check_writes_its_group_without_timings_but_in_the_timings_files(tmp_path):
    doc = _fuzz()
    (tmp_path / "conformance.md").write_text("an earlier run\n")         # an earlier report, marked as stale
    assert writers.mark_interrupted(tmp_path, "conformance", "tokenlaw check").exists()
    paths = formats.write(doc, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"conformance{formats.FORMATS[n].suffix}" for n in formats.CONFORMANCE)   # the marker went
    assert set(paths) == set(formats.CONFORMANCE)
    written = json.loads(paths["json"].read_text())
    assert "seconds" not in written["meta"] and "seconds" not in written["rows"][0]["cells"][0]["verdict"]
    assert json.loads(paths["timings"].read_text())["seconds"] == 1.5


def test_the_proofs_report_keeps_its_seconds_and_the_combined_view_none(tmp_path):
    fz, pr = _fuzz(), _proof()
    paths = formats.write(pr, tmp_path, formats.PROOFS, stem="proofs")
    assert sorted(p.name for p in paths.values()) == ["proofs.json", "proofs.md"]
    assert json.loads(paths["timed-json"].read_text())["rows"][0]["cells"][0]["verdict"]["seconds"] == 0.5
    ver = verification.combine([fz, pr])
    paths = formats.write(ver, tmp_path, formats.VERIFICATION, stem="verification")
    text = paths["verification-json"].read_text()
    assert '"seconds"' not in text and json.loads(text)["summary"]["result"] == "PASS"


def test_a_json_dict_or_an_unknown_format_is_refused_naming_the_argument():
    doc = _fuzz()
    with pytest.raises(InvalidArgument, match="doc: expected a Document"):
        formats.render(doc.to_json(), "md")
    with pytest.raises(InvalidArgument, match="format: expected one of"):
        formats.render(doc, "pdf")


def _campaign():
    meta = dict(kind="campaign", minutes=1, seconds=2.0, rounds=1, interrupted=False, finished=True, seed=0,
                backend="eager", database="None", mutant=None, replays="out/replays", dask={"workers": {}})
    cell = dict(id="a-simplex-eager-float64", declared="claims", budget=50, status="holds", rounds=1, examples=25,
                seconds=1.0, best_ratio=0.1, regimes={}, violations=[])
    return CampaignReport.from_json({"meta": meta, "cells": [cell]})


def _mutation():
    killed = MutantResult("m1", "eager", "a bug", ("a",), ["a-simplex"], {"a-simplex": "a-simplex-float64-1"}, 2, 0.5)
    survived = MutantResult("m2", "eager", "another", ("a",), [], {}, 2, 0.25)
    return MutationReport((killed, survived), frozenset({"a-other"}), dict(examples=5, seed=0))


def _kill_matrix():
    tally = {"n": Tally(total=1, killed=1, equivalent=0, gap=0, crashed=0)}
    return KillMatrix(dict(seed=0, examples=5, workers=1, mutants_run=1, mutants_built=2, seconds=1.0,
                           baseline_seconds=0.5, baseline_cpu_seconds=0.4, mutants_cpu_seconds=0.1),
                      Figure(killed=1, non_equivalent=1, equivalent=0, gaps=0, crashed=0), tally, tally, tally, [], {},
                      (MutantRun(id="a:n:scale", status="killed", reason="", seconds=0.1),))


def test_the_campaign_mutation_and_adversary_reports_go_through_the_one_writer(tmp_path):
    """Each command's group, its file names, and a report read back from its JSON renders the same files."""
    for report, group, stem, reread in ((_campaign(), formats.CAMPAIGN, "campaign", CampaignReport.from_json),
                                        (_mutation(), formats.MUTATION, "mutation", None),
                                        (_kill_matrix(), formats.ADVERSARY, "adversary", KillMatrix.from_json)):
        paths = formats.write(report, tmp_path, group, stem=stem)
        assert sorted(p.name for p in paths.values()) == sorted(f"{stem}{formats.FORMATS[n].suffix}" for n in group)
        data = json.loads(paths[f"{stem}-json"].read_text())
        if reread is not None:
            assert all(formats.render(reread(data), n) == paths[n].read_text() for n in group), stem
    mutation = json.loads((tmp_path / "mutation.json").read_text())
    assert (mutation["killed"], mutation["total"], mutation["baseline_failing"]) == (1, 2, ["a-other"])
    assert "**SURVIVED**" in (tmp_path / "mutation.md").read_text()
    assert 'http-equiv' not in (tmp_path / "campaign.html").read_text()             # a finished campaign's page


@pytest.mark.parametrize("make, name", [(_campaign, "md"), (_fuzz, "campaign-html"), (_mutation, "adversary-md"),
                                        (_kill_matrix, "json")])
def test_a_record_in_another_records_format_is_refused_naming_both(make, name):
    report = make()
    with pytest.raises(InvalidArgument, match=f"doc: expected a .* \\(what the format '{name}' renders\\), "
                                              f"got {type(report).__name__}"):
        formats.render(report, name)
