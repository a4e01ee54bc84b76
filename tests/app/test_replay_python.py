"""A counterexample loads into Python, and every printed replay command works when pasted (issue 47, point 4).

``tokenlaw replay ID --python`` prints a snippet holding the whole artifact (x, mask AND the drawn parameters);
pasted into a fresh ``python -c`` in another directory, it rebuilds ``(inputs, params)``, checks them bit for
bit against the stored values and judges the law again: the violation.  A campaign's replay lines name the
user's ``--operators`` module (they did not).
"""
from __future__ import annotations

import json
import shlex
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from tokenlaw.app import cli
from tokenlaw.fuzz import replay as R
from tokenlaw.orchestration.counterexamples import load
from tokenlaw.reports.campaign import CampaignReport, markdown
from tokenlaw.reports.campaign_page import page

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import workflow_env as W  # noqa: E402

OPS = textwrap.dedent('''
    from tokenlaw.operators.registry import Domain, declare


    def _params(gen, d_model, dtype=None):
        import torch
        return {"w": torch.randn(d_model, d_model, generator=gen, dtype=torch.float64)}


    @declare(name="user_peek", domain=Domain(params=_params, dtypes=("float64",), n_max=5),
             traits={"token_mixing", "causal"}, claims={"causality": "claimed, but each token sees the next"})
    def user_peek(xp, x, *, w):
        m = xp.tril(xp.ones_like(xp.matmul(x, xp.swapaxes(x, -1, -2))), 1)      # look-ahead by one
        return xp.matmul(m, xp.matmul(x, w))
''')


@pytest.fixture
def project(user_module):
    return user_module("peek_ops", OPS)


def run(capsys, *argv):
    capsys.readouterr()
    code = cli.main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_replay_python_snippet_reproduces_in_a_fresh_process(project, capsys, tmp_path_factory):
    rc, out, err = run(capsys, "--operators", "peek_ops.py", "check", "--examples", "4", "--contract", "causality",
                       "--out", "r", "--progress", "off")
    assert rc == 1, out + err
    printed = [line.split("replay: ", 1)[1] for line in out.splitlines() if "replay: " in line]
    argv = shlex.split(printed[0])
    rid = argv[argv.index("replay") + 1]
    art = R.load(rid, "r/replays")
    assert art.params is not None and art.x is not None        # the weights are stored beside x
    sys.modules.pop("peek_ops", None)
    rc, snippet, err = run(capsys, *argv[1:], "--python")
    assert rc == 0, err
    elsewhere = tmp_path_factory.mktemp("elsewhere")           # pasted anywhere: the artifact is inline
    res = W.run(["-c", snippet], cwd=elsewhere, env=W.env())
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.startswith("violated") and "|lhs - rhs|" in res.stdout, res.stdout


def test_loaded_example_is_the_stored_one_and_a_changed_weight_is_refused(project, capsys):
    rc, out, _ = run(capsys, "--operators", "peek_ops.py", "check", "--examples", "4", "--contract", "causality",
                     "--out", "r", "--progress", "off")
    rid = next(p.stem for p in Path("r/replays").glob("*.json"))
    example = load(rid, replays="r/replays", operators=["peek_ops.py"])
    inputs, params = example.inputs, example.params
    assert inputs["x"].dtype == torch.float64 and set(params) == {"w"}
    by_hand = example.operator(__import__("tokenlaw.operators.xp", fromlist=["TORCH"]).TORCH, inputs["x"], **params)
    assert torch.equal(by_hand, example.run(torch.float64))
    assert example.judge().violated
    doc = json.loads(Path(f"r/replays/{rid}.json").read_text())
    w = doc["params"]["dict"][0][1]["tensor"]["hex"]
    w[0] = (float.fromhex(w[0]) + 1.0).hex()                   # a stored weight that the seed does not draw
    with pytest.raises(Exception, match="params"):
        load(doc, operators=["peek_ops.py"])


def test_campaign_replay_lines_name_the_operators_module():
    meta = {"rounds": 1, "seconds": 1.0, "minutes": 1, "interrupted": False, "seed": 0, "backend": "eager",
            "database": "None", "replays": "out/replays", "dask": {"workers": {}}, "finished": True,
            "scope": {"operator_modules": ["peek_ops.py"]}}
    cell = {"id": "user_peek-causality-float64-eager", "rounds": 1, "examples": 3, "best_ratio": None, "regimes": {},
            "violations": [{"round": 1, "replay": "user_peek-causality-float64-abc", "detail": "d"}],
            "declared": "claims", "budget": 3, "seconds": 1.0}
    doc = CampaignReport.from_json({"meta": meta, "cells": [cell], "violations": 1, "unexpected": [cell["id"]]})
    want = "tokenlaw --operators peek_ops.py replay user_peek-causality-float64-abc --replays out/replays"
    assert want in markdown(doc)
    assert want in page(doc)


def test_replay_expect_fixed_says_whether_the_bug_is_gone(project, capsys):
    rc, out, _ = run(capsys, "--operators", "peek_ops.py", "check", "--examples", "4", "--contract", "causality",
                     "--out", "r", "--progress", "off")
    rid = next(p.stem for p in Path("r/replays").glob("*.json"))
    args = ["--operators", "peek_ops.py", "replay", rid, "--replays", "r/replays", "--expect-fixed"]
    rc, out, _ = run(capsys, *args)
    assert rc == 1 and "NOT FIXED" in out, out                  # still violated
    (project / "peek_ops.py").write_text(OPS.replace("swapaxes(x, -1, -2))), 1)", "swapaxes(x, -1, -2))))"))
    sys.modules.pop("peek_ops", None)
    rc, out, _ = run(capsys, *args)
    assert rc == 0 and "FIXED: the stored example no longer violates" in out, out
