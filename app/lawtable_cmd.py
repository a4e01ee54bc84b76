"""``tokenlaw report lawtable``: the normaliser law table of written reports (thin calls into ``reports.lawtable``).

    tokenlaw report lawtable conformance.json [proofs.json]       # print the full section (Markdown)
    tokenlaw report lawtable A.json B.json --readme README.md     # splice the compact table into the README
    tokenlaw report lawtable --record reports/lawtable --readme README.md

``--record DIR`` first runs check (smoke profile, seed 0) and prove over the
operators the table has rows for (``reports.lawtable.is_member`` of each
operator's traits: a new normaliser appears by itself), writes their full
reports into DIR and keeps ``DIR/conformance.json`` and ``DIR/proofs.json``
(timing-free) as the record the README's table is rendered from.
``tests/app/test_readme_lawtable.py`` fails when the README's table differs
from what :func:`readme_block` renders from the committed record.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from tokenlaw.operators import arguments
from tokenlaw.orchestration import runs
from tokenlaw.reports import document, lawtable, writers

from .exits import EXIT_OK
from .progress import Progress

RECORD = ("conformance.json", "proofs.json")


def operators(reg) -> list[str]:
    """The operators of ``reg`` the law table has rows for (``reports.lawtable.is_member`` of their traits)."""
    return [op.name for op in reg if lawtable.is_member(op.traits)]


def record(out: str, workers: int) -> list[Path]:
    """Run check + prove over the law table's operators into ``out``; the paths of the two JSON records."""
    ops = operators(runs.registry())
    check = runs.CheckSettings(operators=ops, profile="smoke", seed=0, workers=workers, out=out)
    prove = runs.ProveSettings(operators=ops, out=out, workers=workers)
    conformance, proved, _ = runs.verify(check, prove, progress=True, stream=Progress())
    formats.write(conformance, Path(out), also=[proved])          # the full report, for its counterexamples
    path = formats.write(proved, Path(out), ["json"], stem="proofs")["json"]   # without timings: a record
    return [Path(out) / RECORD[0], path]


def table(paths) -> lawtable.LawTable:
    """The law table of the JSON reports at ``paths``."""
    return lawtable.build(document.load_reports(paths))


def readme_block(paths, readme: Path) -> str:
    """The README's block for the reports at ``paths``, naming them relative to the README's folder."""
    names = [Path(os.path.relpath(Path(p).resolve(), Path(readme).resolve().parent)).as_posix() for p in paths]
    return lawtable.readme(table(paths), names)


def cmd_lawtable(args) -> int:
    if args.record and args.reports:
        raise arguments.InvalidArgument("--record: renders the run it records; give no reports with it")
    if not args.record and not args.reports:
        raise arguments.InvalidArgument("reports: name the JSON reports (a check's conformance.json, a prove's "
                                        "proofs.json), or --record DIR to make them")
    paths = record(args.record, args.workers) if args.record else [Path(p) for p in args.reports]
    if args.readme:
        readme = Path(args.readme)
        if not readme.is_file():
            raise arguments.InvalidArgument(f"--readme: no such file {str(readme)!r}")
        text = lawtable.splice(readme.read_text(encoding="utf-8"), readme_block(paths, readme))
        writers.atomic_write(readme, text)
    if args.json:
        print(json.dumps({"reports": list(map(str, paths)), "readme": args.readme,
                          **lawtable.to_json(table(paths))}, indent=1))
    elif args.readme:
        print(f"wrote the law table of {', '.join(map(str, paths))} into {args.readme}")
    else:
        print("\n".join(lawtable.markdown(table(paths))) or "no operator of these reports is a law-table row")
    return EXIT_OK
