"""``tokenlaw report backends``: several backends' reports side by side (a thin call into ``reports.backends``).

    tokenlaw check --backend sdpa-math --operator sdpa --out reports/sdpa-math
    tokenlaw check --backend sdpa-flash --operator sdpa --out reports/sdpa-flash
    tokenlaw report backends reports/sdpa-math/conformance-sdpa-math.json \\
        reports/sdpa-flash/conformance-sdpa-flash.json --out reports/backends.md
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from tokenlaw.reports import backends, document, formats, writers

from .exits import EXIT_OK


def cmd_backends(args) -> int:
    docs = document.load_reports(args.reports)
    text = formats.render(docs[0], "backends-md", also=docs[1:])
    if args.json:
        names, rows = backends.compare(docs)
        print(json.dumps({"backends": names, "differ": sum(r.differs for r in rows),
                          "rows": [dict(operator=r.operator, contract=r.contract, dtype=r.dtype, differs=r.why,
                                        cells={b: None if c is None else dataclasses.asdict(c)
                                               for b, c in r.cells.items()}) for r in rows]}, indent=1))
        if args.out:
            writers.atomic_write(Path(args.out), text)
        return EXIT_OK
    if args.out:
        writers.atomic_write(Path(args.out), text)
        print(f"wrote {args.out}")
    else:
        print(text, end="")
    return EXIT_OK
