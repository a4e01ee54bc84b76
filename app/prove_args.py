"""The arguments of ``tokenlaw prove`` (light: argparse only; the work is ``prove_cmd.cmd_prove``)."""
from __future__ import annotations

from .argtypes import add_scheduler, add_with_builtins, add_workers


def register(subparsers):
    sp = subparsers.add_parser("prove", help="prove / refute declared contracts with z3 (reals) and write reports/proofs.{md,json}")
    sp.add_argument("--operator", action="append", help="only this operator (repeatable)")
    add_with_builtins(sp)
    sp.add_argument("--contract", action="append", help="only this contract (repeatable)")
    sp.add_argument("--timeout", type=float, default=5.0, help="budget per solver query, in seconds converted to z3 resource steps (default 5)")
    add_workers(sp, "worker processes: 1 proves the rows here, N on a Dask LocalCluster of N; each row in a "
                    "process of its own (the verdicts depend neither on it nor on the rows selected)")
    add_scheduler(sp)
    sp.add_argument("--out", default="reports", help="report directory (default: ./reports)")
    sp.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    sp.set_defaults(func="tokenlaw.app.prove_cmd:cmd_prove")
