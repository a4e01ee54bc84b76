"""The arguments of ``tokenlaw campaign`` (light: argparse only; the work is ``campaign_cmd``)."""
from __future__ import annotations

import argparse

from .argtypes import EAGER_BACKEND, add_scheduler, add_with_builtins, add_workers, backend_names, dtype_name


def minutes(text: str) -> float:
    """argparse type: a number of minutes > 0 (0.5 = 30 s)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of minutes > 0, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of minutes > 0, got {text!r}")
    return value


def register(sub):
    sp = sub.add_parser("campaign", help="search the selected cells round after round until a time box; "
                                         "report what was found (reports/campaign.{json,md})")
    sp.add_argument("--minutes", type=minutes, required=True, help="the time box, in minutes (e.g. 30, 0.5)")
    sp.add_argument("--operator", action="append", help="only this operator (repeatable)")
    add_with_builtins(sp)
    sp.add_argument("--contract", action="append", help="only this contract (repeatable)")
    sp.add_argument("--dtype", action="append", type=dtype_name, help="only this dtype (repeatable)")
    sp.add_argument("--backend", default=EAGER_BACKEND, metavar="NAME", help=f"one of {backend_names()}")
    add_workers(sp, "worker processes of the local Dask cluster")
    add_scheduler(sp)
    sp.add_argument("--database", default="none",
                    help="Hypothesis example database shared by the cells' searches: a directory, or "
                         "redis://host:port/db (shared by machines); 'none' (default) keeps nothing")
    sp.add_argument("--mutant", metavar="NAME", help="judge the registry with this seeded bug (an eager "
                    "mutant: `tokenlaw mutate --list`, or a subtle one such as oattn_running_max_two_tiles)")
    sp.add_argument("--seed", type=int, default=0, help="round k searches with seed + k - 1")
    sp.add_argument("--out", default="reports", help="report directory (default: ./reports)")
    sp.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    sp.set_defaults(func="tokenlaw.app.campaign_cmd:cmd_campaign")
