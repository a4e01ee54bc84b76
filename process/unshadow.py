"""Keep a checkout's folders from shadowing unrelated top-level packages (``kernels`` above all).

Installed, tokenlaw's folders are ``tokenlaw.operators``, ``tokenlaw.kernels``, ...: nothing is
top-level.  But ``python3 -m pytest`` or ``python3 -m tokenlaw.app.cli`` run from a checkout put the
checkout's root first on ``sys.path``, and there ``kernels/`` (a folder with an ``__init__.py``) is
found before Hugging Face's ``kernels`` package, which ``transformers`` 5.x depends on and imports
(``from kernels import CUDAProperties``, an ImportError when our ``kernels/`` is found first).
:func:`unshadow` moves the root to the *end* of ``sys.path``: every installed package is found first,
and what only the root holds (``tests.fixtures``, a user's module beside the checkout) still imports.
"""
from __future__ import annotations

import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent     # a checkout's root; in a wheel, site-packages/tokenlaw


def is_checkout(root: Path = CHECKOUT) -> bool:
    """``root`` holds tokenlaw's folders as a source tree (pyproject.toml beside kernels/)."""
    return (root / "pyproject.toml").is_file() and (root / "kernels" / "__init__.py").is_file()


def unshadow(path: list | None = None, root: Path = CHECKOUT) -> list:
    """Move every entry of ``path`` (default ``sys.path``) that is the checkout's root to its end; return them."""
    path = sys.path if path is None else path
    if not is_checkout(root):
        return []
    moved = [p for p in path if _same(p, root)]
    path[:] = [p for p in path if not _same(p, root)] + moved
    return moved


def _same(entry, root: Path) -> bool:
    try:
        return isinstance(entry, str) and Path(entry or ".").resolve() == root
    except OSError:
        return False
