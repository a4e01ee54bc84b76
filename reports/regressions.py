"""Compare two report documents cell by cell: what regressed, what improved, what came and went.

This is the logic of ``tokenlaw gate``; it works on report documents only, so any tier that writes verdicts
(fuzz, symbolic, kernels) is compared the same way, by cell id and by the
verdict's ``status`` and ``tier``.

Regression kinds (each names the cell, row or kernel it concerns):

``disappeared``
    a cell or row of the baseline is missing from the current report.
``unexpected-violation``
    a claimed contract is now violated (a new cell counts too).
``not-reproduced``
    an expected violation is no longer reproduced: by its row in any
    comparison, and by a single dtype's cell when both runs used the same
    seed and example budget (then the same inputs were drawn, so a lost
    reproduction is a change in the operator, not in the sample).
``proof-lost``
    a cell the baseline *proved* (symbolic tier) is now unknown, only holds
    on samples, or anything else short of proved.
``worse``
    any other move down the ranking proved < holds / expected violation <
    unknown < not runnable < failing (e.g. a cell that ran is now not
    runnable here).
``tolerance-grew``
    same seed and budget, a tolerance contract that still holds, and either
    (eager cells only, and only where both bounds come from the same
    example, ``extra.worst``: else a ``bound-moved`` note) the bound (its
    normwise part, ``extra.least_bound``, where both record it) grew by more than ``bound_growth`` (default
    2: the bound is the computation's own error against float64 on the same
    inputs, so it grows when the operator got less accurate; a factor 2
    leaves room for a reassociated sum or a fused multiply-add, which move a
    few-ULP error by less than that on the suite's small shapes) or the
    worst discrepancy/bound ratio passed ``ratio_alert`` (0.5) while at
    least doubling (the law now holds with less than half its margin).
    Another backend's bound is the eager operator's predicted error on the
    reported example, whatever the implementation computes: it moves only
    when the search reports another example (it is steered by
    discrepancy/bound, so a kernel whose errors changed draws and reports
    other examples), and says nothing about the kernel; its ratio does.
``kernel-not-rerun``
    a kernel's source hash differs from the baseline's and the current
    report has no cell of that kernel's operators run on a kernel backend.
``stale-report``
    the current report's recorded kernel hashes differ from the kernel
    files on disk now (its kernel cells predate the edit).

Both sides are :class:`~.document.Document` objects; the rules read their
typed rows (``Row.outcome``, ``verdict.outcome`` of a cell, the verdicts' evidence).  Several
reports (the eager run and a kernel backend's run) are compared as one:
:func:`.document.merge_runs` concatenates their rows, keeps each run's meta
under ``meta["runs"]`` and keys a row by ``id@backend`` for non-eager runs,
since a row id names the same (operator, contract) on every backend while its
cell ids differ.
"""
from __future__ import annotations

import dataclasses
import json
import types

from tokenlaw.properties import verdict as V

from .document import Document, key, merge_runs
from .meta import RunMeta

BOUND_GROWTH = 2.0
RATIO_ALERT = 0.5



@dataclasses.dataclass
class Change:
    """One difference between baseline and current: a regression, an improvement or a note."""

    kind: str
    id: str
    baseline: str = ""
    current: str = ""
    detail: str = ""

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Comparison:
    regressions: list
    improvements: list
    added: list
    notes: list

    def to_json(self) -> dict:
        return {k: [c.to_json() for c in getattr(self, k)] for k in ("regressions", "improvements", "added", "notes")}


def merge(docs: list[Document]) -> Document:
    """One document from several runs' reports (:func:`.document.merge_runs`)."""
    return merge_runs(docs)


def row_key(row, backend: str) -> str:
    """How the gate names a row across runs (:func:`.document.key`)."""
    return key(row, backend)


def _rows(doc: Document) -> dict:
    """{row key: (row, its run's backend)}."""
    return {row_key(r, b): (r, b) for r, b in zip(doc.rows, doc.row_backends())}


def _cells(doc: Document) -> dict:
    """{cell id: (row, cell, the row's run's backend)}."""
    return {c.id: (r, c, b) for r, b in zip(doc.rows, doc.row_backends()) for c in r.cells}


def _status(cell) -> str:
    return "not run" if cell.verdict is None else cell.verdict.status


