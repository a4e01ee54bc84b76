"""The documentation a user of the package has: shipped topics, pointers that resolve, and computed thresholds."""
from __future__ import annotations

import json
import re

import pytest
import torch

from tokenlaw.operators.arguments import null_threshold
from tokenlaw.operators.dtypes import DTYPES
from tokenlaw.operators.presence import presence
from tokenlaw.operators.xp import TORCH
from tokenlaw.app import cli, docs_cmd
from tokenlaw.reports import writers


def test_topics_and_the_generated_laws(capsys):
    assert cli.main(["docs", "--json"]) == 0
    names = json.loads(capsys.readouterr().out)["topics"]
    assert {"mathematics", "report-schema", "workflow", "laws"} <= set(names)
    assert cli.main(["docs", "laws"]) == 0
    text = capsys.readouterr().out
    from tokenlaw.properties.catalogue import CONTRACTS
    for name, c in CONTRACTS.items():                  # every contract's law, stated by the installed catalogue
        assert f"## {name} (" in text and c.law in text
    assert "oattention claims it: the receiver gate p_i = rho(0) = 0 multiplies the output" in text


def test_every_pointer_in_a_report_resolves_for_a_wheel_user():
    """Reports name `tokenlaw docs TOPIC` commands (never a path of the source tree)."""
    pages = docs_cmd.topics()
    text = writers.HOW_TO_READ + pages["mathematics"]
    pointers = re.findall(r"tokenlaw docs ([\w-]+)", text)
    assert pointers and all(p in pages or p == docs_cmd.GENERATED for p in pointers), pointers
    assert "SPEC" not in writers.HOW_TO_READ and "docs/" not in writers.HOW_TO_READ
    assert "SPEC.md" not in pages["mathematics"]


@pytest.mark.parametrize("name", DTYPES)
def test_near_null_thresholds_are_computed_and_documented(name):
    """Below the threshold a token's squared norm, hence its presence, is exactly 0; just above it is not."""
    dtype, t = DTYPES[name], null_threshold(DTYPES[name])
    below = torch.full((1, 1, 3), t * 0.9, dtype=torch.float64).to(dtype)
    above = torch.full((1, 1, 1), t * 1.1, dtype=torch.float64).to(dtype)
    assert below.abs().min() > 0                                      # not zero as an input
    assert presence(TORCH, below, tau=1.0).item() == 0.0
    assert presence(TORCH, above, tau=1.0).item() > 0.0
    table = docs_cmd.topics()["mathematics"]
    documented = float(re.search(rf"\| {name} \| ([0-9.e+-]+) \|", table).group(1))
    assert documented == pytest.approx(t, rel=0.05), (name, documented, t)
