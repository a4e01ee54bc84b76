"""The arguments of ``tokenlaw closure`` (light: argparse only; the work is ``closure_cmd.cmd_closure``)."""
from __future__ import annotations

DESCRIPTION = ("``tokenlaw closure module.path:factory``: where does a model stop commuting with null "
               "insertion?")


def register(subparsers):
    sp = subparsers.add_parser("closure", help="localise where an nn.Module stops commuting with null insertion",
                               description=DESCRIPTION)
    sp.add_argument("target", help="module.path:factory returning a model (and example inputs / masks)")
    sp.add_argument("--positions", type=int, nargs="+", help="insertion positions (0..tokens); default: drawn")
    sp.add_argument("--trials", type=int, default=3, help="how many positions to draw when --positions is absent")
    sp.add_argument("--seed", type=int, default=0, help="seed for drawn positions and a drawn x")
    sp.add_argument("--shape", help="BATCH,TOKENS,FEATURES of a drawn x when the factory gives none")
    sp.add_argument("--out", help="also write closure.json into this directory")
    sp.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    sp.set_defaults(func="tokenlaw.app.closure_cmd:cmd_closure")
