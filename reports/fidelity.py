"""Render the fidelity record (``experiments.fidelity``): the papers' figures beside ours, Markdown and HTML.

The record's rows each carry :data:`COLUMNS`; this module only renders them
(it runs nothing and reads no file).
"""
from __future__ import annotations

from xml.sax.saxutils import escape

from . import marked_block

COLUMNS = ("figure", "paper", "ours", "setting", "seeds", "status", "reason")
STATUSES = ("reproduced", "direction reproduced", "not reproduced", "not reproducible here")


def _check(record: dict) -> None:
    for i, row in enumerate(record["rows"]):
        missing = [c for c in COLUMNS if c not in row]
        if missing or row["status"] not in STATUSES:
            raise ValueError(f"fidelity row {i} ({row.get('figure')!r}): missing {missing} or status "
                             f"{row.get('status')!r} not one of {STATUSES}")


def counts(record: dict) -> dict:
    return {s: sum(r["status"] == s for r in record["rows"]) for s in STATUSES}


def _md(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(record: dict) -> str:
    _check(record)
    c = counts(record)
    runs = ", ".join(f"{name} {r['seconds']:.0f} s" + (" (reused its trained model)" if r.get("cached") else "")
                     for name, r in record["experiments"].items())
    lines = ["# The papers' figures, reproduced here", "",
             f"{len(record['rows'])} figures: " + ", ".join(f"{n} {s}" for s, n in c.items()) + ". "
             f"{'Quick run (reduced sizes: not the reported numbers). ' if record['quick'] else ''}"
             f"Measured by `tokenlaw reproduce all` in {record['seconds']:.0f} s ({runs}); each experiment's "
             f"own report is `<name>.md` beside this file.", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in record["rows"]:
        lines.append("| " + " | ".join(_md(r[k]) for k in COLUMNS) + " |")
    if record.get("plots"):
        lines += ["", "Plots: " + ", ".join(f"[{p}]({p})" for p in record["plots"])]
    return "\n".join(lines) + "\n"


def html_section(record: dict, plots: dict | None = None) -> str:
    """The record as an HTML section (a table, then the plots' inline SVG)."""
    _check(record)
    head = "".join(f"<th>{escape(k)}</th>" for k in COLUMNS)
    body = "".join("<tr>" + "".join(f'<td class="{escape(r["status"].replace(" ", "-"))}">{escape(str(r[k]))}</td>'
                                    if k == "status" else f"<td>{escape(str(r[k]))}</td>" for k in COLUMNS) + "</tr>"
                   for r in record["rows"])
    c = counts(record)
    summary = ", ".join(f"{n} {s}" for s, n in c.items())
    figs = "".join(f"<figure>{svg}<figcaption>{escape(name)}</figcaption></figure>" for name, svg in (plots or {}).items())
    return (f'<section id="fidelity"><h2>The papers\' figures, reproduced here</h2><p>{escape(summary)}</p>'
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{figs}</section>")


def html(record: dict, plots: dict | None = None) -> str:
    """A self-contained page of :func:`html_section`."""
    style = ("body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
             "padding:3px 6px;vertical-align:top;font-size:13px}.reproduced{background:#d3f9d8}"
             ".direction-reproduced{background:#fff3bf}.not-reproduced{background:#ffe3e3}"
             ".not-reproducible-here{background:#e9ecef}")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>tokenlaw fidelity</title>"
            f"<style>{style}</style></head><body>{html_section(record, plots)}</body></html>\n")


BEGIN = "<!-- fidelity: begin (tokenlaw reproduce all --readme README.md renders the record; do not edit) -->"
END = "<!-- fidelity: end -->"


def readme(record: dict, source: str) -> str:
    """The README's paragraph: which of the papers' figures this project reproduces, from the record at ``source``."""
    _check(record)
    by = {s: [r["figure"] for r in record["rows"] if r["status"] == s] for s in STATUSES}
    cached = [n for n, r in record["experiments"].items() if r.get("cached")]
    parts = [f"Of the papers' {len(record['rows'])} figures, the recorded run (`{source}`"
             f"{', quick sizes' if record['quick'] else ''}, {record['seconds']:.0f} s"
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
