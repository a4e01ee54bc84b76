"""``tokenlaw gate``: fail a change that makes any cell worse than the committed baseline.

Thin command over :mod:`.regressions` (the rules) and :mod:`.known_failures`.
Without ``--current`` it runs ``tokenlaw check`` itself with the baseline's
profile, example budget and seed, so the two reports drew the same inputs.

Exit codes: 0 no regression (or the baseline was updated); 1 at least one
regression not covered by a live known-failure entry, or an expired entry;
2 bad arguments (missing baseline, malformed known-failures file).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import json
import sys
from pathlib import Path

from tokenlaw.operators import arguments
from tokenlaw.operators.errors import InvalidArgument

from tokenlaw.reports import known_failures, provenance, regressions, writers

from .exits import EXIT_FAIL, EXIT_OK, EXIT_USAGE  # noqa: F401


def register(sub):
    sp = sub.add_parser("gate", help="compare a run with reports/baseline.json; exit 1 on any regression",
                        description=__doc__.split("\n\n")[0],
                        epilog="exit codes: 0 no regression / baseline updated, 1 regression or expired known "
                               "failure, 2 bad arguments")
    sp.add_argument("--baseline", default="reports/baseline.json", help="committed baseline report")
    sp.add_argument("--current", action="append", metavar="REPORT",
                    help="report to judge, repeatable (e.g. the eager and a kernel backend's report); "
                         "default: run `tokenlaw check` for every run of the baseline, with its settings")
    sp.add_argument("--out", default="reports", help="where the run writes its reports (default: ./reports)")
    sp.add_argument("--update-baseline", action="store_true", help="rewrite the baseline from the current run "
                                                                   "and print the diff")
    sp.add_argument("--known-failures", default="reports/known_failures.txt",
                    help="plain-text file: cell-id  YYYY-MM-DD  reason (missing file: none)")
    sp.add_argument("--bound-growth", type=float, default=regressions.BOUND_GROWTH,
                    help="a tolerance bound growing by more than this factor is a regression (default 2)")
    # For tests of expiry only: the date taken as today (YYYY-MM-DD).
    sp.add_argument("--today", help=argparse.SUPPRESS, default=None)
    sp.add_argument("--json", action="store_true", help="machine-readable result on stdout")
    sp.set_defaults(func=cmd_gate)


def _load(path, what) -> dict:
    path = Path(path)
    if not path.exists():
        hint = " (create one with `tokenlaw gate --update-baseline`)" if what == "--baseline" else ""
        raise InvalidArgument(f"{what}: no such report {str(path)!r}{hint}")
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise InvalidArgument(f"{what}: {str(path)!r} is not JSON: {err}") from None
    if not isinstance(doc, dict) or "rows" not in doc or "meta" not in doc:
        raise InvalidArgument(f"{what}: {str(path)!r} is not a tokenlaw report (no rows/meta)")
    _structure(doc, what, path)
    if doc.get("schema", 1) > writers.SCHEMA_VERSION:
        raise InvalidArgument(f"{what}: schema {doc['schema']} is newer than this tokenlaw "
                              f"({writers.SCHEMA_VERSION})")
    return doc


def _structure(doc: dict, what: str, path) -> None:
    """Valid JSON of the wrong shape is refused here, naming the first bad field, not deep inside the comparison."""
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
        for key in ("id", "operator", "contract"):
            if not isinstance(row.get(key), str):
                bad(f"rows[{i}].{key}", "a string")
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


def _run_checks(args, base: dict | None) -> dict:
    """Run `tokenlaw check` in-process once per run of the baseline, with its settings and scope."""
    runs = regressions.normalise(base)["meta"]["runs"] if base else [{}]
    return regressions.merge([_run_check(args, run) for run in runs])


def _run_check(args, meta: dict) -> dict:
    from .cli import build_parser

    scope = meta.get("scope") or {}
    argv = []
    for m in getattr(args, "operators_module", None) or scope.get("operator_modules") or ():
        argv += ["--operators", m]
    argv += ["check", "--out", args.out, "--json", "--progress", "off" if args.json else "on",
             "--profile", meta.get("profile", "smoke"),
             "--seed", str(meta.get("seed", 0))]
    if meta.get("examples"):
        argv += ["--examples", str(meta["examples"])]
    for flag, key in (("--operator", "operators"), ("--contract", "contracts"), ("--dtype", "dtypes")):
        for v in scope.get(key) or ():
            argv += [flag, v]
    backend = meta.get("backend") or "eager"
    if backend != "eager":
        argv += ["--backend", backend]
    try:
        check = build_parser().parse_args(argv)
    except SystemExit:
        raise InvalidArgument(f"--baseline: cannot re-run its {backend!r} run with this tokenlaw "
                              f"(`tokenlaw {' '.join(argv)}` is refused)") from None
    if not args.json:
        print(f"tokenlaw gate: running `tokenlaw {' '.join(argv)}`", file=sys.stderr, flush=True)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        check.func(check)   # exit status ignored: the gate judges against the baseline, not declarations
    report = json.loads(buf.getvalue()).get("report") or str(Path(args.out) / "conformance.json")
    return _load(report, "--current")


def _entries_match(entries, docs, path) -> None:
    """A known-failures entry that matches no row or cell is a typo, not a silent no-op."""
    ids = {r["id"] for d in docs for r in d["rows"]} | {c["id"] for d in docs for r in d["rows"] for c in r["cells"]}
    for e in entries:
        if not any(e.matches(i) for i in ids):
            raise arguments.closest(e.id, ids, f"{path}:{e.line}")


def _today(args) -> dt.date:
    if args.today:
        try:
            return dt.date.fromisoformat(args.today)
        except ValueError:
            raise InvalidArgument(f"--today: expected YYYY-MM-DD, got {args.today!r}") from None
    return dt.datetime.now(dt.timezone.utc).date()


def cmd_gate(args) -> int:
    if args.bound_growth <= 1:
        raise InvalidArgument(f"--bound-growth: expected a factor > 1, got {args.bound_growth}")
    base_path = Path(args.baseline)
    base = _load(base_path, "--baseline") if (base_path.exists() or not args.update_baseline) else None
    entries = known_failures.load(args.known_failures)
    if args.current:
        cur = regressions.merge([_load(path, "--current") for path in args.current])
    else:
        cur = _run_checks(args, base)
    _entries_match(entries, [d for d in (base, cur) if d], args.known_failures)
    disk = provenance.kernel_sources() if args.current else None
    empty = {"meta": {"runs": cur["meta"]["runs"]}, "rows": []}
    cmp = regressions.compare(base or empty, cur, bound_growth=args.bound_growth, disk_kernels=disk)
    if args.update_baseline:
        writers.atomic_write(base_path, json.dumps(writers.stable(cur), indent=1) + "\n")
        return _report_update(args, base_path, cmp, new=base is None)
    today = _today(args)
    live, known = [], []
    for change in cmp.regressions:
        entry = next((e for e in entries if e.matches(change.id) and not e.expired(today)), None)
        (known if entry else live).append((change, entry))
    for e in entries:
        if e.expired(today):
            live.append((regressions.Change("known-failure-expired", e.id, f"expires {e.expires}",
                                            f"today {today}", f"{args.known_failures}:{e.line}: {e.reason}"), e))
    ok = not live
    if args.json:
        print(json.dumps({"result": "PASS" if ok else "FAIL", "baseline": str(base_path),
                          "current": args.current or "(run by the gate)",
                          "regressions": [c.to_json() for c, _ in live],
                          "known": [dict(c.to_json(), reason=e.reason, expires=str(e.expires)) for c, e in known],
                          "improvements": [c.to_json() for c in cmp.improvements],
                          "added": [c.to_json() for c in cmp.added],
                          "notes": [c.to_json() for c in cmp.notes]}, indent=1))
        return EXIT_OK if ok else EXIT_FAIL
    if live:
        print(f"tokenlaw gate: FAIL - {len(live)} regression(s) against {base_path}\n")
        print(table([c for c, _ in live]))
    if known:
        print(f"\n{len(known)} known failure(s), not counted:")
        print(table([c for c, _ in known]))
    for n in cmp.notes:
        print(f"note: {n.id}: {n.detail}")
    if ok:
        print(f"tokenlaw gate: PASS - no regression against {base_path} "
              f"({len(cmp.improvements)} improved, {len(cmp.added)} new cells, {len(known)} known)")
    return EXIT_OK if ok else EXIT_FAIL


def _report_update(args, path, cmp, new) -> int:
    changes = [*cmp.regressions, *cmp.improvements, *cmp.added]
    if args.json:
        print(json.dumps({"result": "UPDATED", "baseline": str(path), "new": new, **cmp.to_json()}, indent=1))
        return EXIT_OK
    if new:
        print(f"tokenlaw gate: wrote a new baseline {path}")
        return EXIT_OK
    print(f"tokenlaw gate: baseline {path} updated; {len(changes)} change(s):\n")
    if changes:
        print(table(changes))
    return EXIT_OK


def table(changes) -> str:
    """A fixed-width table: kind | cell | baseline | current | detail."""
    head = ("kind", "cell", "baseline", "current", "detail")
    rows = [(c.kind, c.id, c.baseline, c.current, c.detail) for c in changes]
    widths = [min(60, max(len(str(r[i])) for r in [head, *rows])) for i in range(4)]
    lines = []
    for r in [head, tuple("-" * w for w in widths) + ("------",), *rows]:
        lines.append("  ".join(str(v).ljust(w) for v, w in zip(r[:4], widths)) + "  " + str(r[4]))
    return "\n".join(lines)
