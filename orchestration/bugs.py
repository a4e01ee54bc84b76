"""The benchmark of real upstream bugs: ``tokenlaw bugs run [--id ...]``, one TOML file per bug.

A bug is one file in ``benchmarks/bugs/`` (any ``*.toml`` there; ``--dir`` names another folder)::

    id = "mistral-sdpa-sliding-window"
    description = "one line"
    issue = "https://..."            # the upstream report
    fix = "https://..."              # the fixing change ("" while none exists)
    package = "transformers"
    buggy = "4.39.3"                 # the release that has it
    fixed = "4.40.0"                 # the first release without it ("" while none exists: say why in fixed_note)
    law = "window_locality"          # the law expected to catch it
    kind = "model"                   # model: a tiny HF model under the model laws; core: a declared operator
    patch = ""                       # re-injected: "MODULE_OR_FILE.py:function", a context manager that puts the
                                     # bug back into the installed code (marked as such in the report)

    [target]                         # model: arch, dtype, examples; core: operators, operator, control, dtype
    arch = "mistral"
    implementation = "sdpa"
    settings = "sliding_window=4, 2 layers, width 32"

For each bug the runner records: whether the **default search** rediscovers it unaided (every law that
applies to the architecture, or every contract the operator is declared with, at the default budget and
seed 0, nothing steered toward the bug) and through which laws; examples and seconds to the first
violation of the expected law; its shrunk counterexample; and the **twin**: the expected law at the
fixed release (a model bug), the unpatched installed code (a re-injected patch), or the declared
control (a core bug with no fixed release: a negative control, named as such) must hold.

Example::

    >>> [e.id for e in load_entries()][:1]
    ['mistral-sdpa-sliding-window']
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import json
import time
import tomllib
from pathlib import Path

import torch

from tokenlaw.fuzz import engine
from tokenlaw.integrations import hf
from tokenlaw.integrations.hf import model_laws as ML
from tokenlaw.integrations.hf.arches import arch
from tokenlaw.operators.errors import InvalidArgument

from . import runs

DEFAULT_DIR = Path(__file__).resolve().parents[1] / "benchmarks" / "bugs"
KINDS = ("model", "core")
REQUIRED = ("id", "description", "issue", "package", "buggy", "law", "kind")
MODEL_EXAMPLES, CORE_EXAMPLES = ML.EXAMPLES, 25


@dataclasses.dataclass(frozen=True)
class Entry:
    """One bug file, validated (module docstring)."""

    id: str
    description: str
    issue: str
    fix: str
    package: str
    buggy: str
    fixed: str
    law: str
    kind: str
    target: dict
    patch: str = ""
    fixed_note: str = ""
    path: str = ""


@dataclasses.dataclass(frozen=True)
class Found:
    """One law's or contract's outcome in the default search."""

    law: str
    status: str
    detail: str
    examples_to_first: int | None = None
    seconds_to_first: float | None = None
    counterexample: str = ""


@dataclasses.dataclass(frozen=True)
class BugResult:
    """What the benchmark established for one bug."""

    id: str
    law: str
    injected: bool
    buggy: str
    twin: str                        # what the twin run was (fixed release, unpatched code, control)
    rediscovered: bool
    through: tuple                   # the laws that were violated in the default search
    examples_to_first: int | None
    seconds_to_first: float | None
    counterexample: str
    twin_status: str
    twin_passes: bool
    twin_detail: str
    searched: tuple                  # every Found of the default search
    setup: tuple                     # what was done to run pinned versions
    seconds: float

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d["searched"] = [dataclasses.asdict(f) for f in self.searched]
        return d


def _entry(path: Path) -> Entry:
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as err:
        raise InvalidArgument(f"--dir: {path}: not valid TOML ({err})") from None
    missing = [k for k in REQUIRED if not data.get(k)]
    if missing:
        raise InvalidArgument(f"--dir: {path}: missing {', '.join(missing)}")
    if data["kind"] not in KINDS:
        raise InvalidArgument(f"--dir: {path}: kind must be one of {KINDS}, got {data['kind']!r}")
    target = data.get("target", {})
    if not isinstance(target, dict):
        raise InvalidArgument(f"--dir: {path}: [target] must be a table")
    need = ("arch",) if data["kind"] == "model" else ("operators", "operator")
    if any(k not in target for k in need):
        raise InvalidArgument(f"--dir: {path}: [target] needs {', '.join(need)} for kind {data['kind']}")
    if data["kind"] == "model" and data["law"] not in ML.LAWS:
        raise InvalidArgument(f"--dir: {path}: law must be one of {', '.join(ML.LAWS)}, got {data['law']!r}")
    if not data.get("fixed") and not data.get("fixed_note") and not data.get("patch"):
        raise InvalidArgument(f"--dir: {path}: no fixed release: say why in fixed_note")
    fields = {f.name for f in dataclasses.fields(Entry)}
    unknown = sorted(set(data) - fields)
    if unknown:
        raise InvalidArgument(f"--dir: {path}: unknown keys {', '.join(unknown)}")
    return Entry(**{"fix": "", "fixed": "", **data, "target": target, "path": str(path)})


def load_entries(directory=None, ids=None) -> list:
    """Every bug file in ``directory`` (default: ``benchmarks/bugs``), or those named by ``ids``."""
    folder = Path(directory) if directory else DEFAULT_DIR
    if not folder.is_dir():
        raise InvalidArgument(f"--dir: {str(folder)!r} is not a folder")
    entries = [_entry(p) for p in sorted(folder.glob("*.toml"))]
    seen = {}
    for e in entries:
        if e.id in seen:
            raise InvalidArgument(f"--dir: id {e.id!r} is in both {seen[e.id]} and {e.path}")
        seen[e.id] = e.path
    if ids:
        unknown = [i for i in ids if i not in seen]
        if unknown:
            raise InvalidArgument(f"--id: unknown {', '.join(unknown)} (known: {', '.join(seen)})")
        entries = [e for e in entries if e.id in ids]
    return entries


def _patch(entry: Entry):
    """The re-injecting context manager ``MODULE_OR_FILE.py:function`` (a .py path relative to the bug file)."""
    where, _, name = entry.patch.rpartition(":")
    if not where or not name:
        raise InvalidArgument(f"--dir: {entry.path}: patch must be MODULE_OR_FILE.py:function, got {entry.patch!r}")
    if where.endswith(".py"):
        path = (Path(entry.path).parent / where).resolve()
        spec = importlib.util.spec_from_file_location(f"tokenlaw_bug_patch_{entry.id.replace('-', '_')}", path)
        if spec is None or not path.is_file():
            raise InvalidArgument(f"--dir: {entry.path}: patch file {str(path)!r} not found")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    fn = getattr(module, name, None)
    if fn is None:
        raise InvalidArgument(f"--dir: {entry.path}: {where} has no function {name!r}")
    return fn


def _found(r: ML.Result) -> Found:
    return Found(r.law, r.status.value, r.detail, r.examples_to_first, r.seconds_to_first,
                 "" if r.counterexample is None else json.dumps(r.counterexample.to_json(), sort_keys=True))


def run_model(entry: Entry, *, examples: int | None = None, seed: int = 0) -> BugResult:
    """A model bug: every applicable law at the buggy release (or patched), the expected law at the twin."""
    t0 = time.perf_counter()
    a = arch(entry.target["arch"])
    dtype = entry.target.get("dtype", "float32")
    n = examples or int(entry.target.get("examples", MODEL_EXAMPLES))
    laws = [name for name, law in ML.LAWS.items() if law.applies(a.traits) is None]
    kw = dict(dtype=dtype, examples=n, seed=seed)
    if entry.patch:
        hf.require()
        with _patch(entry)():
            found = ML.judge_laws(laws, a.build, a.traits, **kw)
        twin = ML.judge(entry.law, a.build, a.traits, **kw)
        buggy, twin_name = f"{ML.transformers.__version__} + re-injected patch", "the same code, unpatched"
    else:
        found = ML.judge_laws(laws, a.build, a.traits, version=entry.buggy, **kw)
        twin = ML.judge(entry.law, a.build, a.traits, version=entry.fixed, **kw)
        buggy, twin_name = entry.buggy, f"fixed release {entry.fixed}"
    by_law = {r.law: r for r in found}
    hit = by_law.get(entry.law)
    again = None
    if hit is not None and hit.counterexample is not None:
        # the twin also judges the very case that shrank at the buggy release
        if entry.patch:
            again = ML.replay(entry.law, a.build, a.traits, hit.counterexample, dtype=dtype, seed=seed)
        else:
            again = ML.replay(entry.law, a.build, a.traits, hit.counterexample, dtype=dtype, seed=seed,
                              version=entry.fixed)
    twin_ok = twin.status is ML.Status.HOLDS and (again is None or again.status is ML.Status.HOLDS)
    twin_detail = twin.detail + ("" if again is None else f"; the shrunk counterexample there: "
                                 f"{again.status.value} ({again.detail})")
    through = tuple(r.law for r in found if r.status is ML.Status.VIOLATED)
    setup = tuple(dict.fromkeys(s for r in [*found, twin] for s in r.setup))
    return BugResult(
        id=entry.id, law=entry.law, injected=bool(entry.patch), buggy=buggy, twin=twin_name,
        rediscovered=entry.law in through, through=through,
        examples_to_first=hit.examples_to_first if hit else None,
        seconds_to_first=hit.seconds_to_first if hit else None,
        counterexample=_found(hit).counterexample if hit else "",
        twin_status=twin.status.value, twin_passes=twin_ok, twin_detail=twin_detail,
        searched=tuple(_found(r) for r in found), setup=setup, seconds=round(time.perf_counter() - t0, 1))


def _counting(contract, clock: dict):
    """``contract`` with its law counting examples and timing the first violation (a new Contract)."""
    fn = contract.fn

    def counted(case):
        v = fn(case)
        clock["n"] += 1
        if v.violated and clock["first"] is None:
            clock["first"] = (clock["n"], time.perf_counter() - clock["t0"])
        return v
    counted.__doc__ = fn.__doc__
    return dataclasses.replace(contract, fn=counted)


def _core_cell(reg, op_name: str, contract_name: str, dtype, examples: int, seed: int) -> Found:
    clock = {"n": 0, "first": None, "t0": time.perf_counter()}
    contract = _counting(reg.contracts[contract_name], clock)
    v = engine.run_cell(reg[op_name], contract, dtype, examples=examples, seed=seed, replay_dir=None)
    first = clock["first"] if v.violated else None
    judged = v.evidence.judged if v.evidence is not None else None
    what = v.detail
    return Found(contract_name, str(v.status), what if judged is None else f"{judged} of {v.examples} examples "
                 f"judged; e.g. {what}",
                 first[0] if first else None, round(first[1], 3) if first else None,
                 json.dumps(v.counterexample, sort_keys=True, default=repr) if v.violated and v.counterexample else "")


def run_core(entry: Entry, *, examples: int | None = None, seed: int = 0) -> BugResult:
    """A core bug: every contract the operator is declared with; the expected one at the control."""
    t0 = time.perf_counter()
    t = entry.target
    reg = runs.registry([t["operators"]])
    if t["operator"] not in reg.names():
        raise InvalidArgument(f"--dir: {entry.path}: {t['operators']} declares no operator {t['operator']!r}")
    dtype = getattr(torch, t.get("dtype", "float32"))
    n = examples or int(t.get("examples", CORE_EXAMPLES))
    op = reg[t["operator"]]
    contracts = [c for c in (*op.claims, *op.violates) if c in reg.contracts]
    found = [_core_cell(reg, op.name, c, dtype, n, seed) for c in contracts]
    hit = next((f for f in found if f.law == entry.law), None)
    through = tuple(f.law for f in found if f.status == "violated")
    control = t.get("control")
    if control:
        twin = _core_cell(reg, control, entry.law, dtype, n, seed)
        twin_name = f"negative control {control} (no fixed release upstream)" if not entry.fixed else \
            f"control {control}"
    else:
        twin, twin_name = Found(entry.law, "not run", "no control declared"), "none"
    return BugResult(
        id=entry.id, law=entry.law, injected=bool(entry.patch), buggy=f"{entry.package} {torch.__version__}",
        twin=twin_name, rediscovered=entry.law in through, through=through,
        examples_to_first=hit.examples_to_first if hit else None,
        seconds_to_first=hit.seconds_to_first if hit else None,
        counterexample=(hit.counterexample + " | " + hit.detail) if hit and hit.counterexample else "",
        twin_status=twin.status, twin_passes=twin.status == "holds", twin_detail=twin.detail,
        searched=tuple(found), setup=(), seconds=round(time.perf_counter() - t0, 1))


def run(entry: Entry, *, examples: int | None = None, seed: int = 0) -> BugResult:
    """Run one bug (module docstring)."""
    with contextlib.ExitStack():
        return (run_model if entry.kind == "model" else run_core)(entry, examples=examples, seed=seed)


def _cell(text) -> str:
    return str(text).replace("|", "/").replace("\n", " ")


def table(results) -> str:
    """The README / report table, one row per bug."""
    rows = ["| bug | law expected | rediscovered unaided (through) | examples / s to first | twin passes |",
            "|---|---|---|---|---|"]
    for r in results:
        first = "-" if r.examples_to_first is None else f"{r.examples_to_first} / {r.seconds_to_first:.1f}"
        mark = " (re-injected)" if r.injected else ""
        rows.append(f"| {r.id}{mark} ({_cell(r.buggy)}) | {r.law} | "
                    f"{'yes' if r.rediscovered else 'no'} ({', '.join(r.through) or 'none'}) | {first} | "
                    f"{'yes' if r.twin_passes else 'NO'}: {_cell(r.twin)} {r.twin_status} |")
    return "\n".join(rows)


def report(results, entries) -> str:
    """The full markdown report: the table, then per bug its links, counterexample, twin and search."""
    by_id = {e.id: e for e in entries}
    out = ["# tokenlaw bugs run", "", table(results), ""]
    for r in results:
        e = by_id[r.id]
        out += [f"## {r.id}", "", e.description, "",
                f"- issue: {e.issue}", f"- fix: {e.fix or '(none upstream)'}",
                *([f"- no fixed release: {e.fixed_note}"] if e.fixed_note else []),
                f"- buggy: {r.buggy}; twin: {r.twin}" + (" — the bug is RE-INJECTED by a patch" if r.injected else ""),
                f"- shrunk counterexample: `{r.counterexample or '(none)'}`",
                f"- rerun: `tokenlaw bugs run --id {r.id}`" + (
                    f"; replay the shrunk case: `tokenlaw hf laws --arch {e.target['arch']} --law {r.law} --dtype "
                    f"{e.target.get('dtype', 'float32')}" + ("" if e.patch else f" --transformers {e.buggy}")
                    + f" --replay '{r.counterexample}'`" if e.kind == "model" and r.counterexample and not e.patch
                    else ""),
                f"- twin: {r.twin_status}: {r.twin_detail}", f"- wall time: {r.seconds} s", "",
                "| law | status | examples / s to first | detail |", "|---|---|---|---|"]
        for f in r.searched:
            first = "-" if f.examples_to_first is None else f"{f.examples_to_first} / {f.seconds_to_first}"
            out.append(f"| {f.law} | {f.status} | {first} | {_cell(f.detail)[:160]} |")
        if r.setup:
            out += ["", "pinned versions:", *[f"- {s}" for s in r.setup]]
        out.append("")
    return "\n".join(out)
