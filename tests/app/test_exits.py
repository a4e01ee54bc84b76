"""Exit codes are defined once (tokenlaw.app.exits); lower layers return results, never codes."""
from __future__ import annotations

import re
from pathlib import Path

from tokenlaw.app import exits

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("process", "operators", "properties", "symbolic", "fuzz", "kernels", "reports", "experiments", "app")
DEFINES_CODE = re.compile(r"^\s*EXIT_\w+(\s*,\s*EXIT_\w+)*\s*=", re.M)


def test_the_documented_codes():
    assert (exits.EXIT_OK, exits.EXIT_FAIL, exits.EXIT_USAGE, exits.EXIT_CANNOT_RUN, exits.EXIT_INTERNAL) == \
        (0, 1, 2, 3, 70)
    assert exits.passed(True) == 0 and exits.passed(False) == 1
    assert exits.EXIT_UNDECIDED == 4
    assert [exits.of_result(r) for r in ("PASS", "FAIL", "UNDECIDED")] == [0, 1, 4]


def test_every_result_a_report_can_have_has_a_code():
    from tokenlaw.reports.document import RESULTS

    assert sorted(exits.of_result(r) for r in RESULTS) == [exits.EXIT_OK, exits.EXIT_FAIL, exits.EXIT_UNDECIDED]


def test_exit_codes_are_defined_only_in_app_exits():
    defining = sorted(str(p.relative_to(ROOT)) for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")
                      if DEFINES_CODE.search(p.read_text(encoding="utf-8")))
    assert defining == ["app/exits.py"]


def test_no_lower_layer_exits_the_process():
    lower = [p for pkg in PACKAGES[:-1] for p in (ROOT / pkg).rglob("*.py")]
    assert lower
    offenders = [str(p.relative_to(ROOT)) for p in lower
                 if re.search(r"\bsys\.exit\(|raise SystemExit|EXIT_[A-Z]", p.read_text(encoding="utf-8"))]
    assert offenders == []


def test_the_pattern_sees_a_second_definition():
    assert DEFINES_CODE.search("EXIT_OK, EXIT_FAIL = 0, 1\n")
    assert DEFINES_CODE.search("    EXIT_CANNOT_RUN = 3\n")
    assert not DEFINES_CODE.search("from .exits import EXIT_OK\n")
