"""The report document: one type for every run, tier and rendering, with a lossless JSON round trip.

A :class:`Document` holds the planned rows of one or several runs (``Row``
and ``Cell`` of :mod:`tokenlaw.properties.plan`, each cell with its
``Verdict``) and the runs' meta, typed (:class:`~.meta.Meta`: each run's
:class:`~.meta.RunMeta` and a merge's own fields).  Outcomes are never stored in it: a row's
outcome is ``Row.outcome`` and a cell's is ``verdict.outcome(declared,
verdict)``, computed when the document is written (:meth:`Document.to_json`)
and nowhere else; every rendering (Markdown, HTML, JUnit, proofs) and the
gate read them from that JSON view.  :meth:`Document.from_json` reads a
written report back, so ``Document.from_json(d).to_json() == d`` for every
field of the schema (``docs/report-schema.md``).

Merging lives here too: :func:`merge_shards` joins the reports of ``--shard
i/n`` shards of one run (a union of whole rows), :func:`merge_runs` joins
the reports of different runs (eager and a kernel backend) into the gate's
document, keeping each run's record (``Meta.runs``, written as ``meta.runs``).
JSON is read and written only by :meth:`Document.from_json` / :meth:`Document.to_json`
and the functions on written reports (:func:`stable`, :func:`findings`, :func:`timings`, :func:`load`).
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import CONTRACTS
from tokenlaw.properties.plan import Cell, Row

from .meta import Meta, RunMeta

# Additive fields keep the version; a removed or renamed field bumps it.
SCHEMA_VERSION = 1

# Fields that differ between two runs of the same seed (wall-clock times).
VOLATILE = ("meta.seconds", "meta.created", "meta.runs[].seconds", "meta.runs[].created",
            "rows[].cells[].verdict.seconds")

# Meta fields that say how a run was executed, not what it found: the command line, the worker count and the
# Dask cluster that ran its cells (its workers' addresses).  Two runs of the same seed with --workers 1,
# --workers 2 or --scheduler differ only there (and in VOLATILE): :func:`findings`.
EXECUTION = ("meta.command", "meta.workers", "meta.dask")

VERDICT_FIELDS = tuple(f.name for f in dataclasses.fields(V.Verdict))


def tier_name(meta: Meta | RunMeta) -> str:
    """A run's tier as the combined reports name it: ``fuzz``, ``symbolic``, or ``kernel:<backend>``."""
    run = meta.run if isinstance(meta, Meta) else meta
    return run.name if run is not None else V.Tier.FUZZ.value


def _number(v):
    return float(v) if isinstance(v, str) else v          # "inf" / "nan" as written by Verdict.to_json


def verdict_from_json(d: dict | None) -> V.Verdict | None:
    """The Verdict of a JSON verdict (fields this tokenlaw does not know are ignored, as the schema says)."""
    if d is None:
        return None
    kw = {k: d[k] for k in VERDICT_FIELDS if k in d}
    kw["discrepancy"], kw["bound"] = _number(kw.get("discrepancy", 0.0)), _number(kw.get("bound", 0.0))
    return V.Verdict.from_json(kw)     # the typed fields (mismatch, step, ...) come back out of "extra"


def ratio(v: dict) -> float:
    """discrepancy / bound of a JSON verdict: ``Verdict.ratio``, the one rule."""
    return verdict_from_json(v).ratio


# What a claimed row can have established: a pass of some tier.
ESTABLISHED = frozenset({V.Outcome.HOLDS, V.Outcome.PROVED, V.Outcome.SAMPLED})


class Result(V._Named):
    """What a run established, as a whole (``summary.result``)."""

    PASS = "PASS"
    UNDECIDED = "UNDECIDED"
    FAIL = "FAIL"


RESULTS = tuple(Result)


