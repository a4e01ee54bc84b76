"""The arguments of ``tokenlaw hf`` (light: argparse only; the work is ``hf_cmd``).

* ``tokenlaw hf laws --arch NAME [--law LAW ...] [--transformers VERSION | --with PKG==VERSION ...]``: the
  model laws on one tiny architecture, in the installed ``transformers`` or a pinned one;
* ``tokenlaw hf bisect --arch NAME --law LAW OLD..NEW``: the last release that breaks the law and the first
  that keeps it;
* ``tokenlaw hf sweep ...``: every causal-LM architecture under the model laws (``tokenlaw.orchestration.hf_sweep``).
"""
from __future__ import annotations

DESCRIPTION = "Whole Hugging Face models under the model laws (tokenlaw docs models)."


def _common(sp, *, arch_many: bool):
    if arch_many:
        sp.add_argument("--arch", nargs="+", default=["all"], metavar="NAME", help="architectures, or all")
    else:
        sp.add_argument("--arch", required=True, metavar="NAME", help="the architecture (mistral, llama, ...)")
    sp.add_argument("--dtype", default=None, metavar="DTYPE", help="float64 or float32")
    sp.add_argument("--examples", type=int, default=None, metavar="N", help="examples per law")
    sp.add_argument("--seed", type=int, default=0, help="the search's seed (the same seed: the same search)")


def _pinning(sp):
    sp.add_argument("--transformers", default=None, metavar="VERSION",
                    help="run against this transformers release, installed into an isolated cached folder "
                         "(~/.cache/tokenlaw/pins; TOKENLAW_PIN_CACHE) and run in a subprocess")
    sp.add_argument("--with", dest="with_", action="append", default=[], metavar="PACKAGE==VERSION",
                    help="the same for any package (transformers==4.39.3); repeatable")


def register(subparsers):
    hf = subparsers.add_parser("hf", help="whole Hugging Face models under the model laws", description=DESCRIPTION)
    sub = hf.add_subparsers(dest="hf_command", required=True)

    laws = sub.add_parser("laws", help="judge the model laws on one tiny architecture")
    _common(laws, arch_many=False)
    laws.add_argument("--law", action="append", default=[], metavar="LAW", help="a law (repeatable; default all "
                      "that apply)")
    _pinning(laws)
    laws.add_argument("--replay", default=None, metavar="CASE_JSON",
                      help="judge this one stored case (a violation's shrunk counterexample, as printed) instead "
                           "of searching; needs one --law")
    laws.add_argument("--json", action="store_true", help="machine-readable output")
    laws.set_defaults(func="tokenlaw.app.hf_cmd:cmd_laws")

    bis = sub.add_parser("bisect", help="the last bad and first good release for a law")
    _common(bis, arch_many=False)
    bis.add_argument("--law", required=True, metavar="LAW", help="the law to bisect")
    bis.add_argument("range", metavar="OLD..NEW", help="the releases to search, e.g. 4.37.0..4.41.0")
    bis.add_argument("--json", action="store_true", help="machine-readable output")
    bis.set_defaults(func="tokenlaw.app.hf_cmd:cmd_bisect")

    sweep = sub.add_parser("sweep", help="every causal-LM architecture under the model laws")
    sweep.add_argument("--arch", nargs="+", default=["all"], metavar="NAME", help="architectures, or all")
    sweep.add_argument("--laws", nargs="+", default=None, metavar="LAW", help="laws (default: all)")
    sweep.add_argument("--dtype", nargs="+", default=["float64", "float32"], metavar="DTYPE",
                       help="float64 and/or float32 (default both)")
    sweep.add_argument("--examples", type=int, default=6, metavar="N", help="examples per cell (default 6)")
    sweep.add_argument("--seed", type=int, default=0, help="the search's seed (the same seed: the same search)")
    sweep.add_argument("--workers", type=int, default=2, metavar="N", help="local Dask worker processes (1: here)")
    sweep.add_argument("--scheduler", default=None, metavar="ADDRESS", help="a running Dask scheduler")
    sweep.add_argument("--out", "--record", dest="out", default="reports/hf-sweep", metavar="DIR",
                       help="the report's folder: sweep.md, sweep.json, cells.jsonl (default reports/hf-sweep)")
    sweep.add_argument("--list", action="store_true", help="list the architectures and exit")
    sweep.add_argument("--amend", action="store_true", help="re-run --arch into the report already in --out")
    sweep.add_argument("--amend-with", default=None, metavar="DIR",
                       help="merge the sweep in DIR (run apart) into --out's report, as --amend would")
    sweep.add_argument("--why", default="", metavar="TEXT", help="with --amend: why (stated in the report)")
    sweep.add_argument("--retriage", action="store_true", help="re-triage and re-render the report in --out")
    sweep.add_argument("--json", action="store_true", help="the report's counts and paths on stdout, as JSON")
    sweep.set_defaults(func="tokenlaw.app.hf_cmd:cmd_sweep")
