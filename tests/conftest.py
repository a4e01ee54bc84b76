"""Shared fixtures: a fresh registry per session and the report directory."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def registry():
    from tokenlaw.properties.catalogue import collect

    return collect()
