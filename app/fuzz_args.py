"""The arguments of the fuzz tier's ``replay``, ``report merge`` and ``mutate`` (light: argparse only).

Each parser names its work as a ``"module:function"`` string (``fuzz_cmd``), which
``cli.main`` imports only once the arguments parsed: ``--help`` and a bad argument
never load torch.
"""
from __future__ import annotations

from tokenlaw.process import artifacts

from .argtypes import add_workers, backend_names


def register(sub):
    sp = sub.add_parser("replay", help="re-run a stored counterexample by id and compare it bit-for-bit")
    sp.add_argument("id", help="replay id (as printed in reports) or the path of its JSON artifact")
    sp.add_argument("--replays", default=None, help="artifact directory (default $TOKENLAW_REPLAYS or reports/replays)")
    sp.add_argument("--json", action="store_true")
    sp.add_argument("--expect-fixed", action="store_true",
                    help="the stored violation should be gone (a fix): exit 0 when the example no longer violates "
                         "the law, 1 when it still does")
    sp.add_argument("--python", action="store_true",
                    help="print a Python snippet that rebuilds the example (inputs, params), runs the operator and "
                         "judges the law again, pasted into a fresh python (nothing is replayed here)")
    sp.set_defaults(func="tokenlaw.app.fuzz_cmd:cmd_replay", precheck="tokenlaw.app.fuzz_args:check_replay_id")

    sp = sub.add_parser("report", help="work with written reports")
    rsub = sp.add_subparsers(dest="report_command", required=True)
    mp = rsub.add_parser("merge", help="join shard reports (conformance.json files) into one report, or a check's "
                                       "and a prove's reports into the combined verification.{md,json}")
    mp.add_argument("reports", nargs="+", help="the JSON reports: shards of one run, and/or proofs.json")
    mp.add_argument("--out", required=True, help="directory for the merged conformance.{md,json} (one tier) or "
                                                 "verification.{md,json} (several tiers)")
    mp.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    mp.set_defaults(func="tokenlaw.app.fuzz_cmd:cmd_merge")

    lp = rsub.add_parser("lawtable", help="the normaliser law table of written reports (a check's conformance.json, "
                                          "a prove's proofs.json), or of a new recorded run; --readme splices it "
                                          "into a README between its markers")
    lp.add_argument("reports", nargs="*", help="the JSON reports (at most one per tier)")
    lp.add_argument("--record", metavar="DIR", help="first run check + prove (smoke profile) over the registry's "
                                                    "law-table operators and record DIR/conformance.json and "
                                                    "DIR/proofs.json; then render those")
    lp.add_argument("--readme", metavar="PATH", help="write the compact table into PATH between its law-table markers "
                                                     "(e.g. README.md) instead of printing the full section")
    add_workers(lp, "--record: fuzz worker processes")
    lp.add_argument("--json", action="store_true", help="the table as data on stdout (cells, tiers, marks)")
    lp.set_defaults(func="tokenlaw.app.lawtable_cmd:cmd_lawtable")

    bp = rsub.add_parser("backends", help="several backends' reports of one selection side by side (a check's "
                                          "conformance.json per --backend): every cell's outcome and ratio per "
                                          "backend, the cells where they differ first")
    bp.add_argument("reports", nargs="+", help="the JSON reports, one per backend")
    bp.add_argument("--out", metavar="PATH", help="write the Markdown there (default: print it)")
    bp.add_argument("--json", action="store_true", help="the rows as data on stdout (backends, cells, why they differ)")
    bp.set_defaults(func="tokenlaw.app.backends_cmd:cmd_backends")

    sp = sub.add_parser("mutate", help="run the suite against the catalogue of seeded bugs")
    sp.add_argument("--mutant", action="append", help="only this mutant (repeatable)")
    sp.add_argument("--backend", default=None, choices=backend_names(),
                    help="only mutants of this backend (default: eager ones, and every backend plug-in's that "
                         "can run here, e.g. the Triton kernels' with TRITON_INTERPRET=1 or a GPU)")
    sp.add_argument("--examples", type=int, default=30, help="examples per cell per dtype (default 30)")
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--workers", type=int, default=1)
    sp.add_argument("--replays", default=None, help="store the killing counterexamples here (default: not stored)")
    sp.add_argument("--out", default="reports", help="writes mutation.{md,json} here (default ./reports)")
    sp.add_argument("--list", action="store_true", help="list the catalogue and exit")
    sp.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    sp.set_defaults(func="tokenlaw.app.fuzz_cmd:cmd_mutate")


def check_replay_id(args) -> None:
    """No artifact for the id: InvalidArgument naming ``id``, before torch loads (issue 47: it took 3.5 s)."""
    artifacts.artifact_path(args.id, artifacts.replay_dir(args.replays))
