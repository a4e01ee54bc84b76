"""Importing a user's own module (``--operators``, ``closure`` targets, ``pytest --tokenlaw``) with a clear error.

A user names their module as an importable name (``myops``, ``pkg.ops``) or as
the path of a ``.py`` file (``../myops.py``).  A path is imported under its
file's stem with its folder put on ``sys.path`` (so the module's own sibling
imports work and a replay that names the module again finds the same one).

Whatever goes wrong is the user's input, not a tokenlaw bug, so it becomes an
:class:`~tokenlaw.operators.errors.InvalidArgument` that names the argument,
the module, and the file and line where it failed: a module that cannot be
found, a syntax error, an exception raised while the module ran.

>>> load("json", "--operators").__name__
'json'
"""
from __future__ import annotations

import importlib
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType

from tokenlaw.errors import InvalidArgument
from .unshadow import unshadow


def is_path(spec: str) -> bool:
    """A spec names a file (``x.py``, ``dir/x``) rather than an importable dotted name."""
    return spec.endswith(".py") or "/" in spec or os.sep in spec


def _from_path(spec: str, what: str) -> str:
    """The module name a ``.py`` path is imported as, after putting its folder on ``sys.path``."""
    path = Path(spec if spec.endswith(".py") else spec + ".py")
    if not path.is_file():
        raise InvalidArgument(f"{what}: no such file {spec!r} (from {os.getcwd()})")
    if not path.stem.isidentifier():
        raise InvalidArgument(f"{what}: {spec!r}: a module's file name must be a Python identifier, "
                              f"got {path.stem!r}")
    folder = str(path.resolve().parent)
    loaded = sys.modules.get(path.stem)
    loaded_file = getattr(loaded, "__file__", None)
    if loaded is not None and loaded_file and Path(loaded_file).resolve() != path.resolve():
        raise InvalidArgument(f"{what}: {spec!r} would be imported as {path.stem!r}, but a module of that name is "
                              f"already loaded from {loaded_file}; rename the file")
    if folder not in sys.path:
        sys.path.insert(0, folder)
        unshadow()      # a file in a checkout's root: the root goes after every installed package
    return path.stem


def _where(err: BaseException) -> str:
    """'file:line' of the innermost frame outside importlib (the user's line that failed)."""
    if isinstance(err, SyntaxError) and err.filename:
        return f"{err.filename}:{err.lineno}"
    frames = [f for f in traceback.extract_tb(err.__traceback__) if "importlib" not in f.filename]
    if not frames:
        return "?"
    return f"{frames[-1].filename}:{frames[-1].lineno}"


def _first_line(err: BaseException) -> str:
    text = err.msg if isinstance(err, SyntaxError) else str(err)
    return (text.splitlines() or [""])[0][:200]


def load(spec: str, what: str) -> ModuleType:
    """Import the user's module ``spec`` (a dotted name or a ``.py`` path); ``what`` names the argument in errors."""
    if not isinstance(spec, str) or not spec.strip():
        raise InvalidArgument(f"{what}: expected a module name or a .py file, got {spec!r}")
    name = _from_path(spec, what) if is_path(spec) else spec
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name is not None and (name == err.name or name.startswith(err.name + ".")):
            raise InvalidArgument(f"{what}: cannot import {spec!r} ({err}); the current directory and PYTHONPATH "
                                  "are searched, or give the path of a .py file") from None
        raise InvalidArgument(f"{what}: importing {spec!r} failed at {_where(err)}: "
                              f"{type(err).__name__}: {_first_line(err)}") from None
    except SyntaxError as err:
        raise InvalidArgument(f"{what}: {spec!r} has a syntax error at {_where(err)}: {_first_line(err)}") from None
    except Exception as err:  # noqa: BLE001 (the user's module ran and raised: their input, not our bug)
        raise InvalidArgument(f"{what}: importing {spec!r} raised {type(err).__name__} at {_where(err)}: "
                              f"{_first_line(err)}") from None
