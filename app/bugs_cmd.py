"""``tokenlaw bugs run``: thin command over ``orchestration.bugs`` (load, run, table, report)."""
from __future__ import annotations

import json
from pathlib import Path

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.orchestration import bugs

from .exits import EXIT_FAIL, EXIT_OK


def cmd_run(args) -> int:
    if args.examples is not None and args.examples < 1:
        raise InvalidArgument(f"--examples: expected a positive int, got {args.examples}")
    entries = bugs.load_entries(args.dir, args.ids or None)
    if not entries:
        raise InvalidArgument(f"--dir: no bug files (*.toml) in {args.dir or bugs.DEFAULT_DIR}")
    results = []
    for e in entries:
        if not args.json:
            print(f"{e.id}: {e.description}", flush=True)
        r = bugs.run(e, examples=args.examples, seed=args.seed)
        results.append(r)
        if not args.json:
            print(f"  rediscovered: {'yes' if r.rediscovered else 'no'} ({', '.join(r.through) or 'no law'}); "
                  f"first violation: {r.examples_to_first} examples, {r.seconds_to_first} s; "
                  f"twin ({r.twin}): {r.twin_status}; {r.seconds} s", flush=True)
    if args.record:
        out = Path(args.record)
        out.mkdir(parents=True, exist_ok=True)
        (out / "bugs.md").write_text(bugs.report(results, entries) + "\n")
        (out / "bugs.json").write_text(json.dumps([r.to_json() for r in results], indent=1) + "\n")
    if args.json:
        print(json.dumps([r.to_json() for r in results], indent=1))
    else:
        print()
        print(bugs.table(results))
    ok = all(r.rediscovered and r.twin_passes for r in results)
    return EXIT_OK if ok else EXIT_FAIL
