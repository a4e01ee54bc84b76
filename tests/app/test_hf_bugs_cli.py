"""``tokenlaw hf`` and ``tokenlaw bugs run``: bad input exits 2 naming the argument, a missing sweep is an
error (never a verdict), bisection's logic on a fake judge, the pin installer's bookkeeping, and a new bug
file (a re-injected patch) runs with no code change and no network."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from tokenlaw.app import cli, hf_cmd  # noqa: E402
from tokenlaw.integrations import hf  # noqa: E402

transformers = pytest.importorskip("transformers", reason=hf.INSTALL)

from tokenlaw.integrations.hf import bisect as B, model_laws as ML, pins  # noqa: E402
from tokenlaw.operators.errors import InvalidArgument  # noqa: E402
from tokenlaw.orchestration import bugs  # noqa: E402

PATCH = Path(__file__).resolve().parents[1] / "fixtures" / "bugs" / "mistral_window_patch.py"


@pytest.mark.parametrize("argv, named", [
    (["hf", "bisect", "--arch", "nope", "--law", "window_locality", "4.37.0..4.41.0"], "--arch"),
    (["hf", "bisect", "--arch", "mistral", "--law", "nope", "4.37.0..4.41.0"], "--law"),
    (["hf", "bisect", "--arch", "mistral", "--law", "window_locality", "4.41.0..4.37.0"], "RANGE"),
    (["hf", "bisect", "--arch", "mistral", "--law", "window_locality", "4.37.0"], "RANGE"),
    (["hf", "laws", "--arch", "mistral", "--transformers", "x.y"], "--transformers"),
    (["hf", "laws", "--arch", "mistral", "--with", "torch==2.0.0"], "--with"),
    (["hf", "laws", "--arch", "mistral", "--with", "transformers>=4"], "--with"),
    (["hf", "laws", "--arch", "mistral", "--dtype", "float16"], "--dtype"),
    (["hf", "laws", "--arch", "mistral", "--law", "nope"], "--law"),
    (["bugs", "run", "--id", "nope"], "--id"),
    (["bugs", "run", "--dir", "/no/such/folder"], "--dir"),
])
def test_bad_input_exits_2_naming_the_argument(argv, named, capsys):
    assert cli.main(argv) == 2
    assert named in capsys.readouterr().err


def test_sweep_without_its_module_is_an_error_not_a_verdict(monkeypatch, capsys):
    monkeypatch.setattr(hf_cmd, "SWEEP", "tokenlaw.integrations.hf.no_such_sweep")
    assert cli.main(["hf", "sweep", "--arch", "all"]) == 3
    err = capsys.readouterr()
    assert "not available" in err.err and "holds" not in err.out


def _fake(statuses):
    def judge(version):
        return ML.Result("window_locality", statuses[version], "fake", "float32", version, judged=1)
    return judge


V, H, C = ML.Status.VIOLATED, ML.Status.HOLDS, ML.Status.COULD_NOT_BUILD


def test_bisect_names_the_first_good_release_and_skips_unclassifiable_ones():
    versions = ["1.0", "1.1", "1.2", "1.3", "1.4", "1.5", "2.0"]
    statuses = dict(zip(versions, [V, V, V, C, H, H, H]))
    b = B.bisect("mistral", "window_locality", "1.0", "2.0", versions=versions, judge=_fake(statuses))
    assert (b.last_bad, b.first_good) == ("1.2", "1.4") and b.skipped == ("1.3",)
    statuses["1.3"] = H
    b = B.bisect("mistral", "window_locality", "1.0", "2.0", versions=versions, judge=_fake(statuses))
    assert (b.last_bad, b.first_good) == ("1.2", "1.3")
    # an OLD that holds, or a NEW that violates: nothing to bisect, said so
    b = B.bisect("mistral", "window_locality", "1.0", "2.0", versions=versions, judge=_fake({**statuses, "1.0": H}))
    assert b.first_good is None and "nothing to bisect" in b.detail


def test_pins_install_the_unmet_requirements_and_say_what_they_did(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKENLAW_PIN_CACHE", str(tmp_path))
    calls = []

    def fake_pip(folder, args):      # a release that asks for an old huggingface-hub and the installed numpy
        calls.append(args)
        if args == ["faketool==1.0"]:
            info = folder / "faketool-1.0.dist-info"
            info.mkdir()
            info.joinpath("METADATA").write_text("Metadata-Version: 2.1\nName: faketool\nVersion: 1.0\n"
                                                 "Requires-Dist: huggingface-hub (<0.1,>=0.0.1)\n"
                                                 "Requires-Dist: numpy\nRequires-Dist: torch (<1.0)\n"
                                                 "Requires-Dist: pytest ; extra == 'testing'\n")
    monkeypatch.setattr(pins, "_pip", fake_pip)
    pin = pins.install("faketool==1.0")
    assert calls == [["faketool==1.0"], ["huggingface-hub<0.1,>=0.0.1"]]
    text = "\n".join(pin.actions)
    assert "asks huggingface-hub" in text and "installed into the pin" in text
    assert "the environment's torch is used" in text and "asks numpy" not in text and "asks pytest" not in text
    again = pins.install("faketool==1.0")            # cached: no pip
    assert len(calls) == 2 and again.actions[0].startswith("reused the cached folder")
    with pytest.raises(InvalidArgument, match="--with"):
        pins.parse_spec("faketool>=1")


def test_a_new_bug_file_runs_with_no_code_change_and_no_network(tmp_path, monkeypatch, capsys):
    def no_index(*specs):
        raise AssertionError("a re-injected bug must not reach the package index")
    monkeypatch.setattr(pins, "install", no_index)
    (tmp_path / "reinjected.toml").write_text(f'''
id = "synthetic-mistral-sdpa-window"
description = "re-injected: Mistral's sdpa mask without its sliding window, as 4.39.3 had it"
issue = "https://github.com/huggingface/transformers/issues/28980"
package = "transformers"
buggy = "installed"
law = "window_locality"
kind = "model"
patch = "{PATCH}:drop_sdpa_window"
[target]
arch = "mistral"
dtype = "float32"
examples = 12
''')
    out = tmp_path / "report"
    assert cli.main(["bugs", "run", "--dir", str(tmp_path), "--record", str(out)]) == 0
    [r] = json.loads((out / "bugs.json").read_text())
    assert r["rediscovered"] and r["injected"] and r["twin_passes"] and "window_locality" in r["through"]
    assert r["examples_to_first"] >= 1 and json.loads(r["counterexample"])["knobs"]["attn"] == "sdpa"
    assert "re-injected" in (out / "bugs.md").read_text()
    assert "yes" in capsys.readouterr().out


def test_a_bug_file_missing_a_field_is_refused(tmp_path):
    (tmp_path / "bad.toml").write_text('id = "x"\ndescription = "d"\nkind = "model"\n')
    with pytest.raises(InvalidArgument, match="missing issue"):
        bugs.load_entries(tmp_path)


def test_the_shipped_bug_files_load():
    entries = {e.id: e for e in bugs.load_entries()}
    assert entries["mistral-sdpa-sliding-window"].fixed == "4.40.0"
    core = entries["torch-mha-need-weights-masked-head-nan"]
    assert not core.fixed and "negative control" in core.fixed_note and core.target["control"] == "mha_sdpa"
