"""``tokenlaw prove``: the symbolic tier from the command line (a thin call into the prover).

    tokenlaw prove [--operator X] [--contract Y] [--timeout S] [--out DIR] [--json]

Writes DIR/proofs.md and DIR/proofs.json.  Exit code 0 when every row matches
its declaration: unknown, vacuous, not-traceable and not-runnable rows are
reported (with the reason, or the file:line of the untraceable code), not
failures; a row that holds only for sampled weights is a pass but never reads
"proved".  1 when a claimed law is refuted, an expected violation is proved
away (or holds for the sampled weights), or a counterexample does not replay on
the eager code; 2 for bad arguments.
"""
from __future__ import annotations

import json
import sys

from tokenlaw.reports import proofs, runs

from .exits import EXIT_FAIL, EXIT_OK
from .progress import Progress


def register(subparsers):
    sp = subparsers.add_parser("prove", help="prove / refute declared contracts with z3 (reals) and write reports/proofs.{md,json}")
    sp.add_argument("--operator", action="append", help="only this operator (repeatable)")
    sp.add_argument("--contract", action="append", help="only this contract (repeatable)")
    sp.add_argument("--timeout", type=float, default=5.0, help="seconds per solver query (default 5)")
    sp.add_argument("--out", default="reports", help="report directory (default: ./reports)")
    sp.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    sp.set_defaults(func=cmd_prove)


def prove_settings(args) -> runs.ProveSettings:
    """The parsed ``prove`` arguments as the library's settings."""
    return runs.ProveSettings(operators=args.operator, contracts=args.contract, timeout=args.timeout, out=args.out,
                              operator_modules=getattr(args, "operators_module", None))


def cmd_prove(args) -> int:
    settings = prove_settings(args)
    total = runs.planned_count(settings)
    stream, done = Progress(sys.stdout), [0]

    def progress(row, v):
        done[0] += 1
        if not args.json:
            stream.write(f"[{done[0]:4d}/{total}] {row.id:<44} {v.status:<12} {v.seconds:6.2f}s\n")

    doc = runs.prove(settings, progress=progress)
    stream.close_line()
    md, js = proofs.write_doc(doc, args.out)
    bad = proofs.failing(doc.rows)
    seconds = doc.meta["seconds"]
    if args.json:
        print(json.dumps({"report": str(js), "markdown": str(md), "rows": len(doc.rows), "seconds": seconds,
                          "failing": [{"id": r.id, "outcome": r.outcome} for r in bad]}, indent=1))
    else:
        print(f"\n{len(doc.rows)} rows in {seconds:.1f}s, {len(bad)} failing; wrote {md} and {js}")
        for r in bad:
            print(f"  {r.outcome}: {r.id}")
    return EXIT_FAIL if bad else EXIT_OK
