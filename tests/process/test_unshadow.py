"""A checkout's root on sys.path must not shadow a top-level package: its kernels/ hid HF's ``kernels``."""
import os
import subprocess
import sys
from pathlib import Path

from tokenlaw.process.unshadow import CHECKOUT, is_checkout, unshadow

FIND = "import importlib.util as u; s = u.find_spec('kernels'); print(s.origin if s and s.origin else s)"


def _found_from_root(prelude: str) -> str:
    """Where ``import kernels`` resolves for ``python3 -c`` run in the checkout's root (cwd first on sys.path)."""
    done = subprocess.run([sys.executable, "-c", prelude + FIND], cwd=CHECKOUT, capture_output=True, text=True,
                          env={**os.environ}, timeout=120, check=True)
    return done.stdout.strip().splitlines()[0]


CLI = "import contextlib, io\nfrom tokenlaw.app.cli import main\nwith contextlib.redirect_stdout(io.StringIO()): main(['list'])\n"


def test_the_checkout_root_shadows_kernels_until_a_command_runs():
    assert is_checkout()
    shadowed = _found_from_root("")
    assert shadowed == str(CHECKOUT / "kernels" / "__init__.py")      # the hazard is real from a checkout
    after = _found_from_root(CLI)
    assert not after.startswith(str(CHECKOUT)), after                  # HF's kernels, never ours
    # what only the root holds still imports (the flex tests collect tests.fixtures.flex_ops)
    assert _found_from_root(CLI + "import importlib.util as u; "
                            "print(u.find_spec('tests.fixtures.flex_ops').origin); ").startswith(str(CHECKOUT))


def test_unshadow_moves_only_the_root_to_the_end(tmp_path, monkeypatch):
    path = ["", str(CHECKOUT), str(CHECKOUT / "tests"), "/usr/lib/python3"]
    monkeypatch.chdir(CHECKOUT)
    moved = unshadow(path)
    assert moved == ["", str(CHECKOUT)] and path == [str(CHECKOUT / "tests"), "/usr/lib/python3", "", str(CHECKOUT)]
    other = [str(tmp_path)]
    assert unshadow(other, root=Path(tmp_path)) == [] and other == [str(tmp_path)]   # not a checkout: untouched



def test_loading_a_user_module_puts_the_root_back_after_the_installed_packages(tmp_path):
    """``--operators FILE`` inserts FILE's folder first on sys.path (a user's file may sit in the checkout's
    root): loading one leaves the root after every installed package, and the user's module importable."""
    (tmp_path / "mine.py").write_text("X = 1\n")
    code = (f"import sys; sys.path.insert(0, {str(CHECKOUT)!r}); "
            "from tokenlaw.process import user_modules; "
            f"name = user_modules._from_path({str(tmp_path / 'mine.py')!r}, '--operators'); "
            "import importlib; print(importlib.import_module(name).X); " + FIND)
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         check=True).stdout.split()
    assert out[0] == "1" and not out[1].startswith(str(CHECKOUT)), out
