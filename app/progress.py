"""Progress for long runs: a live line with an ETA on a terminal, plain lines in CI logs.

The tiers write one line per finished unit, starting ``[done/total]`` (see
``fuzz.campaign``).  :class:`Progress` is a text stream wrapped around stderr
that adds the estimated time left to each such line; on a terminal it keeps
one line updated in place (``\\r``), elsewhere (CI logs, files) it writes the
plain lines so a log keeps every step.
"""
from __future__ import annotations

import re
import sys
import time

_STEP = re.compile(r"^\[\s*(\d+)/(\d+)\]")


def eta(done: int, total: int, elapsed: float) -> str:
    """'ETA 1m05s' from the mean time per finished unit so far ('ETA -' before the first)."""
    if done <= 0 or total <= 0:
        return "ETA -"
    left = max(0.0, elapsed / done * (total - done))
    m, s = divmod(int(round(left)), 60)
    return f"ETA {m}m{s:02d}s" if m else f"ETA {s}s"


class Progress:
    """A write-only stream: ``[done/total] ...`` lines get an ETA; a terminal sees one live line."""

    def __init__(self, stream=None, *, live=None, clock=time.perf_counter, units=None):
        """``units=(total, prefix)``: number lines starting with ``prefix`` as steps ``[i/total]`` themselves
        (for a tier that writes one indented line per unit, e.g. the mutation runner)."""
        self.stream = sys.stderr if stream is None else stream
        self.live = self.stream.isatty() if live is None else live
        self.clock, self.start, self._open = clock, clock(), False
        self.units, self.done = units, 0

    def write(self, text: str) -> int:
        for line in text.splitlines():
            self._line(line)
        return len(text)

    def _line(self, line: str):
        if self.units and line.startswith(self.units[1]) and not _STEP.match(line):
            self.done += 1
            line = f"[{self.done:4d}/{self.units[0]}] {line.strip()}"
        m = _STEP.match(line)
        if m:
            line = f"{line[:m.end()]} {eta(int(m.group(1)), int(m.group(2)), self.clock() - self.start)}{line[m.end():]}"
        if self.live and m:
            width = 160
            self.stream.write("\r\x1b[2K" + line[:width])
            self._open = True
        else:
            self.close_line()
            self.stream.write(line + "\n")
        self.stream.flush()

    def close_line(self):
        if self._open:
            self.stream.write("\n")
            self._open = False

    def flush(self):
        self.stream.flush()

    def isatty(self) -> bool:
        return self.live
