"""Ctrl-C's one outcome for the commands that judge rows (issue 47): the report of what was judged, written
whole and marked interrupted, a line saying so on stderr, then exit 130.

``check``, ``prove``, ``verify`` and ``gate`` catch :class:`~tokenlaw.orchestration.runs.Interrupted` (its
``docs``: the reports the run had made) and call :func:`report`; ``campaign`` has its own page and report
(``campaign_cmd``).  A further Ctrl-C while the files are written is held, so none is left half written.
"""
from __future__ import annotations

import dataclasses
import shlex
import sys

from tokenlaw.process import interrupts
from tokenlaw.reports import writers
from tokenlaw.properties.verdict import Tier

from .exits import EXIT_INTERRUPTED


def command_line(args) -> str:
    """``tokenlaw ARGS`` as this process was given them (shell-quoted, so it can be pasted)."""
    return "tokenlaw " + shlex.join(getattr(args, "argv", None) or [])


def report(args, written) -> int:
    """Write each ``(doc, write)`` of ``written`` (``write``: the settings' own writer, returning its paths) with
    the command line recorded, say on stderr what each holds, and return :data:`EXIT_INTERRUPTED`."""
    said = []
    with interrupts.held():
        for doc, write in written:
            doc = dataclasses.replace(doc, meta=doc.meta.with_command(command_line(args)))
            paths = write(doc)
            page = paths.get("md") or paths.get("proofs-md")
            cut = doc.meta.interrupted
            if cut is None:           # verify: the check finished before the Ctrl-C came while proving
                said.append(f"tokenlaw: the {doc.meta.tier} tier finished before the Ctrl-C: its report {page}")
                continue
            proved = doc.meta.tier is Tier.SYMBOLIC
            unit = "rows proved" if proved else "cells judged"
            whole = "finished" if proved else "judged in every dtype"
            said.append(f"tokenlaw: interrupted: {cut['judged_cells']} of {cut['planned_cells']} {unit}; the report "
                        f"of the {writers.rows_word(len(doc.rows))} {whole} (marked interrupted, never a PASS): {page}")
    print("\n" + "\n".join(said), file=sys.stderr)
    return EXIT_INTERRUPTED
