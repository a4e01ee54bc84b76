"""``tokenlaw hf sweep``: every causal-LM architecture of the installed ``transformers`` under the model laws.

:func:`run` builds each architecture tiny (:func:`tokenlaw.integrations.hf.sweep.facts_cell`), then
judges each (architecture × law × dtype) cell (:func:`~tokenlaw.integrations.hf.sweep.law_cell`) on
the Dask path campaigns use (:class:`~tokenlaw.fuzz.cluster.Pool`: ``--workers N`` local processes or
``--scheduler tcp://HOST:8786``), triages each violation and returns the report document;
:func:`main` writes it as ``sweep.md`` and ``sweep.json`` under ``--out``.  The wall time, the CPU time
the cells used (summed over the workers) and the machine's load average are part of the report: a
shared machine's contention is stated, not hidden.

Example::

    $ tokenlaw hf sweep --arch llama gpt2 --laws causality --examples 4 --out /tmp/sweep
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

from tokenlaw.fuzz.cluster import Pool

from tokenlaw.integrations.hf import model_laws, require
from tokenlaw.integrations.hf import sweep as cells
from tokenlaw.integrations.hf import zoo
from tokenlaw.operators import arguments
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.process.files import atomic_write

DEFAULT_OUT = "reports/hf-sweep"
EXAMPLES = 6


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The sweep's options (``tokenlaw hf sweep --help``)."""
    p.add_argument("--arch", nargs="+", default=["all"], help="architectures (model_type), or all (default)")
    p.add_argument("--laws", nargs="+", default=None, help=f"laws (default: all of {', '.join(model_laws.LAWS)})")
    p.add_argument("--dtype", nargs="+", default=list(model_laws.DTYPES), help="float64 and/or float32")
    p.add_argument("--examples", type=int, default=EXAMPLES, help=f"examples per cell (default {EXAMPLES})")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=2, help="local Dask worker processes (1: in this process)")
    p.add_argument("--scheduler", default=None, help="a running Dask scheduler (tcp://HOST:8786)")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"report folder (default {DEFAULT_OUT})")
    p.add_argument("--list", action="store_true", help="list the architectures and exit")
    p.add_argument("--amend", action="store_true",
                   help="run --arch and replace their rows in the report already in --out (stated in its meta)")
    p.add_argument("--amend-with", default=None, metavar="DIR",
                   help="merge the sweep already in DIR (run apart, e.g. on another machine) into --out's report, "
                        "as --amend would have run it (its command, time and load stated)")
    p.add_argument("--why", default="", help="with --amend: why those rows were re-run (stated in the report)")
    p.add_argument("--from-log", type=float, default=None, metavar="WALL_S",
                   help="render the report from --out's cells.jsonl of a sweep still running or stopped "
                        "(partial: the cells not yet judged are marked -); WALL_S: its wall time so far")
    p.add_argument("--resume", action="store_true",
                   help="keep the cells already in --out's cells.jsonl whose architecture's traits are unchanged "
                        "and that built; judge the rest")
    p.add_argument("--retriage", action="store_true",
                   help="re-triage and re-render the report already in --out (after a finding is added)")
    return p


