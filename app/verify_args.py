"""The arguments of ``tokenlaw verify`` (light: argparse only; the work is ``verify_cmd.cmd_verify``)."""
from __future__ import annotations

from .argtypes import add_profile, add_with_builtins, add_workers, dtype_name, positive_int


def register(subparsers):
    sp = subparsers.add_parser("verify", help="fuzz check + symbolic prove of one selection, combined in "
                                              "reports/verification.{md,json} (green only if no tier refuted a row)")
    sp.add_argument("--operator", action="append", help="only this operator (repeatable)")
    add_with_builtins(sp)
    sp.add_argument("--contract", action="append", help="only this contract (repeatable)")
    sp.add_argument("--dtype", action="append", type=dtype_name, help="fuzz tier: only this dtype (repeatable)")
    add_profile(sp)
    sp.add_argument("--examples", type=positive_int, help="fuzz tier: examples per cell per dtype (overrides the profile)")
    sp.add_argument("--seed", type=int, default=0)
    add_workers(sp, "worker processes (fuzz tier: cells; symbolic tier: one operator each)")
    sp.add_argument("--timeout", type=float, default=5.0, help="symbolic tier: seconds per solver query (default 5)")
    sp.add_argument("--out", default="reports", help="report directory (default: ./reports)")
    sp.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    sp.set_defaults(func="tokenlaw.app.verify_cmd:cmd_verify")
