"""The arguments of ``tokenlaw list`` and ``tokenlaw check`` (light: argparse only; the work is ``check_cmd``)."""
from __future__ import annotations

from .argtypes import (EAGER_BACKEND, add_profile, add_scheduler, add_with_builtins, add_workers, backend_names,
                       dtype_name, positive_int)


def register(sub):
    sp = sub.add_parser("list", help="operators, contracts and which claims which")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func="tokenlaw.app.check_cmd:cmd_list")

    sp = sub.add_parser("check", help="run every declared cell and write reports/conformance.{md,json,xml,html}")
    sp.add_argument("--operator", action="append", help="only this operator (repeatable)")
    add_with_builtins(sp)
    sp.add_argument("--contract", action="append", help="only this contract (repeatable)")
    sp.add_argument("--dtype", action="append", type=dtype_name, help="only this dtype (repeatable)")
    add_profile(sp)
    add_workers(sp, "worker processes: 1 runs the cells in this process, N on a Dask LocalCluster of N")
    add_scheduler(sp)
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
    sp.add_argument("--mutant", metavar="NAME", help="judge the registry with this seeded bug (an eager "
                    "mutant: `tokenlaw mutate --list`, or a subtle one such as oattn_running_max_two_tiles)")
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--backend", default=EAGER_BACKEND, metavar="NAME",
                    help=f"one of {backend_names()}: eager PyTorch (the reference), or an installed backend "
                         "plug-in, e.g. the Triton kernels (TRITON_INTERPRET=1 without a GPU)")
    sp.add_argument("--out", default="reports", help="report directory (default: ./reports)")
    sp.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    sp.set_defaults(func="tokenlaw.app.check_cmd:cmd_check")
