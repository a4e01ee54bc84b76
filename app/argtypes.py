"""argparse types and choices shared by the subcommands (here, not in ``cli``, so a command module never imports ``cli``).

Light on purpose: the parser is built from this module and the ``*_args`` modules
alone, so ``tokenlaw --help`` and an argument error answer without importing torch
(or anything of tokenlaw's layers that does).  What a heavy module owns is restated
here as plain data (profiles, the eager backend's name), and tests keep the two equal.
"""
from __future__ import annotations

import argparse
import os
import sys
from importlib.metadata import entry_points

from tokenlaw.process import dtype_names

# The fuzz profiles (fuzz.engine.PROFILES, restated here so that parsing needs no torch; a test keeps
# them equal), the old names still accepted, and the default.
PROFILES = {"smoke": 10, "ci": 100, "thorough": 300, "deep": 2000}
PROFILE_ALIASES = {"quick": "ci", "default": "thorough"}
DEFAULT_PROFILE = "ci"
PROFILE_HELP = ("examples per cell per dtype: " + ", ".join(f"{n} {k}" for n, k in PROFILES.items())
                + f" (default: {DEFAULT_PROFILE}, the CI gate); old names: "
                + ", ".join(f"{a} = {n}" for a, n in PROFILE_ALIASES.items()))


# The dtypes a cell runs in, from the torch-free list operators.dtypes maps (a typo is refused without torch:
# issue 47, `--dtype float8` took 3.5 s to say so).
DTYPE_NAMES = tuple(sorted(dtype_names.NAMES))


def dtype_name(text: str) -> str:
    """argparse type of ``--dtype``: one of :data:`DTYPE_NAMES`."""
    if text not in DTYPE_NAMES:
        raise argparse.ArgumentTypeError(f"expected one of {list(DTYPE_NAMES)}, got {text!r}")
    return text


def add_profile(parser) -> None:
    """The ``--profile`` option of a command that runs the fuzz tier."""
    parser.add_argument("--profile", default=DEFAULT_PROFILE, choices=[*PROFILES, *PROFILE_ALIASES],
                        metavar="{" + ",".join(PROFILES) + "}", help=PROFILE_HELP)


def usable_cores() -> int:
    """The cores this process may run on (``os.sched_getaffinity``: a container's or taskset's limit), >= 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):          # not on Linux
        return max(1, os.cpu_count() or 1)


class DefaultWorkers(int):
    """The ``--workers`` default (the usable cores), told apart from a count the user typed: a check of fewer
    than ``fuzz.rows.SMALL_RUN`` cells runs them in this process instead (``rows.runs_here``), where a
    LocalCluster's start-up costs more than it saves (issue 47: a small user module took 10.4 s on the default
    workers, 4.9 s with --workers 1)."""

    auto = True


def add_workers(parser, what: str = "worker processes") -> None:
    """The ``--workers`` option, defaulting to the usable cores (shown in ``--help``)."""
    n = usable_cores()
    parser.add_argument("--workers", type=positive_int, default=DefaultWorkers(n),
                        help=f"{what} (default: the {n} usable core{'' if n == 1 else 's'} of this machine; "
                             f"one process for a run of fewer than 16 cells)")


def add_scheduler(parser) -> None:
    """The ``--scheduler`` option: run the cells on a running Dask cluster instead of local workers."""
    parser.add_argument("--scheduler", metavar="tcp://HOST:PORT", type=scheduler_address,
                        help="run the cells on the Dask cluster of this scheduler (`dask scheduler`, then "
                             "`dask worker tcp://HOST:8786` on each machine) instead of --workers local processes")


def scheduler_address(text: str) -> str:
    """argparse type: a Dask scheduler address, PROTOCOL://HOST:PORT (tcp://10.0.0.5:8786)."""
    proto, sep, rest = text.partition("://")
    host, colon, port = rest.rpartition(":")
    if not (sep and proto and host and colon and port.isdigit()):
        raise argparse.ArgumentTypeError(f"expected a Dask scheduler address such as tcp://HOST:8786, got {text!r}")
    return text


def positive_int(text: str) -> int:
    """argparse type: an int >= 1 (``--examples 0`` is refused, not read as 'the profile's')."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {value}")
    return value


WITH_BUILTINS_HELP = ("with --operators MODULE: also run tokenlaw's built-in operators (by default only the "
                      "module's own operators run, unless --operator names others)")


def add_with_builtins(parser) -> None:
    """The ``--with-builtins`` flag of a command that selects operators (``selection.operators`` reads it)."""
    parser.add_argument("--with-builtins", action="store_true", help=WITH_BUILTINS_HELP)


# properties.backends: the reference backend's name and the entry-point group plug-ins register under.
EAGER_BACKEND = "eager"
BACKENDS_GROUP = "tokenlaw.backends"
BACKENDS_MODULE = "tokenlaw.properties.backends"


def backend_names() -> list[str]:
    """``backends.names()`` without importing a backend: eager, then the installed plug-ins' entry-point
    names (read by name, never loaded).  When the backends module is already loaded (a test or a notebook
    that registered one in-process) its own answer is used, so those names are accepted too."""
    loaded = sys.modules.get(BACKENDS_MODULE)
    if loaded is not None:
        return loaded.names()
    others = {ep.name for ep in entry_points(group=BACKENDS_GROUP)} - {EAGER_BACKEND}
    return [EAGER_BACKEND, *sorted(others)]