def main(args) -> int:
    """Run the sweep from parsed ``args`` (or a list of strings) and write its report; 0, or 1 if untriaged."""
    if not isinstance(args, argparse.Namespace):
        args = add_arguments(argparse.ArgumentParser(prog="tokenlaw hf sweep")).parse_args(args)
    require()
    if args.list:
        for a in zoo.architectures():
            print(f"{a.name:32} {a.class_name}")
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if getattr(args, "from_log", None) is not None:
        return _write(from_log(out / "cells.jsonl", args, wall_s=args.from_log), out, getattr(args, 'json', False))
    if args.retriage:
        if not (out / "sweep.json").is_file():
            raise InvalidArgument(f"--retriage: no sweep.json in --out {out}")
        doc = retriage(json.loads((out / "sweep.json").read_text()))
        return _write(doc, out, getattr(args, 'json', False))
    if getattr(args, "amend_with", None):
        for where, flag in ((out, "--out"), (Path(args.amend_with), "--amend-with")):
            if not (where / "sweep.json").is_file():
                raise InvalidArgument(f"{flag}: no sweep.json in {where}")
        doc = amend(json.loads((out / "sweep.json").read_text()),
                    json.loads((Path(args.amend_with) / "sweep.json").read_text()), why=getattr(args, "why", "") or "")
        return _write(doc, out, getattr(args, 'json', False))
    if args.amend and not (out / "sweep.json").is_file():
        raise InvalidArgument(f"--amend: no sweep.json in --out {out}")
    doc = run(archs=args.arch, laws=args.laws, dtypes=args.dtype, examples=args.examples, seed=args.seed,
              workers=args.workers, scheduler=args.scheduler, command="tokenlaw hf sweep " + _argv(args),
              log=out / ("amend.jsonl" if args.amend else "cells.jsonl"),
              resume=_logged(out / "cells.jsonl") if getattr(args, "resume", False) else None)
    if args.amend:
        doc = amend(json.loads((out / "sweep.json").read_text()), doc, why=getattr(args, "why", "") or "")
    return _write(doc, out, getattr(args, 'json', False))


def amend(base: dict, new: dict, why: str = "") -> dict:
    """``base`` with what ``new`` ran replaced by ``new``'s rows: the architectures' facts, and their cells of
    the laws and dtypes ``new`` ran (``--amend --laws window_locality`` keeps the other laws' cells); its
    meta lists the amendment."""
    names = {a["arch"] for a in new["architectures"]}
    scope = {(law, d) for law in new["meta"]["laws"] for d in new["meta"]["dtypes"]}
    order = [a["arch"] for a in base["architectures"]]
    archs = {a["arch"]: a for a in base["architectures"]}
    archs.update({a["arch"]: a for a in new["architectures"]})
    built = {n for n in names if archs[n]["built"]}
    cells_ = [c for c in base["cells"] if c["arch"] not in names
              or (c["arch"] in built and (c["law"], c["dtype"]) not in scope)] + new["cells"]
    rank = {n: i for i, n in enumerate(order)}
    meta = dict(base["meta"])
    meta["laws"] = list(meta["laws"]) + [law for law in new["meta"]["laws"] if law not in meta["laws"]]
    meta["dtypes"] = list(meta["dtypes"]) + [d for d in new["meta"]["dtypes"] if d not in meta["dtypes"]]
    cells_.sort(key=lambda c: (rank.get(c["arch"], len(rank)), meta["laws"].index(c["law"]),
                               meta["dtypes"].index(c["dtype"])))
    meta["amended"] = list(meta.get("amended", [])) + [
        {k: new["meta"][k] for k in ("command", "wall_s", "cpu_s", "load_start", "load_end", "laws")}
        | {"archs": sorted(names), "why": why}]
    doc = dict(meta=meta, architectures=[archs[n] for n in order], cells=cells_)
    return retriage(doc)


def from_log(log: Path, args, *, wall_s: float) -> dict:
    """A partial report from a sweep's ``cells.jsonl``: what was judged so far, the rest marked not judged."""
    import transformers  # optional: require() was called by main
    rows = [json.loads(line) for line in Path(log).read_text().splitlines() if line.strip()]
    facts = [r for r in rows if "built" in r]
    judged = [r for r in rows if "status" in r]
    laws = list(model_laws.LAWS) if args.laws is None else list(args.laws)
    expected = sum(f["built"] for f in facts) * len(laws) * len(args.dtype)
    cpu = sum(r.get("cpu", 0.0) for r in rows)
    meta = dict(command="tokenlaw hf sweep " + _argv(args), transformers=transformers.__version__,
                torch=torch.__version__, laws=laws, dtypes=list(args.dtype), examples=args.examples, seed=args.seed,
                workers=args.workers, scheduler=args.scheduler, cores=os.cpu_count(), wall_s=wall_s,
                cpu_s=round(cpu, 1), load_start="see partial", load_end=_load(),
                partial=f"{len(judged)} of {expected} cells judged when this report was rendered from the "
                        f"running sweep's cells.jsonl; the others are marked -")
    doc = dict(meta=meta, architectures=facts, cells=judged)
    names = [f["arch"] for f in facts]
    judged.sort(key=lambda c: (names.index(c["arch"]), laws.index(c["law"]), meta["dtypes"].index(c["dtype"])))
    return retriage(doc)


