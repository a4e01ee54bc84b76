"""Ctrl-C with one outcome wherever it lands (issue 47): the parent process alone stops, and what it writes is whole.

A terminal's Ctrl-C sends SIGINT to the whole foreground process group: to ``tokenlaw`` and to every Dask
worker process a LocalCluster started.  Each worker then died of its own KeyboardInterrupt and printed a
traceback, while the parent's outcome depended on where in its loop the signal fell.  Two helpers fix it:

* :func:`children_ignore` ignores SIGINT while a cluster starts.  An ignored signal stays ignored in the
  processes started meanwhile (a LocalCluster's workers), across ``exec``, and Python (asyncio's runner
  included) leaves an ignored SIGINT ignored.  The workers then never see Ctrl-C; the parent stops them when
  it closes the cluster.  The price: a Ctrl-C during those seconds of start-up is lost (press it again).
  (A blocked signal mask would keep it pending instead, but Dask starts its workers from threads that do
  not inherit the mask of the thread that asked: measured, the workers caught SIGINT.)
* :func:`held` defers a Ctrl-C while a report is written, so an interrupted run's files are never half
  written; it tells the caller whether one came.

>>> with held() as caught:
...     pass                     # write the report here
>>> caught.value
False
"""
from __future__ import annotations

import contextlib
import dataclasses
import signal
import threading


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def children_ignore():
    """SIGINT ignored by this process for the block, and from birth by the processes started meanwhile (which
    keep ignoring it); the handler before is restored after.  A no-op off the main thread."""
    if not _main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


@dataclasses.dataclass
class Caught:
    """Whether a Ctrl-C arrived during :func:`held` (``value``)."""

    value: bool = False


@contextlib.contextmanager
def held():
    """Yield a :class:`Caught`; a SIGINT during the block is recorded there instead of raising in the middle of it.

    The caller decides what a recorded Ctrl-C means once the block is done (an interrupted run that writes its
    report already stops with 130).  Off the main thread (where Python cannot set a handler) nothing is held.
    """
    caught = Caught()
    if not _main_thread():
        yield caught
        return

    def record(signum, frame):
        caught.value = True

    before = signal.signal(signal.SIGINT, record)
    try:
        yield caught
    finally:
        signal.signal(signal.SIGINT, before)
