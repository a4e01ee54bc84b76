"""The arguments of ``tokenlaw bench`` (light: argparse only; the work is ``bench_cmd.cmd_bench``)."""
from __future__ import annotations


def register(subparsers):
    sp = subparsers.add_parser("bench", help="a backend plug-in's benchmark (the Triton kernels: tokens/s and peak "
                                             "memory, forward and forward + backward, vs eager and torch SDPA; "
                                             "needs a GPU)")
    sp.add_argument("--backend", default=None, metavar="NAME",
                    help="the backend whose benchmark runs (default: the installed one that has a benchmark)")
    sp.add_argument("--smoke", action="store_true",
                    help="tiny shapes (the Triton kernels: on the CPU interpreter), to test the harness "
                         "(NOT a benchmark)")
    sp.add_argument("--out", default="reports", help="directory for bench.json / bench-smoke.json")
    sp.add_argument("--skip-eager-above", type=int, default=16384,
                    help="skip the O(N^2)-memory eager reference above this N")
    sp.add_argument("--json", action="store_true", help="machine-readable result on stdout")
    sp.set_defaults(func="tokenlaw.app.bench_cmd:cmd_bench")
