"""The report of a ``tokenlaw campaign``: what the rounds found per cell, as JSON, Markdown and the page to watch.

A :class:`CampaignReport` is what ``orchestration.campaigns.run`` returns (and hands to ``on_round`` as the
rounds finish); it is written by the one writer, ``formats.write(report, out, formats.CAMPAIGN,
stem="campaign")`` (``OUT/campaign.{json,md,html}``; the page alone, ``("campaign-html",)``, while the
campaign runs).  Its JSON is :meth:`CampaignReport.to_json`, the schema of ``docs/report-schema.md``.
"""
from __future__ import annotations

import dataclasses
import math

from .text import campaign_replay


@dataclasses.dataclass(frozen=True)
class Finding:
    """One violation a campaign's cell found: the ``round`` it came in, its ``replay`` id, the verdict's
    ``status`` and ``detail``, the ``counterexample`` (as the verdict recorded it) and whether it was
    replayed ``from_database`` (another campaign's stored example) rather than searched."""

    round: int
    replay: str
    detail: str
    status: str | None = None
    counterexample: object = None
    from_database: bool = False

    def to_json(self) -> dict:
        return {"round": self.round, "replay": self.replay, "status": self.status, "detail": self.detail,
                "counterexample": self.counterexample, "from_database": self.from_database}

    @classmethod
    def from_json(cls, d: dict) -> "Finding":
        return cls(d["round"], d["replay"], d["detail"], d.get("status"), d.get("counterexample"),
                   bool(d.get("from_database", False)))


@dataclasses.dataclass(frozen=True)
class CampaignCell:
    """What a campaign learnt about one cell over its rounds (``orchestration.campaigns.CellRecord`` as it
    stands): the next round's ``budget``, the last round's verdict ``status`` (None: never judged), the
    ``rounds``, ``examples`` and the cell's own search ``seconds``, the ``best_ratio`` discrepancy / bound
    (``inf``: a zero bound exceeded), the ``regimes`` reached ({regime: examples}) and the ``violations``."""

    id: str
    declared: str
    budget: int
    rounds: int
    examples: int
    best_ratio: float
    regimes: dict
    violations: tuple = ()
    status: str | None = None
    seconds: float = 0.0

    @property
    def unexpected(self) -> bool:
        """A violation of a claimed law (it fails the campaign)."""
        return bool(self.violations) and self.declared == "claims"

    def to_json(self) -> dict:
        return {"id": self.id, "declared": self.declared, "budget": self.budget, "status": self.status,
                "rounds": self.rounds, "examples": self.examples, "seconds": self.seconds,
                "best_ratio": None if self.best_ratio == math.inf else self.best_ratio, "regimes": self.regimes,
                "violations": [v.to_json() for v in self.violations]}

    @classmethod
    def from_json(cls, d: dict) -> "CampaignCell":
        """A cell of a written ``campaign.json`` (``best_ratio`` null is inf; ``seconds`` 0 when absent)."""
        best = d["best_ratio"]
        return cls(d["id"], d["declared"], d["budget"], d["rounds"], d["examples"],
                   math.inf if best is None else best, d["regimes"],
                   tuple(Finding.from_json(v) for v in d["violations"]), d.get("status"), d.get("seconds", 0.0))


@dataclasses.dataclass(frozen=True)
class CampaignReport:
    """A campaign as it stands: its meta (settings, rounds, time, the Dask workers), each cell's record
    (:class:`CampaignCell`), the violations found and the cells whose claim one broke."""

    meta: dict
    cells: tuple
    violations: int = 0
    unexpected: tuple = ()

    def to_json(self) -> dict:
        return {"meta": self.meta, "cells": [c.to_json() for c in self.cells], "violations": self.violations,
                "unexpected": list(self.unexpected)}

    @classmethod
    def from_json(cls, data: dict) -> "CampaignReport":
        """The report of a written ``campaign.json`` (``violations`` / ``unexpected`` counted when absent)."""
        cells = tuple(CampaignCell.from_json(c) for c in data["cells"])
        return cls(data["meta"], cells, data.get("violations", sum(len(c.violations) for c in cells)),
                   tuple(data.get("unexpected", [c.id for c in cells if c.unexpected])))


def markdown(report: CampaignReport) -> str:
    """The campaign report as Markdown: per cell the examples, regimes, best ratio and violations."""
    meta = report.meta
    lines = [f"# tokenlaw campaign", "",
             f"{meta['rounds']} rounds in {meta['seconds']:.0f} s (time box {meta['minutes']} min"
             f"{', interrupted' if meta['interrupted'] else ''}), seed {meta['seed']}, backend {meta['backend']}, "
             f"database {meta['database']}"
             + (f", mutant {meta['mutant']} (a seeded bug)" if meta.get("mutant") else "") + ".", "",
             "Dask workers (cells run): " + ", ".join(f"{a} ({n})" for a, n in meta["dask"]["workers"].items()), "",
             "| cell | rounds | examples | best ratio | regimes visited | violations |", "|---|---|---|---|---|---|"]
    for c in report.cells:
        ratio = "inf" if c.best_ratio == math.inf else f"{c.best_ratio:.3g}"
        regimes = ", ".join(f"{n} {k}" for n, k in c.regimes.items()) or "-"
        found = ", ".join(f"`{v.replay}`" for v in c.violations) or "-"
        lines.append(f"| `{c.id}` | {c.rounds} | {c.examples} | {ratio} | {regimes} | {found} |")
    for c in report.cells:
        for v in c.violations:
            lines += ["", f"## {c.id} (round {v.round})", "", v.detail, "",
                      f"    {campaign_replay(v.replay, meta)}"]
    return "\n".join(lines) + "\n"
