"""A generated block in a hand-written page: the text between a begin and an end marker line.

The README's law table and docs/measurements.md are written this way: a command renders the block,
:func:`splice` puts it between the markers, a test compares :func:`between` with a fresh rendering.
"""
from __future__ import annotations

from tokenlaw.operators.errors import InvalidArgument


def splice(page: str, block: str, begin: str, end: str, what: str) -> str:
    """``page`` with the text between ``begin`` and ``end`` replaced by ``block``; ``what`` names the page in errors."""
    if page.count(begin) != 1 or page.count(end) != 1 or page.index(begin) > page.index(end):
        raise InvalidArgument(f"{what}: expected one {begin!r} line followed by one {end!r} line")
    head, rest = page.split(begin)
    _, tail = rest.split(end)
    return f"{head}{begin}\n{block}\n{end}{tail}"


def between(page: str, begin: str, end: str, what: str) -> str:
    """The block between the markers of ``page`` (what :func:`splice` wrote), markers validated."""
    splice(page, "", begin, end, what)
    return page.split(begin)[1].split(end)[0].strip("\n")
