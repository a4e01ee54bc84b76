"""``tokenlaw verify``: the fuzz check and the symbolic prove of one selection, and one combined report.

    tokenlaw verify [--operator X] [--contract Y] [--dtype D] [--profile P] [--examples N] [--seed S]
                    [--workers W] [--timeout T] [--out DIR] [--json]

Writes DIR/conformance.*, DIR/proofs.{md,json} (each tier's own report) and
DIR/verification.{md,json}: per row what each tier established, green only if no
tier refuted it (``reports.verification``).  Exit code: 0 PASS, 1 a row is red in
some tier, 4 undecided (a claimed row unknown / vacuous / trace differs in some
tier, or nothing established), 2 bad arguments.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from tokenlaw.orchestration import runs
from tokenlaw.reports import formats, verification, writers
from tokenlaw.properties.verdict import Tier

from . import selection, stopped
from .exits import of_result
from .progress import Progress


def cmd_verify(args) -> int:
    modules = getattr(args, "operators_module", None)
    check = runs.CheckSettings(operators=selection.operators(args), contracts=args.contract, dtypes=args.dtype,
                               profile=args.profile, examples=args.examples, seed=args.seed, workers=args.workers,
                               out=args.out, operator_modules=modules)
    prove = runs.ProveSettings(operators=selection.operators(args), contracts=args.contract, timeout=args.timeout, out=args.out,
                               operator_modules=modules, workers=args.workers)
    try:
        conformance, proved, ver = runs.verify(check, prove, progress=not args.json, stream=Progress())
    except runs.Interrupted as stop:
        # Ctrl-C (issue 47): each tier's report of what it judged, marked interrupted (the combined view is
        # not made from a tier cut short), then 130; a verification.* of an earlier run is marked as such
        marker = writers.mark_interrupted(Path(args.out), "verification", stopped.command_line(args))
        if marker is not None:
            print(f"tokenlaw: the verification report in {args.out} is from an earlier run (marked: {marker})",
                  file=sys.stderr)
        return stopped.report(args, [(doc, prove.write if doc.meta.tier is Tier.SYMBOLIC else check.write)
                                     for doc in stop.docs])
    paths = formats.write(conformance, args.out, stem=check.stem, also=[proved])   # law table: both tiers
    formats.write(proved, args.out, formats.PROOFS, stem="proofs")
    written = formats.write(ver, args.out, formats.VERIFICATION, stem="verification")
    md, js = written["verification-md"], written["verification-json"]
    view = ver.to_json()
    summ = view["summary"]
    picked = [r for r in view["rows"] if r["combined"] in ("red", "undecided")]
    if args.json:
        print(json.dumps({"report": str(js), "markdown": str(md), "conformance": str(paths["json"]),
                          "proofs": str(js.with_name("proofs.json")), "rows": summ["rows"],
                          "result": summ["result"], "headline": verification.headline(ver),
                          "claimed": summ["claimed"], "combined": summ["combined"],
                          "failing": [{"id": r["id"], "outcome": r["outcome"]} for r in picked
                                      if r["combined"] == "red"],
                          "undecided": [{"id": r["id"], "outcome": r["outcome"]} for r in picked
                                        if r["combined"] == "undecided"]}, indent=1))
    else:
        print(f"\n{summ['result']}: {verification.headline(ver)}")
        print(f"wrote {md} and {js} (and each tier's report beside them)")
        for r in picked:
            print(f"  {r['combined']}: {r['id']}: " + "; ".join(f"{t} {x['says']}" for t, x in r["tiers"].items()))
    return of_result(summ["result"])
