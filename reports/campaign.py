"""The report of a ``tokenlaw campaign``: what the rounds found per cell, as JSON, Markdown and the page to watch.

A :class:`CampaignReport` is what ``orchestration.campaigns.run`` returns (and hands to ``on_round`` as the
rounds finish); it is written by the one writer, ``formats.write(report, out, formats.CAMPAIGN,
stem="campaign")`` (``OUT/campaign.{json,md,html}``; the page alone, ``("campaign-html",)``, while the
campaign runs).  Its JSON is :meth:`CampaignReport.to_json`, the schema of ``docs/report-schema.md``.
"""
from __future__ import annotations

import dataclasses

from .text import campaign_replay


@dataclasses.dataclass(frozen=True)
class CampaignReport:
    """A campaign as it stands: its meta (settings, rounds, time, the Dask workers), each cell's record (the JSON
    view of ``orchestration.campaigns.CellRecord``), the violations found and the cells whose claim one broke."""

    meta: dict
    cells: tuple
    violations: int = 0
    unexpected: tuple = ()

    def to_json(self) -> dict:
        return {"meta": self.meta, "cells": list(self.cells), "violations": self.violations,
                "unexpected": list(self.unexpected)}

    @classmethod
    def from_json(cls, data: dict) -> "CampaignReport":
        """The report of a written ``campaign.json`` (``violations`` / ``unexpected`` counted when absent)."""
        cells = tuple(data["cells"])
        return cls(data["meta"], cells, data.get("violations", sum(len(c["violations"]) for c in cells)),
                   tuple(data.get("unexpected", [c["id"] for c in cells
                                                 if c["violations"] and c["declared"] == "claims"])))


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
        ratio = "inf" if c["best_ratio"] is None else f"{c['best_ratio']:.3g}"
        regimes = ", ".join(f"{n} {k}" for n, k in c["regimes"].items()) or "-"
        found = ", ".join(f"`{v['replay']}`" for v in c["violations"]) or "-"
        lines.append(f"| `{c['id']}` | {c['rounds']} | {c['examples']} | {ratio} | {regimes} | {found} |")
    for c in report.cells:
        for v in c["violations"]:
            lines += ["", f"## {c['id']} (round {v['round']})", "", v["detail"], "",
                      f"    {campaign_replay(v['replay'], meta)}"]
    return "\n".join(lines) + "\n"
