"""argparse types shared by the subcommands (here, not in ``cli``, so a command module never imports ``cli``)."""
from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """argparse type: an int >= 1 (``--examples 0`` is refused, not read as 'the profile's')."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {value}")
    return value