@dataclasses.dataclass(frozen=True)
class Standing:
    """The result of a run and what it rests on (:func:`standing`): the failing and undecided row ids and the
    counts of the claimed rows."""

    result: Result
    failing: list
    undecided: list
    claimed: dict

    def to_json(self) -> dict:
        return {"result": self.result, "failing": self.failing, "undecided": self.undecided, "claimed": self.claimed}


def standing(entries, *, proof: bool, interrupted: bool = False) -> Standing:
    """The result of a run from its rows' ``(id, declared, outcome, failing)``: what was established, never more.

    * ``FAIL``: some row fails (``failing``: an outcome against the declaration, a replay mismatch);
    * ``UNDECIDED``: none fails, but a claimed row is undecided (unknown, vacuous, trace differs from
      eager), or there are claimed rows and none was established (``proof``: none *proved*;
      otherwise none holds), so a run that showed nothing never reads PASS;
    * ``PASS`` otherwise (claimed rows that no tier can run are listed, not hidden), unless the run was
      ``interrupted`` (Ctrl-C: ``meta.interrupted``): then ``UNDECIDED``, what it did not judge being unknown.

    Returns a :class:`Standing`: ``result``, ``failing`` and ``undecided`` (row ids) and ``claimed``: counts of the
    claimed rows (by design ones left out) that are ``proved``, ``established`` (proved, holds or
    holds for sampled weights), ``undecided``, ``not_run`` (no tier could run them) and ``failing``.
    """
    entries = list(entries)
    claimed = [e for e in entries if e[1] == "claims" and e[2] != V.Outcome.NOT_APPLICABLE_BY_DESIGN]
    failing = [i for i, _, _, bad in entries if bad]
    undecided = [i for i, _, out, bad in claimed if out in V.UNDECIDED and not bad]
    tally = {"rows": len(claimed),
             "proved": sum(out == V.Outcome.PROVED for _, _, out, bad in claimed if not bad),
             "established": sum(out in ESTABLISHED for _, _, out, bad in claimed if not bad),
             "undecided": len(undecided),
             "not_run": sum(out in V.NOT_RUN for _, _, out, bad in claimed if not bad),
             "failing": sum(bad for *_, bad in claimed)}
    shown = tally["proved"] if proof else tally["established"]
    result = (Result.FAIL if failing else Result.UNDECIDED if undecided or (claimed and not shown) or interrupted
              else Result.PASS)
    return Standing(result, failing, undecided, tally)


def stable(doc: dict) -> dict:
    """A copy of a JSON document without its VOLATILE (timing) fields: equal for equal seeds."""
    doc = json.loads(json.dumps(doc))
    meta = doc.get("meta", {})
    for m in [meta, *meta.get("runs", ())]:     # a merged document keeps each run's meta
        for k in ("seconds", "created"):
            m.pop(k, None)
    for r in doc.get("rows", ()):
        for c in r.get("cells", ()):
            if c.get("verdict"):
                c["verdict"].pop("seconds", None)
    return doc


def findings(doc: dict) -> dict:
    """:func:`stable` without the EXECUTION fields: what the run found, equal for equal seeds wherever it ran."""
    doc = stable(doc)
    for m in [doc.get("meta", {}), *doc.get("meta", {}).get("runs", ())]:
        for k in EXECUTION:
            m.pop(k.split(".", 1)[1], None)
    return doc


def timings(doc: dict) -> dict:
    """The VOLATILE fields of a JSON document: the run's seconds and each cell's."""
    meta = doc.get("meta", {})
    return {"schema": SCHEMA_VERSION, "seconds": meta.get("seconds"),
            "runs": [r.get("seconds") for r in meta.get("runs", ())],
            "cells": {c["id"]: c["verdict"].get("seconds") for r in doc.get("rows", ()) for c in r["cells"]
                      if c.get("verdict") and "seconds" in c["verdict"]}}


