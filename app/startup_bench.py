"""How long ``tokenlaw --help`` takes to answer, against a bare interpreter and a bare ``import torch``.

    python -m tokenlaw.app.startup_bench [--runs 7] [--out reports/measurements/help_startup.json]

Each command runs ``--runs`` times in a fresh interpreter (the same ``sys.executable``, the same
environment, so the same tokenlaw); the record keeps every wall time and their minimum (the cost
without noise from other processes) and median (what a user waits).  The help's parser imports no
torch (``cli``), so ``tokenlaw --help`` should sit near ``python -c pass``, far below
``python -c "import torch"``; an argument error (``check --workers 0``) is timed beside it.

The record is a measurement record (``reports.measurements``): the first command is the one
measured, the others are timed alike under ``compared_with``, so
``tokenlaw docs measurements --write`` renders it into ``docs/measurements.md``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tokenlaw.reports import measurements

from .measure import commit, machine

# The first is the command measured; the others are timed alike beside it.
COMMANDS = {
    "tokenlaw --help": [sys.executable, "-m", "tokenlaw.app.cli", "--help"],
    "python -c pass": [sys.executable, "-c", "pass"],
    'python -c "import torch"': [sys.executable, "-c", "import torch"],
    "tokenlaw check --workers 0 (an argument error)": [sys.executable, "-m", "tokenlaw.app.cli", "check",
                                                       "--workers", "0"],
}


def measure(argv: list, runs: int) -> list[float]:
    """Wall seconds of ``runs`` fresh runs of ``argv`` (output discarded; a failed run is an error)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        times.append(time.perf_counter() - start)
        if done.returncode not in (0, 2):
            raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr[-500:]}")
    return times


def record(runs: int) -> dict:
    """The measurement record: the first command's timings (command, runs, min_s, median_s, samples_s), the
    machine, date and commit, and the other commands' timings under ``compared_with``."""
    timed = []
    load = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None
    for name, argv in COMMANDS.items():
        times = measure(argv, runs)
        timed.append({"command": name, "runs": runs, "min_s": round(min(times), 3),
                      "median_s": round(statistics.median(times), 3), "samples_s": [round(t, 3) for t in times]})
    head, *others = timed
    data = {**head, "machine": machine(), "python": sys.version.split()[0], "load_average_1min": load,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "commit": commit(), "compared_with": others}
    measurements.parse("help_startup", data)                # what is written is what the docs read
    return data


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m tokenlaw.app.startup_bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=7, help="fresh runs per command (default 7)")
    p.add_argument("--out", default="reports/measurements/help_startup.json", help="where the JSON record goes")
    args = p.parse_args(argv)
    if args.runs < 1:
        p.error(f"--runs: expected an int >= 1, got {args.runs}")
    rec = record(args.runs)
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec, indent=1) + "\n")
    for r in [rec, *rec["compared_with"]]:
        print(f"{r['command']:<48} min {r['min_s']:.2f} s  median {r['median_s']:.2f} s  ({r['runs']} runs)")
    print(f"wrote {path}")


if __name__ == "__main__":      # a failed measurement raises (a traceback is the right report for a benchmark)
    main()