def retriage(doc: dict) -> dict:
    """The document with every violated cell triaged again (the judged verdicts unchanged)."""
    traits = {a["arch"]: a["traits"] for a in doc["architectures"] if a["built"]}
    for c in doc["cells"]:
        c.pop("triage", None)
        if c["status"] == "violated":
            c["triage"] = cells.triage(c, traits[c["arch"]])
    doc["counts"] = cells.counts(doc["architectures"], doc["cells"])
    return doc


def _write(doc: dict, out: Path, as_json: bool = False) -> int:
    atomic_write(out / "sweep.json", json.dumps(doc, indent=1, sort_keys=True) + "\n")
    atomic_write(out / "sweep.md", cells.render(doc))
    n = doc["counts"]
    if as_json:
        print(json.dumps({"counts": n, "wall_s": doc["meta"]["wall_s"], "cpu_s": doc["meta"]["cpu_s"],
                          "report": str(out / "sweep.md"), "json": str(out / "sweep.json")}, indent=1))
    else:
        print(f"hf sweep: {n['architectures']} architectures, {n['built']} built, {n['not_built']} not built; "
              f"violations {n['violations'] or 'none'}; {doc['meta']['wall_s']:.0f} s wall, "
              f"{doc['meta']['cpu_s']:.0f} s CPU -> {out / 'sweep.md'}")
    return 1 if n["violations"].get("untriaged") else 0


def run(*, archs=("all",), laws=None, dtypes=model_laws.DTYPES, examples=EXAMPLES, seed=0, workers=2,
        scheduler=None, command="", stream=sys.stderr, log=None, resume=None) -> dict:
    """The sweep's report document: meta (versions, time, load), architectures, cells, counts.

    log: a file that gets each result as a JSON line as it arrives (a long sweep's partial record);
    resume: the rows of an earlier log: its cells are kept where the architecture's traits read now are the
    same and the cell built (the others are judged again).
    """
    import transformers  # optional: require() above says how to install it
    laws = list(model_laws.LAWS) if laws is None else list(laws)
    for law in laws:
        if law not in model_laws.LAWS:
            raise InvalidArgument(f"--laws: expected names from {', '.join(model_laws.LAWS)}, got {law!r}")
    for d in dtypes:
        if d not in model_laws.DTYPES:
            raise InvalidArgument(f"--dtype: expected float64 and/or float32, got {d!r}")
    examples = arguments.count(examples, "examples")
    names = [a.name for a in zoo.architectures(archs)]
    load_start = _load()
    w0, c0 = time.perf_counter(), time.process_time()
    if log is not None:
        Path(log).write_text("")
    with _executor(workers, scheduler, log) as ex:
        facts = ex.map(cells.facts_cell, [(n,) for n in names], stream, "built")
        built = [f for f in facts if f["built"]]
        kept = _kept(resume, built, laws, dtypes, examples, seed) if resume else {}
        if stream and resume:
            stream.write(f"  resumed: {len(kept)} cells kept from the earlier log\n")
        if log is not None:
            with open(log, "a") as f:
                f.writelines(json.dumps(r, sort_keys=True) + "\n" for r in kept.values())
        tasks = [(f["arch"], law, d, examples, seed) for f in built for law in laws for d in dtypes
                 if (f["arch"], law, d) not in kept]
        judged = list(kept.values()) + ex.map(cells.law_cell, tasks, stream, "judged")
    traits = {f["arch"]: f["traits"] for f in built}
    for c in judged:
        if c["status"] == "violated":
            c["triage"] = cells.triage(c, traits[c["arch"]])
    order = {n: i for i, n in enumerate(names)}
    facts.sort(key=lambda f: order[f["arch"]])
    judged.sort(key=lambda c: (order[c["arch"]], laws.index(c["law"]), list(dtypes).index(c["dtype"])))
    cpu = time.process_time() - c0 + sum(f["cpu"] for f in facts) + sum(c["cpu"] for c in judged)
    meta = dict(command=command, transformers=transformers.__version__, torch=torch.__version__,
                laws=laws, dtypes=list(dtypes), examples=examples, seed=seed, workers=workers,
                scheduler=scheduler, cores=os.cpu_count(), wall_s=round(time.perf_counter() - w0, 1),
                cpu_s=round(cpu, 1), load_start=load_start, load_end=_load(),
                resumed=len(kept) if resume else 0)
    return dict(meta=meta, architectures=facts, cells=judged, counts=cells.counts(facts, judged))


