"""Render the fidelity record (``experiments.fidelity``): the papers' figures beside ours, Markdown and HTML.

The record's rows each carry :data:`COLUMNS`; this module reads the record into a
:class:`FidelityRecord` (:meth:`FidelityRecord.from_json`, the one place its JSON keys are read) and renders
that (it runs nothing and reads no file).
"""
from __future__ import annotations

import dataclasses
from xml.sax.saxutils import escape

from . import marked_block

COLUMNS = ("figure", "paper", "ours", "setting", "seeds", "status", "reason")
STATUSES = ("reproduced", "direction reproduced", "not reproduced", "not reproducible here")


@dataclasses.dataclass(frozen=True)
class FigureRow:
    """One of the papers' figures: the :data:`COLUMNS` (``status`` one of :data:`STATUSES`) and the
    ``experiment`` that measured it (None for a figure not reproducible here)."""

    figure: str
    paper: object
    ours: object
    setting: object
    seeds: object
    status: str
    reason: object
    experiment: str | None = None

    def columns(self) -> tuple:
        """The row's values in :data:`COLUMNS` order."""
        return (self.figure, self.paper, self.ours, self.setting, self.seeds, self.status, self.reason)


@dataclasses.dataclass(frozen=True)
class ExperimentRun:
    """How one experiment of the record ran: its ``seconds`` and whether it reused (``cached``) a model trained
    earlier (the record's further fields, its report's name and figure count, are not rendered)."""

    seconds: float
    cached: bool = False


@dataclasses.dataclass(frozen=True)
class FidelityRecord:
    """The record ``tokenlaw reproduce all`` writes (``fidelity.json``): ``quick`` sizes or not, its
    ``seconds``, each experiment's run, the figures' rows and the plots written beside it."""

    quick: bool
    seconds: float
    experiments: dict
    rows: tuple
    plots: tuple = ()

    @classmethod
    def from_json(cls, record: dict) -> "FidelityRecord":
        """The record of a ``fidelity.json`` (or of ``experiments.fidelity.run_all``); a row missing a column or
        with a status outside :data:`STATUSES` is refused, naming it."""
        rows = []
        for i, row in enumerate(record["rows"]):
            missing = [c for c in COLUMNS if c not in row]
            if missing or row["status"] not in STATUSES:
                raise ValueError(f"fidelity row {i} ({row.get('figure')!r}): missing {missing} or status "
                                 f"{row.get('status')!r} not one of {STATUSES}")
            rows.append(FigureRow(*(row[c] for c in COLUMNS), row.get("experiment")))
        runs = {name: ExperimentRun(r["seconds"], bool(r.get("cached"))) for name, r in record["experiments"].items()}
        return cls(record["quick"], record["seconds"], runs, tuple(rows), tuple(record.get("plots") or ()))


def counts(record: FidelityRecord) -> dict:
    return {s: sum(r.status == s for r in record.rows) for s in STATUSES}


def _md(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(record: FidelityRecord) -> str:
    c = counts(record)
    runs = ", ".join(f"{name} {r.seconds:.0f} s" + (" (reused its trained model)" if r.cached else "")
                     for name, r in record.experiments.items())
    lines = ["# The papers' figures, reproduced here", "",
             f"{len(record.rows)} figures: " + ", ".join(f"{n} {s}" for s, n in c.items()) + ". "
             f"{'Quick run (reduced sizes: not the reported numbers). ' if record.quick else ''}"
             f"Measured by `tokenlaw reproduce all` in {record.seconds:.0f} s ({runs}); each experiment's "
             f"own report is `<name>.md` beside this file.", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in record.rows:
        lines.append("| " + " | ".join(_md(v) for v in r.columns()) + " |")
    if record.plots:
        lines += ["", "Plots: " + ", ".join(f"[{p}]({p})" for p in record.plots)]
    return "\n".join(lines) + "\n"


def html_section(record: FidelityRecord, plots: dict | None = None) -> str:
    """The record as an HTML section (a table, then the plots' inline SVG)."""
    head = "".join(f"<th>{escape(k)}</th>" for k in COLUMNS)
    body = "".join("<tr>" + "".join(f'<td class="{escape(r.status.replace(" ", "-"))}">{escape(str(v))}</td>'
                                    if k == "status" else f"<td>{escape(str(v))}</td>"
                                    for k, v in zip(COLUMNS, r.columns())) + "</tr>"
                   for r in record.rows)
    c = counts(record)
    summary = ", ".join(f"{n} {s}" for s, n in c.items())
    figs = "".join(f"<figure>{svg}<figcaption>{escape(name)}</figcaption></figure>" for name, svg in (plots or {}).items())
    return (f'<section id="fidelity"><h2>The papers\' figures, reproduced here</h2><p>{escape(summary)}</p>'
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{figs}</section>")


def html(record: FidelityRecord, plots: dict | None = None) -> str:
    """A self-contained page of :func:`html_section`."""
    style = ("body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
             "padding:3px 6px;vertical-align:top;font-size:13px}.reproduced{background:#d3f9d8}"
             ".direction-reproduced{background:#fff3bf}.not-reproduced{background:#ffe3e3}"
             ".not-reproducible-here{background:#e9ecef}")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>tokenlaw fidelity</title>"
            f"<style>{style}</style></head><body>{html_section(record, plots)}</body></html>\n")


BEGIN = "<!-- fidelity: begin (tokenlaw reproduce all --readme README.md renders the record; do not edit) -->"
END = "<!-- fidelity: end -->"


def readme(record: FidelityRecord, source: str) -> str:
    """The README's paragraph: which of the papers' figures this project reproduces, from the record at ``source``."""
    by = {s: [r.figure for r in record.rows if r.status == s] for s in STATUSES}
    cached = [n for n, r in record.experiments.items() if r.cached]
    parts = [f"Of the papers' {len(record.rows)} figures, the recorded run (`{source}`"
             f"{', quick sizes' if record.quick else ''}, {record.seconds:.0f} s"
             f"{' with ' + ', '.join(cached) + ' reusing its trained model' if cached else ''}) reproduces "
             f"{len(by['reproduced'])}"]
    if by["reproduced"]:
        parts[-1] += " (" + "; ".join(by["reproduced"]) + ")"
    for status in STATUSES[1:]:
        if by[status]:
            parts.append(f"{status}: {len(by[status])} (" + "; ".join(by[status]) + ")")
    return ", ".join(parts) + ". Each row's number, setting, spread and reason: `tokenlaw reproduce all`."


def splice(page: str, block: str) -> str:
    return marked_block.splice(page, block, BEGIN, END, "--readme")


def generated(page: str) -> str:
    return marked_block.between(page, BEGIN, END, "--readme")
