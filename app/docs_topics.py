"""The topics of ``tokenlaw docs`` (light: no torch), shared by the parser's precheck and ``docs_cmd``.

An unknown topic is refused here, after parsing and before the command's work is imported, so a typo
answers at once (issue 47: ``tokenlaw docs nosuch`` took 3.5 s, importing torch, to say so).
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path

from tokenlaw.process import command_line

GENERATED = "laws"
# templates for a user's project, printed as they are (the shipped ci-workflow.yml / pre-commit-hooks.yaml are
# tokenlaw's own: paths kernels/**, operators/**)
TEMPLATES = {"ci-workflow": "template-ci-workflow.yml", "pre-commit": "template-pre-commit.yaml"}


def folder():
    """The shipped docs (``tokenlaw.docs``), or the checkout's docs/ folder when running from a source tree."""
    try:
        return resources.files("tokenlaw.docs")
    except ModuleNotFoundError:
        return Path(__file__).resolve().parent.parent / "docs"


def topic_names() -> list:
    """Every topic: the shipped Markdown pages, the user-project templates and the generated ``laws``."""
    pages = sorted(p.name[:-3] for p in folder().iterdir() if p.name.endswith(".md"))
    return [*pages, *TEMPLATES, GENERATED]


def check_topic(args) -> None:
    """An unknown topic: InvalidArgument with the closest names (``tokenlaw docs`` lists them all)."""
    if args.topic is not None and not args.write and args.topic not in topic_names():
        raise command_line.closest(args.topic, topic_names(), "topic", shown_by="tokenlaw docs")
