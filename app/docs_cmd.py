"""``tokenlaw docs [TOPIC]``: the documentation that ships in the wheel, and the laws of the installed registry.

Topics are the Markdown files of the ``tokenlaw.docs`` package (``mathematics``,
``fuzz``, ``symbolic``, ``kernels``, ``closure``, ``workflow``, ``report-schema``,
``measurements``, ...)
plus ``laws``, generated from the contract catalogue and the operators this
installation collects (so it covers your own ``--operators`` too).  Every
pointer in a report names one of these topics, so it resolves for someone who
only installed the wheel.

``tokenlaw docs measurements --write`` (in a checkout) renders every measurement record,
``reports/measurements/*.json``, into the generated block of ``docs/measurements.md``:
the page's numbers come from runs, never from typing.
"""
from __future__ import annotations

import json
from pathlib import Path


from tokenlaw.orchestration.runs import registry as _load_registry
from tokenlaw.errors import InvalidArgument
from tokenlaw.process import command_line
from tokenlaw.properties.catalogue import CONTRACTS
from tokenlaw.reports import measurements

from .docs_topics import GENERATED, topics  # noqa: F401 (topics re-exported)
from .exits import EXIT_OK

MEASUREMENTS = "measurements"
CHECKOUT = Path(__file__).resolve().parent.parent


def laws(registry) -> str:
    """Every contract's law, then who claims it and who is expected to violate it, with their reasons."""

    lines = ["# Contracts and the operators that declare them", "",
             "Generated from the installed contract catalogue and operator registry.", ""]
    for name, c in CONTRACTS.items():
        lines += [f"## {name} ({'exact, bit for bit' if c.exact else 'derived tolerance'})", "", c.law, ""]
        for op in registry:
            for kind, table in (("claims", op.claims), ("violates", op.violates)):
                if name in table:
                    lines.append(f"- {op.name} {kind} it: {table[name]}")
        lines.append("")
    return "\n".join(lines)


def write_measurements(records_dir: Path, page: Path) -> Path:
    """Splice the rendering of every record in ``records_dir`` into ``page``; return the page."""
    if not (CHECKOUT / "pyproject.toml").is_file() or not page.is_file():
        raise InvalidArgument(f"--write: {page} does not exist (run it in a tokenlaw checkout)")
    text = measurements.splice(page.read_text(encoding="utf-8"), measurements.render(measurements.load(records_dir)))
    page.write_text(text, encoding="utf-8")
    return page


def cmd_docs(args) -> int:
    if args.write:
        if args.topic != MEASUREMENTS:
            raise InvalidArgument(f"--write: only 'tokenlaw docs {MEASUREMENTS} --write' is generated "
                                            f"from records, got topic {args.topic!r}")
        page = write_measurements(CHECKOUT / "reports" / "measurements", CHECKOUT / "docs" / "measurements.md")
        print(f"wrote {page}")
        return EXIT_OK
    pages = topics()
    if args.topic is None:
        names = [*pages, GENERATED]
        if args.json:
            print(json.dumps({"topics": names}, indent=1))
        else:
            print("tokenlaw docs TOPIC, where TOPIC is one of:\n" + "\n".join(f"  {n}" for n in names))
        return EXIT_OK
    if args.topic == GENERATED:
        text = laws(_load_registry(getattr(args, "operators_module", None)))
    elif args.topic in pages:
        text = pages[args.topic]
    else:
        raise command_line.closest(args.topic, [*pages, GENERATED], "topic", shown_by="tokenlaw docs")
    print(json.dumps({"topic": args.topic, "text": text}, indent=1) if args.json else text)
    return EXIT_OK
