"""A report's meta, typed: each run's record (:class:`RunMeta`) and a merged document's own fields (:class:`Meta`).

A run's record is its tier (an enum), the settings it ran with (the fields of
``tokenlaw check`` or ``tokenlaw prove``: :class:`CheckRecord`, :class:`ProveRecord`;
``orchestration.runs`` derives the runnable ``CheckSettings`` / ``ProveSettings``
from them), its environment, provenance and execution.  A :class:`~.document.Document`
holds a :class:`Meta`: the run at its top (a shard merge adds ``merged_from`` and
``shards``), and, for a document merged over runs (the gate's), every run's record.
JSON is read and written here only, by the ``from_json`` / ``to_json`` pairs that
:meth:`Document.from_json <.document.Document.from_json>` and ``to_json`` call:
the keys and their order are those of docs/report-schema.md, unchanged.
"""
from __future__ import annotations

import dataclasses

from tokenlaw.operators import arguments
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties import backends
from tokenlaw.properties.profiles import DEFAULT_PROFILE, profile_name
from tokenlaw.properties.verdict import Tier

# The proofs report's scope note: its top-level ``note`` and its run's ``meta.note``.
PROOFS_NOTE = ("Floating point is out of scope here: every statement is over the reals, with the "
               "operators' own code traced to z3 terms (the axioms: `tokenlaw docs symbolic`).")


def _names(values) -> tuple | None:
    return tuple(values) if values else None


def _list(values):
    return None if values is None else list(values)


@dataclasses.dataclass(frozen=True)
class CheckRecord:
    """Everything that decides a ``check`` run (the fields of ``tokenlaw check``), as a report records it."""

    operators: tuple | None = None          # None: every operator
    contracts: tuple | None = None
    dtypes: tuple | None = None
    backend: str = "eager"
    profile: str = DEFAULT_PROFILE          # a name of properties.profiles.PROFILES (old names accepted: quick = ci)
    examples: int | None = None             # None: the profile's
    seed: int = 0
    workers: int = 1                        # 1: the cells run in this process; N: on a Dask LocalCluster of N
    scheduler: str | None = None            # tcp://HOST:PORT of a running Dask scheduler (then not workers)
    shard: str | None = None                # "I/N"
    database: str = "none"
    replays: str | None = None              # None: OUT/replays
    out: str = "reports"
    operator_modules: tuple | None = None   # --operators MODULE: extra importable operator modules
    mutant: str | None = None               # an eager mutant's name: the run judges that seeded bug (mutated)

    def __post_init__(self):
        for f in ("operators", "contracts", "dtypes", "operator_modules"):
            object.__setattr__(self, f, _names(getattr(self, f)))   # lists -> tuples: frozen, hashable
        object.__setattr__(self, "profile", profile_name(self.profile))   # one name per profile in reports

    @classmethod
    def from_run(cls, run: dict, **overrides):
        """The settings a report's run meta records (its scope, backend, budget and seed), then ``overrides``."""
        scope = run.get("scope") or {}
        kw = dict(operators=scope.get("operators"), contracts=scope.get("contracts"), dtypes=scope.get("dtypes"),
                  operator_modules=scope.get("operator_modules"), backend=run.get("backend") or "eager",
                  profile=run.get("profile", "smoke"), examples=run.get("examples"), seed=run.get("seed", 0),
                  mutant=run.get("mutant"))
        kw.update(overrides)
        return cls(**kw)

    @property
    def stem(self) -> str:
        """The report's file stem: conformance (eager), conformance-<backend> otherwise."""
        return "conformance" if backends.get(self.backend).reference else f"conformance-{self.backend}"

    @property
    def tier(self) -> Tier:
        return Tier.FUZZ if backends.get(self.backend).reference else Tier.KERNEL

    @property
    def label(self) -> str:
        """How a message names the run: its backend."""
        return self.backend


@dataclasses.dataclass(frozen=True)
class ProveRecord:
    """Everything that decides a ``prove`` run (the fields of ``tokenlaw prove``), as a report records it."""

    operators: tuple | None = None
    contracts: tuple | None = None
    timeout: float = 5.0
    out: str = "reports"
    operator_modules: tuple | None = None
    workers: int = 1        # 1: the rows one after another here; N: on a Dask LocalCluster of N (proving)
    scheduler: str | None = None            # tcp://HOST:PORT of a running Dask scheduler (then not workers)

    def __post_init__(self):
        arguments.count(self.workers, "workers")
        for f in ("operators", "contracts", "operator_modules"):
            object.__setattr__(self, f, _names(getattr(self, f)))

    @classmethod
    def from_run(cls, run: dict, **overrides):
        scope = run.get("scope") or {}
        kw = dict(operators=scope.get("operators"), contracts=scope.get("contracts"),
                  operator_modules=scope.get("operator_modules"), timeout=run.get("timeout", 5.0))
        kw.update(overrides)
        return cls(**kw)

    tier = Tier.SYMBOLIC
    label = "symbolic"
    backend = "z3"          # what the report names as the symbolic tier's backend
    dtypes = None           # the symbolic tier judges over the reals: no dtype is chosen


