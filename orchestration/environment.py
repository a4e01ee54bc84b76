"""The environment a backend's run depends on: recorded with the run, reproduced before it is re-run.

Some backends decide how they run from the environment when they are first
imported (Triton interprets its kernels on the CPU when ``TRITON_INTERPRET=1``
is set before its first kernel is decorated).  A backend declares those
variables (``Backend.run_env``) and the modules whose import fixes them
(``Backend.env_fixed_by``); a run of a backend other than the reference
records the ones that are set (:func:`recorded_env`) in its meta as ``env``,
and the gate sets them again before re-running it (:func:`prepare_env`).
"""
from __future__ import annotations

import os
import sys

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties import backends
from tokenlaw.reports.meta import RunMeta


def recorded_env(backend, environ=None) -> dict:
    """{variable: value} of ``backend.run_env`` set in ``environ`` (default: this process's environment)."""
    environ = os.environ if environ is None else environ
    return {k: environ[k] for k in backend.run_env if environ.get(k)}


def _fixed_by(run: RunMeta) -> tuple:
    """The modules whose import fixes the environment of ``run``'s backend."""
    return tuple(backends.get(run.backend or backends.EAGER.name).env_fixed_by)


def prepare_env(runs: list[RunMeta], environ=None, imported=None) -> list[str]:
    """Make the environment match what the ``runs`` recorded in ``env`` before any of them is re-run.

    A variable a run recorded and the environment lacks is set (returned as "NAME=value" lines to
    report), as long as no module that reads it at import (the run's backend's ``env_fixed_by``) is
    loaded yet.  Refused, naming what to set: two runs that recorded different values (one process
    cannot run both), a variable that differs while such a module is already loaded, and a variable
    set to another value than the run recorded.
    """
    environ = os.environ if environ is None else environ
    imported = sys.modules if imported is None else imported
    wanted: dict[str, set] = {}
    fixers: dict[str, set] = {}
    for run in runs:
        for k, v in (run.environment.env or {}).items():
            wanted.setdefault(k, set()).add(v)
            fixers.setdefault(k, set()).update(_fixed_by(run))
    done = []
    for k, values in sorted(wanted.items()):
        if len(values) > 1:
            raise InvalidArgument(f"--baseline: its runs recorded {k} as {sorted(values)}; one process cannot "
                                  f"re-run both: gate each with `--current` reports made separately")
        (v,) = values
        have = environ.get(k)
        if have == v:
            continue
        if have:
            raise InvalidArgument(f"--baseline: a run recorded {k}={v} but it is {have} here; "
                                  f"run the gate with {k}={v}")
        loaded = sorted(m for m in fixers[k] if m in imported)
        if loaded:
            raise InvalidArgument(f"--baseline: a run recorded {k}={v}, unset here, and {', '.join(loaded)} "
                                  f"is already imported; run the gate with {k}={v}")
        environ[k] = v
        done.append(f"{k}={v}")
    return done
