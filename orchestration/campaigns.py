"""``tokenlaw campaign``: search the selected cells round after round until a time box, then report.

Round k runs every selected cell again with a fresh seed (``seed + k``) on the Dask pool
(:class:`~tokenlaw.fuzz.cluster.Pool`).  A cell whose search still moves (its best discrepancy / bound
rose, or it reached a regime it had not visited) doubles its example budget for the next round; a
cell that stalled keeps the budget it had.  When the time box ends (or on Ctrl-C) the round in
flight is cancelled and the report of the whole campaign is built from the finished cells: per cell
the examples run, the regimes visited, the best ratio seen, every violation found (each stored as a
replay artifact with its shrunk counterexample), and in its meta the Dask workers that ran cells.

With ``database`` (a directory or ``redis://``) each cell's search reuses and stores examples there,
so campaigns on several machines share what they found (:mod:`tokenlaw.fuzz.database`).
"""
from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

from tokenlaw.fuzz.rows import CellRunner
from tokenlaw.fuzz.cluster import Pool
from tokenlaw.operators import arguments
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.process import command_line, interrupts
from tokenlaw.properties.plan import plan, validate_dtypes
from tokenlaw.reports.campaign import CampaignCell, CampaignReport, Finding

from . import runs

FIRST_BUDGET = 25           # examples per cell in the first round
MAX_BUDGET = 25 * 2 ** 8    # a cell's budget stops doubling here (6400 examples a round)


@dataclasses.dataclass(frozen=True)
class CampaignSettings:
    """Everything that decides a ``campaign`` run (the fields of ``tokenlaw campaign``)."""

    minutes: float
    operators: tuple | None = None
    contracts: tuple | None = None
    dtypes: tuple | None = None
    backend: str = "eager"
    seed: int = 0
    workers: int = 1
    scheduler: str | None = None
    database: str = "none"
    out: str = "reports"
    operator_modules: tuple | None = None
    mutant: str | None = None          # an eager mutant's name: the campaign hunts that seeded bug

    def __post_init__(self):
        if isinstance(self.minutes, bool) or not isinstance(self.minutes, (int, float)) or not self.minutes > 0:
            raise InvalidArgument(f"--minutes: expected a number of minutes > 0, got {self.minutes!r}")
        arguments.count(self.workers, "workers")
        for f in ("operators", "contracts", "dtypes", "operator_modules"):
            value = getattr(self, f)
            object.__setattr__(self, f, tuple(value) if value else None)


@dataclasses.dataclass
class CellRecord:
    """What the campaign learnt about one cell over its rounds."""

    id: str
    declared: str                  # "claims" or "violates": a violation of a claim fails the campaign
    budget: int = FIRST_BUDGET
    status: str | None = None      # the last round's verdict status (not_applicable: a cell never judged)
    rounds: int = 0
    examples: int = 0
    seconds: float = 0.0           # the cell's own search time over its rounds (examples / seconds: its rate)
    best_ratio: float = 0.0
    regimes: dict = dataclasses.field(default_factory=dict)
    violations: list = dataclasses.field(default_factory=list)     # {"round", "replay", "detail", "counterexample"}

    def learn(self, verdict, round_no: int) -> bool:
        """Fold in one round's verdict; True when the search still moved (the ratio rose, a new regime), and
        then the next round's budget doubles (up to MAX_BUDGET); a cell that stalled keeps its budget."""
        moved = self._fold(verdict, round_no)
        if moved:
            self.budget = min(MAX_BUDGET, self.budget * 2)
        return moved

    def _fold(self, verdict, round_no: int) -> bool:
        self.rounds += 1
        self.status = str(verdict.status)
        self.examples += verdict.examples
        self.seconds += verdict.seconds if math.isfinite(verdict.seconds or 0.0) else 0.0
        regimes = (verdict.evidence.regimes if verdict.evidence is not None else None) or {}
        new = any(k and not self.regimes.get(name) for name, k in regimes.items())
        for name, k in regimes.items():
            self.regimes[name] = self.regimes.get(name, 0) + k
        ratio = verdict.ratio
        rose = not verdict.violated and ratio > self.best_ratio
        if not verdict.violated:
            self.best_ratio = max(self.best_ratio, ratio)
        if verdict.violated and verdict.replay not in {v["replay"] for v in self.violations}:
            self.violations.append({"round": round_no, "replay": verdict.replay, "status": str(verdict.status),
                                    "detail": verdict.detail, "counterexample": verdict.counterexample,
                                    # replayed from the example database (another campaign's), not searched
                                    "from_database": verdict.evidence is not None and verdict.evidence.from_database})
        return rose or new

    def record(self) -> CampaignCell:
        """The report's record of this cell as it stands (a copy: later rounds do not change it)."""
        return CampaignCell(self.id, self.declared, self.budget, self.rounds, self.examples, self.best_ratio,
                            dict(self.regimes), tuple(Finding(**v) for v in self.violations), self.status,
                            self.seconds)

    def to_json(self) -> dict:
        """The cell's JSON record (``campaign.json``'s ``cells[]``)."""
        return self.record().to_json()


