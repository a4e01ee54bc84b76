"""Join the JSON reports of campaign shards into one set of rows.

Each shard's ``conformance.json`` holds whole rows (``--shard i/n`` never
splits a row), so merging is a union: a row id present in two reports is an
error unless both hold the same content (the same shard passed twice).
"""
from __future__ import annotations

import json
from pathlib import Path

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties import verdict as V
from tokenlaw.properties.plan import Cell, Row


def _number(v):
    return float(v) if isinstance(v, str) else v          # "inf" / "nan" as written by Verdict.to_json


def verdict_from_json(d: dict | None) -> V.Verdict | None:
    if d is None:
        return None
    d = dict(d)
    d["discrepancy"], d["bound"] = _number(d["discrepancy"]), _number(d["bound"])
    return V.Verdict(**d)


def rows_from_json(report: dict) -> list:
    out = []
    for r in report["rows"]:
        cells = [Cell(r["operator"], r["contract"], c["backend"], c["dtype"], verdict_from_json(c["verdict"]))
                 for c in r["cells"]]
        out.append(Row(r["operator"], r["contract"], r["declared"], r["reason"], cells))
    return out


def merge(paths) -> tuple[list, dict]:
    """(rows, meta) of the union of the given reports, in the order first seen."""
    rows, seen, metas = [], {}, []
    for path in paths:
        path = Path(path)
        try:
            report = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise InvalidArgument(f"reports: cannot read {str(path)!r} as a JSON report ({err})") from None
        if "rows" not in report:
            raise InvalidArgument(f"reports: {str(path)!r} has no rows; expected a tokenlaw conformance.json")
        metas.append(report.get("meta", {}))
        for raw, row in zip(report["rows"], rows_from_json(report)):
            if row.id in seen:
                if seen[row.id][0] != raw:
                    raise InvalidArgument(f"reports: row {row.id} differs between {seen[row.id][1]} and {path}")
                continue
            seen[row.id] = (raw, str(path))
            rows.append(row)
    meta = dict(metas[0]) if metas else {}
    meta.update(seconds=sum(m.get("seconds", 0) for m in metas), merged_from=[str(p) for p in paths],
                shards=[m.get("shard") for m in metas])
    return rows, meta
