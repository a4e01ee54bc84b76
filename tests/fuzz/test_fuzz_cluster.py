"""Cells on a real Dask cluster: `dask scheduler` and two `dask worker` processes on 127.0.0.1.

Every process a test starts is bounded in time and stopped by the test (terminate, then kill).  The
reports of one selection and seed are compared byte for byte between ``--workers 1``, ``--workers 2``
and the two-worker scheduler, less the fields that record how a run was executed
(``reports.document.EXECUTION``: the command line, the worker count, the Dask workers' addresses).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tokenlaw.fuzz.replay import replay
from tokenlaw.reports.document import findings

from tests.fuzz import commands

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("dask") is None, reason="the `dask` command is not installed")]

SELECTION = ["--operator", "oattention", "--profile", "smoke", "--seed", "0", "--progress", "off"]
RUN_LIMIT = 300                 # seconds: one check of the selection takes ~10 s on 2 busy cores


class Cluster:
    """A `dask scheduler` and `dask worker`s, started as processes of their own (stopped by :meth:`stop`)."""

    def __init__(self, where: Path, workers: int = 2, env=None):
        self.where, self.procs = where, []
        self.env = {**os.environ, **(env or {})}
        self.file = where / "scheduler.json"
        try:
            self._up(workers)
        except BaseException:
            self.stop()                 # a failed start leaves no process behind
            raise

    def _up(self, workers):
        self._start(["dask", "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", str(self.file)], "scheduler")
        deadline = time.monotonic() + 60
        while not self.file.is_file():
            assert time.monotonic() < deadline, "the scheduler wrote no scheduler file in 60 s"
            time.sleep(0.2)
        self.address = json.loads(self.file.read_text())["address"]
        for i in range(workers):
            self.add_worker(f"w{i}")
        if workers:
            self.wait(workers)

    def _start(self, argv, name, env=None):
        log = open(self.where / f"{name}.log", "wb")
        self.procs.append(subprocess.Popen(argv, cwd=self.where, env=env or self.env, stdout=log, stderr=log,
                                           start_new_session=True))
        return self.procs[-1]

    def add_worker(self, name, env=None):
        return self._start(["dask", "worker", self.address, "--nthreads", "1", "--no-nanny", "--no-dashboard",
                            "--name", name], name, env)

    def wait(self, n):
        from distributed import Client
        with Client(self.address, timeout=60) as client:
            client.wait_for_workers(n, timeout=120)

    def pids(self) -> dict:
        """{worker address: pid}."""
        from distributed import Client
        with Client(self.address, timeout=60) as client:
            return client.run(os.getpid)

    def processing(self) -> dict:
        from distributed import Client
        with Client(self.address, timeout=60) as client:
            return client.processing()

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=15)


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path / "cluster")
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture(autouse=True)
def _folders(tmp_path):
    (tmp_path / "cluster").mkdir()


def check(where: Path, *args, wait=True):
    """`tokenlaw check SELECTION ARGS --out reports` run in ``where`` (so every run names the same --out)."""
    proc = commands.start(where, "check", *SELECTION, *args, "--out", "reports")
    if not wait:
        return proc
    return finish(proc)


def finish(proc):
    done = commands.bounded(proc, RUN_LIMIT)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stderr


def report(where: Path) -> dict:
    return json.loads((where / "reports" / "conformance.json").read_text())


def same(a: Path, b: Path) -> None:
    """The two runs' reports agree byte for byte but for how they were executed."""
    assert json.dumps(findings(report(a)), indent=1) == json.dumps(findings(report(b)), indent=1)
    for name in ("conformance.md", "conformance.xml"):
        assert (a / "reports" / name).read_bytes() == (b / "reports" / name).read_bytes(), name
    replays = sorted(p.name for p in (a / "reports" / "replays").iterdir())
    assert replays == sorted(p.name for p in (b / "reports" / "replays").iterdir()) and replays
    for name in replays:
        assert (a / "reports" / "replays" / name).read_bytes() == (b / "reports" / "replays" / name).read_bytes()