def run(settings: CampaignSettings, *, stream=None, clock=time.monotonic, on_round=None) -> CampaignReport:
    """Run the campaign of ``settings`` until its time box; returns its report
    (:class:`~tokenlaw.reports.campaign.CampaignReport`).

    Replays of violations are stored under ``OUT/replays``; the report is not written (the caller does).
    on_round: called with the report so far (``meta["finished"]`` False) once the cluster is up and after
    every round, for a page to watch (``reports.campaign_page``); the returned report has it True.
    """
    reg = runs.mutated(runs.registry(settings.operator_modules), settings.mutant)
    runs.check_names(reg, settings.operators, settings.contracts)
    validate_dtypes(settings.dtypes)
    command_line.writable_dir(settings.out, "--out")
    selected = plan(reg, operators=settings.operators, contracts=settings.contracts, dtypes=settings.dtypes,
                    backend=settings.backend)
    runs.nonempty(selected, reg, settings.operators, settings.contracts, settings.backend)
    replays = Path(settings.out) / "replays"
    cells = {c.id: CellRecord(c.id, r.declared) for r in selected for c in r.cells}
    start = clock()
    deadline = start + settings.minutes * 60
    rounds, interrupted = 0, False
    pool = Pool(settings.workers, settings.scheduler)

    def report(finished: bool) -> CampaignReport:
        return _report(settings, cells, pool, replays, seconds=clock() - start, rounds=rounds,
                       interrupted=interrupted, finished=finished)

    # Ctrl-C wherever it lands (the cluster starting, a round, the page being written, the cluster closing)
    # ends the campaign the same way: the cells finished so far are the report, marked interrupted (issue 47)
    try:
        # a Ctrl-C the interpreter drops (raised in a garbage collector's callback) is raised again
        with interrupts.remembered(), pool:
            if stream is not None:
                stream.write(pool.describe() + "\n")
            if on_round is not None:
                on_round(report(False))
            while clock() < deadline:
                rounds += 1
                done = _round(reg, settings, pool, cells, rounds, replays, deadline, clock)
                if stream is not None:
                    found = sum(len(c.violations) for c in cells.values())
                    stream.write(f"round {rounds}: {done} cells, {sum(c.examples for c in cells.values())} "
                                 f"examples so far, {found} violations, {max(0.0, deadline - clock()):.0f}s left\n")
                if on_round is not None and clock() < deadline:
                    on_round(report(False))
    except KeyboardInterrupt:
        interrupted = True
    return report(True)


def _report(settings, cells, pool, replays, *, seconds, rounds, interrupted, finished) -> CampaignReport:
    """The campaign's report as it stands (every finished round folded in)."""
    meta = dict(kind="campaign", minutes=settings.minutes, seconds=seconds, rounds=rounds,
                interrupted=interrupted, finished=finished, seed=settings.seed, backend=settings.backend,
                database=str(settings.database), mutant=settings.mutant, replays=str(replays),
                dask=runs.executed(pool.execution),
                scope={"operators": list(settings.operators or ()) or None,
                       "contracts": list(settings.contracts or ()) or None,
                       "dtypes": list(settings.dtypes or ()) or None,
                       "operator_modules": list(settings.operator_modules or ()) or None})
    return CampaignReport(meta, tuple(c.record() for c in cells.values()),
                          sum(len(c.violations) for c in cells.values()),
                          tuple(c.id for c in cells.values() if c.violations and c.declared == "claims"))


def _round(reg, settings, pool, cells, round_no, replays, deadline, clock) -> int:
    """One round: every cell at its budget, a fresh seed; stops at the deadline. Returns the cells finished."""
    budgets = sorted({c.budget for c in cells.values()})
    finished = 0
    for budget in budgets:              # one run_rows per budget: its cells share the example count
        rows = plan(reg, operators=settings.operators, contracts=settings.contracts, dtypes=settings.dtypes,
                    backend=settings.backend)
        for r in rows:
            r.cells[:] = [c for c in r.cells if cells[c.id].budget == budget]
        rows = [r for r in rows if r.cells]
        for ri, ci, verdict in _stream(reg, rows, pool, budget, settings.seed + round_no - 1, settings,
                                       replays, deadline):
            cells[rows[ri].cells[ci].id].learn(verdict, round_no)
            finished += 1
            interrupts.checkpoint()      # a Ctrl-C the interpreter dropped stops here, this cell learnt
            if clock() >= deadline:
                return finished          # leaving the generator cancels the cells still in flight
    return finished


def _stream(reg, rows, pool, examples, seed, settings, replays, until):
    """(row, cell, verdict) of ``rows`` as the pool finishes them."""
    tasks = [(ri, ci, row.operator, row.contract, cell.dtype, cell.backend)
             for ri, row in enumerate(rows) for ci, cell in enumerate(row.cells)]
    runner = CellRunner(reg, examples, seed, settings.database, replays, settings.mutant,
                        runs.shipped_modules(settings.operator_modules))
    yield from pool.run(runner, tasks, replay_dir=replays, until=until)
