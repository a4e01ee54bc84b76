"""The gate as a library call, beside ``check()`` and ``prove()``: re-run what a baseline recorded and compare.

:func:`recorded_settings` turns each run a baseline records (``meta.runs``, read
once at the JSON edge as :class:`~tokenlaw.reports.meta.RunMeta`: the tier as a
:class:`~tokenlaw.properties.verdict.Tier`, the settings object itself); each settings object re-runs itself
(``settings.run()``: ``check`` or ``prove``); :func:`gate` compares a current document (given, or
re-run) with the baseline under the known failures and returns a
:class:`GateResult`.  Nothing is written: ``tokenlaw gate`` writes the re-runs'
reports and maps the result to an exit code (``app/gate.py``).

>>> import json, tokenlaw                                       # doctest: +SKIP
>>> baseline = tokenlaw.Document.from_json(json.load(open("reports/baseline.json")))
>>> result = tokenlaw.gate(baseline, out="/tmp/gate")
>>> result.ok, [change.id for change, _ in result.live]
"""
from __future__ import annotations

import dataclasses
import datetime as dt

from tokenlaw.errors import InvalidArgument
from tokenlaw.properties import verdict as V
from tokenlaw.properties.case import Case
from tokenlaw.properties.plan import contracts_of, plan
from tokenlaw.properties.verdict import Tier
from tokenlaw.reports import document, regressions
from tokenlaw.reports.meta import Meta, RunMeta

from . import environment, provenance, runs

def recorded_settings(run: RunMeta | None, **overrides) -> runs.CheckSettings | runs.ProveSettings:
    """The settings object of one run a report records (scope, backend, budget, seed; None: a default check
    run), then ``overrides``: the run's typed record (:class:`~tokenlaw.reports.meta.RunMeta`, read at the JSON
    edge) as its tier's runnable settings type.  Each object re-runs itself (``settings.run()``) and writes its
    reports (``settings.write(doc)``)."""
    if run is None:
        return runs.CheckSettings.from_run({}, **overrides)
    return runs.runnable(run, **overrides)


@dataclasses.dataclass(frozen=True)
class GateResult:
    """What the gate decided: the comparison, the regressions that count (``live``, each with the expired
    known-failure entry that made it, or None) and those a live known-failure entry covers (``known``)."""

    comparison: regressions.Comparison
    live: tuple = ()
    known: tuple = ()
    current: document.Document | None = None

    @property
    def ok(self) -> bool:
        return not self.live


def baseline_settings(base: document.Document | None, *, out: str, workers: int = 1,
                      operator_modules=None) -> list:
    """The settings objects of every run ``base`` records (a missing baseline: one default check run).  With
    the user's ``operator_modules``, a run that recorded no operator scope is scoped to their operators, as
    ``check`` scopes it (issue 47: ``tokenlaw --operators M gate --update-baseline`` re-ran and recorded every
    built-in cell); a recorded scope is kept."""
    overrides = {"operator_modules": operator_modules} if operator_modules else {}
    settings = []
    for run in (base.runs if base else [None]):
        scoped = dict(overrides)
        if operator_modules and not (run is not None and run.settings.operators):
            scoped["operators"] = runs.user_operators(operator_modules)
        settings.append(recorded_settings(run, out=out, workers=workers, **scoped))
    return settings


def planned_ids(settings: list) -> set:
    """The row and cell ids re-running ``settings`` will report, from the plan alone (nothing runs)."""
    ids = set()
    for s in settings:
        reg = runs.mutated(runs.registry(s.operator_modules), getattr(s, "mutant", None))
        symbolic = s.tier is Tier.SYMBOLIC
        rows = plan(reg, operators=s.operators, contracts=s.contracts, dtypes=None if symbolic else s.dtypes,
                    backend="eager" if symbolic else s.backend)
        for row in rows:
            ids.add(row.id)
            ids |= {f"{row.id}-symbolic-real"} if symbolic else {c.id for c in row.cells}
    return ids


