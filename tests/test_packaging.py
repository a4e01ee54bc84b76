"""The wheel holds only tokenlaw/*, and the console script works from outside the repo."""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(out)], check=True, cwd=out)
    (whl,) = out.glob("tokenlaw-*.whl")
    return whl


def test_wheel_contains_nothing_outside_tokenlaw(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    payload = [n for n in names if ".dist-info/" not in n]
    assert payload and all(n.startswith("tokenlaw/") for n in payload), [n for n in payload if not n.startswith("tokenlaw/")]
    for sub in ("operators", "properties", "symbolic", "fuzz", "kernels", "reports"):
        assert f"tokenlaw/{sub}/__init__.py" in names
    assert not any(n.startswith("tokenlaw/tests") for n in names)
    assert "tokenlaw/__init__.py" not in names      # a namespace: never shadows another top-level package


def test_console_script_runs_from_outside_the_repo(tmp_path):
    out = subprocess.run([sys.executable, "-m", "tokenlaw.reports.cli", "--help"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert out.returncode == 0 and "check" in out.stdout