@dataclasses.dataclass(frozen=True)
class Environment:
    """What a run's numbers depend on besides the code and its settings."""

    cpu_paths: dict | None = None           # the CPU-path record (operators.path_probe)
    torch: str | None = None                # torch's version (a fuzz run)
    draws: dict | None = None               # the drawn distributions' version (fuzz.engine.draws)
    env: dict | None = None                 # the environment a kernel backend declares it depends on (run_env)
    solver: str | None = None               # the SMT solver and its version (a symbolic run)


@dataclasses.dataclass(frozen=True)
class Provenance:
    """Where the judged code came from and what the registry and backend said about it."""

    traits: dict = dataclasses.field(default_factory=dict)    # {operator: sorted traits}
    kernel_sources: dict | None = None      # the plug-ins' kernel source hashes (provenance.snapshot)
    kernels: dict | None = None             # and their binds
    declares: dict | None = None            # what a kernel backend declares beyond the operators' laws


@dataclasses.dataclass(frozen=True)
class Execution:
    """How a run was executed, not what it found (two runs of one seed differ only here and in the timings)."""

    seconds: float | None = None
    workers: int | None = None
    shard: str | None = None                # "i/n" (a fuzz run)
    database: str | None = None
    replays: str | None = None              # relative to the report when under it
    replays_from_run_dir: str | None = None  # the same folder seen from where the run ran
    dask: dict | None = None                # the running cluster a --scheduler named: its workers' cells
    command: str | None = None              # the command line, as typed (the CLI adds it)


@dataclasses.dataclass(frozen=True)
class RunMeta:
    """One run's meta, typed: the tier, the settings object it ran with, its environment, provenance and execution.

    ``check`` and ``prove`` make one; :meth:`to_json` is the report's ``meta`` (the keys and their order of
    docs/report-schema.md, unchanged); :meth:`from_json` reads a written run back once, at the edge, the tier
    deciding the settings type.  ``interrupted`` is what a Ctrl-C left out (issue 47; None: nothing);
    ``extra`` keeps, as read, the fields a written report has that this record does not model.
    """

    tier: Tier
    settings: object                         # CheckRecord (fuzz, kernel) or ProveRecord (symbolic), or a subclass
    environment: Environment = Environment()
    provenance: Provenance = Provenance()
    execution: Execution = Execution()
    interrupted: dict | None = None
    extra: dict = dataclasses.field(default_factory=dict)

    @property
    def backend(self) -> str:
        """The backend the run names (``z3`` for the symbolic tier)."""
        return self.settings.backend

    @property
    def name(self) -> str:
        """The run's tier as the combined reports name it: ``fuzz``, ``symbolic``, or ``kernel:<backend>``."""
        return f"kernel:{self.backend}" if self.tier is Tier.KERNEL else self.tier.value

    def to_json(self) -> dict:
        s, env, prov, run = self.settings, self.environment, self.provenance, self.execution
        if self.tier is Tier.SYMBOLIC:
            out = dict(tier=self.tier.value, backend="z3", solver=env.solver, timeout=s.timeout,
                       cpu_paths=env.cpu_paths, seconds=run.seconds, note=PROOFS_NOTE, traits=prov.traits)
            _timed(out)
            scope = {"operators": _list(s.operators), "contracts": _list(s.contracts),
                     "operator_modules": _list(s.operator_modules)}
            if any(scope.values()):
                out["scope"] = scope
        else:
            out = dict(tier=self.tier.value, backend=s.backend, profile=s.profile, examples=s.examples, seed=s.seed,
                       torch=env.torch, draws=env.draws, cpu_paths=env.cpu_paths, seconds=run.seconds,
                       workers=run.workers, shard=run.shard, database=run.database, replays=run.replays,
                       replays_from_run_dir=run.replays_from_run_dir)
            _timed(out)
            if prov.kernel_sources is not None or prov.kernels is not None:
                out.update(kernel_sources=prov.kernel_sources, kernels=prov.kernels)
            out.update(traits=prov.traits,
                       scope={"operators": _list(s.operators), "contracts": _list(s.contracts),
                              "dtypes": _list(s.dtypes), "operator_modules": _list(s.operator_modules)})
        if run.dask is not None:
            out["dask"] = run.dask
        if self.tier is not Tier.SYMBOLIC:
            for key, value in (("mutant", s.mutant), ("env", env.env), ("declares", prov.declares)):
                if value is not None:
                    out[key] = value
        if self.interrupted is not None:
            out["interrupted"] = self.interrupted
        if run.command is not None:            # the CLI adds it last (after a Ctrl-C's interrupted)
            out["command"] = run.command
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, run: dict, **overrides) -> "RunMeta":
        """A written run's meta (one entry of ``meta.runs``, or a single run's ``meta``) as the record;
        ``overrides`` go to its settings."""
        try:
            tier = Tier.of(run)
        except ValueError:
            raise InvalidArgument(f"meta.tier: expected one of {[t.value for t in Tier]}, got {run.get('tier')!r}") \
                from None
        settings = (ProveRecord if tier is Tier.SYMBOLIC else CheckRecord).from_run(run, **overrides)
        modelled = set(RUN_KEYS[tier])
        provenance = _read(Provenance, run)
        return cls(tier, settings, _read(Environment, run),
                   dataclasses.replace(provenance, traits=provenance.traits or {}), _read(Execution, run),
                   run.get("interrupted"), {k: v for k, v in run.items() if k not in modelled})

    def with_command(self, command: str) -> "RunMeta":
        return dataclasses.replace(self, execution=dataclasses.replace(self.execution, command=command))

    def with_settings(self, settings) -> "RunMeta":
        return dataclasses.replace(self, settings=settings)


