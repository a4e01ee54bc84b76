"""Old transformers releases installed into the isolated pin cache (needs the package index: slow).

The issue's measurement: 4.39.3, Mistral with sliding_window=4, 2 layers, width 32, 16 tokens, no mask:
editing token 0 moves the last positions' logits under sdpa (~0.05) and not under eager; 4.40.0 fixed it."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from tokenlaw.app import cli  # noqa: E402
from tokenlaw.integrations.hf import arches, bisect, model_laws as ML  # noqa: E402

pytestmark = pytest.mark.slow
MISTRAL = arches.ARCHES["mistral"]


def issue_case(attn):
    return ML.Case(knobs=ML.Knobs(attn=attn, sliding_window=4), tokens=16, edit=0, pass_mask=False)


def test_the_issue_case_at_4_39_3_and_4_40_0():
    bad = ML.replay("window_locality", MISTRAL.build, MISTRAL.traits, issue_case("sdpa"), dtype="float32",
                    version="4.39.3")
    assert bad.version == "4.39.3" and bad.status is ML.Status.VIOLATED and bad.gap > 1e-2, bad.detail
    assert any("huggingface-hub" in s for s in bad.setup), bad.setup          # the import-time pin, handled
    eager = ML.replay("window_locality", MISTRAL.build, MISTRAL.traits, issue_case("eager"), dtype="float32",
                      version="4.39.3")
    assert eager.status is ML.Status.HOLDS and eager.gap == 0.0, eager.detail
    fixed = ML.replay("window_locality", MISTRAL.build, MISTRAL.traits, issue_case("sdpa"), dtype="float32",
                      version="4.40.0")
    assert fixed.version == "4.40.0" and fixed.status is ML.Status.HOLDS, fixed.detail


def test_bisect_names_4_40_0_first_good():
    b = bisect.bisect("mistral", "window_locality", "4.37.0", "4.41.0")
    assert (b.last_bad, b.first_good) == ("4.39.3", "4.40.0"), b.detail


def test_bugs_run_rediscovers_both_and_the_twins_pass(tmp_path):
    assert cli.main(["bugs", "run", "--record", str(tmp_path)]) == 0
