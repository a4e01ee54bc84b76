"""``tokenlaw prove``: the symbolic tier from the command line (a thin call into the prover).

    tokenlaw prove [--operator X] [--contract Y] [--timeout S] [--workers W | --scheduler ADDR] [--out DIR] [--json]

Writes DIR/proofs.md and DIR/proofs.json; the headline says "proved P of C
claimed rows" and lists the claimed rows with no symbolic form by contract.
Exit code (``reports.document.standing``): 0 when nothing fails, no claimed row
is undecided and at least one claimed row is proved (claimed rows with no
symbolic form or not symbolically traceable are listed, with the reason or the
file:line, not failures; a row that holds only for sampled weights is a pass
but never reads "proved"); 1 when a claimed law is refuted, an expected
violation is proved away (or holds for the sampled weights), a counterexample
is outside what the eager code accepts (domain mismatch) or does not replay on
the eager code; 4 (undecided) when nothing fails but a claimed row is unknown,
vacuous or its trace differs from eager, or no claimed row at all is proved;
2 for bad arguments.
"""
from __future__ import annotations

import json
import sys

from tokenlaw.orchestration import runs
from tokenlaw.reports import proofs
from tokenlaw.reports.text import rows_word

from . import selection, stopped
from .exits import of_result
from .progress import Progress


def prove_settings(args) -> runs.ProveSettings:
    """The parsed ``prove`` arguments as the library's settings."""
    return runs.ProveSettings(operators=selection.operators(args), contracts=args.contract, timeout=args.timeout, out=args.out,
                              operator_modules=getattr(args, "operators_module", None), workers=args.workers,
                              scheduler=args.scheduler)


def cmd_prove(args) -> int:
    settings = prove_settings(args)
    total = runs.planned_count(settings)
    stream, done = Progress(sys.stdout), [0]

    def progress(row, v):
        done[0] += 1
        if not args.json:
            stream.write(f"[{done[0]:4d}/{total}] {row.id:<44} {v.status:<12} {v.seconds:6.2f}s\n")

    try:
        doc = runs.prove(settings, progress=progress)
    except runs.Interrupted as stop:
        # Ctrl-C (issue 47): the rows proved so far, marked interrupted, written whole, then 130 (as check)
        stream.close_line()
        return stopped.report(args, [(stop.doc, settings.write)])
    stream.close_line()
    paths = settings.write(doc)
    md, js = paths["proofs-md"], paths["timed-json"]
    st = proofs.standing(doc)
    seconds = doc.meta.run.execution.seconds
    if args.json:
        print(json.dumps({"report": str(js), "markdown": str(md), "rows": len(doc.rows), "seconds": seconds,
                          "headline": proofs.headline(st), **st.to_json(),
                          "failing": [{"id": r.id, "outcome": r.outcome} for r in proofs.failing(doc.rows)]},
                         indent=1))
    else:
        print(f"\n{st.result}: {proofs.headline(st)}")
        print(f"{len(doc.rows)} rows in {seconds:.1f}s; wrote {md} and {js}")
        for r in proofs.failing(doc.rows):
            print(f"  {r.outcome}: {r.id}")
        for i, out in st.undecided.items():
            print(f"  {out}: {i}")
        for contract, by in st.no_symbolic_form.items():
            print(f"  no symbolic form: {contract} ({rows_word(sum(len(ids) for ids in by.values()))})")
    return of_result(st.result)
