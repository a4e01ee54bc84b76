"""``tokenlaw``: a thin command line over the registry, the tiers and the report writers.

Exit codes (the same for every command):

* 0 every row matches its declaration / no regression / the replay reproduced;
* 1 a row does not match its declaration (an UNEXPECTED violation or an
  expected violation NOT reproduced), a regression, a surviving mutant, a
  closure break, a replay that differs: a finding about the code under test;
* 2 bad arguments, declarations or input files (a one-line message naming the
  argument, checked before any long run);
* 3 the command cannot run on this machine (``bench`` without a GPU);
* 4 undecided (``check``, ``prove``, ``verify``, ``report merge``): nothing fails, but a claimed row is
  unknown, vacuous or its trace differs from eager, or no claimed row was established at all
  (``prove``: none proved); never a pass;
* 70 an internal error of tokenlaw (or of a module it imported): a bug to
  report, never a finding (``TOKENLAW_DEBUG=1`` shows the traceback);
* 141 stdout was closed early (``| head``): a quiet stop, as for SIGPIPE.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import shlex
import sys
import traceback
from pathlib import Path

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties import backends
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import CONTRACTS
from tokenlaw.orchestration import provenance, runs
from tokenlaw.reports import writers

from . import selection
from .argtypes import add_profile, add_workers, positive_int
from .exits import (EXIT_CANNOT_RUN, EXIT_FAIL, EXIT_INTERNAL, EXIT_OK, EXIT_PIPE,  # noqa: F401 (re-exported)
                    EXIT_UNDECIDED, EXIT_USAGE, of_result)
from .progress import Progress

EPILOG = ("exit codes: 0 every row matches its declaration, 1 a row fails / a regression, 2 bad arguments or "
          "input files, 3 cannot run on this machine, 4 undecided (a claimed row unknown / vacuous / trace "
          "differs, or nothing established), 70 internal error (a tokenlaw bug), 141 stdout closed early (| head)")

# Modules that add subcommands: each has ``register(subparsers)`` which adds
# its parser and sets ``func`` (a thin call into its tier).
EXTENSIONS: tuple[str, ...] = (
    "tokenlaw.app.fuzz_cmd",
    "tokenlaw.app.gate",
    "tokenlaw.app.scaffold",
    "tokenlaw.app.closure_cmd",
    "tokenlaw.app.reproduce_cmd",
    "tokenlaw.app.prove_cmd",
    "tokenlaw.app.verify_cmd",
    "tokenlaw.app.bench_cmd",
    "tokenlaw.app.docs_cmd",
)


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error (exit 2) instead of the usage block."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _registry(args):
    return runs.registry(getattr(args, "operators_module", None))


check_names = runs.check_names


def cmd_list(args) -> int:

    reg = _registry(args)
    if args.json:
        print(json.dumps({
            "operators": [{"name": op.name, "traits": sorted(op.traits), "claims": op.claims, "violates": op.violates,
                           "bindings": provenance.bindings(op), "source": op.source} for op in reg],
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


def check_settings(args) -> runs.CheckSettings:
    """The parsed ``check`` arguments as the library's settings."""
    return runs.CheckSettings(operators=selection.operators(args), contracts=args.contract, dtypes=args.dtype,
                              backend=args.backend, profile=args.profile, examples=args.examples, seed=args.seed,
                              workers=args.workers, shard=args.shard, database=args.database, replays=args.replays,
                              out=args.out, operator_modules=getattr(args, "operators_module", None))


def cmd_check(args) -> int:
    settings = check_settings(args)
    doc = runs.check(settings, progress=args.progress == "on" or (args.progress == "auto" and not args.json),
                     stream=Progress())
    # the command line as typed, for the report's first screen (the settings it fixed are recorded apart)
    doc = dataclasses.replace(doc, meta={**doc.meta, "command": command_line(args)})
    paths = writers.write_doc(doc, Path(args.out), stem=settings.stem)
    summ = doc.to_json()["summary"]
    outcome = {r.id: r.outcome for r in doc.rows}
    if args.json:
        print(json.dumps({"report": str(paths["json"]), "markdown": str(paths["md"]), "junit": str(paths["xml"]),
                          "html": str(paths["html"]), "timings": str(paths["timings"]), "rows": len(doc.rows),
                          "result": summ["result"], "claimed": summ["claimed"],
                          "failing": [{"id": i, "outcome": outcome[i]} for i in summ["failing"]],
                          "undecided": [{"id": i, "outcome": outcome[i]} for i in summ["undecided"]]}, indent=1))
    else:
        print(f"\n{summ['result']}: {writers.claimed_line(summ)}")
        print(f"{writers.rows_word(len(doc.rows))}, {len(summ['failing'])} failing; wrote {', '.join(str(p) for p in paths.values())}")
        rows = {r.id: r for r in doc.rows}
        for i in summ["failing"] + summ["undecided"]:
            print(f"  {outcome[i]}: {i}")
            failed = [c.verdict for c in rows[i].cells if c.verdict is not None and c.verdict.violated]
            if failed and failed[0].status == V.RAISED:
                print(f"      {failed[0].detail.split(' [')[0]}")
            if failed and failed[0].replay:
                print(f"      replay: {writers.replay_command(failed[0].replay, doc.meta)}")
        for c in writers.not_runnable_cells(doc.rows):
            print(f"  not runnable here: {c.id}: {c.verdict.detail}")
        designed = sum(1 for c in doc.cells
                       if c.verdict is not None and c.verdict.status == V.Status.NOT_APPLICABLE_BY_DESIGN)
        if designed:
            print(f"  {writers.counted(designed, 'cell')} not applicable by design (each reason listed once in "
                  "the report)")
    return of_result(summ["result"])


def command_line(args) -> str:
    """``tokenlaw ARGS`` as this process was given them (shell-quoted, so it can be pasted)."""
    return "tokenlaw " + shlex.join(getattr(args, "argv", None) or [])


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="tokenlaw", description=__doc__.split("\n\n")[0], epilog=EPILOG)
    p.add_argument("--operators", dest="operators_module", action="append", metavar="MODULE",
                   help="collect the operators declared in this module (an importable name, searched from the "
                        "current directory, or a path to a .py file); check / prove / verify then run only "
                        "its operators (add --with-builtins, or name them with --operator, for built-ins)")
    sub = p.add_subparsers(dest="command", required=True)

    sp = sub.add_parser("list", help="operators, contracts and which claims which")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_list)

    sp = sub.add_parser("check", help="run every declared cell and write reports/conformance.{md,json,xml,html}")
    sp.add_argument("--operator", action="append", help="only this operator (repeatable)")
    selection.add_flag(sp)
    sp.add_argument("--contract", action="append", help="only this contract (repeatable)")
    sp.add_argument("--dtype", action="append", help="only this dtype (repeatable)")
    add_profile(sp)
    add_workers(sp)
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
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return args.func(args)
    except InvalidArgument as err:
        print(f"tokenlaw: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("tokenlaw: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`| head`): nothing more to say and nowhere to say it; point stdout at
        # /dev/null so the interpreter's final flush does not raise again.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_PIPE
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
