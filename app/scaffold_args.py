"""The arguments of ``tokenlaw new`` (light: argparse only; the work is ``scaffold.cmd_new``)."""
from __future__ import annotations

DESCRIPTION = "``tokenlaw new NAME``: scaffold an operator declaration whose cells every tier picks up."


def register(sub):
    sp = sub.add_parser("new", help="scaffold operators/NAME.py: declaration, claims, an eager stub",
                        description=DESCRIPTION,
                        epilog="exit codes: 0 written, 2 bad arguments")
    sp.add_argument("name", help="operator name (a lowercase identifier), also the file name")
    sp.add_argument("--like", metavar="OP", help="copy traits, domain, parameters and claims of this operator")
    sp.add_argument("--traits", help="comma-separated traits (default: token_local; ignored with --like)")
    sp.add_argument("--claims", help="comma-separated contracts to claim (default: from --like or the traits)")
    sp.add_argument("--dir", help="folder to write into (default: tokenlaw's operators/ folder in a checkout; "
                                  "the current project when tokenlaw is installed)")
    sp.add_argument("--json", action="store_true", help="machine-readable result on stdout")
    sp.set_defaults(func="tokenlaw.app.scaffold:cmd_new")