def judge(base: document.Document | None, cur: document.Document, *, entries=(), today: dt.date | None = None,
          bound_growth: float = regressions.BOUND_GROWTH, known_failures_path: str = "", disk_kernels=None
          ) -> GateResult:
    """Compare ``cur`` with ``base`` (None: an empty baseline) under the known-failure ``entries``."""
    if bound_growth <= 1:
        raise InvalidArgument(f"--bound-growth: expected a factor > 1, got {bound_growth}")
    empty = document.Document([], Meta(runs=tuple(cur.runs)), backends=[])
    cmp = regressions.compare(base or empty, cur, bound_growth=bound_growth, disk_kernels=disk_kernels)
    today = today or dt.datetime.now(dt.timezone.utc).date()
    live, known = [], []
    for change in cmp.regressions:
        entry = next((e for e in entries if e.matches(change.id) and not e.expired(today)), None)
        (known if entry else live).append((change, entry))
    for e in entries:
        if e.expired(today):
            live.append((regressions.Change("known-failure-expired", e.id, f"expires {e.expires}",
                                            f"today {today}", f"{known_failures_path}:{e.line}: {e.reason}"), e))
    return GateResult(cmp, tuple(live), tuple(known), cur)


def gate(baseline: document.Document | None, current: document.Document | None = None, *, entries=(),
         today: dt.date | None = None, bound_growth: float = regressions.BOUND_GROWTH, out: str = "reports",
         workers: int = 1, operator_modules=None) -> GateResult:
    """``tokenlaw gate`` without the command line: re-run every run ``baseline`` records with its settings
    (unless ``current`` is given) and judge the result against it.  Writes nothing but the re-runs' replays."""
    if current is None:
        environment.prepare_env(baseline.runs if baseline else [])
        docs = [s.run() for s in baseline_settings(baseline, out=out, workers=workers,
                                                     operator_modules=operator_modules)]
        current, disk = document.merge_runs(docs), None
        if baseline is not None:
            rejudge_worst(baseline, current, baseline_settings(baseline, out=out, workers=workers,
                                                               operator_modules=operator_modules))
    else:
        disk = provenance.sources()
    return judge(baseline, current, entries=entries, today=today, bound_growth=bound_growth, disk_kernels=disk)


def rejudge_worst(base: document.Document, cur: document.Document, settings: list) -> int:
    """Judge each baseline cell's worst example (``extra.worst_case``: the example its bound is from) again,
    where the re-run reports its bound from another example, and record the result in the current cell
    (``extra.baseline_worst``); returns how many were judged.

    The search is steered by discrepancy / bound, so a small change of the operator's rounding (or the edge
    draws) moves which example is worst, and two bounds from two examples are two inputs' errors: the gate
    compared bounds only on the same example, and a grown bound went unflagged whenever the worst example
    moved.  Judged again now, the baseline's worst example gives this operator's bound on that input, which
    :func:`tokenlaw.reports.regressions.compare` compares with the baseline's.  Eager fuzz cells of a
    tolerance law that holds in both runs only (another backend's bound is not its own)."""
    registries = {}
    for s in settings:
        if s.tier is Tier.FUZZ and getattr(s, "backend", "eager") == "eager":
            registries.setdefault("eager", runs.mutated(runs.registry(s.operator_modules), getattr(s, "mutant", None)))
    reg = registries.get("eager")
    if reg is None:
        return 0
    contracts = contracts_of(reg)
    before = {c.id: c for c in base.cells}
    judged = 0
    for cell in cur.cells:
        old = before.get(cell.id)
        if cell.backend != "eager" or old is None or old.verdict is None or cell.verdict is None:
            continue
        b, c = old.verdict, cell.verdict
        if b.status != V.Status.HOLDS or c.status != V.Status.HOLDS or "worst_case" not in (b.extra or {}):
            continue
        worst = b.evidence.worst if b.evidence else None
        if worst is None or worst == (c.evidence.worst if c.evidence else None):
            continue             # the same example: its bounds compare as they are
        contract = contracts.get(cell.contract)
        if contract is None or contract.exact or cell.operator not in reg:
            continue
        v = contract.judge(Case.from_fields(reg[cell.operator], b.extra["worst_case"]))
        again = dict(worst=worst, status=str(v.status), violated=bool(v.violated), bound=v.bound,
                     discrepancy=v.discrepancy, ratio=v.ratio, detail=v.detail)
        if "least_bound" in (v.extra or {}):
            again["least_bound"] = v.extra["least_bound"]
        cell.verdict = dataclasses.replace(c, extra={**(c.extra or {}), "baseline_worst": again})
        judged += 1
    return judged
