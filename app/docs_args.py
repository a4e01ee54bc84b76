"""The arguments of ``tokenlaw docs`` (light: argparse only; the work is ``docs_cmd.cmd_docs``).

The topic is checked after parsing, before the command's work is imported (``docs_topics.check_topic``: an unknown
topic gets "did you mean" at once, without torch), so listing the shipped pages costs the parser nothing.
"""
from __future__ import annotations

DESCRIPTION = ("``tokenlaw docs [TOPIC]``: the documentation that ships in the wheel, and the laws of the "
               "installed registry.")


def register(subparsers):
    sp = subparsers.add_parser("docs", help="print the shipped documentation (mathematics, laws, workflow ...)",
                               description=DESCRIPTION)
    sp.add_argument("topic", nargs="?", help="a topic; without one, list them")
    sp.add_argument("--json", action="store_true", help="machine-readable output")
    sp.add_argument("--write", action="store_true",
                    help="with 'measurements', in a checkout: render reports/measurements/*.json into "
                         "docs/measurements.md")
    sp.set_defaults(func="tokenlaw.app.docs_cmd:cmd_docs", precheck="tokenlaw.app.docs_topics:check_topic")

