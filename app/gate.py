"""``tokenlaw gate``: fail a change that makes any cell worse than the committed baseline.

Thin command over :mod:`tokenlaw.reports.regressions` (the rules) and
:mod:`tokenlaw.reports.known_failures`.  Without ``--current`` it re-runs
every run the baseline records (``meta.runs``: e.g. the eager run and a
Triton run) through the library entry points ``orchestration.runs.check`` /
``orchestration.runs.prove``, each with the settings that run recorded (scope,
backend, profile, example budget, seed), so both sides drew the same inputs.
A run that recorded ``env`` (the variables its backend declares it depends
on: ``TRITON_INTERPRET=1`` for a Triton interpreter run) gets the same
environment: the gate sets a recorded variable that is unset here before
anything imports the backend, and refuses, naming what to set, when it
cannot (``orchestration.environment.prepare_env``).

Exit codes: 0 no regression (or the baseline was updated); 1 at least one
regression not covered by a live known-failure entry, or an expired entry;
2 bad arguments (missing baseline, malformed known-failures file).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import sys
from pathlib import Path


from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.orchestration import environment, gate, provenance, runs
from tokenlaw.process import command_line
from tokenlaw.reports import document, formats, known_failures, writers

from . import stopped
from .progress import Progress

from .exits import EXIT_FAIL, EXIT_OK, EXIT_USAGE  # noqa: F401


def _run_checks(args, base: document.Document | None, planned: list) -> document.Document:
    """Re-run every run the baseline records (``planned``: their settings objects, scope included) through the
    library entry points."""
    for line in environment.prepare_env(base.runs if base else []):
        _say(args, f"tokenlaw gate: set {line} for the re-run, as the baseline's run recorded it")
    docs = []
    for settings in planned:
        _say(args, f"tokenlaw gate: re-running the {settings.label} run ({_describe(settings)})")
        try:
            doc = settings.run(progress=not args.json, stream=Progress())
        except runs.Interrupted as stop:
            # Ctrl-C (issue 47): the re-run's report of what it judged, marked interrupted; no verdict against
            # the baseline (a cut run is no comparison) and the baseline is never updated from it: 130
            raise _Stopped(stopped.report(args, [(stop.doc, settings.write)])) from None
        if base is not None:    # the baseline's worst examples judged again where the re-run's moved
            gate.rejudge_worst(base, doc, [settings])
        settings.write(doc)
        docs.append(doc)
    return document.merge_runs(docs)


class _Stopped(Exception):
    """The gate's re-run was interrupted and its report written: ``code`` is the exit code to return."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def _describe(settings) -> str:
    """The settings that differ from their defaults, e.g. 'backend=triton, profile=smoke, examples=10'."""
    return ", ".join(f"{f.name}={getattr(settings, f.name)}" for f in dataclasses.fields(settings)
                     if getattr(settings, f.name) != f.default)


def _say(args, text) -> None:
    if not args.json:
        print(text, file=sys.stderr, flush=True)


def _entries_match(entries, docs, path, planned=frozenset()) -> None:
    """A known-failures entry that matches no row or cell (of the documents, or ``planned`` ids) is a typo,
    not a silent no-op."""
    ids = {r.id for d in docs for r in d.rows} | {c.id for d in docs for c in d.cells} | set(planned)
    for e in entries:
        if not any(e.matches(i) for i in ids):
            raise command_line.closest(e.id, ids, f"{path}:{e.line}")


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
    exists = base_path.exists() or not args.update_baseline
    base = document.load(base_path, "--baseline") if exists else None
    entries = known_failures.load(args.known_failures)
    if args.current:
        cur = document.merge_runs([document.load(path, "--current") for path in args.current])
    else:
        planned = gate.baseline_settings(base, out=args.out, workers=getattr(args, "workers", 1),
                                         operator_modules=getattr(args, "operators_module", None))
        # a typo in the known-failures file is said before the re-run (minutes), not after it
        _entries_match(entries, [base] if base else [], args.known_failures, gate.planned_ids(planned))
        try:
            cur = _run_checks(args, base, planned)
        except _Stopped as stop:
            return stop.code
    _entries_match(entries, [d for d in (base, cur) if d], args.known_failures)
    disk = provenance.sources() if args.current else None
    result = gate.judge(base, cur, entries=entries, today=_today(args), bound_growth=args.bound_growth,
                        known_failures_path=args.known_failures, disk_kernels=disk)
    cmp, live, known, ok = result.comparison, result.live, result.known, result.ok
    if args.update_baseline:
        writers.atomic_write(base_path, formats.render(cur, "json"))
        return _report_update(args, base_path, cmp, new=base is None)
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
