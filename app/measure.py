"""Time a command several times and write its measurement record (``reports/measurements/<name>.json``).

    python3 -m tokenlaw.app.measure help_startup --runs 7 \\
        --baseline "python3 -c pass" --baseline "python3 -c 'import torch'" -- python3 -m tokenlaw.app.cli --help

Each run is the wall time of one fresh process (output discarded); the record keeps the
minimum (the least disturbed run) and the median (a typical one) with the machine, date and
commit, as :mod:`tokenlaw.reports.measurements` reads them.  Then
``tokenlaw docs measurements --write`` renders every record into ``docs/measurements.md``.
A command that fails is not a measurement: exit 2 naming it.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tokenlaw.operators import InvalidArgument
from tokenlaw.reports import measurements

from .exits import EXIT_OK, EXIT_USAGE

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "reports" / "measurements"


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict:
    """The cores this process may use and the CPU model: what a wall time depends on first."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cores": cores, "cpu": _cpu()}


def commit() -> str:
    """The checkout's short commit, with ``+dirty`` when the tree has uncommitted changes."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, timeout=30, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def time_runs(argv: list[str], runs: int) -> list[float]:
    """Wall seconds of ``runs`` fresh runs of ``argv``; a run that exits non-zero is refused."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise InvalidArgument(f"command: {shlex.join(argv)!r} exited {done.returncode}; not a measurement")
    return times


def summary(argv: list[str], times: list[float]) -> dict:
    return {"command": shlex.join(argv), "runs": len(times), "min_s": round(min(times), 4),
            "median_s": round(statistics.median(times), 4)}


def record(argv: list[str], runs: int, baselines: list[list[str]]) -> dict:
    """The measurement record of ``argv``, with each baseline command timed alike after it.

    The 1-minute load average before the runs is kept too: on a shared machine it says how
    disturbed the timings may be (the baselines, timed alongside, show it as well).
    """
    load = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None
    data = {"load_average_1min": load, **summary(argv, time_runs(argv, runs)), "machine": machine(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "commit": commit()}
    if baselines:
        data["baselines"] = [summary(b, time_runs(b, runs)) for b in baselines]
    measurements.parse("new record", data)                  # what is written can be read back
    return data


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m tokenlaw.app.measure", description=__doc__.split("\n\n")[0])
    p.add_argument("name", help="the record's name: writes OUT/NAME.json")
    p.add_argument("--runs", type=int, default=7, help="fresh runs of each command (default 7)")
    p.add_argument("--baseline", action="append", default=[], help="a command to time alike (repeatable)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="record folder (default reports/measurements)")
    p.epilog = "the command to time follows '--'"
    argv = list(sys.argv[1:] if argv is None else argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    args, command = p.parse_args(argv[:cut]), argv[cut + 1:]
    try:
        if not command:
            raise InvalidArgument("command: give the command to time after --")
        if args.runs < 1:
            raise InvalidArgument(f"--runs: expected >= 1, got {args.runs}")
        if not args.name.replace("_", "").replace("-", "").isalnum():
            raise InvalidArgument(f"name: expected letters, digits, '_' or '-', got {args.name!r}")
        data = record(command, args.runs, [shlex.split(b) for b in args.baseline])
    except InvalidArgument as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{args.name}.json"
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{path}: min {data['min_s']:.3f} s, median {data['median_s']:.3f} s over {data['runs']} runs")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
