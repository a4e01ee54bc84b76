"""A real redis-server on loopback, started and stopped by the test that asks (``redis_url``).

Imported by the tests that use it (a ``conftest.py`` here would shadow ``tests/conftest.py`` for the tests that
import it by name, e.g. ``tests/test_conftest_triton.py``)."""
from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest

REDIS = shutil.which("redis-server")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def redis_url(tmp_path):
    """(redis://127.0.0.1:PORT/0, a client) of a redis-server of this test's own, stopped after it."""
    if REDIS is None:
        pytest.skip("redis-server not found (apt-get install redis-server; .ci/setup does)")
    import redis

    port = free_port()
    proc = subprocess.Popen([REDIS, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no",
                             "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(host="127.0.0.1", port=port)
    try:
        for _ in range(200):
            try:
                client.ping()
                break
            except redis.exceptions.ConnectionError:
                time.sleep(0.05)
        else:
            pytest.fail("redis-server did not start in 10 s")
        yield f"redis://127.0.0.1:{port}/0", client
    finally:
        client.close()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
