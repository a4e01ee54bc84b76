"""The topics of ``tokenlaw docs`` (light: no torch), shared by the parser's precheck and ``docs_cmd``.

An unknown topic is refused here, after parsing and before the command's work is imported, so a typo
answers at once (issue 47: ``tokenlaw docs nosuch`` took 3.5 s, importing torch, to say so).  A shipped
page (``xp``, ``fuzz``, a template ...) and the list of topics are printed from here too: only ``laws``
(the installed registry) and ``measurements --write`` need ``docs_cmd`` and torch.
"""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from tokenlaw.process import command_line

from .exits import EXIT_OK

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


def topics() -> dict:
    """{topic: text} of every shipped Markdown page and of the user-project templates (:data:`TEMPLATES`)."""
    pages = {p.name[:-3]: p.read_text(encoding="utf-8") for p in sorted(folder().iterdir(), key=lambda p: p.name)
             if p.name.endswith(".md")}
    pages.update({topic: (folder() / name).read_text(encoding="utf-8") for topic, name in TEMPLATES.items()})
    return pages


def check_topic(args) -> None:
    """An unknown topic: InvalidArgument with the closest names (``tokenlaw docs`` lists them all).

    A shipped page or the list is then printed by :func:`print_page` (this light module) instead of
    ``docs_cmd``: the command's ``func`` is pointed there."""
    if args.topic is not None and not args.write and args.topic not in topic_names():
        raise command_line.closest(args.topic, topic_names(), "topic", shown_by="tokenlaw docs")
    if not args.write and args.topic != GENERATED:
        args.func = "tokenlaw.app.docs_topics:print_page"


def print_page(args) -> int:
    """``tokenlaw docs`` (the list) or ``tokenlaw docs PAGE`` (a shipped page), printed as it ships; exit 0."""
    pages = topics()
    if args.topic is None:
        names = [*pages, GENERATED]
        print(json.dumps({"topics": names}, indent=1) if args.json
              else "tokenlaw docs TOPIC, where TOPIC is one of:\n" + "\n".join(f"  {n}" for n in names))
    else:
        text = pages[args.topic]
        print(json.dumps({"topic": args.topic, "text": text}, indent=1) if args.json else text)
    return EXIT_OK
