"""The ``tokenlaw`` command as a process of its own, bounded in time: killed with its process group if it overruns
(a campaign starts Dask workers; they must not outlive the test)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path


def start(where: Path, *argv) -> subprocess.Popen:
    """``tokenlaw ARGV`` started in ``where`` (made if missing), in a process group of its own."""
    where.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([sys.executable, "-m", "tokenlaw.app.cli", *argv], cwd=where, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)


def bounded(proc: subprocess.Popen, limit: float) -> subprocess.CompletedProcess:
    """``proc`` waited for at most ``limit`` seconds (then killed with its group, and TimeoutExpired raised)."""
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(), err.decode())


def tokenlaw(where: Path, *argv, limit: float) -> subprocess.CompletedProcess:
    """Run ``tokenlaw ARGV`` in ``where`` (made if missing) for at most ``limit`` seconds; its output as text."""
    return bounded(start(where, *argv), limit)
