"""A Ctrl-C is never lost (issue 47): one that lands in a garbage collector's callback, where Python drops an
exception ("Exception ignored in: ..."), still stops the work in a :func:`interrupts.remembered` block.

Hypothesis registers such a callback (it times every collection); a one-process check under load once
finished with exit 0 after the SIGINT, Python saying "Exception ignored in: gc_callback".  It is rare, so
here the signal is sent from inside a callback of the test's own: it lands there every time.
"""
from __future__ import annotations

import gc
import os
import signal
import sys

import pytest

from tokenlaw.process import interrupts


@pytest.fixture
def dropped(monkeypatch):
    """The exceptions Python drops ("Exception ignored"), as its unraisable hook receives them."""
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_type))
    return seen


@pytest.fixture
def sigint_in_a_gc_callback():
    """Collect once with a callback that sends this process SIGINT: the handler runs in the callback's frame."""
    sent = []

    def callback(phase, info):
        if phase == "start" and not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)

    gc.callbacks.append(callback)
    try:
        yield lambda: gc.collect()
    finally:
        gc.callbacks.remove(callback)


def test_python_drops_a_ctrl_c_raised_in_a_gc_callback(sigint_in_a_gc_callback, dropped):
    """The cause, shown with Python's own handler: the KeyboardInterrupt is dropped (printed) and lost."""
    sigint_in_a_gc_callback()                   # no KeyboardInterrupt comes out of the collection
    assert dropped == [KeyboardInterrupt]


def test_a_dropped_ctrl_c_is_raised_at_the_next_checkpoint(sigint_in_a_gc_callback, dropped):
    with pytest.raises(KeyboardInterrupt):
        with interrupts.remembered() as stop:
            sigint_in_a_gc_callback()
            assert stop.value                   # recorded, not raised inside the callback (which drops it)
            interrupts.checkpoint()
            pytest.fail("the checkpoint went on after a Ctrl-C")
    assert dropped == []                        # nothing raised where Python would drop (and print) it


def test_a_block_that_ends_after_a_dropped_ctrl_c_raises_it(sigint_in_a_gc_callback):
    with pytest.raises(KeyboardInterrupt):
        with interrupts.remembered():
            sigint_in_a_gc_callback()            # no checkpoint after it: the block's end raises


def test_a_ctrl_c_elsewhere_raises_at_once_and_the_handler_is_restored():
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        with interrupts.remembered():
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10 ** 6):
                pass                             # the handler runs at the next bytecode, and raises here
            pytest.fail("not raised")
    assert signal.getsignal(signal.SIGINT) is before
    interrupts.checkpoint()                      # outside a block: a no-op


def test_a_process_that_ignores_ctrl_c_keeps_ignoring_it():
    """``nohup tokenlaw check &``: started with SIGINT ignored, the run is not stopped by one."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupts.remembered() as stop:
            os.kill(os.getpid(), signal.SIGINT)
            interrupts.checkpoint()
        assert not stop.value and signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