def _outcome(row, cell) -> V.Outcome:
    return V.outcome(row.declared, cell.verdict)


def _describe(row, cell) -> str:
    tier = cell.verdict.tier if cell.verdict is not None else "?"
    return f"{_outcome(row, cell)} [{tier}]"


def _detail(cell) -> str:
    return cell.verdict.written_detail if cell.verdict is not None else ""


def _draws(run: RunMeta) -> tuple:
    """What decides the inputs a run drew.  ``draws`` (the Hypothesis version, and whether the constants it
    mines from local source were pinned out) is part of it: without the pin, an edit to any literal in a
    checkout changes what a seed draws, so such a run is never comparable, not even with itself.  So are
    the CPU code paths (``cpu_paths``: pinned or native, and the probe's digest), which decide the predicted
    bounds' last bits (``tokenlaw.process.cpu_paths``)."""
    if run.tier in (V.Tier.FUZZ, V.Tier.KERNEL) and "pinned out" not in str(run.environment.draws):
        return (object(),)
    s = run.settings           # its profile by today's name: an old report's `quick` is today's `ci`, comparable
    drawn = (getattr(s, "seed", None), getattr(s, "examples", None), getattr(s, "profile", None),
             run.environment.draws, run.environment.cpu_paths)
    return tuple(json.dumps(v, sort_keys=True) for v in drawn)


def comparable(base: list[RunMeta], cur: list[RunMeta]) -> dict:
    """{backend: True when both documents' runs (``Document.runs``: each run's meta) of that backend drew the
    same inputs}."""
    def by_backend(runs):
        out: dict[str, set] = {}
        for run in runs:
            out.setdefault(run.backend or "eager", set()).add(_draws(run))
        return out

    b, c = by_backend(base), by_backend(cur)
    return {k: b.get(k) == c.get(k) for k in set(b) | set(c)}


def compare(base: Document, cur: Document, *, bound_growth: float = BOUND_GROWTH,
            ratio_alert: float = RATIO_ALERT, disk_kernels: dict | None = None) -> Comparison:
    """Every regression, improvement, added cell and note from ``base`` to ``cur``.

    ``disk_kernels`` ({"kernels/x.py": sha256}) enables the stale-report check.
    """
    out = Comparison([], [], [], [])
    same = comparable(base.runs, cur.runs)
    for backend, ok in sorted(same.items()):
        if not ok:
            out.notes.append(Change("setup", backend, "", "", "a different seed/budget/Hypothesis/CPU paths, or draws not pinned "
                                    "(see draws and cpu_paths in the runs' meta), for this backend: "
                                    "per-dtype reproduction and tolerance checks skipped"))
    bcells, ccells = _cells(base), _cells(cur)
    brows, crows = _rows(base), _rows(cur)
    for k, (r, _) in brows.items():
        if k not in crows:
            out.regressions.append(Change("disappeared", k, r.outcome, "missing", "row no longer in the report"))
    for k, (r, _) in crows.items():
        b = brows.get(k, (None,))[0]
        if r.outcome == V.Outcome.NOT_REPRODUCED and (b is None or b.outcome != V.Outcome.NOT_REPRODUCED):
            out.regressions.append(Change("not-reproduced", k, b.outcome if b else "new row", r.outcome,
                                          f"expected violation of {r.contract} reproduced in no dtype"))
    for cid, (br, bc, bb) in bcells.items():
        if cid not in ccells:
            if row_key(br, bb) in crows:
                out.regressions.append(Change("disappeared", cid, _describe(br, bc), "missing",
                                              "cell no longer in the report"))
            continue
        cr, cc, cb = ccells[cid]
        _compare_cell(out, cid, br, bc, cr, cc, same.get(cb, False), cur.law(cr.contract)[1],
                      bound_growth, ratio_alert)
    for cid, (cr, cc, _) in ccells.items():
        if cid in bcells:
            continue
        out.added.append(Change("added", cid, "", _describe(cr, cc)))
        if _outcome(cr, cc) == V.Outcome.UNEXPECTED:
            out.regressions.append(Change("unexpected-violation", cid, "new cell", _describe(cr, cc), _detail(cc)))
    _kernels(out, base, cur, disk_kernels)
    return out


