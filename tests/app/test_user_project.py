"""A new user's project in a temporary directory, end to end (issue 21).

The user keeps their operator in ``ops/leaky_ops.py`` (not installed, not on
``sys.path``) and runs tokenlaw from ``proj/``: the module is given by path,
only its operators are checked, the failing claim prints a replay command
that, pasted from the same directory, reproduces; ``tokenlaw new`` writes the
operator and a test file that plain ``pytest`` runs.
"""
from __future__ import annotations

import json
import shlex
import sys
import textwrap
from pathlib import Path

import pytest

from tokenlaw.app import cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import workflow_env as W  # noqa: E402

LEAKY = textwrap.dedent('''
    """A user's operators: one breaks its claim, one keeps it."""
    from tokenlaw.operators import arguments
    from tokenlaw.operators.registry import Domain, declare


    def _params(gen, d_model, dtype=None):
        return {}


    @declare(name="user_leaky", domain=Domain(params=_params, dtypes=("float64",), n_max=3),
             traits={"token_local"}, claims={"zero_absorption": "claimed, but x + 1 maps 0 to 1"})
    def user_leaky(xp, x):
        """x + 1."""
        arguments.tokens(x)
        return x + 1


    @declare(name="user_double", domain=Domain(params=_params, dtypes=("float64",), n_max=3),
             traits={"token_local"}, claims={"zero_absorption": "2 * 0 = 0"})
    def user_double(xp, x):
        """2 x."""
        arguments.tokens(x)
        return x * 2
''')


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "leaky_ops.py").write_text(LEAKY)
    (tmp_path / "proj").mkdir()
    monkeypatch.chdir(tmp_path / "proj")
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path / "proj"
    for name in ("leaky_ops", "sig_attn"):
        sys.modules.pop(name, None)


def run(capsys, *argv):
    capsys.readouterr()
    code = cli.main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_module_by_path_its_operators_only_and_the_printed_replay_reproduces(project, capsys):
    rc, out, err = run(capsys, "--operators", "../ops/leaky_ops.py", "check", "--examples", "3", "--out", "r",
                       "--progress", "off")
    assert rc == 1, out + err                                   # the leaky claim fails: exit 1
    doc = json.loads(Path("r/conformance.json").read_text())
    assert {r["operator"] for r in doc["rows"]} == {"user_leaky", "user_double"}     # no built-in ran
    outcomes = {r["id"]: r["outcome"] for r in doc["rows"]}
    assert outcomes["user_leaky-zero_absorption"] == "UNEXPECTED violation"
    assert outcomes["user_double-zero_absorption"] == "holds"
    printed = [line.split("replay: ", 1)[1] for line in out.splitlines() if "replay: " in line]
    md = Path("r/conformance.md").read_text()
    assert printed and f"`{printed[0]}`" in md and printed[0] in Path("r/conformance.html").read_text()
    argv = shlex.split(printed[0])
    assert argv[:3] == ["tokenlaw", "--operators", "../ops/leaky_ops.py"] and "--replays" in argv
    sys.modules.pop("leaky_ops", None)                          # pasted into a fresh shell
    rc, out, err = run(capsys, *argv[1:])
    assert rc == 0, out + err
    assert "reproduced bit-for-bit" in out


def test_with_builtins_adds_the_builtin_rows(project, capsys):
    rc, out, err = run(capsys, "--operators", "../ops/leaky_ops.py", "check", "--with-builtins", "--operator",
                       "user_double", "--operator", "presence", "--contract", "zero_absorption", "--examples", "2",
                       "--out", "r", "--progress", "off", "--json")
    assert rc == 0, out + err
    assert {r["operator"] for r in json.loads(Path("r/conformance.json").read_text())["rows"]} == \
        {"user_double", "presence"}


def test_operator_that_raises_is_its_own_outcome(project, capsys):
    (project / "raising.py").write_text(LEAKY.replace("return x * 2", "return x.mul(2, scale=3)"))
    rc, out, err = run(capsys, "--operators", "raising.py", "check", "--operator", "user_double", "--contract",
                       "zero_absorption", "--examples", "3", "--out", "r", "--progress", "on")
    assert rc == 1
    doc = json.loads(Path("r/conformance.json").read_text())
    (row,) = doc["rows"]
    assert row["outcome"] == "operator raised"
    v = row["cells"][0]["verdict"]
    assert v["status"] == "raised" and v["extra"]["raised"]["type"] == "TypeError"
    assert v["extra"]["raised"]["where"] == f"{project / 'raising.py'}:{LEAKY.splitlines().index('    return x * 2') + 1}"
    assert v["counterexample"]["n"] >= 1                       # the input that raised
    assert "operator raised" in err and "TypeError" in err     # the progress line
    assert "1 operator raised" in doc_headline(Path("r/conformance.md"))
    page = Path("r/conformance.html").read_text()
    assert page.index("operator raised") < page.index('<h2>Matrix')   # first screen
    assert "operator raised TypeError" in out                  # the check's own listing


def doc_headline(md: Path) -> str:
    return next(line for line in md.read_text().splitlines() if line.startswith("**"))


@pytest.mark.slow  # a fresh pytest interpreter importing torch (~25 s on the shared machine)
def test_new_writes_into_the_project_and_plain_pytest_runs_its_cells(project, capsys):
    rc, out, err = run(capsys, "new", "sig_attn", "--json")
    assert rc == 0, err
    made = json.loads(out)
    assert Path(made["path"]).resolve() == (project / "sig_attn.py").resolve()
    assert Path(made["test"]).resolve() == (project / "test_sig_attn.py").resolve()
    text = (project / "sig_attn.py").read_text()
    stub = next(line for line in text.splitlines() if "raise NotImplementedError" in line)
    (project / "sig_attn.py").write_text(text.replace(stub, "    return x * 2.0"))
    res = W.run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_sig_attn.py"], cwd=project, env=W.env())
    assert res.returncode == 0, res.stdout + res.stderr
    assert "passed" in res.stdout and "failed" not in res.stdout


@pytest.mark.slow  # a fresh pytest interpreter importing torch (~25 s on the shared machine)
def test_pytest_tokenlaw_finds_a_module_in_the_current_directory(project):
    """`pytest --tokenlaw leaky_ops` run where leaky_ops.py lies, nothing installed; the failure's replay
    command names the module and the replay directory."""
    (project / "leaky_ops.py").write_text(LEAKY)
    res = W.run(["-m", "pytest", *W.plugin_args(), "--tokenlaw", "leaky_ops", "--tokenlaw-examples", "3",
                 "--tokenlaw-replays", "rp", "-v", "-p", "no:cacheprovider", "-k", "zero_absorption"],
                cwd=project, env=W.env())
    assert res.returncode == 1, res.stdout + res.stderr                  # the leaky claim fails
    assert "tokenlaw::user_double-zero_absorption PASSED" in res.stdout
    assert "tokenlaw::user_leaky-zero_absorption FAILED" in res.stdout
    assert "replay: tokenlaw --operators leaky_ops replay user_leaky-zero_absorption-" in res.stdout
    assert "--replays rp" in res.stdout
