"""Measurements are records of runs, and the page that states them is rendered from the records.

A number in the documentation is only as good as the run it came from, so no
figure in ``docs/measurements.md`` is typed by hand: each benchmark writes one
JSON record, ``reports/measurements/<name>.json``, with at least

    {"command": "tokenlaw --help", "runs": 7, "min_s": 0.41, "median_s": 0.45,
     "machine": {"cores": 2, "cpu": "..."}, "date": "2026-12-02T00:30:00Z", "commit": "3140f90"}

and :func:`render` turns every record it finds into the generated block of the page
(``tokenlaw docs measurements --write`` splices it in between the two markers, leaving
the hand-kept history below them alone).  Any further field of a record is shown
too: a list of sub-records that have a ``command`` and timings (e.g. the baselines a
start-up time is compared with) as rows of their own, anything else as a value.

    >>> r = parse("startup", {"command": "python -c pass", "runs": 3, "min_s": 0.01, "median_s": 0.02,
    ...                       "machine": {"cores": 2, "cpu": "x"}, "date": "d", "commit": "c"})
    >>> r.median_s
    0.02
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from . import marked_block
from tokenlaw.operators import InvalidArgument

REQUIRED = ("command", "runs", "min_s", "median_s", "machine", "date", "commit")
BEGIN = "<!-- generated: begin (tokenlaw docs measurements --write renders reports/measurements/*.json; do not edit) -->"
END = "<!-- generated: end -->"


@dataclass(frozen=True)
class Measurement:
    """One benchmark's record: the command timed, how often, its fastest and median wall time."""

    name: str
    command: str
    runs: int
    min_s: float
    median_s: float
    machine: dict
    date: str
    commit: str
    extra: dict = field(default_factory=dict)


def _number(where: str, key: str, value, kind=float):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        raise InvalidArgument(f"{where}: {key}: expected a non-negative number, got {value!r}")
    return kind(value)


def parse(name: str, data, where: str | None = None) -> Measurement:
    """The record ``data`` (a JSON object) as a :class:`Measurement`; a missing or ill-typed field is refused."""
    where = where or name
    if not isinstance(data, dict):
        raise InvalidArgument(f"{where}: expected a JSON object, got {type(data).__name__}")
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise InvalidArgument(f"{where}: missing field(s) {', '.join(missing)} (a record needs {', '.join(REQUIRED)})")
    if not isinstance(data["machine"], dict) or not {"cores", "cpu"} <= set(data["machine"]):
        raise InvalidArgument(f"{where}: machine: expected an object with cores and cpu, got {data['machine']!r}")
    runs = _number(where, "runs", data["runs"], int)
    if runs < 1 or runs != data["runs"]:
        raise InvalidArgument(f"{where}: runs: expected a whole number >= 1, got {data['runs']!r}")
    low, mid = _number(where, "min_s", data["min_s"]), _number(where, "median_s", data["median_s"])
    if low > mid:
        raise InvalidArgument(f"{where}: min_s: {low} is above median_s {mid}")
    return Measurement(name=name, command=str(data["command"]), runs=runs, min_s=low, median_s=mid,
                       machine=dict(data["machine"]), date=str(data["date"]), commit=str(data["commit"]),
                       extra={k: v for k, v in data.items() if k not in REQUIRED})


def load(folder: Path) -> list[Measurement]:
    """Every ``*.json`` record in ``folder``, by name (none when the folder does not exist)."""
    folder = Path(folder)
    records = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InvalidArgument(f"{path}: not a readable JSON record ({exc})") from None
        records.append(parse(path.stem, data, str(path)))
    return records


def _cell(text: str) -> str:
    """``text`` as one Markdown table cell (a ``|`` in a command would end the cell)."""
    return str(text).replace("|", "\\|")


def _seconds(value) -> str:
    return f"{value:.3f}"


def _timed(item) -> bool:
    return isinstance(item, dict) and "command" in item and {"min_s", "median_s"} <= set(item)


def render(records: list[Measurement]) -> str:
    """The generated block: one table row per record (and per timed sub-record), then each record's context."""
    if not records:
        return "No measurement records yet (`reports/measurements/*.json`)."
    lines = ["| record | command | runs | min (s) | median (s) | machine | date | commit |",
             "|---|---|---|---|---|---|---|---|"]
    notes = []
    for r in records:
        machine = f"{r.machine['cores']} cores, {r.machine['cpu']}"
        lines.append(f"| `{r.name}` | `{_cell(r.command)}` | {r.runs} | {_seconds(r.min_s)} | {_seconds(r.median_s)} "
                     f"| {_cell(machine)} | {_cell(r.date)} | `{_cell(r.commit)}` |")
        for key, value in r.extra.items():
            if isinstance(value, list) and value and all(_timed(v) for v in value):
                for v in value:
                    lines.append(f"| `{r.name}` {key} | `{_cell(v['command'])}` | {v.get('runs', r.runs)} "
                                 f"| {_seconds(v['min_s'])} | {_seconds(v['median_s'])} | same | same | same |")
            else:
                notes.append(f"- `{r.name}` {key}: {json.dumps(value, sort_keys=True)}")
    return "\n".join(lines + ([""] + notes if notes else []))


def splice(page: str, block: str) -> str:
    """``page`` with the text between :data:`BEGIN` and :data:`END` replaced by ``block``."""
    return marked_block.splice(page, block, BEGIN, END, "measurements page")


def generated(page: str) -> str:
    """The block between the markers of ``page`` (what :func:`splice` wrote)."""
    return marked_block.between(page, BEGIN, END, "measurements page")
