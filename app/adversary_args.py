"""The arguments of ``tokenlaw adversary`` (light: argparse only; the work is ``adversary_cmd``)."""
from __future__ import annotations

from .argtypes import add_profile, add_with_builtins, add_workers, positive_int


def register(sub):
    sp = sub.add_parser("adversary", help="predicate-conditional mutants of every operator, judged by the default "
                                          "check: the kill matrix per axis and per law family, and every survivor "
                                          "(equivalent or a gap); writes reports/adversary.{md,json}")
    sp.add_argument("--operator", action="append", help="only this operator's mutants (repeatable)")
    add_with_builtins(sp)
    add_profile(sp)
    sp.add_argument("--examples", type=positive_int, help="examples per cell per dtype, >= 1 (overrides the profile)")
    add_workers(sp, "worker processes: 1 runs the cells in this process, N on a Dask LocalCluster of N")
    sp.add_argument("--sample", type=positive_int, metavar="K", help="a fixed sample of K mutants (seeded by --seed)")
    sp.add_argument("--mutant", action="append", metavar="ID",
                    help="only this mutant, OPERATOR:PREDICATE:WRONGNESS (repeatable; see --list)")
    sp.add_argument("--seed", type=int, default=0, help="the check's seed, and the sample's (default 0)")
    sp.add_argument("--out", default="reports", help="writes adversary.{md,json} here (default ./reports)")
    sp.add_argument("--splice", action="store_true",
                    help="update the report already in --out: re-run every mutant of the --operator(s) (or only "
                         "the --mutant(s) named) at its recorded seed and examples and replace theirs, the others "
                         "kept as recorded (the figure recomputed; the re-run stated under meta.spliced)")
    sp.add_argument("--list", action="store_true", help="list the mutants (after the filters) and exit")
    sp.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    sp.set_defaults(func="tokenlaw.app.adversary_cmd:cmd_adversary")
