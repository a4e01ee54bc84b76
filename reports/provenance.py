"""What a report was made from: the source hashes of ``kernels/*.py`` and which kernel serves which operator.

The gate uses these to catch a kernel edited without its cells being
re-run.  Kernels may not exist yet (or at all, for an external package):
every function here copes with an empty or missing ``kernels`` folder.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path


def kernels_dir() -> Path | None:
    """The folder of the ``tokenlaw.kernels`` package, or None when it cannot be imported."""
    try:
        import tokenlaw.kernels as k  # optional: Triton; reports are written without it
    except ImportError:
        return None
    paths = list(getattr(k, "__path__", ()))
    return Path(paths[0]) if paths else None


def kernel_sources(folder: Path | None = None) -> dict[str, str]:
    """{"kernels/<file>.py": sha256 hex} for every Python file of the kernels folder (sorted)."""
    folder = kernels_dir() if folder is None else Path(folder)
    if folder is None or not folder.is_dir():
        return {}
    return {f"kernels/{p.name}": hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.glob("*.py"))}


def kernel_map(registry, folder: Path | None = None) -> dict[str, dict]:
    """{kernel name: {"operators": [...], "source": "kernels/x.py" or None}} for declared kernels.

    The source is the kernel's own file: ``kernels/NAME.py`` when it exists,
    else the first file that defines it (``def NAME`` or ``NAME =``); None
    when no file does (the gate then treats a change to any kernel file as
    a change to this kernel).  Files that are no kernel's own source count
    as shared helpers of every kernel.
    """
    folder = kernels_dir() if folder is None else Path(folder)
    texts = {}
    if folder is not None and folder.is_dir():
        texts = {f"kernels/{p.name}": p.read_text(errors="replace") for p in sorted(folder.glob("*.py"))}
    out: dict[str, dict] = {}
    for op in registry:
        if not op.kernel:
            continue
        entry = out.setdefault(op.kernel, {"operators": [], "source": None})
        entry["operators"].append(op.name)
        if f"kernels/{op.kernel}.py" in texts:
            entry["source"] = f"kernels/{op.kernel}.py"
            continue
        pattern = re.compile(rf"^\s*(def\s+{re.escape(op.kernel)}\s*\(|{re.escape(op.kernel)}\s*=)", re.M)
        for name, text in texts.items():
            if pattern.search(text):
                entry["source"] = name
                break
    return out


def snapshot(registry) -> dict:
    """The provenance fields a report's meta carries (``kernel_sources`` and ``kernels``)."""
    return {"kernel_sources": kernel_sources(), "kernels": kernel_map(registry)}
