"""Progress for long runs: a live line with an ETA on a terminal, plain lines in CI logs.

The tiers write one line per finished unit, starting ``[done/total]`` (see
``fuzz.rows``).  :class:`Progress` is a text stream wrapped around stderr
that adds the estimated time left to each such line; on a terminal it keeps
one line updated in place (``\\r``), elsewhere (CI logs, files) it writes the
plain lines so a log keeps every step.

A run that tells it what is planned (:meth:`Progress.planned`) and what
each finished cell cost (:meth:`Progress.cell_done`) gets an ETA predicted
from those measured costs: each cell still to run costs what the finished
cells of its (operator, contract) cost on average, else those of its
contract, else any cell (cells differ a hundredfold, so a mean over all
finished cells swings as the run reaches the slow ones).  On a terminal a
heartbeat rewrites the line at least every :data:`HEARTBEAT` seconds during a
long row: the examples judged so far and the rate.
"""
from __future__ import annotations

import collections
import re
import sys
import threading
import time

_STEP = re.compile(r"^\[\s*(\d+)/(\d+)\]")
HEARTBEAT = 4.0          # seconds without a line after which a terminal sees a heartbeat (promised: <= 5)


def eta(done: int, total: int, elapsed: float) -> str:
    """'ETA 1m05s' from the mean time per finished unit so far ('ETA -' before the first)."""
    if done <= 0 or total <= 0:
        return "ETA -"
    return _eta_text(max(0.0, elapsed / done * (total - done)))


def _eta_text(left: float) -> str:
    m, s = divmod(int(round(left)), 60)
    return f"ETA {m}m{s:02d}s" if m else f"ETA {s}s"


class CostModel:
    """Predicts the seconds left from the measured cost of finished cells, by (operator, contract) key."""

    def __init__(self, keys, workers: int = 1):
        self.left = collections.Counter(keys)
        self.workers = max(1, workers)
        self.by_key: dict = {}
        self.by_contract: dict = {}
        self.all = [0.0, 0]

    def done(self, key, seconds: float) -> None:
        self.left[key] -= 1
        for table, k in ((self.by_key, key), (self.by_contract, key[1])):
            total = table.setdefault(k, [0.0, 0])
            total[0] += seconds
            total[1] += 1
        self.all[0] += seconds
        self.all[1] += 1

    def cost(self, key) -> float:
        for table, k in ((self.by_key, key), (self.by_contract, key[1])):
            if k in table:
                return table[k][0] / table[k][1]
        return self.all[0] / self.all[1]

    def seconds_left(self) -> float | None:
        """None before any cell finished (nothing measured yet)."""
        if not self.all[1]:
            return None
        return sum(self.cost(k) * n for k, n in self.left.items() if n > 0) / self.workers


class Progress:
    """A write-only stream: ``[done/total] ...`` lines get an ETA; a terminal sees one live line."""

    def __init__(self, stream=None, *, live=None, clock=time.perf_counter, units=None):
        """``units=(total, prefix)``: number lines starting with ``prefix`` as steps ``[i/total]`` themselves
        (for a tier that writes one indented line per unit, e.g. the mutation runner)."""
        self.stream = sys.stderr if stream is None else stream
        self.live = self.stream.isatty() if live is None else live
        self.clock, self.start, self._open = clock, clock(), False
        self.units, self.done = units, 0
        self.model: CostModel | None = None
        self.counter = None                     # shared example count (set by the run)
        self._lock = threading.RLock()
        self._last_write, self._last_step = clock(), None
        self._beat: threading.Thread | None = None
        self._stop = threading.Event()

    def planned(self, keys, workers: int = 1) -> None:
        """The run's cells, by cost key, in run order; starts the heartbeat on a terminal."""
        self.model = CostModel(keys, workers)
        self._total = sum(self.model.left.values())
        if self.live and self._beat is None:
            self._stop = threading.Event()
            self._beat = threading.Thread(target=self._heartbeat, daemon=True, name="tokenlaw-heartbeat")
            self._beat.start()

    def cell_done(self, key, seconds: float) -> None:
        if self.model is not None:
            with self._lock:
                self.model.done(key, seconds)

    def _eta(self, done: int, total: int) -> str:
        left = self.model.seconds_left() if self.model is not None else None
        if left is None:
            return eta(done, total, self.clock() - self.start)
        return _eta_text(left)

    def heartbeat_line(self) -> str:
        """'[  12/40] ETA 3m10s  running: 1234 examples, 56 ex/s (at 41.0s)': the live line between rows."""
        elapsed = self.clock() - self.start
        n = self.counter.value if self.counter is not None else 0
        done, total = self._last_step or (0, getattr(self, "_total", 0))
        return (f"[{done:4d}/{total}] {self._eta(done, total)}  running: {n} examples judged, "
                f"{n / elapsed if elapsed > 0 else 0:.0f} ex/s (at {elapsed:.1f}s)")

    def _heartbeat(self):
        while not self._stop.wait(0.5):
            with self._lock:
                if self.clock() - self._last_write >= HEARTBEAT:
                    self.stream.write("\r\x1b[2K" + self.heartbeat_line()[:160])
                    self.stream.flush()
                    self._open, self._last_write = True, self.clock()

    def write(self, text: str) -> int:
        with self._lock:
            for line in text.splitlines():
                self._line(line)
            self._last_write = self.clock()
        return len(text)

    def _line(self, line: str):
        if self.units and line.startswith(self.units[1]) and not _STEP.match(line):
            self.done += 1
            line = f"[{self.done:4d}/{self.units[0]}] {line.strip()}"
        m = _STEP.match(line)
        if m:
            done, total = int(m.group(1)), int(m.group(2))
            self._last_step = (done, total)
            line = f"{line[:m.end()]} {self._eta(done, total)}{line[m.end():]}"
        if self.live and m:
            width = 160
            self.stream.write("\r\x1b[2K" + line[:width])
            self._open = True
        else:
            self._end_line()
            self.stream.write(line + "\n")
        self.stream.flush()

    def close_line(self):
        """The run is over: stop the heartbeat and end the live line."""
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=2)
            self._beat = None
        self._end_line()

    def _end_line(self):
        if self._open:
            self.stream.write("\n")
            self._open = False

    def flush(self):
        self.stream.flush()

    def isatty(self) -> bool:
        return self.live
