"""Compare two report documents cell by cell: what regressed, what improved, what came and went.

This is the logic of ``tokenlaw gate``; it works on the JSON documents of
:mod:`tokenlaw.reports.writers` only, so any tier that writes verdicts
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
    the bound grew by more than ``bound_growth`` (default 2: the bound is the
    computation's own error against float64 on the same inputs, so it grows
    when the operator got less accurate; a factor 2 leaves room for a
    reassociated sum or a fused multiply-add, which move a few-ULP error by
    less than that on the suite's small shapes) or the worst
    discrepancy/bound ratio passed ``ratio_alert`` (0.5) while at least
    doubling (the law now holds with less than half its margin).
``kernel-not-rerun``
    a kernel's source hash differs from the baseline's and the current
    report has no cell of that kernel's operators run on a kernel backend.
``stale-report``
    the current report's recorded kernel hashes differ from the kernel
    files on disk now (its kernel cells predate the edit).
"""
from __future__ import annotations

import dataclasses

from tokenlaw.properties import verdict as V

from .writers import ratio

BOUND_GROWTH = 2.0
RATIO_ALERT = 0.5

RANK = {V.OK_PROVED: 0, V.OK_HOLDS: 1, V.OK_EXPECTED: 1, V.OUT_UNKNOWN: 2, V.OUT_NOT_RUNNABLE: 3,
        V.NOT_APPLICABLE: 3, V.BAD_NOT_REPRODUCED: 4, V.BAD_UNEXPECTED: 5}


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


def _cells(doc) -> dict:
    return {c["id"]: (r, c) for r in doc["rows"] for c in r["cells"]}


def _outcome(row, cell) -> str:
    if cell.get("outcome"):
        return cell["outcome"]
    v = cell.get("verdict")
    return V.outcome(row["declared"], None if v is None else V.Verdict(v["status"]))


def _status(cell) -> str:
    v = cell.get("verdict")
    return "not run" if v is None else v["status"]


def _describe(row, cell) -> str:
    v = cell.get("verdict") or {}
    tier = v.get("tier", "?")
    return f"{_outcome(row, cell)} [{tier}]"


def comparable(base: dict, cur: dict) -> bool:
    """Same seed and example budget: both runs drew the same inputs."""
    keys = ("seed", "examples", "profile")
    return all(base["meta"].get(k) == cur["meta"].get(k) for k in keys)


def compare(base: dict, cur: dict, *, bound_growth: float = BOUND_GROWTH, ratio_alert: float = RATIO_ALERT,
            disk_kernels: dict | None = None) -> Comparison:
    """Every regression, improvement, added cell and note from ``base`` to ``cur``.

    ``disk_kernels`` ({"kernels/x.py": sha256}) enables the stale-report check.
    """
    out = Comparison([], [], [], [])
    same_draws = comparable(base, cur)
    if not same_draws:
        out.notes.append(Change("setup", "meta", _setup(base), _setup(cur),
                                "different seed/budget: per-dtype reproduction and tolerance checks skipped"))
    bcells, ccells = _cells(base), _cells(cur)
    brows = {r["id"]: r for r in base["rows"]}
    crows = {r["id"]: r for r in cur["rows"]}
    for rid, r in brows.items():
        if rid not in crows:
            out.regressions.append(Change("disappeared", rid, r["outcome"], "missing", "row no longer in the report"))
    for rid, r in crows.items():
        b = brows.get(rid)
        if r["outcome"] == V.BAD_NOT_REPRODUCED and (b is None or b["outcome"] != V.BAD_NOT_REPRODUCED):
            out.regressions.append(Change("not-reproduced", rid, b["outcome"] if b else "new row", r["outcome"],
                                          f"expected violation of {r['contract']} reproduced in no dtype"))
    for cid, (br, bc) in bcells.items():
        if cid not in ccells:
            if br["id"] in crows:
                out.regressions.append(Change("disappeared", cid, _describe(br, bc), "missing",
                                              "cell no longer in the report"))
            continue
        cr, cc = ccells[cid]
        _compare_cell(out, cid, br, bc, cr, cc, same_draws, bound_growth, ratio_alert)
    for cid, (cr, cc) in ccells.items():
        if cid in bcells:
            continue
        out.added.append(Change("added", cid, "", _describe(cr, cc)))
        if _outcome(cr, cc) == V.BAD_UNEXPECTED:
            out.regressions.append(Change("unexpected-violation", cid, "new cell", _describe(cr, cc),
                                          (cc.get("verdict") or {}).get("detail", "")))
    _kernels(out, base, cur, disk_kernels)
    return out


def _setup(doc) -> str:
    m = doc["meta"]
    return f"profile={m.get('profile')} examples={m.get('examples')} seed={m.get('seed')}"