def _same_example(bv: V.Verdict, cv: V.Verdict) -> bool | None:
    """Whether two cells report their bounds from the same example (``evidence.worst``, a digest of its drawn
    choices); None where either does not record it (an older report).

    The search is steered by discrepancy / bound (``hypothesis.target``), so at one seed two CPUs (or a
    reassociated sum) can send it to other examples: their bounds are two different inputs' errors."""
    b, c = (getattr(v.evidence, "worst", None) for v in (bv, cv))
    return b == c if b is not None and c is not None else None


def _bound(bv: dict, cv: dict) -> tuple[str, float, float]:
    """(what, baseline, current): the smallest bound of any entry of the reported example where both record it
    (``extra.least_bound``: the bound's normwise part, the same wherever the worst ratio sits), else the
    bound at the worst entry.  The latter moves with which entry that is: two CPUs reported 4.8e-14 and
    1.2e-12 from two entries of one example (a near-zero entry carries a relative floor)."""
    be, ce = bv.extra, cv.extra
    if "least_bound" in be and "least_bound" in ce:
        return "least bound", _num(be["least_bound"]), _num(ce["least_bound"])
    return "bound", _num(bv.bound), _num(cv.bound)


def _compare_cell(out, cid, br, bc, cr, cc, same_draws, exact, bound_growth, ratio_alert):
    bo, co = _outcome(br, bc), _outcome(cr, cc)
    bs, cs = _status(bc), _status(cc)
    was, now = _describe(br, bc), _describe(cr, cc)
    if co == V.Outcome.UNEXPECTED and bo != V.Outcome.UNEXPECTED:
        out.regressions.append(Change("unexpected-violation", cid, was, now, _detail(cc)))
        return
    if bs == V.Status.PROVED and cs != V.Status.PROVED:
        out.regressions.append(Change("proof-lost", cid, was, now,
                                      f"was proved, now {cs}" + (f": {_detail(cc)}" if _detail(cc) else "")))
        return
    if bo == V.Outcome.EXPECTED and co != V.Outcome.EXPECTED:
        if co == V.Outcome.NOT_REPRODUCED and not same_draws:
            return   # another sample may simply miss it; the row-level check still applies
        if co == V.Outcome.NOT_REPRODUCED:
            out.regressions.append(Change("not-reproduced", cid, was, now,
                                          f"same inputs no longer violate {cr.contract} in {cc.dtype}"))
            return
    if V.Outcome(co).severity > V.Outcome(bo).severity:
        if co == V.Outcome.NOT_REPRODUCED and cr.outcome != V.Outcome.NOT_REPRODUCED and not same_draws:
            return
        out.regressions.append(Change("worse", cid, was, now, _detail(cc)))
        return
    if V.Outcome(co).severity < V.Outcome(bo).severity:
        out.improvements.append(Change("better", cid, was, now))
        return
    if same_draws and not exact and cs == V.Status.HOLDS and bs == V.Status.HOLDS:
        _tolerance(out, cid, bc.verdict, cc.verdict, bound_growth if cc.backend == "eager" else None, ratio_alert)


def _num(x) -> float:
    return float(x) if isinstance(x, (int, float)) else float(str(x))   # "nan" / "inf" strings


def _rejudged(bv: V.Verdict, cv: V.Verdict):
    """The baseline's worst example judged again in the current run (``extra.baseline_worst``, written by
    :func:`tokenlaw.orchestration.gate.rejudge_worst` where the re-run reported another example), as a verdict
    on that example (bound, discrepancy, extra.least_bound, violated, detail), or None."""
    worst = getattr(bv.evidence, "worst", None)
    again = (cv.extra or {}).get("baseline_worst")
    if not again or worst is None or again.get("worst") != worst:
        return None
    return types.SimpleNamespace(bound=again["bound"], discrepancy=again["discrepancy"],
                                 extra={"least_bound": again["least_bound"]} if "least_bound" in again else {},
                                 violated=again.get("violated", False), detail=again.get("detail", ""))


