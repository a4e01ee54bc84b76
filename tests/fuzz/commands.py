"""The ``tokenlaw`` command as a process of its own, bounded in time: killed with its process group if it overruns
(a campaign starts Dask workers; they must not outlive the test)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path


def tokenlaw(where: Path, *argv, limit: float) -> subprocess.CompletedProcess:
    """Run ``tokenlaw ARGV`` in ``where`` (made if missing) for at most ``limit`` seconds; its output as text."""
    where.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "tokenlaw.app.cli", *argv], cwd=where, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(), err.decode())
