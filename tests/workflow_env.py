"""Helpers for the workflow tests that run tokenlaw in a subprocess: copies, installs, environments.

Not a test module: the subprocess tests import it (``tests/`` is on sys.path
under pytest's rootdir-based import mode).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
# every folder pyproject maps to a tokenlaw.* subpackage (read from it: a new room is copied too)
PACKAGES = tuple(sorted(set(re.findall(r'"tokenlaw\.\w+" = "(\w+)"', (ROOT / "pyproject.toml").read_text()))))


def env(*front, keep_path=True) -> dict:
    """os.environ with ``front`` folders first on PYTHONPATH (and the inherited ones after, unless not keep_path)."""
    e = dict(os.environ)
    parts = [str(p) for p in front]
    if keep_path and e.get("PYTHONPATH"):
        parts.append(e["PYTHONPATH"])
    e["PYTHONPATH"] = os.pathsep.join(parts)
    e.pop("PYTEST_ADDOPTS", None)
    e["PYTHONDONTWRITEBYTECODE"] = "1"
    return e


def run(args, *, cwd, env, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def pip_target(source: Path, target: Path):
    """Install ``source`` (a project folder) into ``target`` without network or dependencies."""
    work = target.parent / f"{source.name}-src"
    shutil.copytree(source, work, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    out = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                          "--no-index", "--target", str(target), str(work)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return target


# the modules of the checkout's root: the public face (``tokenlaw``) and ``tokenlaw.errors``
ROOT_MODULES = tuple(sorted(p.name for p in ROOT.glob("*.py")))


def copy_tree(dest: Path) -> Path:
    """A copy of this checkout's packages and pyproject, as a fresh checkout would have them."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in PACKAGES:
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "LICENSE", "README.md", ".dev-setup.sh", *ROOT_MODULES):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, dest / name)
    return dest


def dev_path(tree: Path) -> Path:
    """Build ``tree/.dev/tokenlaw/<pkg>`` links (what .dev-setup.sh does) and return ``tree/.dev``."""
    dev = tree / ".dev" / "tokenlaw"
    dev.mkdir(parents=True, exist_ok=True)
    for name in (*PACKAGES, *ROOT_MODULES):
        link = dev / name
        if not link.exists():
            link.symlink_to(Path("..") / ".." / name)
    return tree / ".dev"


def plugin_args() -> list[str]:
    """``-p tokenlaw.app.pytest_plugin`` unless the pytest11 entry point is installed (then it loads itself)."""
    installed = any(ep.name == "tokenlaw" for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "tokenlaw.app.pytest_plugin"]
