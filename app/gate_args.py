"""The arguments of ``tokenlaw gate`` (light: argparse only; the work is ``gate.cmd_gate``)."""
from __future__ import annotations

import argparse

from .argtypes import add_workers

DESCRIPTION = "``tokenlaw gate``: fail a change that makes any cell worse than the committed baseline."
# reports.regressions.BOUND_GROWTH, restated so that parsing needs no torch (a test keeps them equal).
BOUND_GROWTH = 2.0


def register(sub):
    sp = sub.add_parser("gate", help="compare a run with reports/baseline.json; exit 1 on any regression",
                        description=DESCRIPTION,
                        epilog="exit codes: 0 no regression / baseline updated, 1 regression or expired known "
                               "failure, 2 bad arguments")
    sp.add_argument("--baseline", default="reports/baseline.json", help="committed baseline report")
    sp.add_argument("--current", action="append", metavar="REPORT",
                    help="report to judge, repeatable (e.g. the eager and a kernel backend's report); "
                         "default: run `tokenlaw check` for every run of the baseline, with its settings")
    sp.add_argument("--out", default="reports", help="where the run writes its reports (default: ./reports)")
    sp.add_argument("--update-baseline", action="store_true", help="rewrite the baseline from the current run "
                                                                   "and print the diff")
    sp.add_argument("--known-failures", default="reports/known_failures.txt",
                    help="plain-text file: cell-id  YYYY-MM-DD  reason (missing file: none)")
    sp.add_argument("--bound-growth", type=float, default=BOUND_GROWTH,
                    help="a tolerance bound growing by more than this factor is a regression (default 2)")
    # For tests of expiry only: the date taken as today (YYYY-MM-DD).
    sp.add_argument("--today", help=argparse.SUPPRESS, default=None)
    sp.add_argument("--json", action="store_true", help="machine-readable result on stdout")
    add_workers(sp, "processes for the re-run (the cells do not depend on it; the baseline's own count is not reused)")
    sp.set_defaults(func="tokenlaw.app.gate:cmd_gate")
