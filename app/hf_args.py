"""The arguments of ``tokenlaw hf`` (light: argparse only; the work is ``hf_cmd``).

* ``tokenlaw hf laws --arch NAME [--law LAW ...] [--transformers VERSION | --with PKG==VERSION ...]``: the
  model laws on one tiny architecture, in the installed ``transformers`` or a pinned one;
* ``tokenlaw hf bisect --arch NAME --law LAW OLD..NEW``: the last release that breaks the law and the first
  that keeps it;
* ``tokenlaw hf sweep ...``: every architecture under the model laws (``tokenlaw.integrations.hf.sweep``).
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
    laws.add_argument("--json", action="store_true", help="machine-readable output")
    laws.set_defaults(func="tokenlaw.app.hf_cmd:cmd_laws")

    bis = sub.add_parser("bisect", help="the last bad and first good release for a law")
    _common(bis, arch_many=False)
    bis.add_argument("--law", required=True, metavar="LAW", help="the law to bisect")
    bis.add_argument("range", metavar="OLD..NEW", help="the releases to search, e.g. 4.37.0..4.41.0")
    bis.add_argument("--json", action="store_true", help="machine-readable output")
    bis.set_defaults(func="tokenlaw.app.hf_cmd:cmd_bisect")

    sweep = sub.add_parser("sweep", help="every architecture under the model laws")
    _common(sweep, arch_many=True)
    sweep.add_argument("--laws", nargs="+", default=None, metavar="LAW", help="laws (default: all that apply)")
    _pinning(sweep)
    sweep.add_argument("--record", default=None, metavar="DIR", help="write the sweep's report there")
    sweep.add_argument("--json", action="store_true", help="machine-readable output")
    sweep.set_defaults(func="tokenlaw.app.hf_cmd:cmd_sweep")
