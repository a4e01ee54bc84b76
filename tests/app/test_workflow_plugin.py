"""External operators: a separately installed package is checked through the entry point and `pytest --tokenlaw`.

The package is tests/fixtures/tokenlaw_ext_demo (its own pyproject declares
the ``tokenlaw.operators`` entry point).  It is pip-installed into a
temporary --target folder and tokenlaw runs in a subprocess with that
folder on PYTHONPATH, as in a user's environment.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import workflow_env as W  # noqa: E402

pytest_plugins = ["pytester"]

DEMO_ROWS = {"demo_gated_scale-zero_absorption": "holds", "demo_gated_scale-gradcheck": "holds",
             "demo_affine-gradcheck": "holds", "demo_affine-zero_absorption": "expected violation reproduced"}

USER_TEST = '''
from tokenlaw_ext_demo.operators import demo_affine
from tokenlaw.operators.xp import TORCH
import torch

def test_users_own_test():
    x = torch.ones(1, 2, 4, dtype=torch.float64)
    assert demo_affine(TORCH, x, g=torch.ones(4, dtype=torch.float64), b=torch.zeros(4, dtype=torch.float64), tau=1.0).eq(1).all()
'''


@pytest.fixture(scope="module")
def ext(tmp_path_factory):
    """The fixture package installed into a --target folder."""
    tmp = tmp_path_factory.mktemp("ext")
    return W.pip_target(W.FIXTURES / "tokenlaw_ext_demo", tmp / "site")


def test_entry_point_registers_the_package(ext, tmp_path):
    # No --operators: the operators arrive only through the installed entry point.
    out = W.run(["-m", "tokenlaw.app.cli", "check", "--operator", "demo_gated_scale", "--operator",
                 "demo_affine", "--operator", "presence", "--examples", "5", "--out", "r", "--json"],
                cwd=tmp_path, env=W.env(ext))
    assert out.returncode == 0, out.stdout + out.stderr
    doc = json.loads((tmp_path / "r" / "conformance.json").read_text())
    rows = {r["id"]: r["outcome"] for r in doc["rows"]}
    assert {k: rows.get(k) for k in DEMO_ROWS} == DEMO_ROWS
    assert "presence-zero_absorption" in rows        # the plug-in sits beside tokenlaw's own operators
    assert "demo_affine-zero_absorption-eager-float32" in (tmp_path / "r" / "conformance.xml").read_text()


def test_pytest_tokenlaw_runs_cells_in_the_users_suite(ext, tmp_path):
    (tmp_path / "test_user.py").write_text(USER_TEST)
    out = W.run(["-m", "pytest", *W.plugin_args(), "--tokenlaw", "tokenlaw_ext_demo.operators",
                 "--tokenlaw-examples", "5", "-v", "-p", "no:cacheprovider", "test_user.py"],
                cwd=tmp_path, env=W.env(ext))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "test_user.py::test_users_own_test PASSED" in out.stdout
    for rid in DEMO_ROWS:
        assert f"tokenlaw::{rid} PASSED" in out.stdout
    assert " failed" not in out.stdout      # the universal differential rows pass or skip with a reason


def test_pytest_tokenlaw_fails_a_row_that_breaks_its_declaration(pytester):
    # A user's module whose operator claims zero absorption but adds a bias (run in-process: fast).
    pytester.makepyfile(broken_ops="""
        from tokenlaw.operators.registry import Domain, declare

        @declare(name="broken_bias", domain=Domain(dtypes=("float64",), params=lambda g, d, dt: {}),
                 traits={"token_local"}, claims={"zero_absorption": "claimed, wrongly"})
        def broken_bias(xp, x):
            return x + 1.0
    """)
    pytester.syspathinsert()
    result = pytester.runpytest_inprocess(*W.plugin_args(), "--tokenlaw", "broken_ops",
                                          "--tokenlaw-examples", "5", "-p", "no:cacheprovider")
    # + the universal rows: differential has no float64 cell and spec_reference no reference= (both
    # skipped with the reason); finite holds (x + 1 is finite)
    result.assert_outcomes(failed=1, skipped=2, passed=1)
    result.stdout.fnmatch_lines(["*broken_bias-zero_absorption: UNEXPECTED violation*",
                                 "*counterexample: n=1*"])    # shrunk to the smallest case


@pytest.mark.slow  # builds tokenlaw's own wheel (~5 s) and starts two interpreters
def test_installed_tokenlaw_loads_the_plugin_by_entry_point(ext, tmp_path):
    site = W.pip_target(W.copy_tree(tmp_path / "checkout"), tmp_path / "tl-site")
    assert "pytest11" in next(site.glob("tokenlaw-*.dist-info/entry_points.txt")).read_text()
    (tmp_path / "proj").mkdir()
    e = W.env(site, ext, keep_path=False)      # only the installed copies: no checkout on the path
    out = W.run(["-m", "pytest", "--tokenlaw", "tokenlaw_ext_demo.operators", "--tokenlaw-examples", "5",
                 "-q", "-p", "no:cacheprovider"], cwd=tmp_path / "proj", env=e)
    assert out.returncode == 0, out.stdout + out.stderr
    assert " passed" in out.stdout and " failed" not in out.stdout
    out = W.run([str(site / "bin" / "tokenlaw"), "list", "--json"], cwd=tmp_path / "proj", env=e)
    assert out.returncode == 0, out.stderr
    assert "demo_affine" in out.stdout


def test_pytest_tokenlaw_runs_a_row_once_when_the_generated_test_file_collects_it(pytester):
    """Issue 47: `pytest --tokenlaw mymod` beside the test file `tokenlaw new` writes ran every row twice."""
    from tokenlaw.app import scaffold

    pytester.makepyfile(twice_ops="""
        from tokenlaw.operators.registry import Domain, declare

        @declare(name="twice_scale", domain=Domain(dtypes=("float64",), params=lambda g, d, dt: {}),
                 traits={"token_local"}, claims={"zero_absorption": "2 * 0 = 0"})
        def twice_scale(xp, x):
            return 2.0 * x
    """)
    pytester.makepyfile(test_twice=scaffold.render_test("twice", "twice_ops.py"))
    pytester.syspathinsert()
    args = [*W.plugin_args(), "--tokenlaw", "twice_ops", "--tokenlaw-examples", "3", "-p", "no:cacheprovider",
            "-k", "zero_absorption", "-v"]
    result = pytester.runpytest_inprocess(*args)
    # once, by the test file (it was 2: the file's and the plugin's); without the file the plugin's own item
    # runs it (test_pytest_tokenlaw_fails_a_row_that_breaks_its_declaration)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*collected 4 items / 3 deselected / 1 selected*",
                                 "*tokenlaw: 4 rows of --tokenlaw already collected from a test file*",
                                 "*test_twice.py::test_twice_row*twice_scale-zero_absorption* PASSED*"])
