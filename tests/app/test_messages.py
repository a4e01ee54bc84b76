"""The messages a new user meets (issue 21, point 10): each names what the user passed and shows what was found."""
from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

from tokenlaw.operators import arguments
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.modules import Block, Host, OAttention

X9 = torch.randn(1, 4, 9, dtype=torch.float64)
X8 = torch.randn(1, 4, 8, dtype=torch.float64)


def _wrong_gamma():
    host = Host(8, 2, depth=2).double()
    host.blocks[1].norm1.gamma = nn.Parameter(torch.ones(9, dtype=torch.float64))
    return host


def _wrong_wq():
    layer = OAttention(8, 2).double()
    layer.wq = nn.Parameter(torch.ones(8, 9, dtype=torch.float64))
    return layer


@pytest.mark.parametrize("build, x, message", [
    (lambda: Host(8, 2, depth=2).double(), X9, "x: expected 8 features (the layer's d_model), got 9"),
    (lambda: OAttention(8, 2).double(), X9, "x: expected 8 features (the layer's d_model), got 9"),
    (lambda: Block(8, 2).double(), X9, "h: expected 8 features (the layer's d_model), got 9"),
    (_wrong_gamma, X8, "blocks[1].norm1.gamma: expected shape (8,) for d_model 8, got (9,)"),
    (_wrong_wq, X8, "wq: expected shape (8, 8) for d_model 8, got (8, 9)"),
], ids=["host-x", "oattention-x", "block-h", "host-param-path", "layer-param"])
def test_a_module_names_the_argument_the_user_passed(build, x, message):
    with pytest.raises(InvalidArgument) as err:
        build()(x)
    assert str(err.value).startswith(message), str(err.value)


def test_a_correct_module_call_is_accepted():
    assert Host(8, 2, depth=2).double()(X8).shape == X8.shape
    assert OAttention(8, 2).double()(X8).shape == X8.shape


def test_the_mask_error_shows_the_value_found():
    x = torch.randn(1, 3, 4)
    m = torch.ones(3, 3)
    m[1, 2] = 0.25
    with pytest.raises(InvalidArgument) as err:
        arguments.mask(m, x)
    assert str(err.value) == "mask: entries must be 0 or 1 exactly (1 = visible), got 0.25 at [1, 2]"
    m[2, 0] = float("nan")
    with pytest.raises(InvalidArgument, match=r"got 0\.25 at \[1, 2\] \(2 entries are neither 0 nor 1\)"):
        arguments.mask(m, x)
    assert arguments.mask(torch.tril(torch.ones(3, 3)), x) is not None


class _ClosedPipe:
    """A stdout whose reader went away (`tokenlaw docs closure | head` after head exits)."""

    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        raise BrokenPipeError(32, "Broken pipe")

    def fileno(self):
        raise OSError("no file descriptor")


def test_a_closed_pipe_is_a_quiet_exit(monkeypatch, capsys):
    import sys

    from tokenlaw.app import cli

    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert cli.main(["docs", "closure"]) == cli.EXIT_PIPE == 141
    assert capsys.readouterr().err == ""                 # no internal error, no traceback


def test_counts_agree_with_their_nouns_and_an_empty_headline_has_no_dangling_separator():
    from tokenlaw.reports.text import counted, headline

    assert (counted(1, "cell"), counted(2, "cell"), counted(0, "reason")) == ("1 cell", "2 cells", "0 reasons")
    assert headline({"rows": 1, "cells": 1, "outcomes": {"holds": 1}}) == \
        "1 declared (operator, contract) row, 1 cell judged; 1 holds"
    empty = headline({"rows": 0, "cells": 0, "outcomes": {}})
    assert empty == "0 declared (operator, contract) rows, 0 cells judged" and not empty.endswith(";")


def test_a_missing_reference_says_how_to_declare_one():
    """No word of a specification document (a user's operator has none): what a reference is and how to declare one."""
    from tokenlaw.properties.catalogue import CONTRACTS, default_registry
    from tokenlaw.properties.backends import EAGER

    contract = CONTRACTS["spec_reference"]
    # every built-in operator declares one (the hosts since issue 43): a copy of one without it
    without = dataclasses.replace(next(iter(default_registry())), reference=None)
    reason = contract.skip(without, "float64", EAGER)
    assert "reference=" in reason and "SPEC" not in reason and "@declare(" in reason
    with_ref = [op for op in default_registry() if op.reference is not None]
    assert with_ref and not contract.skip(with_ref[0], "float64", EAGER)


def test_the_closure_table_says_its_norms_are_l_inf(capsys):
    from tokenlaw.app import cli

    assert cli.main(["closure", "tokenlaw.integrations.closure.examples:oa_only"]) == 1
    out = capsys.readouterr().out
    assert "L_inf norm" in out and "|null in|inf" in out and "|null|_inf =" in out