@dataclasses.dataclass
class Document:
    """Rows (with cells and verdicts) and the meta of the run(s) that made them.

    ``backends`` is set on a document merged over runs (:func:`merge_runs`): the backend of
    the run each row came from, written as ``rows[].backend``.  ``laws`` keeps the
    ``{contract: (law, exact)}`` a report was written with (a contract this catalogue lacks, or
    an older wording, reads back unchanged).  ``extra`` holds further top-level fields (the
    proofs report's ``note``).  ``timed`` is False for a document read from a written report,
    whose verdicts carry no ``seconds`` (:data:`VOLATILE`).
    """

    rows: list
    meta: Meta
    backends: list | None = None
    laws: dict = dataclasses.field(default_factory=dict)
    extra: dict = dataclasses.field(default_factory=dict)
    timed: bool = True
    schema: int = SCHEMA_VERSION

    # -- reading -------------------------------------------------------------------------------
    @property
    def runs(self) -> list[RunMeta]:
        """The record of every run in the document (a single run's document is one run)."""
        return self.meta.all_runs

    @property
    def cells(self) -> list:
        return [c for r in self.rows for c in r.cells]

    def row_backends(self) -> list[str]:
        """The backend of the run each row came from."""
        if self.backends is not None:
            return list(self.backends)
        return [self.meta.backend or "eager"] * len(self.rows)

    @property
    def failing(self) -> list:
        return [r for r in self.rows if r.failing]

    def standing(self) -> Standing:
        """What this document established (the ``summary.result`` its JSON carries), from the typed rows."""
        cells = self.cells
        proof = bool(cells) and all(c.backend == V.Tier.SYMBOLIC for c in cells)
        return standing(((r.id, r.declared, r.outcome, r.outcome in V.FAILING or r.mismatched) for r in self.rows), proof=proof, interrupted=bool(self.meta.interrupted))

    def summary(self) -> dict:
        """Counts of row outcomes, the failing and undecided row ids and the result (:meth:`standing`): the
        document's ``summary`` (docs/report-schema.md).

        Rows and cells *not applicable by design* are counted apart (``by_design``) and kept out
        of ``outcomes``, ``rows`` and ``cells``: they are not results.  A symbolic-tier document
        passes only when something was proved; an interrupted run never passes.
        """
        judged = [r for r in self.rows if r.outcome != V.Outcome.NOT_APPLICABLE_BY_DESIGN]
        counts: dict = {}
        for r in judged:
            counts[r.outcome] = counts.get(r.outcome, 0) + 1
        st = self.standing()
        by_design = [c for c in self.cells
                     if c.verdict is not None and c.verdict.status == V.Status.NOT_APPLICABLE_BY_DESIGN]
        return {"result": st.result, "rows": len(judged), "cells": len(self.cells) - len(by_design),
                "outcomes": dict(sorted(counts.items())), "failing": st.failing, "undecided": st.undecided,
                "claimed": st.claimed, "by_design": {"rows": len(self.rows) - len(judged), "cells": len(by_design)}}

    def law(self, contract: str) -> tuple[str, bool]:
        if contract in self.laws:
            return self.laws[contract]
        c = CONTRACTS[contract]
        return c.law, c.exact

    # -- JSON ------------------------------------------------------------------------------------
    def to_json(self) -> dict:
        """The JSON document (schema in docs/report-schema.md); outcomes are computed here, once."""
        out_rows = []
        backends = self.backends
        for i, r in enumerate(self.rows):
            cells = []
            for c in r.cells:
                verdict = None if c.verdict is None else c.verdict.to_json()
                if verdict is not None and not self.timed:
                    verdict.pop("seconds", None)
                cells.append({"id": c.id, "backend": c.backend, "dtype": c.dtype,
                              "outcome": V.outcome(r.declared, c.verdict), "verdict": verdict})
            law, exact = self.law(r.contract)
            row = {"id": r.id, "operator": r.operator, "contract": r.contract, "law": law, "exact": exact,
                   "declared": r.declared, "reason": r.reason, "outcome": r.outcome, "cells": cells}
            if backends is not None:
                row["backend"] = backends[i]
            out_rows.append(row)
        return {"schema": self.schema, "meta": json.loads(json.dumps(self.meta.to_json())), "summary": self.summary(),
                "rows": out_rows, **json.loads(json.dumps(self.extra))}

    @classmethod
    def from_json(cls, doc: dict) -> "Document":
        """A written report read back; a merged document keeps which run each row came from."""
        meta = Meta.from_json(json.loads(json.dumps(doc.get("meta", {}))))
        rows, laws, backends, timed = [], {}, [], False
        for r in doc["rows"]:
            cells = []
            for c in r["cells"]:
                v = c.get("verdict")
                timed = timed or (v is not None and "seconds" in v)
                cells.append(Cell(r["operator"], r["contract"], c["backend"], c["dtype"], verdict_from_json(v)))
            rows.append(Row(r["operator"], r["contract"], r["declared"], r["reason"], cells))
            if "law" in r and "exact" in r:
                laws[r["contract"]] = (r["law"], r["exact"])
            backends.append(r.get("backend") or meta.backend or "eager")
        merged = meta.runs is not None or any("backend" in r for r in doc["rows"])
        extra = {k: v for k, v in doc.items() if k not in ("schema", "meta", "summary", "rows")}
        return cls(rows, meta, backends if merged else None, laws, extra, timed, doc.get("schema", 1))

    def stable_json(self) -> dict:
        """:meth:`to_json` without the VOLATILE fields (what is written)."""
        return stable(self.to_json())

    def timings(self) -> dict:
        """The VOLATILE fields (:func:`timings`), from the typed runs and verdicts."""
        top = self.meta.run.execution.seconds if self.meta.run is not None else None
        return {"schema": SCHEMA_VERSION, "seconds": top,
                "runs": [r.execution.seconds for r in self.meta.runs or ()],
                "cells": {c.id: c.verdict.seconds for c in self.cells if c.verdict is not None} if self.timed else {}}


