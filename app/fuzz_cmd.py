"""Subcommands of the fuzz tier: ``replay``, ``report merge`` and ``mutate`` (thin calls, no logic).

Exit codes follow ``tokenlaw``'s: 0 success (replay reproduced; merged
report passes; every mutant killed), 1 a failure (replay differs; a row
fails; a mutant survived), 2 bad arguments, 4 a merged report undecided.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from tokenlaw.app.progress import Progress
from tokenlaw.fuzz.mutants.seeded import catalogue
from tokenlaw.fuzz.mutants.mutate import run_mutants
from tokenlaw.fuzz.replay import load, replay, replay_dir
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.orchestration.runs import registry as load_registry
from tokenlaw.process import command_line
from tokenlaw.properties import backends
from tokenlaw.properties.catalogue import default_registry
from tokenlaw.properties.mutants import select
from tokenlaw.reports import document, formats, verification, writers
from tokenlaw.reports.mutations import MutationReport
from tokenlaw.orchestration import counterexamples

from .exits import EXIT_FAIL, EXIT_OK, of_result


def cmd_replay(args) -> int:


    directory = replay_dir(args.replays)
    try:
        art = load(args.id, directory)
    except InvalidArgument:
        raise
    except (ValueError, TypeError, KeyError, UnicodeDecodeError) as err:   # json.JSONDecodeError is a ValueError
        raise InvalidArgument(f"id: {args.id!r} in {str(directory)!r} is not a readable replay artifact "
                              f"({type(err).__name__}: {str(err).splitlines()[0][:120]})") from None
    if getattr(args, "python", False):
        print(counterexamples.snippet(art, getattr(args, "operators_module", None) or ()))
        return EXIT_OK
    registry = load_registry(getattr(args, "operators_module", None))     # --operators: artifacts of operators declared outside tokenlaw
    if art.operator not in registry:
        raise InvalidArgument(f"id: {args.id!r} replays operator {art.operator!r}, which this run does not collect; "
                              "pass the module that declares it: tokenlaw --operators MODULE replay ID")
    try:
        res = replay(args.id, directory, registry=registry, mutants=mutant_catalogue(subtle=True))
    except (KeyError, TypeError, AttributeError) as err:
        raise InvalidArgument(f"id: the artifact {args.id!r} does not describe a case this tokenlaw can rebuild "
                              f"({type(err).__name__}: {err}); was it written by another version?") from None
    art, v = res.artifact, res.verdict
    if args.json:
        print(json.dumps({"id": art.id, "reproduced": res.reproduced, "same_verdict": res.same_verdict,
                          "same_inputs": res.same_inputs, "stored": art.verdict, "now": v.to_json()}, indent=1))
    else:
        print(f"{art.id}: {art.operator} / {art.contract} / {art.dtype} / {art.backend}"
              + (f" / mutant {art.mutant}" if art.mutant else ""))
        print(f"  stored : {art.verdict['status']}  discrepancy {float.fromhex(art.verdict['discrepancy']):.17g}"
              f"  bound {float.fromhex(art.verdict['bound']):.17g}")
        print(f"  now    : {v.status}  discrepancy {v.discrepancy:.17g}  bound {v.bound:.17g}")
        print(f"  {v.detail}")
        print("  reproduced bit-for-bit" if res.reproduced else
              f"  NOT reproduced (same verdict: {res.same_verdict}, same inputs: {res.same_inputs})")
    if getattr(args, "expect_fixed", False):
        # a fix: the same inputs, and the law no longer violated on them (a changed detail alone is no fix)
        fixed = res.same_inputs and not v.violated
        if not args.json:
            print("  FIXED: the stored example no longer violates the law" if fixed else
                  "  NOT FIXED: " + ("the example still violates the law" if v.violated else
                                     "the regenerated inputs differ from the stored ones"))
        return EXIT_OK if fixed else EXIT_FAIL
    return EXIT_OK if res.reproduced else EXIT_FAIL


def cmd_merge(args) -> int:

    command_line.writable_dir(args.out, "--out")
    merged = verification.combine_or_merge(document.load_reports(args.reports), [str(p) for p in args.reports])
    if isinstance(merged, verification.Verification):          # several tiers: the combined view
        paths = formats.write(merged, Path(args.out), formats.VERIFICATION, stem="verification")
        md, js = paths["verification-md"], paths["verification-json"]
        view = merged.to_json()
        summ, what = view["summary"], verification.headline(merged)
        outcome = {r["id"]: r["outcome"] for r in view["rows"]}
    else:
        paths = formats.write(merged, Path(args.out))
        md, js = paths["md"], paths["json"]
        summ = merged.summary()
        what, outcome = writers.claimed_line(summ), {r.id: r.outcome for r in merged.rows}
    if args.json:
        print(json.dumps({"report": str(js), "markdown": str(md), "rows": summ["rows"], "result": summ["result"],
                          "failing": [{"id": i, "outcome": outcome[i]} for i in summ["failing"]],
                          "undecided": [{"id": i, "outcome": outcome[i]} for i in summ["undecided"]]}, indent=1))
        return of_result(summ["result"])
    print(f"merged {len(args.reports)} reports: {summ['rows']} rows, {len(summ['failing'])} failing; wrote {md} and {js}")
    print(f"{summ['result']}: {what}")
    for i in summ["failing"] + summ["undecided"]:
        print(f"  {outcome[i]}: {i}")
    return of_result(summ["result"])


def cmd_mutate(args) -> int:



    mutants = mutant_catalogue(backend=args.backend, subtle=bool(args.mutant))     # a subtle one only when named
    if args.mutant:
        known = {m.name for m in mutants}
        for name in args.mutant:
            if name not in known:
                raise command_line.closest(name, known, "--mutant")
        mutants = tuple(m for m in mutants if m.name in args.mutant)
    left_out = []
    if args.backend is None and not args.mutant and not args.list:
        # Plain `tokenlaw mutate`: run what this machine can run, say what it leaves out.
        unavailable = {m.backend: backends.get(m.backend).available() for m in mutants}
        runnable = tuple(m for m in mutants if not unavailable[m.backend])
        left_out = [m for m in mutants if m not in runnable]
        mutants = runnable
    if args.list:
        for m in mutants:
            print(f"{m.name:<36} [{m.backend}] {', '.join(m.operators)}: {m.description}")
        return EXIT_OK
    if not mutants:
        raise InvalidArgument(f"--backend {args.backend}: no mutants of that backend are available")
    for name in sorted({m.backend for m in left_out}):
        of = [m.name for m in left_out if m.backend == name]
        print(f"tokenlaw mutate: left out {len(of)} mutant(s) of the {name} backend ({', '.join(of)}): "
              f"{unavailable[name]}; then `tokenlaw mutate --backend {name}`", file=sys.stderr)
    command_line.writable_dir(args.out, "--out")
    results, baseline = run_mutants(default_registry(), mutants, examples=args.examples, seed=args.seed,
                                    workers=args.workers, replay_dir=args.replays,
                                    stream=Progress(units=(len(mutants), "  ")))
    report = MutationReport(tuple(results), frozenset(baseline), dict(examples=args.examples, seed=args.seed))
    paths = formats.write(report, Path(args.out), formats.MUTATION, stem="mutation")
    md, js = paths["mutation-md"], paths["mutation-json"]
    killed = sum(r.killed for r in results)
    if args.json:
        print(json.dumps({"report": str(js), "markdown": str(md), "mutants": len(results), "killed": killed,
                          "survived": [r.name for r in results if not r.killed],
                          "left_out": [m.name for m in left_out]}, indent=1))
        return EXIT_OK if killed == len(results) else EXIT_FAIL
    print(f"\n{killed}/{len(results)} mutants killed; wrote {md} and {js}")
    for r in results:
        print(f"  {'killed  ' if r.killed else 'SURVIVED'} {r.name:<36} {', '.join(r.killers) or '-'}")
    return EXIT_OK if killed == len(results) else EXIT_FAIL


def mutant_catalogue(*, backend: str | None = None, subtle: bool = False) -> tuple:
    """Every mutant of ``backend`` (None: all): the eager catalogue (``subtle``: its subtle mutants too), then
    each backend plug-in's own (``Backend.mutants()``: what it declares, e.g. none when its optional dependency
    is missing)."""
    plugins = tuple(m for name in backends.names() if name != backends.EAGER.name
                    for m in backends.get(name).mutants())
    return select(catalogue(subtle=subtle) + plugins, backend=backend)