def _logged(path: Path) -> list:
    if not path.is_file():
        raise InvalidArgument(f"--resume: no cells.jsonl in --out {path.parent}")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _kept(rows: list, built: list, laws, dtypes, examples, seed) -> dict:
    """(arch, law, dtype) -> an earlier cell still valid: same traits now, same examples and seed, built."""
    then = {r["arch"]: r.get("traits") for r in rows if "built" in r}
    now = {f["arch"]: json.loads(json.dumps(f["traits"])) for f in built}     # tuples as the log has them
    return {(r["arch"], r["law"], r["dtype"]): r for r in rows
            if "status" in r and r["status"] != "could not build" and then.get(r["arch"]) == now.get(r["arch"])
            and r["law"] in laws and r["dtype"] in dtypes and r.get("examples", 0) <= examples}


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _argv(args) -> str:
    parts = ["--arch", *args.arch]
    if args.laws:
        parts += ["--laws", *args.laws]
    return " ".join(parts + ["--dtype", *args.dtype, "--examples", str(args.examples), "--seed", str(args.seed),
                             "--workers", str(args.workers)])


class _executor:
    """Cells run here (``workers`` 1, no scheduler) or as Dask tasks on :class:`~tokenlaw.fuzz.cluster.Pool`."""

    def __init__(self, workers, scheduler, log=None):
        self.workers, self.scheduler, self.log, self.pool = workers, scheduler, log, None

    def __enter__(self):
        if self.workers > 1 or self.scheduler is not None:
            self.pool = Pool(self.workers, self.scheduler).__enter__()
        return self

    def __exit__(self, *exc):
        if self.pool is not None:
            self.pool.__exit__(*exc)
        return False

    def map(self, fn, tasks, stream, verb) -> list:
        """``fn(*task)`` for every task, as they finish, with a progress line per result."""
        out, t0 = [], time.perf_counter()
        if self.pool is None:
            results = (fn(*t) for t in tasks)
        else:
            from distributed import as_completed  # optional: only a Dask run needs it (as fuzz.cluster)
            client = self.pool.client
            futures = [client.submit(fn, *t, pure=False, priority=-k) for k, t in enumerate(tasks)]
            results = (f.result() for f in as_completed(futures, loop=client.loop))
        for k, r in enumerate(results, 1):
            out.append(r)
            if self.log is not None:
                with open(self.log, "a") as f:
                    f.write(json.dumps(r, sort_keys=True) + "\n")
            if stream:
                what = r.get("status") or ("built" if r.get("built") else "not built")
                stream.write(f"  [{verb} {k}/{len(tasks)} {time.perf_counter() - t0:6.0f}s] {r['arch']} "
                             f"{r.get('law', '')} {r.get('dtype', '')} {what}\n")
                stream.flush()
        return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