def key(row: Row, backend: str) -> str:
    """How the gate names a row across runs: its id on the reference backend, ``id@backend`` otherwise."""
    return row.id if backend == "eager" else f"{row.id}@{backend}"


def merge_shards(docs: list[Document], sources: list[str]) -> Document:
    """The union of the reports of one run's shards, rows in the order first seen.

    ``--shard i/n`` never splits a row, so a row id present in two reports is an error unless
    both hold the same content (the same shard passed twice).
    """
    rows, seen, metas = [], {}, []
    for doc, src in zip(docs, sources):
        metas.append(doc.meta)
        for row, raw in zip(doc.rows, doc.to_json()["rows"]):
            raw = stable({"rows": [raw]})["rows"][0]
            if row.id in seen:
                if seen[row.id][0] != raw:
                    raise InvalidArgument(f"reports: row {row.id} differs between {seen[row.id][1]} and {src}")
                continue
            seen[row.id] = (raw, src)
            rows.append(row)
    first = metas[0] if metas else Meta()
    runs = [m.run for m in metas]
    seconds = sum((r.execution.seconds or 0) if r is not None else 0 for r in runs)
    run = first.run
    if run is not None:
        run = dataclasses.replace(run, execution=dataclasses.replace(run.execution, seconds=seconds))
    meta = dataclasses.replace(first, run=run, merged_from=tuple(sources),
                               shards=tuple(r.execution.shard if r is not None else None for r in runs))
    laws = {k: v for d in docs for k, v in d.laws.items()}
    return Document(rows, meta, None, laws, {}, any(d.timed for d in docs))


