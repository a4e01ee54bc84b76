"""The arguments of ``tokenlaw bugs run`` (light: argparse only; the work is ``bugs_cmd.cmd_run``)."""
from __future__ import annotations

DESCRIPTION = ("``tokenlaw bugs run [--id ID ...]``: the benchmark of real upstream bugs (benchmarks/bugs/, one "
               "TOML file per bug; tokenlaw docs models).")


def register(subparsers):
    bugs = subparsers.add_parser("bugs", help="the benchmark of real upstream bugs", description=DESCRIPTION)
    sub = bugs.add_subparsers(dest="bugs_command", required=True)
    run = sub.add_parser("run", help="rediscover each bug with the default search; its twin must pass")
    run.add_argument("--id", dest="ids", action="append", default=[], metavar="ID", help="only this bug (repeatable)")
    run.add_argument("--dir", default=None, metavar="DIR", help="the folder of bug files (default benchmarks/bugs)")
    run.add_argument("--examples", type=int, default=None, metavar="N",
                     help="examples per law (default: the bug file's, else 40 for a model, 25 for a core bug)")
    run.add_argument("--seed", type=int, default=0, help="the search's seed")
    run.add_argument("--record", default=None, metavar="DIR", help="write bugs.md and bugs.json there")
    run.add_argument("--json", action="store_true", help="machine-readable output")
    run.set_defaults(func="tokenlaw.app.bugs_cmd:cmd_run")
