"""Known failures: regressions the team has accepted for a while, each with a reason and an expiry date.

The file is plain text, one entry per line::

    # cell or row id                          expiry       reason
    oattention-mask_respect-eager-bfloat16    2026-12-31   bf16 rounding, tracked in issue 12

An entry matches a regression whose id equals it, or whose id starts with
it followed by ``-`` (a row id covers all its cells).  Blank lines and
``#`` comments are ignored.  An entry past its expiry date fails the gate
itself, so nothing stays "known" forever by accident.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

from tokenlaw.operators.errors import InvalidArgument


@dataclasses.dataclass(frozen=True)
class KnownFailure:
    id: str
    expires: dt.date
    reason: str
    line: int

    def matches(self, ident: str) -> bool:
        return ident == self.id or ident.startswith(self.id + "-")

    def expired(self, today: dt.date) -> bool:
        return today > self.expires


def parse(text: str, source: str = "known failures") -> list[KnownFailure]:
    """Entries of a known-failures file; a malformed line raises InvalidArgument naming it."""
    out = []
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):   # only whole-line comments: a reason may say "issue #12"
            continue
        parts = line.split(None, 2)
        if len(parts) < 3:
            raise InvalidArgument(f"--known-failures: {source}:{no}: expected 'cell-id  YYYY-MM-DD  reason', "
                                  f"got {raw!r}")
        try:
            expires = dt.date.fromisoformat(parts[1])
        except ValueError:
            raise InvalidArgument(f"--known-failures: {source}:{no}: expiry must be YYYY-MM-DD, "
                                  f"got {parts[1]!r}") from None
        out.append(KnownFailure(parts[0], expires, parts[2].strip(), no))
    return out


def load(path) -> list[KnownFailure]:
    """Entries of the file at ``path``; a missing file means no known failures."""
    path = Path(path)
    if not path.exists():
        return []
    return parse(path.read_text(), str(path))
