"""Where a replay artifact lives: the replay folder and an id's file (no torch, so a bad id answers at once).

``tokenlaw replay nosuchid`` is refused from here before the command imports the tiers (issue 47: 3.5 s
spent importing torch to say "no replay artifact"); ``fuzz.replay`` reads and writes the same paths.

>>> artifact_path("op-law-float32-0123abcd", "reports/replays").name
'op-law-float32-0123abcd.json'
"""
from __future__ import annotations

import os
from pathlib import Path

from tokenlaw.errors import InvalidArgument

DEFAULT_DIR = Path("reports") / "replays"


def replay_dir(value=None) -> Path:
    """The replay directory: ``value``, else $TOKENLAW_REPLAYS, else ./reports/replays."""
    return Path(value or os.environ.get("TOKENLAW_REPLAYS") or DEFAULT_DIR)


def artifact_path(rid: str, directory=DEFAULT_DIR) -> Path:
    """The JSON file of replay ``rid`` (an id, or a path ending in .json); InvalidArgument naming ``id`` if absent."""
    path = Path(rid) if str(rid).endswith(".json") else Path(directory) / f"{rid}.json"
    if not path.is_file():
        raise InvalidArgument(f"id: no replay artifact {str(path)!r}")
    return path