def test_one_worker_two_workers_and_a_scheduler_write_the_same_reports(cluster, tmp_path):
    check(tmp_path / "w1", "--workers", "1")
    check(tmp_path / "w2", "--workers", "2")
    err = check(tmp_path / "sched", "--scheduler", cluster.address)
    assert f"scheduler {cluster.address}" in err            # the run says where its cells went
    same(tmp_path / "w1", tmp_path / "w2")
    same(tmp_path / "w1", tmp_path / "sched")
    ran = report(tmp_path / "sched")["meta"]["dask"]
    assert sorted(ran["workers"]) == sorted(cluster.pids()), ran     # both workers ran cells
    assert sum(ran["workers"].values()) == sum(len(r["cells"]) for r in report(tmp_path / "sched")["rows"])
    assert "dask" not in report(tmp_path / "w1")["meta"]


def test_a_worker_killed_mid_run_has_its_cells_rerun_elsewhere(cluster, tmp_path):
    pids = cluster.pids()
    victim = sorted(pids)[0]
    run = check(tmp_path / "sched", "--scheduler", cluster.address, wait=False)
    deadline = time.monotonic() + RUN_LIMIT
    while not cluster.processing().get(victim):                # the victim is running a cell now
        assert run.poll() is None, "the run ended before the victim ran a cell"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(pids[victim], signal.SIGKILL)
    finish(run)
    cluster.procs = [p for p in cluster.procs if p.pid != pids[victim]]
    doc = report(tmp_path / "sched")
    assert all(c["verdict"] is not None for r in doc["rows"] for c in r["cells"])      # complete
    survivor = next(a for a in pids if a != victim)
    assert doc["meta"]["dask"]["workers"].get(survivor, 0) > 0
    check(tmp_path / "w1", "--workers", "1")
    same(tmp_path / "w1", tmp_path / "sched")                 # the re-run cells judged the same examples


def test_a_worker_on_other_cpu_paths_stops_the_run(tmp_path):
    """A worker that keeps the machine's own float paths (TOKENLAW_CPU_PATHS=native) would judge other bits:
    the run refuses its cells, naming it."""
    c = Cluster(tmp_path / "cluster", workers=0)
    try:
        c.add_worker("native", env={**os.environ, "TOKENLAW_CPU_PATHS": "native"})
        c.wait(1)
        done = commands.bounded(check(tmp_path / "sched", "--scheduler", c.address, wait=False), RUN_LIMIT)
        assert done.returncode == 2
        assert "runs other CPU code paths" in done.stderr, done.stderr[-2000:]
    finally:
        c.stop()


def test_a_worker_with_dasks_malloc_trim_setting_is_named_with_the_fix(tmp_path):
    """A worker started as Dask's nanny starts them (MALLOC_TRIM_THRESHOLD_=65536: 2.7x slower on large tensors)
    gets one line of advice naming it and the environment setting that avoids it; the run still completes."""
    c = Cluster(tmp_path / "cluster", workers=0)
    try:
        c.add_worker("trimmed", env={**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536"})
        c.wait(1)
        err = check(tmp_path / "sched", "--scheduler", c.address)
        (worker,) = c.pids()
        advice = [line for line in err.splitlines() if "MALLOC_TRIM_THRESHOLD_=65536" in line]
        assert len(advice) == 1 and worker in advice[0], err[-2000:]
        assert "DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON" in advice[0]
    finally:
        c.stop()


def test_a_campaign_on_the_scheduler_runs_cells_on_both_workers(cluster, tmp_path):
    where = tmp_path / "camp"
    run = commands.tokenlaw(where, "campaign", "--scheduler", cluster.address, "--minutes", "1", "--operator", "sdpa",
                            "--dtype", "float32", "--out", "reports", limit=RUN_LIMIT)
    assert run.returncode in (0, 1), run.stderr[-3000:]
    doc = json.loads((where / "reports" / "campaign.json").read_text())
    assert sorted(doc["meta"]["dask"]["workers"]) == sorted(cluster.pids()), doc["meta"]["dask"]
    assert doc["meta"]["rounds"] >= 2 and 50 <= doc["meta"]["seconds"] <= 120
    assert all(c["rounds"] >= 1 for c in doc["cells"])
    # every cell ran examples but those no machine judges (not applicable by design, or not runnable here)
    idle = {c["id"]: c["status"] for c in doc["cells"] if c["examples"] == 0}
    assert set(idle.values()) <= {"not_applicable", "not_runnable"} and len(idle) < len(doc["cells"]) // 2, idle
    found = [v for c in doc["cells"] for v in c["violations"]]
    assert found and run.returncode == (1 if doc["unexpected"] else 0)     # sdpa violates 5 laws by design
    for v in found:                                             # each stored, each replays bit for bit
        assert replay(v["replay"], where / "reports" / "replays").reproduced, v
