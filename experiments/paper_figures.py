"""One paper figure set beside our measurement: the record each experiment's ``figures(result)`` returns.

A figure's status is decided from measured numbers, never typed in:

* ``reproduced``: our number matches the paper's within the seed spread or the stated tolerance;
* ``direction reproduced``: it does not match, but the effect has the paper's sign;
* ``not reproduced``: neither.
"""
from __future__ import annotations

import dataclasses
import enum

from tokenlaw.operators.errors import InvalidArgument


class Status(str, enum.Enum):
    REPRODUCED = "reproduced"
    NOT_REPRODUCED = "not reproduced"
    DIRECTION = "direction reproduced"


def status(matches: bool, direction: bool) -> Status:
    """``reproduced`` when the numbers match, else ``direction reproduced`` when the sign does, else not."""
    if matches:
        return Status.REPRODUCED
    return Status.DIRECTION if direction else Status.NOT_REPRODUCED


def within(ours: dict, paper: float, tolerance: float) -> bool:
    """The paper's value lies within our seed range widened by one standard deviation, or within ``tolerance``
    of our mean."""
    lo, hi = ours["min"] - ours["std"], ours["max"] + ours["std"]
    return lo <= paper <= hi or abs(ours["mean"] - paper) <= tolerance


@dataclasses.dataclass(frozen=True)
class Figure:
    """One paper figure: the paper's number, ours, where it was measured, and the verdict with its reason."""

    figure: str
    paper: str
    ours: str
    setting: str
    seeds: int
    status: Status
    reason: str

    def __post_init__(self):
        if not isinstance(self.status, Status):
            raise InvalidArgument(f"status: expected a Status, got {self.status!r}")

    def as_dict(self) -> dict:
        return {**dataclasses.asdict(self), "status": self.status.value}


def markdown_table(figures: list) -> str:
    """The figures as a Markdown table (paper | ours | status | reason)."""
    lines = ["| figure | paper | ours (mean ± sd over seeds) | status | reason |", "|---|---|---|---|---|"]
    for f in figures:
        lines.append(f"| {f['figure']} | {f['paper']} | {f['ours']} | {f['status']} | {f['reason']} |")
    return "\n".join(lines)