def _read(record, run: dict):
    """The ``record`` (Environment, Provenance, Execution) of a written run: each field is the key of its name."""
    return record(**{f.name: run.get(f.name) for f in dataclasses.fields(record)})


def _timed(out: dict) -> None:
    """A run read from a written report has no ``seconds`` (VOLATILE, left out when written): none is written."""
    if out["seconds"] is None:
        del out["seconds"]


# The meta keys each tier's record writes (the rest of a written run is kept as read, in ``RunMeta.extra``).
_FUZZ_KEYS = ("tier", "backend", "profile", "examples", "seed", "torch", "draws", "cpu_paths", "seconds", "workers",
              "shard", "database", "replays", "replays_from_run_dir", "kernel_sources", "kernels", "traits", "scope",
              "dask", "mutant", "env", "declares", "command", "interrupted")
RUN_KEYS = {Tier.FUZZ: _FUZZ_KEYS, Tier.KERNEL: _FUZZ_KEYS,
            Tier.SYMBOLIC: ("tier", "backend", "solver", "timeout", "cpu_paths", "seconds", "note", "traits", "scope",
                            "dask", "command", "interrupted")}
# A shard merge's own top-level fields (``tokenlaw report merge``): the files merged and their shards.
MERGE_KEYS = ("merged_from", "shards")


@dataclasses.dataclass(frozen=True)
class Meta:
    """A document's meta: the run at its top, a shard merge's own fields, and a merge over runs' every run.

    ``run`` is the run a single-run document records (for a document merged over runs: the first document's,
    its top-level fields; None: a document that records its runs only, as the gate's empty baseline).
    ``merged_from`` and ``shards`` are set by :func:`~.document.merge_shards` (the files and their
    ``i/n``); ``runs`` by :func:`~.document.merge_runs` (written as ``meta.runs``).
    """

    run: RunMeta | None = None
    merged_from: tuple | None = None
    shards: tuple | None = None
    runs: tuple | None = None

    @property
    def all_runs(self) -> list:
        """Every run the document records (a single run's document: its one run, a shard merge's fields kept)."""
        if self.runs is not None:
            return list(self.runs)
        if self.run is None:
            return []
        if self.merged_from is None:
            return [self.run]
        merge = {"merged_from": list(self.merged_from), "shards": list(self.shards)}
        return [dataclasses.replace(self.run, extra={**self.run.extra, **merge})]

    @property
    def tier(self) -> Tier:
        """The top run's tier (fuzz where none is recorded)."""
        return self.run.tier if self.run is not None else Tier.FUZZ

    @property
    def backend(self) -> str | None:
        return self.run.backend if self.run is not None else None

    @property
    def interrupted(self) -> dict | None:
        return self.run.interrupted if self.run is not None else None

    def with_command(self, command: str) -> "Meta":
        """This meta with the command line the top run was made with (the CLI adds it)."""
        return dataclasses.replace(self, run=self.run.with_command(command))

    def to_json(self) -> dict:
        out = self.run.to_json() if self.run is not None else {}
        if self.merged_from is not None:
            out.update(merged_from=list(self.merged_from), shards=list(self.shards))
        if self.runs is not None:
            out["runs"] = [r.to_json() for r in self.runs]
        return out

    @classmethod
    def from_json(cls, meta: dict) -> "Meta":
        top = {k: v for k, v in meta.items() if k != "runs" and k not in MERGE_KEYS}
        runs = meta.get("runs")
        merged = "merged_from" in meta
        return cls(RunMeta.from_json(top) if top or runs is None else None,
                   tuple(meta["merged_from"]) if merged else None, tuple(meta.get("shards") or ()) if merged else None,
                   None if runs is None else tuple(RunMeta.from_json(r) for r in runs))