def load_reports(paths) -> list:
    """The JSON reports at ``paths`` as Documents (``tokenlaw report merge``); an unreadable one is refused."""
    docs = []
    for path in map(Path, paths):
        try:
            raw = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise InvalidArgument(f"reports: cannot read {str(path)!r} as a JSON report ({err})") from None
        if not isinstance(raw, dict) or "rows" not in raw:
            raise InvalidArgument(f"reports: {str(path)!r} has no rows; expected a tokenlaw conformance.json")
        raw.setdefault("meta", {})
        check_structure(raw, "reports", path)
        docs.append(Document.from_json(raw))
    return docs


def merge_shard_files(paths) -> Document:
    """:func:`merge_shards` of the shards' ``conformance.json`` files."""
    return merge_shards(load_reports(paths), [str(p) for p in paths])


def merge_runs(docs: list[Document]) -> Document:
    """One document from several runs' reports: rows concatenated, each run's meta under meta["runs"]."""
    meta = dataclasses.replace(docs[0].meta, runs=tuple(run for d in docs for run in d.runs))
    rows = [r for d in docs for r in d.rows]
    backends = [b for d in docs for b in d.row_backends()]
    keys = [key(r, b) for r, b in zip(rows, backends)]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise InvalidArgument(f"--current: rows {dup[:5]} appear in more than one report")
    laws = {k: v for d in docs for k, v in d.laws.items()}
    return Document(rows, meta, backends, laws, {}, any(d.timed for d in docs))


def load(path, what: str) -> Document:
    """A report file as a Document; a missing, non-JSON or wrongly shaped file is refused naming ``what``."""
    path = Path(path)
    if not path.exists():
        hint = " (create one with `tokenlaw gate --update-baseline`)" if what == "--baseline" else ""
        raise InvalidArgument(f"{what}: no such report {str(path)!r}{hint}")
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise InvalidArgument(f"{what}: {str(path)!r} is not JSON: {err}") from None
    if not isinstance(doc, dict) or "rows" not in doc or "meta" not in doc:
        raise InvalidArgument(f"{what}: {str(path)!r} is not a tokenlaw report (no rows/meta)")
    check_structure(doc, what, path)
    if doc.get("schema", 1) > SCHEMA_VERSION:
        raise InvalidArgument(f"{what}: schema {doc['schema']} is newer than this tokenlaw ({SCHEMA_VERSION})")
    try:
        return Document.from_json(doc)
    except (KeyError, TypeError, ValueError) as err:
        raise InvalidArgument(f"{what}: {str(path)!r} is not a tokenlaw report: {type(err).__name__}: {err}") from None


def check_structure(doc: dict, what: str, path) -> None:
    """Valid JSON of the wrong shape is refused here, naming the first bad field, not deep inside a reader."""
    def bad(field, expected):
        raise InvalidArgument(f"{what}: {str(path)!r} is not a tokenlaw report: {field} should be {expected}")

    if not isinstance(doc["meta"], dict):
        bad("meta", "an object")
    if not isinstance(doc["rows"], list):
        bad("rows", "a list")
    if not isinstance(doc.get("schema", 1), int):
        bad("schema", "an int")
    for i, row in enumerate(doc["rows"]):
        if not isinstance(row, dict):
            bad(f"rows[{i}]", "an object")
        for k in ("id", "operator", "contract"):
            if not isinstance(row.get(k), str):
                bad(f"rows[{i}].{k}", "a string")
        if not isinstance(row.get("cells"), list):
            bad(f"rows[{i}].cells", "a list")
        for j, cell in enumerate(row["cells"]):
            if not isinstance(cell, dict) or not isinstance(cell.get("id"), str):
                bad(f"rows[{i}].cells[{j}]", "an object with a string id")
            v = cell.get("verdict")
            if v is not None and not (isinstance(v, dict) and isinstance(v.get("status"), str)):
                bad(f"rows[{i}].cells[{j}].verdict", "null or an object with a string status")
    runs = doc["meta"].get("runs")
    if runs is not None and not (isinstance(runs, list) and all(isinstance(r, dict) for r in runs)):
        bad("meta.runs", "a list of objects")
