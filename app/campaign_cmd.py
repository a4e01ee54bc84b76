"""``tokenlaw campaign``: a time-boxed search of the selected cells (a thin call into ``orchestration.campaigns``)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from tokenlaw.orchestration import campaigns
from tokenlaw.process import interrupts
from tokenlaw.process.files import atomic_write
from tokenlaw.reports.campaign_page import page
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

    def show(doc):                      # the page to watch, rewritten as rounds finish
        atomic_write(watch, page(doc))
        if not shown:
            shown.append(print(f"campaign: watch {watch.resolve().as_uri()} (reloads as rounds finish)",
                               file=sys.stderr))

    doc = campaigns.run(settings, stream=sys.stderr, on_round=show)
    # the report is written whole even if Ctrl-C comes again now; the page is final (it stops reloading)
    with interrupts.held() as again:
        atomic_write(watch, page(doc))
        atomic_write(out / "campaign.json", json.dumps(doc, indent=1, sort_keys=True) + "\n")
        atomic_write(out / "campaign.md", campaigns.markdown(doc))
    found = [(c["id"], v["replay"]) for c in doc["cells"] for v in c["violations"]]
    if args.json:
        print(json.dumps({"report": str(out / "campaign.json"), "rounds": doc["meta"]["rounds"],
                          "cells": len(doc["cells"]), "violations": [{"cell": c, "replay": r} for c, r in found],
                          "unexpected": doc["unexpected"]},
                         indent=1))
    else:
        print(f"campaign: {doc['meta']['rounds']} rounds, {len(doc['cells'])} cells, "
              f"{sum(c['examples'] for c in doc['cells'])} examples, {len(found)} violations; "
              f"wrote {out / 'campaign.json'}, {out / 'campaign.md'}, {watch}")
        for cell, rid in found:
            unexpected = " (a claimed law: UNEXPECTED)" if cell in doc["unexpected"] else " (expected)"
            print(f"  {cell}{unexpected}: {campaign_replay(rid, doc['meta'])}")
    if doc["meta"]["interrupted"] or again.value:
        # one outcome for Ctrl-C, wherever it landed: 130, and the report of what was judged (issue 47)
        bad = len(doc["unexpected"])
        print(f"tokenlaw: interrupted: the report holds what the {len(doc['cells'])} cells' searches finished in "
              f"{doc['meta']['rounds']} rounds (marked interrupted); "
              + (f"a claimed law violated in {bad} cells so far" if bad else "no claimed law violated so far"),
              file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_FAIL if doc["unexpected"] else EXIT_OK
