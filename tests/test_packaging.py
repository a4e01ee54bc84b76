"""The wheel holds only tokenlaw/*, and the console script works from outside the repo."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    # Build from a copy: setuptools writes build/ and *.egg-info next to the sources.
    src = tmp_path_factory.mktemp("src") / "tokenlaw"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".dev", "build", "*.egg-info", "__pycache__",
                                                             ".hypothesis", "replays"))
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(out)], check=True, cwd=out)
    (whl,) = out.glob("tokenlaw-*.whl")
    return whl


def test_wheel_contains_nothing_outside_tokenlaw(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    payload = [n for n in names if ".dist-info/" not in n]
    assert payload and all(n.startswith("tokenlaw/") for n in payload), [n for n in payload if not n.startswith("tokenlaw/")]
    for sub in ("process", "operators", "properties", "symbolic", "fuzz", "kernels", "reports", "orchestration", "integrations", "experiments", "app"):
        assert f"tokenlaw/{sub}/__init__.py" in names
    for sub in ("operators/zoo", "integrations/hf", "integrations/closure"):     # subpackages ship too
        assert f"tokenlaw/{sub}/__init__.py" in names, sub
    assert not any(n.startswith("tokenlaw/tests") for n in names)
    # the root's modules are tokenlaw's own (the public face, the errors), never a top-level package
    assert {"tokenlaw/__init__.py", "tokenlaw/errors.py"} <= set(names)
    assert not [n for n in names if n.count("/") == 1 and not n.endswith(".py") and ".dist-info/" not in n], \
        "a data file of the checkout's root shipped as tokenlaw/<file>"


def test_wheel_ships_the_docs(wheel):
    """The mathematics and the schemas a report points at are in the wheel (`tokenlaw docs TOPIC`)."""
    names = zipfile.ZipFile(wheel).namelist()
    for page in ("mathematics", "report-schema", "workflow", "fuzz", "symbolic", "kernels", "closure"):
        assert f"tokenlaw/docs/{page}.md" in names, page


def test_console_script_runs_from_outside_the_repo(tmp_path):
    out = subprocess.run([sys.executable, "-m", "tokenlaw.app.cli", "--help"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert out.returncode == 0 and "check" in out.stdout
