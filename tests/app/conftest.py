"""Fixtures of the command-line tests: a user's own operators module, as a user's project holds it."""
from __future__ import annotations

import sys
import textwrap

import pytest


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """``user_module(name, source)``: ``tmp_path/name.py`` written from ``source`` (dedented), the working
    directory moved there (``--operators name.py`` resolves as in a user's project), and ``tmp_path``
    returned.  ``sys.path`` (the CLI puts the working directory on it) is restored and the module
    forgotten afterwards, so the next test imports its own file of that name."""
    names = []
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))

    def write(name: str, source: str):
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        names.append(name)
        return tmp_path

    yield write
    for name in names:
        sys.modules.pop(name, None)
