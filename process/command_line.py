"""Command-line plumbing: the error for an unknown name (its closest known names), a writable ``--out``."""
from __future__ import annotations

import difflib
import os
import tempfile
from pathlib import Path

from tokenlaw.errors import InvalidArgument


def closest(name: str, known, what: str, *, also: str = "", shown_by: str = "tokenlaw list") -> InvalidArgument:
    """The error for an unknown ``name``: the closest known names (difflib), not the whole list; ``also``: a
    further hint appended (e.g. how to declare the name); ``shown_by``: the command that lists them."""
    known = sorted(known)
    near = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f"did you mean {' or '.join(repr(n) for n in near)}?" if near else \
        f"{len(known)} known; `{shown_by}` shows them"
    return InvalidArgument(f"{what}: unknown name {name!r}; {hint}" + (f" {also}" if also else ""))


def writable_dir(path, what: str):
    """``path`` is (or can be made) a directory this process can write into; checked before any long run."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".tokenlaw-probe-"):
            pass
    except OSError as err:
        raise InvalidArgument(f"{what}: cannot write to {str(path)!r} ({err.strerror or err})") from None
    if not os.access(path, os.W_OK):
        raise InvalidArgument(f"{what}: cannot write to {str(path)!r}")
    return path