def _tolerance(out, cid, bv, cv, bound_growth, ratio_alert):
    """bound_growth None: the bound is not the implementation's own (a non-reference backend's cell)."""
    again = _rejudged(bv, cv)
    if again is not None:
        if again.violated:
            out.regressions.append(Change("tolerance-grew", cid, "holds on its worst example",
                                          "violated there now", "the baseline's worst example, judged again "
                                          f"in this run, violates the law: {again.detail}"))
            return
        if bound_growth is not None:
            what, b0, b1 = _bound(bv, again)
            if b0 > 0 and b1 > bound_growth * b0:
                out.regressions.append(Change("tolerance-grew", cid, f"{what} {b0:.3g}", f"{what} {b1:.3g}",
                                              f"{what} grew x{b1 / b0:.3g} (> x{bound_growth:g}) on the baseline's "
                                              "worst example, judged again in this run"))
                return
    what, b0, b1 = _bound(bv, cv)
    r0, r1 = bv.ratio, cv.ratio
    same = _same_example(bv, cv)
    if bound_growth is not None and b0 > 0 and b1 > bound_growth * b0:
        if same is False:
            out.notes.append(Change("bound-moved", cid, f"{what} {b0:.3g}", f"{what} {b1:.3g}",
                                    "reported from another example than the baseline's (extra.worst: the search "
                                    "is steered by discrepancy / bound), so the bounds are not compared; the "
                                    "ratio still is"))
        else:
            on = "on the same example" if same else "at the same seed and budget"
            out.regressions.append(Change("tolerance-grew", cid, f"{what} {b0:.3g}", f"{what} {b1:.3g}",
                                          f"{what} grew x{b1 / b0:.3g} (> x{bound_growth:g}) {on}"))
            return
    if r1 > ratio_alert and r1 > 2 * r0:
        out.regressions.append(Change("tolerance-grew", cid, f"ratio {r0:.3g}", f"ratio {r1:.3g}",
                                      f"worst discrepancy/bound passed {ratio_alert:g} and at least doubled"))


def _sources(doc) -> dict | None:
    """The kernel hashes a document recorded (its first run that recorded any)."""
    for run in doc.runs:
        if run.provenance.kernel_sources is not None:
            return run.provenance.kernel_sources
    return None


def _kernels(out, base, cur, disk):
    if disk is not None:
        for run in cur.runs:
            recorded = run.provenance.kernel_sources
            if recorded is None:
                continue
            for f in sorted(set(disk) | set(recorded)):
                if disk.get(f) != recorded.get(f):
                    out.regressions.append(Change(
                        "stale-report", f"{f}@{run.backend or 'eager'}", _short(recorded.get(f)),
                        _short(disk.get(f)), "kernel source changed after this report was made: re-run it"))
    bsrc, csrc = _sources(base), _sources(cur)
    if bsrc is None or csrc is None:
        out.notes.append(Change("kernels", "meta", "", "", "a report has no kernel hashes: kernel check skipped"))
        return
    changed = sorted(f for f in set(bsrc) | set(csrc) if bsrc.get(f) != csrc.get(f))
    if not changed:
        return
    kernels = {}
    for doc in (base, cur):
        for run in doc.runs:
            kernels.update(run.provenance.kernels or {})
    own = {k["source"] for k in kernels.values() if k.get("source")}
    shared = [f for f in changed if f not in own]     # helpers any kernel may use
    for name, k in sorted(kernels.items()):
        src = k.get("source")
        hit = ([src] if src in changed else []) + shared if src else changed
        if not hit:
            continue
        ops = set(k.get("operators", ()))
        rerun = [c for r in cur.rows if r.operator in ops for c in r.cells
                 if c.backend != "eager" and c.verdict is not None and c.verdict.status != V.Status.NOT_RUNNABLE]
        if not rerun:
            out.regressions.append(Change(
                "kernel-not-rerun", name, _short(bsrc.get(hit[0])), _short(csrc.get(hit[0])),
                f"{', '.join(hit)} changed but no cell of {sorted(ops)} ran on a kernel backend; re-run the "
                f"backend that binds {name} (`tokenlaw check --backend NAME --out reports`, with the environment "
                f"its report's run recorded under env), then `tokenlaw gate --current reports/conformance.json "
                f"reports/conformance-NAME.json`"))
    if not kernels:
        out.notes.append(Change("kernels", ", ".join(changed), "", "", "changed; no operator declares a kernel"))


def _short(sha) -> str:
    return "absent" if not sha else sha[:12]
