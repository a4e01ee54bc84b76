"""What a backend's results were made from: the hashes of its own source files and what it binds.

A report records, for every backend plug-in, the sha256 of each Python file
of the package folder that defines it (``"<folder>/<file>.py"``, e.g.
``kernels/ops.py`` for tokenlaw's Triton kernels) and, per binding (the name
of what the backend runs for an operator), the operators it serves and the
file that defines it.  The gate uses both to catch a backend edited without
its cells being re-run: a change to a binding's own file concerns its
operators, a change to any other file of the folder concerns every binding
(a shared helper).  Nothing here imports the backend's code beyond the
module that defines it: the files are read as text.
"""
from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path


def module_folder(module_name: str) -> Path | None:
    """The folder of the (already imported) module ``module_name``, or None when it has no file."""
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    return Path(path).resolve().parent if path else None


def source_hashes(folder: Path | None) -> dict[str, str]:
    """{"<folder name>/<file>.py": sha256 hex} for every Python file directly in ``folder`` (sorted)."""
    if folder is None or not folder.is_dir():
        return {}
    return {f"{folder.name}/{p.name}": hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.py"))}


def binding_sources(binds: dict, registry, folder: Path | None) -> dict[str, dict]:
    """{binding: {"operators": [...], "source": "<folder>/<file>.py" or None}} for the operators of ``registry``
    that ``binds`` ({operator name: binding name}) serves.

    The source is the binding's own file, ``<folder>/<binding>.py`` when it exists, else the first file that
    defines it (``def NAME`` or ``NAME =``); None when no file does (the gate then treats a change to any
    file of the folder as a change to this binding).
    """
    texts = {}
    if folder is not None and folder.is_dir():
        texts = {f"{folder.name}/{p.name}": p.read_text(errors="replace") for p in sorted(folder.glob("*.py"))}
    out: dict[str, dict] = {}
    for op in registry:
        name = binds.get(op.name)
        if not name:
            continue
        entry = out.setdefault(name, {"operators": [], "source": None})
        entry["operators"].append(op.name)
        own = f"{folder.name}/{name}.py" if folder is not None else None
        if own in texts:
            entry["source"] = own
            continue
        pattern = re.compile(rf"^\s*(def\s+{re.escape(name)}\s*\(|{re.escape(name)}\s*=)", re.M)
        entry["source"] = next((f for f, text in texts.items() if pattern.search(text)), None)
    return out
