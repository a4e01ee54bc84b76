"""Shared fixtures, and the one choice of where Triton kernels run in this pytest session.

``pytest --triton=MODE`` (default ``auto``) decides, once, before any test
module is imported (``pytest_configure`` runs before collection):

* ``interpret``: ``TRITON_INTERPRET=1``, Triton's CPU interpreter; the
  interpreter tests run, the GPU tests (marker ``gpu``) are skipped;
* ``gpu``: compiled kernels on the CUDA GPU (``TRITON_INTERPRET=0``); the GPU
  tests run, the interpreter tests are skipped; an error without a GPU;
* ``auto``: ``gpu`` when ``torch.cuda.is_available()``, else ``interpret``.

Triton reads ``TRITON_INTERPRET`` when it decorates a kernel, i.e. when a
kernel module is first imported, so no test module sets it itself.
"""
from __future__ import annotations

import os
import sys
import textwrap

import pytest

from tokenlaw.process.unshadow import unshadow

unshadow()      # `python3 -m pytest` puts the checkout's root first on sys.path: its kernels/ would shadow HF's kernels

TRITON_MODES = ("auto", "interpret", "gpu")


def pytest_addoption(parser):
    parser.addoption("--triton", choices=TRITON_MODES, default="auto",
                     help="where Triton kernels run in this session: the CPU interpreter, the CUDA GPU, or "
                          "auto (the GPU when torch sees one, else the interpreter)")


def triton_mode(choice: str, cuda_available: bool) -> str:
    """The mode a ``--triton`` choice resolves to on a machine with or without a GPU."""
    if choice not in TRITON_MODES:
        raise pytest.UsageError(f"--triton: expected one of {TRITON_MODES}, got {choice!r}")
    if choice == "gpu" and not cuda_available:
        raise pytest.UsageError("--triton=gpu: torch sees no CUDA GPU here; use --triton=interpret (or auto)")
    if choice == "auto":
        return "gpu" if cuda_available else "interpret"
    return choice


def pytest_configure(config):
    import torch

    mode = triton_mode(config.getoption("--triton"), torch.cuda.is_available())
    os.environ["TRITON_INTERPRET"] = "1" if mode == "interpret" else "0"
    config.triton_mode = mode


def pytest_report_header(config):
    return f"triton: {config.triton_mode} (TRITON_INTERPRET={os.environ['TRITON_INTERPRET']})"


def pytest_collection_modifyitems(config, items):
    if config.triton_mode == "gpu":
        return
    skip = pytest.mark.skip(reason="needs compiled Triton on a CUDA GPU: this session interprets "
                                   "(pytest --triton=gpu on a GPU machine)")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def registry():
    from tokenlaw.properties.catalogue import collect

    return collect()


# The command-line tests' fixture: a user's own operators module, as a user's project holds it (tests/app).
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
