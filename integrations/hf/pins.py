"""Pinned package versions in an isolated, cached folder, run in a subprocess: the user's environment is untouched.

``install("transformers==4.39.3")`` installs that release with ``pip install --target FOLDER --no-deps``
into ``$TOKENLAW_PIN_CACHE`` (default ``~/.cache/tokenlaw/pins``), one folder per set of specs.  An old
release checks some of its own requirements when imported (``huggingface-hub``, ``tokenizers``...):
each requirement of the release (its wheel's ``Requires-Dist``, extras left out) that the installed
environment does not satisfy is installed into the same folder, at the newest version its specifier
allows, also with ``--no-deps``.  ``torch`` is never installed there (the environment's is used).
Every step is recorded in :attr:`Pin.actions` and stated in the output of the commands.

``run_module(pin, module, function, request)`` runs ``module.function(request) -> str`` in a fresh
interpreter whose ``sys.path`` starts with the pin's folder (then this interpreter's path, so tokenlaw
itself and the environment's other packages are found), offline (``HF_HUB_OFFLINE=1``).

Example::

    >>> folder_name(("transformers==4.39.3",))
    'transformers-4.39.3'
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from tokenlaw.operators.errors import InvalidArgument

REPLY = "TOKENLAW-PIN-REPLY:"
NEVER = frozenset({"torch"})          # never installed into a pin: the environment's build is used
DONE = ".tokenlaw-pin.json"
PIN_FORMAT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9][A-Za-z0-9.+!-]*$")


class PinError(RuntimeError):
    """A pinned version could not be installed or its subprocess failed (the message says which step)."""


@dataclasses.dataclass(frozen=True)
class Pin:
    """An installed pin: its folder, the specs asked for, and what was done (one line per step)."""

    folder: Path
    specs: tuple
    actions: tuple


def cache_root() -> Path:
    return Path(os.environ.get("TOKENLAW_PIN_CACHE") or Path.home() / ".cache" / "tokenlaw" / "pins")


def parse_spec(spec: str, argument: str = "--with") -> str:
    """``PACKAGE==VERSION`` checked (one exact version), or InvalidArgument naming ``argument``."""
    if not isinstance(spec, str) or not PIN_FORMAT.match(spec.strip()):
        raise InvalidArgument(f"{argument}: expected PACKAGE==VERSION (one exact version), got {spec!r}")
    name, version = spec.strip().split("==")
    try:
        Version(version)
    except InvalidVersion:
        raise InvalidArgument(f"{argument}: {version!r} is not a version (in {spec!r})") from None
    if name.lower() in NEVER:
        raise InvalidArgument(f"{argument}: {name} is never pinned here (the environment's build is used)")
    return f"{name.lower().replace('_', '-')}=={version}"


def folder_name(specs: tuple) -> str:
    return "+".join(s.replace("==", "-") for s in sorted(specs))


def _pip(folder: Path, args: list) -> None:
    cmd = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--quiet", "--no-deps",
           "--no-compile", "--target", str(folder), *args]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise PinError(f"pip install {' '.join(args)} failed (exit {done.returncode}): {' | '.join(tail)}")


def _requirements(folder: Path, name: str) -> list:
    """The non-extra requirements of the distribution ``name`` installed in ``folder``."""
    dists = list(metadata.distributions(path=[str(folder)]))
    dist = next((d for d in dists if d.metadata["Name"].lower().replace("_", "-") == name), None)
    if dist is None:
        raise PinError(f"{name} was installed into {folder} but its metadata is not there")
    out = []
    for line in dist.requires or []:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        out.append(req)
    return out


def _unsatisfied(req: Requirement) -> str | None:
    """Why the environment does not satisfy ``req`` (None: it does)."""
    try:
        have = metadata.version(req.name)
    except metadata.PackageNotFoundError:
        return "not installed"
    if req.specifier and not req.specifier.contains(have, prereleases=True):
        return f"{have} installed"
    return None


def install(*specs: str) -> Pin:
    """Install ``specs`` (``PACKAGE==VERSION``) and their unmet requirements into a cached folder (module doc)."""
    specs = tuple(sorted(parse_spec(s) for s in specs))
    if not specs:
        raise InvalidArgument("--with: expected at least one PACKAGE==VERSION")
    folder = cache_root() / folder_name(specs)
    record = folder / DONE
    if record.is_file():
        done = json.loads(record.read_text())
        return Pin(folder, specs, (f"reused the cached folder {folder}", *done["actions"]))
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    actions = []
    try:
        _pip(tmp, list(specs))
        actions.append(f"pip install --no-deps --target {folder} {' '.join(specs)}")
        extra = []
        for spec in specs:
            for req in _requirements(tmp, spec.split("==")[0]):
                why = _unsatisfied(req)
                if why is None or req.name.lower() in {s.split('==')[0] for s in specs}:
                    continue
                if req.name.lower() in NEVER:
                    actions.append(f"{spec} asks {req}; the environment's {req.name} is used ({why})")
                    continue
                extra.append(str(req).replace(" ", ""))
                actions.append(f"{spec} asks {req} ({why} in the environment): installed into the pin")
        if extra:
            _pip(tmp, extra)
            actions.append(f"pip install --no-deps --target {folder} " + " ".join(f"'{e}'" for e in extra))
        (tmp / DONE).write_text(json.dumps({"specs": list(specs), "actions": actions}, indent=1))
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Pin(folder, specs, tuple(actions))


def run_module(pin: Pin, module: str, function: str, request: str, *, timeout: float = 1800) -> str:
    """``module.function(request)`` in a subprocess with the pin's folder first on ``sys.path``; its reply."""
    code = ("import sys, importlib; sys.path.insert(0, sys.argv[1]); "
            "m = importlib.import_module(sys.argv[2]); "
            f"print({REPLY!r} + getattr(m, sys.argv[3])(sys.stdin.read().strip()), flush=True)")
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TRANSFORMERS_NO_ADVISORY_WARNINGS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(pin.folder), *[p for p in sys.path if p]])
    done = subprocess.run([sys.executable, "-c", code, str(pin.folder), module, function], input=request,
                          capture_output=True, text=True, env=env, timeout=timeout,
                          cwd=pin.folder)      # not the caller's folder: a checkout's kernels/ would shadow HF's
    for line in done.stdout.splitlines():
        if line.startswith(REPLY):
            return line[len(REPLY):]
    tail = (done.stderr or done.stdout).strip().splitlines()[-4:]
    raise PinError(f"the subprocess under {' '.join(pin.specs)} gave no result (exit {done.returncode}): "
                   + " | ".join(tail))
