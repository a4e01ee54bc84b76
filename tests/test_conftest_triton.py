"""The session's one choice of where Triton runs (``pytest --triton``, tests/conftest.py)."""
from __future__ import annotations

import os

import pytest
from conftest import triton_mode


def test_auto_is_the_gpu_when_there_is_one_else_the_interpreter():
    assert triton_mode("auto", True) == "gpu"
    assert triton_mode("auto", False) == "interpret"
    assert triton_mode("interpret", True) == "interpret"
    assert triton_mode("gpu", True) == "gpu"


def test_gpu_without_a_gpu_is_a_usage_error_naming_the_option():
    with pytest.raises(pytest.UsageError, match="--triton=gpu"):
        triton_mode("gpu", False)
    with pytest.raises(pytest.UsageError, match="--triton"):
        triton_mode("cpu", False)


def test_the_environment_matches_the_session_mode(request):
    mode = request.config.triton_mode
    assert mode in ("interpret", "gpu")
    assert os.environ["TRITON_INTERPRET"] == ("1" if mode == "interpret" else "0")
    from tokenlaw.kernels import capabilities

    assert capabilities.interpreting() == (mode == "interpret")
