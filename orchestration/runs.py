"""Library entry points: run the tiers with frozen settings and get a :class:`~.document.Document` back.

``check(CheckSettings(...))`` is ``tokenlaw check`` without the command
line (plan the rows, run them on the fuzz tier or a kernel backend, record
how); ``prove(ProveSettings(...))`` is ``tokenlaw prove``; ``verify`` runs
both on one selection and combines them (``tokenlaw verify``).  The CLI parses
its arguments into settings and writes the document.  Each run's meta is a
typed record (:class:`~tokenlaw.reports.meta.RunMeta`: the tier, the settings
object, environment, provenance, execution) that the document holds as such
(``Document.meta``) and writes as the report's ``meta`` at the edge; the gate
reads every run its baseline records back into one (``Document.from_json``)
and re-runs its settings (:func:`runnable`: the recorded ``CheckRecord`` /
``ProveRecord`` as the runnable ``CheckSettings`` / ``ProveSettings``) through
the same functions.  Neither function writes a report: the caller
does (``settings.write(doc)``: ``reports.formats.write``); ``check`` stores
counterexample replays under ``settings.replays`` as the run goes.

A run of a backend other than the reference records the environment that
backend declares it depends on (``Backend.run_env``) in its meta as ``env``,
so the gate can re-run it the same way (:mod:`.environment`); every run
records the plug-ins' provenance (:mod:`.provenance`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
from pathlib import Path

import torch

from tokenlaw.fuzz.rows import parse_shard, run_rows, runs_here, shard
from tokenlaw.fuzz.cluster import Pool
from tokenlaw.fuzz.engine import PROFILES, draws
from tokenlaw.fuzz.mutants.seeded import catalogue as mutant_catalogue
from tokenlaw.operators import path_probe
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.process import command_line, interrupts, user_modules
from tokenlaw.properties import backends
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import collect, default_registry, with_user_contracts
from tokenlaw.properties.plan import plan, proved, validate_dtypes
from tokenlaw.properties.verdict import Tier
from tokenlaw.reports import formats, proofs, verification
from tokenlaw.reports.document import Document
from tokenlaw.reports.meta import CheckRecord, Environment, Execution, Meta, ProveRecord, Provenance, RunMeta
from tokenlaw.symbolic.prover import SOLVER

from . import proving
from .environment import recorded_env
from .provenance import snapshot

class CheckSettings(CheckRecord):
    """Everything that decides a ``check`` run (the fields of ``tokenlaw check``: :class:`CheckRecord`), runnable."""

    __slots__ = ()

    def run(self, *, progress: bool = False, stream=None) -> Document:
        """:func:`check` of these settings."""
        return check(self, progress=progress, stream=stream)

    def write(self, doc: Document) -> dict:
        """Write ``doc`` (a run of these settings) under ``out``: conformance.{json,md,xml,html}."""
        return formats.write(doc, Path(self.out), stem=self.stem)


class ProveSettings(ProveRecord):
    """Everything that decides a ``prove`` run (the fields of ``tokenlaw prove``: :class:`ProveRecord`), runnable."""

    __slots__ = ()

    def run(self, *, progress: bool = False, stream=None) -> Document:
        """:func:`prove` of these settings (``progress`` / ``stream``: a fuzz run's display, unused)."""
        return prove(self)

    def write(self, doc: Document) -> dict:
        """Write ``doc`` (a run of these settings) under ``out``: proofs.{json,md}."""
        return formats.write(doc, Path(self.out), formats.PROOFS, stem="proofs")


def runnable(record: RunMeta, **overrides) -> CheckSettings | ProveSettings:
    """The settings object a run's record holds, as the runnable type of its tier, then ``overrides`` (the gate
    re-runs what a baseline recorded: ``runnable(run).run()``)."""
    cls = ProveSettings if record.tier is Tier.SYMBOLIC else CheckSettings
    fields = {f.name: getattr(record.settings, f.name) for f in dataclasses.fields(cls)}
    return cls(**{**fields, **overrides})


def _contracts(loaded) -> dict:
    """The catalogue and the contracts the user's modules mark (a fresh one; a clash is their input error)."""
    try:
        return with_user_contracts(*loaded)
    except ValueError as err:
        raise InvalidArgument(f"--operators: {err}") from None


def registry(modules=None):
    """The default registry, or the registry collected with the user's operator ``modules`` (importable names
    or ``.py`` paths), validated against the catalogue plus the contracts those modules declare
    (``@contract``), which it carries (``Registry.contracts``); a module that fails to import or declares
    no operator is refused (InvalidArgument)."""
    if not modules:
        return default_registry()
    loaded = [user_modules.load(name, "--operators") for name in modules]
    contracts = _contracts(loaded)
    for name, module in zip(modules, loaded):
        if not len(collect(module, contracts=contracts)):
            raise InvalidArgument(f"--operators: {name!r} ({getattr(module, '__file__', module.__name__)}) declares "
                                  "no operator; mark one with @declare(...) from tokenlaw.operators.registry")
    return collect("tokenlaw.operators", *loaded, contracts=contracts)


def mutated(reg, name: str | None):
    """``reg`` with the eager mutant ``name`` applied (a new registry; None: ``reg`` itself), subtle mutants
    included; an unknown name is refused naming --mutant, with the closest names."""
    if name is None:
        return reg
    by_name = {m.name: m for m in mutant_catalogue(subtle=True)}
    if name not in by_name:
        raise command_line.closest(name, by_name, "--mutant")
    return by_name[name].apply(reg)


def user_operators(modules) -> tuple:
    """The names of the operators the user's ``modules`` declare (in declaration order)."""
    loaded = [user_modules.load(m, "--operators") for m in modules]
    return tuple(spec.name for spec in collect(*loaded, contracts=_contracts(loaded)))


# How a name only the user's own module declares becomes known (said with every unknown --operator).
OPERATORS_HINT = ("(your own operator? pass the module that declares it: "
                  "tokenlaw --operators MODULE_OR_FILE.py check ...)")


def check_names(reg, operators=None, contracts=None) -> None:
    """Unknown --operator / --contract names: an error suggesting the closest ones."""
    for name in operators or ():
        if name not in reg:
            raise command_line.closest(name, reg.names(), "--operator", also=OPERATORS_HINT)
    for name in contracts or ():
        if name not in reg.contracts:
            raise command_line.closest(name, reg.contracts, "--contract")


def nonempty(rows, reg, operators=None, contracts=None, backend: str = "eager") -> None:
    """A selection that plans no row is refused (InvalidArgument naming the argument), never a PASS over 0 rows.

    Checked before anything runs or is written, so a typo'd selection leaves the last reports alone.
    """
    if rows:
        return
    left_out = getattr(rows, "left_out", {})
    if left_out:
        op, why = next(iter(left_out.items()))
        raise InvalidArgument(f"--backend: the {backend} backend implements none of the selected operators "
                              f"({op}: {why})")
    if contracts:
        declared = sorted({r.contract for r in plan(reg, operators=operators, backend=backend)}) if operators else []
        which = f"operator {operators[0]!r}" if operators and len(operators) == 1 else \
            ("the selected operators" if operators else "no operator")
        raise InvalidArgument(f"--contract: {which} declares none of {sorted(contracts)}"
                              + (f"; its rows are {', '.join(declared)}" if declared and operators else ""))
    raise InvalidArgument("--operator: the selection plans no row")


def laws(reg, rows) -> dict:
    """``{contract: (law, exact)}`` of the rows' contracts, as the registry knows them (a user's own
    contract included, which the report cannot look up in the catalogue)."""
    return {r.contract: (reg.contracts[r.contract].law, reg.contracts[r.contract].exact) for r in rows}


def _relative(path, base) -> str:
    p, b = Path(path).resolve(), Path(base).resolve()
    return str(p.relative_to(b)) if p.is_relative_to(b) else str(path)


def check(settings: CheckSettings, *, progress: bool = False, stream=None) -> Document:
    """Run every planned cell of ``settings`` and return the report document (nothing is written but replays)."""
    reg = mutated(registry(settings.operator_modules), settings.mutant)
    check_names(reg, settings.operators, settings.contracts)
    validate_dtypes(settings.dtypes)
    if settings.profile not in PROFILES:
        raise InvalidArgument(f"profile: expected one of {sorted(PROFILES)}, got {settings.profile!r}")
    if settings.examples is not None and settings.examples < 1:
        raise InvalidArgument(f"examples: expected an int >= 1, got {settings.examples}")
    command_line.writable_dir(settings.out, "--out")
    replays = settings.replays or str(Path(settings.out) / "replays")
    examples = settings.examples or PROFILES[settings.profile]
    rows = plan(reg, operators=settings.operators, contracts=settings.contracts, dtypes=settings.dtypes,
                backend=settings.backend)
    nonempty(rows, reg, settings.operators, settings.contracts, settings.backend)
    shard_i, shard_n = parse_shard(settings.shard)
    rows = shard(rows, shard_i, shard_n)
    start = time.perf_counter()
    stopped = False
    try:
        # a Ctrl-C the interpreter drops (raised in a garbage collector's callback) is raised again
        with interrupts.remembered(), _pool(settings, sum(len(r.cells) for r in rows)) as pool:
            if pool is not None and stream is not None:      # where the cells go, and the dashboard
                stream.write(pool.describe() + "\n")
            run_rows(reg, rows, examples=examples, seed=settings.seed, progress=progress, workers=settings.workers,
                     pool=pool, database=settings.database, replay_dir=replays, stream=stream,
                     mutant=settings.mutant, by_value=shipped_modules(settings.operator_modules))
    except KeyboardInterrupt:
        # Ctrl-C, wherever it landed (the cluster starting, a cell, the cluster closing): the report of the
        # rows judged whole, marked interrupted, goes up with the interruption (issue 47)
        stopped, pool = True, None
    if stream is not None:
        stream.close_line()
    # the report is built with a further Ctrl-C held (recording the CPU paths takes seconds): it then stops
    # the run as interrupted, its cells all judged, instead of losing them
    with interrupts.held() as late:
        reported, record = _record(settings, reg, rows, pool, examples, replays, shard_i, shard_n, start, stopped)
    if late.value and not stopped:            # every cell judged, then Ctrl-C: nothing left out
        n = sum(len(r.cells) for r in rows)
        record = dataclasses.replace(record, interrupted=_interrupted(n, n, {"rows": [], "judged": {}}))
    doc = Document(reported, Meta(record), laws=laws(reg, reported))
    if stopped or late.value:
        raise Interrupted(doc)
    return doc


def _interrupted(planned: int, judged: int, left_out: dict) -> dict:
    """The report meta's ``interrupted`` entry of a run Ctrl-C stopped (issue 47): cells planned and judged, and
    what the report leaves out (:func:`whole_rows`); the one place it is made, for a Ctrl-C during the cells and
    for one while the report was built."""
    return dict(planned_cells=planned, judged_cells=judged, **left_out)


def _record(settings, reg, rows, pool, examples, replays, shard_i, shard_n, start, stopped) -> tuple:
    """(the rows reported, their :class:`RunMeta`) of a check's ``rows``; those of a ``stopped`` run are cut to
    :func:`whole_rows`, and ``meta.interrupted`` says what was left out."""
    planned = sum(len(r.cells) for r in rows)
    if stopped:
        rows, left_out = whole_rows(rows)
    backend = backends.get(settings.backend)
    reference = backend.reference
    env = recorded_env(backend)
    said = declared(backend, rows)
    provenance = snapshot(reg)
    record = RunMeta(
        settings.tier, dataclasses.replace(settings, examples=examples),
        Environment(cpu_paths=path_probe.record(), torch=torch.__version__, draws=draws(),
                    env=env if not reference and env else None),
        Provenance(traits(reg, rows), provenance["kernel_sources"], provenance["kernels"],
                   declares=said if not reference and said else None),
        # replays: relative to the report when under it, so the document does not depend on where --out is;
        # replays_from_run_dir: the same directory seen from where the run ran (what a pasted replay command needs)
        Execution(seconds=time.perf_counter() - start, workers=settings.workers, shard=f"{shard_i}/{shard_n}",
                  database=str(settings.database), replays=_relative(replays, settings.out),
                  replays_from_run_dir=replays,
                  # the running cluster the user named: which of its workers ran cells (a LocalCluster's ports
                  # are this run's alone, and would make two runs of one seed differ for nothing)
                  dask=executed(pool.execution) if pool is not None and settings.scheduler is not None else None),
        # Ctrl-C (issue 47): what the report leaves out
        interrupted=_interrupted(planned, sum(len(r.cells) for r in rows) + len(left_out["judged"]), left_out)
        if stopped else None)
    return rows, record


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`check` or :func:`prove`: ``doc`` is the report of the rows judged before it,
    ``meta.interrupted`` saying what was left out (a KeyboardInterrupt still: a caller that knows nothing of it
    stops as before).  From :func:`verify`, ``docs`` are every report it has (the check's, and the proofs'
    when the Ctrl-C came while proving), ``doc`` the last of them."""

    def __init__(self, doc: Document, docs: tuple = ()):
        super().__init__("interrupted")
        self.doc = doc
        self.docs = tuple(docs) or (doc,)


def whole_rows(rows) -> tuple[list, dict]:
    """The rows of an interrupted run whose every cell was judged, and what the others leave: ``rows`` (their
    ids, in plan order) and ``judged`` ({cell id: outcome} of the cells they had judged already).

    A row judged in some dtypes only is left out of the report's rows: its outcome would claim what the
    other dtypes were never asked (a claim "holds", an expected violation "NOT reproduced"); its judged
    cells' outcomes are kept beside it, and their replays are stored as always.
    """
    whole = [r for r in rows if all(c.verdict is not None for c in r.cells)]
    partial = [r for r in rows if not all(c.verdict is not None for c in r.cells)]
    return whole, {"rows": [r.id for r in partial],
                   "judged": {c.id: V.outcome(r.declared, c.verdict) for r in partial for c in r.cells
                              if c.verdict is not None}}


def declared(backend, rows) -> dict:
    """What ``backend`` declares about the operators of ``rows`` beyond their own laws (a fully masked row's
    value, claims of its own, backwards it declares standard), for the report (``tokenlaw report backends``)."""
    ops = set(r.operator for r in rows)
    out = {}
    for key in ("masked_row", "backend_claims", "standard_backward"):
        table = {op: v for op, v in getattr(backend, key).items() if op in ops}
        if table:
            out[key] = {op: (v if v == v else "NaN") if isinstance(v, float) else v for op, v in table.items()}
    return out


def _pool(settings: CheckSettings, cells: int):
    """The Dask pool the cells of ``settings`` run on: a running scheduler's, or a LocalCluster of
    ``--workers`` processes (no more than there are cells); None where one process runs them all here."""
    if runs_here(settings.workers, settings.scheduler, cells):
        return contextlib.nullcontext()
    return Pool(min(settings.workers, cells) if settings.scheduler is None else settings.workers,
                settings.scheduler)


def executed(execution) -> dict:
    """A report's record of the Dask cluster that ran its cells: scheduler, dashboard, cells per worker."""
    return {"scheduler": execution.scheduler, "dashboard": execution.dashboard,
            "workers": dict(sorted(execution.workers.items()))}


def shipped_modules(modules) -> tuple:
    """The modules of the user's ``--operators`` (files, modules or packages, with their loaded submodules):
    a Dask worker receives them by value, as this process has them (the worker may not have the file, and a
    module's state here, a constant set after import included, is what this run judges)."""
    names = [Path(m).stem if user_modules.is_path(m) else m for m in modules or ()]
    return tuple(sorted(n for n in list(sys.modules)
                        if any(n == b or n.startswith(b + ".") for b in names) and not n.startswith("tokenlaw.")))


def traits(reg, rows) -> dict:
    """{operator: sorted traits} of the operators of ``rows``: what a report needs to know about them from the
    registry (the law table picks its rows by trait, ``reports.lawtable.members``)."""
    return {name: sorted(reg[name].traits) for name in dict.fromkeys(r.operator for r in rows)}


def validate_prove(settings: ProveSettings):
    """The registry of a ``prove`` run, after refusing its bad arguments (before anything long runs)."""
    reg = registry(settings.operator_modules)
    check_names(reg, settings.operators, settings.contracts)
    if not settings.timeout > 0:
        raise InvalidArgument(f"--timeout: must be > 0 seconds, got {settings.timeout}")
    nonempty(plan(reg, operators=settings.operators, contracts=settings.contracts, dtypes=["float64"]), reg,
             settings.operators, settings.contracts)
    command_line.writable_dir(settings.out, "--out")
    return reg


def verify(check_settings: CheckSettings, prove_settings: ProveSettings, *, progress: bool = False, stream=None,
           prove_progress=None) -> tuple:
    """``tokenlaw verify``: :func:`check` and :func:`prove` of one selection, and their combined view.

    Returns (conformance document, proofs document, :class:`~.verification.Verification`).  The
    prove settings are validated before the fuzz run starts, so a bad ``--timeout`` costs nothing.
    """
    if (check_settings.operators, check_settings.contracts, check_settings.operator_modules) != \
            (prove_settings.operators, prove_settings.contracts, prove_settings.operator_modules):
        raise InvalidArgument("verify: the check and the prove settings must select the same rows")
    validate_prove(prove_settings)
    conformance = check(check_settings, progress=progress, stream=stream)     # Ctrl-C: Interrupted(its report)
    try:
        proofs_doc = prove(prove_settings, progress=prove_progress)
    except Interrupted as stop:             # the check finished: its report and the rows proved so far
        raise Interrupted(stop.doc, (conformance, stop.doc)) from None
    return conformance, proofs_doc, verification.combine([conformance, proofs_doc])


def prove(settings: ProveSettings, *, progress=None) -> Document:
    """Prove or refute every planned row with z3 and return the proofs document.

    ``progress(row, verdict)`` is called after each row when given.
    """
    reg = validate_prove(settings)
    planned = plan(reg, operators=settings.operators, contracts=settings.contracts, dtypes=["float64"])
    start = time.perf_counter()
    clusters, done = [], {}

    def finished(row, verdict):
        done[row.id] = (row.operator, row.contract, verdict)
        if progress:
            progress(row, verdict)

    stopped = False
    try:
        # a Ctrl-C the interpreter drops is raised again (as in check)
        with interrupts.remembered():
            proving.prove_isolated(reg, planned, timeout=settings.timeout, workers=settings.workers,
                                   scheduler=settings.scheduler, progress=finished,
                                   by_value=shipped_modules(settings.operator_modules), execution=clusters)
    except KeyboardInterrupt:
        # Ctrl-C (issue 47): the rows proved so far are the report, marked interrupted, as check's
        stopped = True
    with interrupts.held() as late:
        kept = [r for r in planned if r.id in done]
        rows = proved(kept, [done[r.id] for r in kept])
        cut = _interrupted(len(planned), len(kept), {"rows": [r.id for r in planned if r.id not in done],
                                                     "judged": {}})
        record = RunMeta(Tier.SYMBOLIC, settings, Environment(cpu_paths=path_probe.record(), solver=SOLVER),
                         Provenance(traits(reg, planned)),
                         Execution(seconds=time.perf_counter() - start,
                                   # the running cluster the user named, as check records it
                                   dask=executed(clusters[0]) if clusters and settings.scheduler is not None else None),
                         interrupted=cut if stopped or late.value else None)
        doc = proofs.document(rows, Meta(record), laws(reg, rows))
    if stopped or late.value:
        raise Interrupted(doc)
    return doc


def planned_count(settings: ProveSettings) -> int:
    """How many rows :func:`prove` will judge (for a progress display)."""
    reg = registry(settings.operator_modules)
    return len(plan(reg, operators=settings.operators, contracts=settings.contracts, dtypes=["float64"]))
