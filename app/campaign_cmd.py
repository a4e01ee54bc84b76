"""``tokenlaw campaign``: a time-boxed search of the selected cells (a thin call into ``orchestration.campaigns``)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from tokenlaw.orchestration import campaigns
from tokenlaw.process import interrupts
from tokenlaw.reports import formats
from tokenlaw.reports.text import campaign_replay

from . import selection
from .exits import EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK


def cmd_campaign(args) -> int:
    settings = campaigns.CampaignSettings(
        minutes=args.minutes, operators=selection.operators(args), contracts=args.contract, dtypes=args.dtype,
        backend=args.backend, seed=args.seed, workers=args.workers, scheduler=args.scheduler,
        database=args.database, out=args.out, operator_modules=getattr(args, "operators_module", None),
        mutant=args.mutant)
    out = Path(args.out)
    watch = out / "campaign.html"
    shown = []

    def show(report):                   # the page to watch, rewritten as rounds finish
        formats.write(report, out, ("campaign-html",), stem="campaign")
        if not shown:
            shown.append(print(f"campaign: watch {watch.resolve().as_uri()} (reloads as rounds finish)",
                               file=sys.stderr))

    report = campaigns.run(settings, stream=sys.stderr, on_round=show)
    # the report is written whole even if Ctrl-C comes again now; the page is final (it stops reloading)
    with interrupts.held() as again:
        paths = formats.write(report, out, formats.CAMPAIGN, stem="campaign")
    meta, cells, unexpected = report.meta, report.cells, report.unexpected
    found = [(c.id, v.replay) for c in cells for v in c.violations]
    if args.json:
        print(json.dumps({"report": str(paths["campaign-json"]), "rounds": meta["rounds"],
                          "cells": len(cells), "violations": [{"cell": c, "replay": r} for c, r in found],
                          "unexpected": list(unexpected)},
                         indent=1))
    else:
        print(f"campaign: {meta['rounds']} rounds, {len(cells)} cells, "
              f"{sum(c.examples for c in cells)} examples, {len(found)} violations; "
              f"wrote {paths['campaign-json']}, {paths['campaign-md']}, {watch}")
        for cell, rid in found:
            said = " (a claimed law: UNEXPECTED)" if cell in unexpected else " (expected)"
            print(f"  {cell}{said}: {campaign_replay(rid, meta)}")
    if meta["interrupted"] or again.value:
        # one outcome for Ctrl-C, wherever it landed: 130, and the report of what was judged (issue 47)
        bad = len(unexpected)
        print(f"tokenlaw: interrupted: the report holds what the {len(cells)} cells' searches finished in "
              f"{meta['rounds']} rounds (marked interrupted); "
              + (f"a claimed law violated in {bad} cells so far" if bad else "no claimed law violated so far"),
              file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_FAIL if unexpected else EXIT_OK
