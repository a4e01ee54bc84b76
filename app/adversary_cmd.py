"""``tokenlaw adversary``: the standing adversary's kill matrix (a thin call of :mod:`tokenlaw.fuzz.mutants.adversary`).

Exit 0 when every non-equivalent conditional mutant run is killed or inert where drawn (listed, with the
count of drawn calls on which it changed nothing), 1 when one survives (a gap: a finding about the check,
listed with its reason) or made the check crash instead of judging it, 2 for bad arguments.  ``--splice``
re-runs whole operators into the report already in ``--out`` (:func:`tokenlaw.fuzz.mutants.adversary.splice`).
"""
from __future__ import annotations

import datetime
import json
from pathlib import Path

from tokenlaw.errors import InvalidArgument
from tokenlaw.fuzz.mutants import adversary
from tokenlaw.fuzz.engine import PROFILES, profile_name
from tokenlaw.orchestration import runs
from tokenlaw.process import command_line
from tokenlaw.reports import formats
from tokenlaw.reports.kill_matrix import KillMatrix

from . import selection
from .exits import EXIT_FAIL, EXIT_OK


def cmd_adversary(args) -> int:
    reg = runs.registry(getattr(args, "operators_module", None))
    operators = selection.operators(args)
    runs.check_names(reg, operators)
    built = adversary.mutants(reg, operators)
    if args.mutant:
        known = {m.id for m in built}
        for name in args.mutant:
            if name not in known:
                raise command_line.closest(name, known, "--mutant")
    if args.list:
        chosen = adversary.sample(built, args.sample, args.seed)
        for m in chosen:
            if not args.mutant or m.id in args.mutant:
                print(f"{m.id:<48} {m.predicate.text}; {m.wrongness.text}")
        return EXIT_OK
    command_line.writable_dir(args.out, "--out")
    examples = args.examples or PROFILES[profile_name(args.profile)]
    out = Path(args.out)
    recorded = _recorded(args, out / "adversary.json", examples) if args.splice else None
    log = out / "adversary.jsonl"          # each outcome as it finishes (what a stopped run judged)
    log.write_text("", encoding="utf-8")
    doc = adversary.run(reg, operators=operators, sample_k=args.sample, seed=args.seed, examples=examples,
                        workers=args.workers, mutant_ids=set(args.mutant or ()) or None,
                        by_value=runs.shipped_modules(getattr(args, "operators_module", None)), log=log)
    doc["meta"]["profile"] = profile_name(args.profile)
    if recorded is not None:
        doc["meta"]["date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
        doc = adversary.splice(recorded, doc)
    report = KillMatrix.from_json(doc)
    paths = formats.write(report, out, formats.ADVERSARY, stem="adversary")
    md, js = paths["adversary-md"], paths["adversary-json"]
    f = report.figure
    gaps = [m for m in report.mutants if m.status in ("gap", "crashed")]
    inert = [m for m in report.mutants if m.status == "inert"]     # reported, not killed, not a failure
    if args.json:
        print(json.dumps({"report": str(js), "markdown": str(md), **f.to_json(),
                          "gaps": [{"id": m.id, "reason": m.reason} for m in gaps],
                          "inert_where_drawn": [{"id": m.id, "reason": m.reason} for m in inert]}, indent=1))
    else:
        print(f"\n{f.killed}/{f.non_equivalent} non-equivalent conditional mutants killed "
              f"({len(inert)} inert where drawn, {f.equivalent} equivalent); wrote {md} and {js}")
        for m in gaps + inert:
            print(f"  {m.status.upper():<7} {m.id:<44} {m.reason}")
    return EXIT_FAIL if gaps else EXIT_OK


def _recorded(args, js: Path, examples: int) -> dict:
    """The report --splice updates (``js``), checked before anything runs: it exists, and this run re-runs
    whole operators at its seed and examples."""
    if not args.operator:
        raise InvalidArgument("--splice: name the operators to re-run (--operator NAME, repeatable)")
    if args.sample:
        raise InvalidArgument("--splice: a splice re-runs whole operators or named mutants (no --sample)")
    if not js.is_file():
        raise InvalidArgument(f"--splice: no recorded report {js} to update (run without --splice first)")
    recorded = json.loads(js.read_text(encoding="utf-8"))
    for key, flag, value in (("seed", "--seed", args.seed), ("examples", "--examples", examples)):
        if recorded["meta"].get(key) != value:
            raise InvalidArgument(f"{flag}: {js} was recorded with {key} {recorded['meta'].get(key)}, not {value}")
    return recorded
