"""``tokenlaw list`` and ``tokenlaw check``: the registry's table and the fuzz tier's run (thin calls).

Their arguments are parsed by the light ``check_args``; ``cli.main`` imports this
module only when one of the two runs.
"""
from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from tokenlaw.properties import verdict as V
from tokenlaw.orchestration import provenance, runs
from tokenlaw.reports import writers

from . import selection, stopped
from .stopped import command_line
from .exits import EXIT_OK, of_result
from .progress import Progress


def _registry(args):
    return runs.registry(getattr(args, "operators_module", None))


def cmd_list(args) -> int:

    reg = _registry(args)
    if args.json:
        print(json.dumps({
            "operators": [{"name": op.name, "traits": sorted(op.traits), "claims": op.claims, "violates": op.violates,
                           "bindings": provenance.bindings(op), "source": op.source} for op in reg],
            "contracts": {n: {"law": c.law, "exact": c.exact, "requires": sorted(c.requires), "dtypes": list(c.dtypes)}
                          for n, c in reg.contracts.items()},
        }, indent=1))
        return EXIT_OK
    print("Contracts:")
    for n, c in reg.contracts.items():
        print(f"  {n:<26} {'exact    ' if c.exact else 'tolerance'}  {c.law}")
    print("\nOperators (+ claims, - expected to violate):")
    for op in reg:
        print(f"  {op.name:<16} [{', '.join(sorted(op.traits))}]")
        for n, why in op.claims.items():
            print(f"      + {n:<26} {why}")
        for n, why in op.violates.items():
            print(f"      - {n:<26} {why}")
    return EXIT_OK


def check_settings(args) -> runs.CheckSettings:
    """The parsed ``check`` arguments as the library's settings."""
    return runs.CheckSettings(operators=selection.operators(args), contracts=args.contract, dtypes=args.dtype,
                              backend=args.backend, profile=args.profile, examples=args.examples, seed=args.seed,
                              workers=args.workers, scheduler=args.scheduler, shard=args.shard, database=args.database, replays=args.replays,
                              out=args.out, operator_modules=getattr(args, "operators_module", None),
                              mutant=getattr(args, "mutant", None))


def cmd_check(args) -> int:
    settings = check_settings(args)
    try:
        doc = runs.check(settings, progress=args.progress == "on" or (args.progress == "auto" and not args.json),
                         stream=Progress())
    except runs.Interrupted as stop:
        # Ctrl-C (issue 47): the report of the rows judged, marked interrupted, written whole, then 130
        return stopped.report(args, [(stop.doc, settings.write)])
    except KeyboardInterrupt:
        # stopped before any cell ran: the reports already in --out are an earlier run's; say so beside them
        marker = writers.mark_interrupted(Path(args.out), settings.stem, command_line(args))
        if marker is not None:
            print(f"tokenlaw: the reports in {args.out} are from an earlier run (marked: {marker})", file=sys.stderr)
        raise
    # the command line as typed, for the report's first screen (the settings it fixed are recorded apart)
    doc = dataclasses.replace(doc, meta=doc.meta.with_command(command_line(args)))
    paths = settings.write(doc)
    summ = doc.summary()
    outcome = {r.id: r.outcome for r in doc.rows}
    if args.json:
        print(json.dumps({"report": str(paths["json"]), "markdown": str(paths["md"]), "junit": str(paths["xml"]),
                          "html": str(paths["html"]), "timings": str(paths["timings"]), "rows": len(doc.rows),
                          "result": summ["result"], "claimed": summ["claimed"],
                          "failing": [{"id": i, "outcome": outcome[i]} for i in summ["failing"]],
                          "undecided": [{"id": i, "outcome": outcome[i]} for i in summ["undecided"]]}, indent=1))
    else:
        print(f"\n{summ['result']}: {writers.claimed_line(summ)}")
        print(f"{writers.rows_word(len(doc.rows))}, {len(summ['failing'])} failing; wrote {', '.join(str(p) for p in paths.values())}")
        rows = {r.id: r for r in doc.rows}
        for i in summ["failing"] + summ["undecided"]:
            print(f"  {outcome[i]}: {i}")
            failed = [c.verdict for c in rows[i].cells if c.verdict is not None and c.verdict.violated]
            if failed and failed[0].status == V.Status.RAISED:
                print(f"      {failed[0].detail}")
            if failed and failed[0].replay:
                print(f"      replay: {writers.replay_command(failed[0].replay, doc.meta)}")
        for c in writers.not_runnable_cells(doc.rows):
            print(f"  not runnable here: {c.id}: {c.verdict.detail}")
        designed = sum(1 for c in doc.cells
                       if c.verdict is not None and c.verdict.status == V.Status.NOT_APPLICABLE_BY_DESIGN)
        if designed:
            print(f"  {writers.counted(designed, 'cell')} not applicable by design (each reason listed once in "
                  "the report)")
    return of_result(summ["result"])


