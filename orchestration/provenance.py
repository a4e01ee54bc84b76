"""What a report was made from: every backend plug-in's source hashes and bindings (``Backend.provenance``).

A run records them for *every* known plug-in, not only the one it ran, so
that the gate can tell a plug-in edited without its cells being re-run even
from an eager-only report.  The meta keys are ``kernel_sources``
({"<folder>/<file>.py": sha256} over all plug-ins) and ``kernels``
({binding: {"operators": [...], "source": ...}}), the report schema's names.
A plug-in that cannot be imported here (an optional dependency missing)
records nothing.
"""
from __future__ import annotations

from tokenlaw.properties import backends


def plugins() -> list:
    """Every known backend other than the reference, that loads here."""
    out = []
    for name in backends.names():
        try:
            backend = backends.get(name)
        except ImportError:
            continue
        if not backend.reference:
            out.append(backend)
    return out


def bindings(op) -> dict[str, str]:
    """{backend: what it runs for ``op``} over the plug-ins whose binding table names the operator."""
    return {b.name: b.binds()[op.name] for b in plugins() if op.name in b.binds()}


def sources() -> dict[str, str]:
    """{"<folder>/<file>.py": sha256} of every plug-in's own sources, as they are on disk now."""
    out: dict[str, str] = {}
    for backend in plugins():
        out.update(backend.sources())
    return dict(sorted(out.items()))


def snapshot(registry) -> dict:
    """The provenance fields a report's meta carries (``kernel_sources`` and ``kernels``) over ``registry``."""
    hashes: dict[str, str] = {}
    binds: dict[str, dict] = {}
    for backend in plugins():
        record = backend.provenance(registry)
        hashes.update(record["sources"])
        for name, entry in record["binds"].items():
            binds[name if name not in binds else f"{backend.name}:{name}"] = entry
    return {"kernel_sources": dict(sorted(hashes.items())), "kernels": binds}
