"""``tokenlaw``: a thin command line over the registry, the tiers and the report writers.

Exit codes (the same for every command):

* 0 every row matches its declaration / no regression / the replay reproduced;
* 1 a row does not match its declaration (an UNEXPECTED violation or an
  expected violation NOT reproduced), a regression, a surviving mutant, a
  closure break, a replay that differs: a finding about the code under test;
* 2 bad arguments, declarations or input files (a one-line message naming the
  argument, checked before any long run);
* 3 the command cannot run on this machine (``bench`` without a GPU);
* 70 an internal error of tokenlaw (or of a module it imported): a bug to
  report, never a finding (``TOKENLAW_DEBUG=1`` shows the traceback).
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
import traceback
from pathlib import Path

from tokenlaw.operators import arguments
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties import backends

from .progress import Progress

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_CANNOT_RUN, EXIT_INTERNAL = 0, 1, 2, 3, 70
EPILOG = ("exit codes: 0 every row matches its declaration, 1 a row fails / a regression, 2 bad arguments or "
          "input files, 3 cannot run on this machine, 70 internal error (a tokenlaw bug)")

# Modules that add subcommands: each has ``register(subparsers)`` which adds
# its parser and sets ``func`` (a thin call into its tier).
EXTENSIONS: tuple[str, ...] = (
    "tokenlaw.app.fuzz_cmd",
    "tokenlaw.app.gate",
    "tokenlaw.app.scaffold",
    "tokenlaw.app.closure_cmd",
    "tokenlaw.experiments",
    "tokenlaw.app.prove_cmd",
    "tokenlaw.app.bench_cmd",
    "tokenlaw.app.docs_cmd",
)


def positive_int(text: str) -> int:
    """argparse type: an int >= 1 (``--examples 0`` is refused, not read as 'the profile's')."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {value}")
    return value


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error (exit 2) instead of the usage block."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _registry(args):
    from tokenlaw.properties.catalogue import collect, default_registry

    modules = getattr(args, "operators_module", None)
    if not modules:
        return default_registry()
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as err:
            raise InvalidArgument(f"--operators: cannot import {name!r} ({err}); the current directory "
                                  "and PYTHONPATH are searched") from None
    return collect("tokenlaw.operators", *modules)


def check_names(reg, operators=None, contracts=None):
    """Unknown --operator / --contract names: an error suggesting the closest ones."""
    from tokenlaw.properties.catalogue import CONTRACTS

    for name in operators or ():
        if name not in reg:
            raise arguments.closest(name, reg.names(), "--operator")
    for name in contracts or ():
        if name not in CONTRACTS:
            raise arguments.closest(name, CONTRACTS, "--contract")


def cmd_list(args) -> int:
    from tokenlaw.properties.catalogue import CONTRACTS

    reg = _registry(args)
    if args.json:
        print(json.dumps({
            "operators": [{"name": op.name, "traits": sorted(op.traits), "claims": op.claims, "violates": op.violates,
                           "kernel": op.kernel, "source": op.source} for op in reg],
            "contracts": {n: {"law": c.law, "exact": c.exact, "requires": sorted(c.requires), "dtypes": list(c.dtypes)}
                          for n, c in CONTRACTS.items()},
        }, indent=1))
        return EXIT_OK
    print("Contracts:")
    for n, c in CONTRACTS.items():
        print(f"  {n:<26} {'exact    ' if c.exact else 'tolerance'}  {c.law}")
    print("\nOperators (+ claims, - expected to violate):")
    for op in reg:
        print(f"  {op.name:<16} [{', '.join(sorted(op.traits))}]")
        for n, why in op.claims.items():
            print(f"      + {n:<26} {why}")
        for n, why in op.violates.items():
            print(f"      - {n:<26} {why}")
    return EXIT_OK


def cmd_check(args) -> int:
    import torch

    from tokenlaw.fuzz.campaign import run_rows
    from tokenlaw.fuzz.engine import PROFILES
    from tokenlaw.properties import verdict as V
    from tokenlaw.properties.plan import plan, validate_dtypes
    from tokenlaw.reports import writers

    reg = _registry(args)
    check_names(reg, args.operator, args.contract)
    validate_dtypes(args.dtype)
    arguments.writable_dir(args.out, "--out")
    if args.replays is None:
        args.replays = str(Path(args.out) / "replays")
    examples = args.examples or PROFILES[args.profile]
    rows = plan(reg, operators=args.operator, contracts=args.contract, dtypes=args.dtype, backend=args.backend)
    from tokenlaw.fuzz.campaign import parse_shard, shard

    shard_i, shard_n = parse_shard(args.shard)
    rows = shard(rows, shard_i, shard_n)
    start = time.perf_counter()
    progress = args.progress == "on" or (args.progress == "auto" and not args.json)
    stream = Progress()
    run_rows(reg, rows, examples=examples, seed=args.seed, progress=progress, workers=args.workers,
             database=args.database, replay_dir=args.replays, stream=stream)
    stream.close_line()
    from tokenlaw.reports.provenance import snapshot

    meta = dict(tier="fuzz" if args.backend == "eager" else "kernel", backend=args.backend, profile=args.profile,
                examples=examples, seed=args.seed,
                torch=torch.__version__, seconds=time.perf_counter() - start, workers=args.workers,
                shard=f"{shard_i}/{shard_n}", database=str(args.database),
                # relative to the report when under it, so the document does not depend on where --out is
                replays=_relative(args.replays, args.out),
                **snapshot(reg),
                scope={"operators": args.operator, "contracts": args.contract, "dtypes": args.dtype,
                       "operator_modules": getattr(args, "operators_module", None)})
    stem = "conformance" if args.backend == "eager" else f"conformance-{args.backend}"
    paths = writers.write_all(rows, meta, Path(args.out), stem=stem)
    md, js = paths["md"], paths["json"]
    failing = [r for r in rows if r.failing]
    if args.json:
        print(json.dumps({"report": str(js), "markdown": str(md), "junit": str(paths["xml"]),
                          "html": str(paths["html"]), "timings": str(paths["timings"]), "rows": len(rows),
                          "failing": [{"id": r.id, "outcome": r.outcome} for r in failing]}, indent=1))
    else:
        print(f"\n{len(rows)} rows, {len(failing)} failing; wrote {', '.join(str(p) for p in paths.values())}")
        for r in failing:
            print(f"  {r.outcome}: {r.id}")
        for c in writers.not_runnable_cells(rows):
            print(f"  not runnable here: {c.id}: {c.verdict.detail}")
        designed = sum(1 for r in rows for c in r.cells if c.verdict is not None and c.verdict.status == V.BY_DESIGN)
        if designed:
            print(f"  {designed} cells not applicable by design (each reason listed once in the report)")
    return EXIT_FAIL if failing else EXIT_OK


def _relative(path, base) -> str:
    p, b = Path(path).resolve(), Path(base).resolve()
    return str(p.relative_to(b)) if p.is_relative_to(b) else str(path)


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="tokenlaw", description=__doc__.split("\n\n")[0], epilog=EPILOG)
    p.add_argument("--operators", dest="operators_module", action="append", metavar="MODULE",
                   help="also collect operators declared in this importable module or package")
    sub = p.add_subparsers(dest="command", required=True)

    sp = sub.add_parser("list", help="operators, contracts and which claims which")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_list)

    sp = sub.add_parser("check", help="run every declared cell and write reports/conformance.{md,json,xml,html}")
    sp.add_argument("--operator", action="append", help="only this operator (repeatable)")
    sp.add_argument("--contract", action="append", help="only this contract (repeatable)")
    sp.add_argument("--dtype", action="append", help="only this dtype (repeatable)")
    sp.add_argument("--profile", default="quick", choices=["smoke", "quick", "default", "deep"],
                    help="examples per cell per dtype: smoke 10, quick 100 (CI), default 300, deep 2000")
    sp.add_argument("--workers", type=positive_int, default=1, help="worker processes (default 1)")
    sp.add_argument("--shard", metavar="I/N", help="run only shard I of N (rows I, I+N, ...); join with 'report merge'")
    sp.add_argument("--database", default="none",
                    help="Hypothesis example database: 'none' (default: a run is fixed by its seed, so reports "
                         "and the gate are deterministic), a directory (e.g. .hypothesis/tokenlaw), "
                         "or redis://host:port/db (shared by machines)")
    sp.add_argument("--replays", default=None,
                    help="where violations are stored for 'tokenlaw replay ID' (default: OUT/replays)")
    sp.add_argument("--examples", type=positive_int, help="examples per cell per dtype, >= 1 (overrides the profile)")
    sp.add_argument("--progress", choices=["auto", "on", "off"], default="auto",
                    help="progress lines on stderr (auto: unless --json)")
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--backend", default=backends.EAGER.name, metavar="NAME",
                    help=f"one of {backends.names()}: eager PyTorch (the reference), or an installed backend "
                         "plug-in, e.g. the Triton kernels (TRITON_INTERPRET=1 without a GPU)")
    sp.add_argument("--out", default="reports", help="report directory (default: ./reports)")
    sp.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    sp.set_defaults(func=cmd_check)
    for name in EXTENSIONS:
        importlib.import_module(name).register(sub)
    return p


def main(argv=None) -> int:
    # Like `python script.py`, a user's own module next to them is importable (--operators mymod,
    # closure mymod:factory) without installing it.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:          # --help (0) or a one-line usage error (2)
        return done.code
    try:
        return args.func(args)
    except InvalidArgument as err:
        print(f"tokenlaw: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("tokenlaw: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 (the one place a crash becomes an exit code)
        if os.environ.get("TOKENLAW_DEBUG"):
            traceback.print_exc()
        where = traceback.extract_tb(err.__traceback__)[-1]
        print(f"tokenlaw: internal error: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''} "
              f"(at {Path(where.filename).name}:{where.lineno}); this is a bug, not a finding about your operators; "
              f"rerun with TOKENLAW_DEBUG=1 for the traceback", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
