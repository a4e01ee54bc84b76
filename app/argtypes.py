"""argparse types shared by the subcommands (here, not in ``cli``, so a command module never imports ``cli``)."""
from __future__ import annotations

import argparse
import os

# The fuzz profiles (fuzz.engine.PROFILES, restated here so that parsing needs no torch; a test keeps
# them equal), the old names still accepted, and the default.
PROFILES = {"smoke": 10, "ci": 100, "thorough": 300, "deep": 2000}
PROFILE_ALIASES = {"quick": "ci", "default": "thorough"}
DEFAULT_PROFILE = "ci"
PROFILE_HELP = ("examples per cell per dtype: " + ", ".join(f"{n} {k}" for n, k in PROFILES.items())
                + f" (default: {DEFAULT_PROFILE}, the CI gate); old names: "
                + ", ".join(f"{a} = {n}" for a, n in PROFILE_ALIASES.items()))


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


def add_workers(parser, what: str = "worker processes") -> None:
    """The ``--workers`` option, defaulting to the usable cores (shown in ``--help``)."""
    n = usable_cores()
    parser.add_argument("--workers", type=positive_int, default=n,
                        help=f"{what} (default: the {n} usable core{'' if n == 1 else 's'} of this machine)")


def positive_int(text: str) -> int:
    """argparse type: an int >= 1 (``--examples 0`` is refused, not read as 'the profile's')."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {value}")
    return value