def _compare_cell(out, cid, br, bc, cr, cc, same_draws, bound_growth, ratio_alert):
    bo, co = _outcome(br, bc), _outcome(cr, cc)
    bs, cs = _status(bc), _status(cc)
    bv, cv = bc.get("verdict") or {}, cc.get("verdict") or {}
    was, now = _describe(br, bc), _describe(cr, cc)
    if co == V.BAD_UNEXPECTED and bo != V.BAD_UNEXPECTED:
        out.regressions.append(Change("unexpected-violation", cid, was, now, cv.get("detail", "")))
        return
    if bs == V.PROVED and cs != V.PROVED:
        out.regressions.append(Change("proof-lost", cid, was, now,
                                      f"was proved, now {cs}" + (f": {cv.get('detail')}" if cv.get("detail") else "")))
        return
    if bo == V.OK_EXPECTED and co != V.OK_EXPECTED:
        if co == V.BAD_NOT_REPRODUCED and not same_draws:
            return   # another sample may simply miss it; the row-level check still applies
        if co == V.BAD_NOT_REPRODUCED:
            out.regressions.append(Change("not-reproduced", cid, was, now,
                                          f"same inputs no longer violate {cr['contract']} in {cc['dtype']}"))
            return
    if RANK[co] > RANK[bo]:
        if co == V.BAD_NOT_REPRODUCED and cr["outcome"] != V.BAD_NOT_REPRODUCED and not same_draws:
            return
        out.regressions.append(Change("worse", cid, was, now, cv.get("detail", "")))
        return
    if RANK[co] < RANK[bo]:
        out.improvements.append(Change("better", cid, was, now))
        return
    if same_draws and not cr["exact"] and cs == V.HOLDS and bs == V.HOLDS:
        _tolerance(out, cid, bv, cv, bound_growth, ratio_alert)


def _num(x) -> float:
    return float(x) if isinstance(x, (int, float)) else float(str(x))


def _tolerance(out, cid, bv, cv, bound_growth, ratio_alert):
    b0, b1 = _num(bv.get("bound", 0.0)), _num(cv.get("bound", 0.0))
    r0, r1 = ratio(bv), ratio(cv)
    if b0 > 0 and b1 > bound_growth * b0:
        out.regressions.append(Change("tolerance-grew", cid, f"bound {b0:.3g}", f"bound {b1:.3g}",
                                      f"bound grew x{b1 / b0:.3g} (> x{bound_growth:g}) on the same inputs"))
    elif r1 > ratio_alert and r1 > 2 * r0:
        out.regressions.append(Change("tolerance-grew", cid, f"ratio {r0:.3g}", f"ratio {r1:.3g}",
                                      f"worst discrepancy/bound passed {ratio_alert:g} and at least doubled"))


def _kernels(out, base, cur, disk):
    bsrc, csrc = base["meta"].get("kernel_sources"), cur["meta"].get("kernel_sources")
    if disk is not None and csrc is not None:
        for f in sorted(set(disk) | set(csrc)):
            if disk.get(f) != csrc.get(f):
                out.regressions.append(Change("stale-report", f, _short(csrc.get(f)), _short(disk.get(f)),
                                              "kernel source changed after the current report was made: re-run"))
    if bsrc is None or csrc is None:
        out.notes.append(Change("kernels", "meta", "", "", "a report has no kernel hashes: kernel check skipped"))
        return
    changed = sorted(f for f in set(bsrc) | set(csrc) if bsrc.get(f) != csrc.get(f))
    if not changed:
        return
    kernels = {**base["meta"].get("kernels", {}), **cur["meta"].get("kernels", {})}
    mapped = set()
    for name, k in sorted(kernels.items()):
        src = k.get("source")
        hit = [src] if src in changed else ([] if src else changed)   # unmapped kernel: any file may be it
        if not hit:
            continue
        mapped.update(hit)
        ops = set(k.get("operators", ()))
        rerun = [c for r in cur["rows"] if r["operator"] in ops for c in r["cells"]
                 if c["backend"] != "eager" and c.get("verdict") and c["verdict"]["status"] != V.NOT_RUNNABLE]
        if not rerun:
            out.regressions.append(Change(
                "kernel-not-rerun", name, _short(bsrc.get(hit[0])), _short(csrc.get(hit[0])),
                f"{', '.join(hit)} changed but no cell of {sorted(ops)} ran on a kernel backend"))
    for f in changed:
        if f not in mapped:
            out.notes.append(Change("kernels", f, _short(bsrc.get(f)), _short(csrc.get(f)),
                                    "changed; no declared kernel lives in it"))


def _short(sha) -> str:
    return "absent" if not sha else sha[:12]
