"""The command line's contract: every bad invocation is one line on stderr with exit 2, never a traceback.

Exit 1 means only "a row does not match its declaration / a regression"; an
internal crash has its own code (70).  Each case runs ``tokenlaw`` in-process
(``cli.main``) from a scratch directory.
"""
from __future__ import annotations

import argparse
import json
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from tokenlaw.app import cli
from tokenlaw.properties.catalogue import default_registry

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

MYMOD = textwrap.dedent('''
    """A user's own operators, in a module next to them (not installed)."""
    from tokenlaw.operators import arguments
    from tokenlaw.operators.registry import Domain, declare


    def _params(gen, d_model, dtype=None):
        return {}


    @declare(name="myop_leaky", domain=Domain(params=_params, dtypes=("float64",), n_max=3),
             traits={"token_local"}, claims={"zero_absorption": "claimed, but x + 1 maps 0 to 1"})
    def myop_leaky(xp, x):
        """x + 1: breaks its claim, so a check stores a replay artifact."""
        arguments.tokens(x)
        return x + 1
''')

FACTORIES = textwrap.dedent('''
    import torch
    from tokenlaw.operators.modules import Host


    def raises():
        raise RuntimeError("no weights here")


    def nan_input():
        x = torch.randn(1, 4, 8, dtype=torch.float64)
        x[0, 2, 3] = float("nan")
        return Host(8, 2, depth=1).double(), x
''')


@pytest.fixture
def here(tmp_path, monkeypatch):
    """A scratch project directory with the user's modules; cwd, sys.path and sys.modules restored after."""
    (tmp_path / "mymod.py").write_text(MYMOD)
    (tmp_path / "factories.py").write_text(FACTORIES)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path
    for name in ("mymod", "factories", "wheelop", *BROKEN):
        sys.modules.pop(name, None)


def run(capsys, *argv):
    capsys.readouterr()
    code = cli.main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def one_line_error(err: str) -> str:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("tokenlaw"), err
    return lines[0]


def _unwritable(path: Path) -> str:
    (path / "a-file").write_text("not a folder")
    return str(path / "a-file" / "out")


def _corrupt_artifact(path: Path) -> str:
    (path / "replays").mkdir()
    (path / "replays" / "oattention-null_receiver-float32-0123456789.json").write_text('{"operator": "oatt')
    return "oattention-null_receiver-float32-0123456789"


def _external_artifact(path: Path) -> str:
    """A well-formed artifact of an operator only a user's module declares."""
    body = {"id": "myop_leaky-zero_absorption-float64-0123456789", "operator": "myop_leaky",
            "contract": "zero_absorption", "dtype": "float64", "backend": "eager", "case": {}, "verdict": {}}
    (path / f"{body['id']}.json").write_text(json.dumps(body))
    return body["id"]


def _wrong_baseline(path: Path) -> str:
    (path / "baseline.json").write_text(json.dumps({"schema": 2, "meta": {}, "rows": [{"id": 3}]}))
    return str(path / "baseline.json")


def _known_typo(path: Path) -> tuple:
    base = FIXTURES.parent.parent / "reports" / "baseline.json"
    (path / "known.txt").write_text("oattention-nul_receiver  2099-01-01  a typo of null_receiver\n")
    return str(base), str(path / "known.txt")


def _user_file(path: Path, name: str, text: str) -> str:
    """A user module ``name`` with ``text`` in the scratch project; returns the module name."""
    (path / f"{name}.py").write_text(text)
    return name


BROKEN = {"bad_syntax": "def f(:\n    pass\n", "raises_on_import": "import os\n\nraise RuntimeError('boom')\n",
          "declares_nothing": "x = 1\n", "missing_dependency": "import not_a_package_zz\n"}


# (case id, argv builder(tmp path) -> argv, exit code, text the one-line message must contain)
CASES = [
    ("examples-negative", lambda p: ["check", "--examples", "-1"], 2, "--examples"),
    ("examples-zero", lambda p: ["check", "--examples", "0"], 2, "--examples"),
    ("workers-zero", lambda p: ["check", "--workers", "0"], 2, "--workers"),
    ("out-unwritable", lambda p: ["check", "--profile", "smoke", "--out", _unwritable(p)], 2, "--out"),
    ("prove-out-unwritable", lambda p: ["prove", "--operator", "presence", "--out", _unwritable(p)], 2, "--out"),
    ("operators-not-importable", lambda p: ["--operators", "no_such_module_here", "list"], 2, "--operators"),
    ("operator-typo", lambda p: ["check", "--operator", "oatention"], 2, "did you mean 'oattention'"),
    ("operator-unknown-hints-operators", lambda p: ["check", "--operator", "my_custom_op"], 2,
     f"unknown name 'my_custom_op'; {len(default_registry())} known"),
    ("operator-unknown-says-operators", lambda p: ["check", "--operator", "my_custom_op"], 2,
     "tokenlaw --operators MODULE_OR_FILE.py"),
    ("operators-syntax-error", lambda p: ["--operators", _user_file(p, "bad_syntax", BROKEN["bad_syntax"]), "list"],
     2, "'bad_syntax' has a syntax error at {p}/bad_syntax.py:1"),
    ("operators-syntax-error-by-path", lambda p: ["--operators", "./" + _user_file(p, "bad_syntax", BROKEN["bad_syntax"])
                                                  + ".py", "list"], 2, "bad_syntax.py:1"),
    ("operators-raises-on-import", lambda p: ["--operators", _user_file(p, "raises_on_import",
                                                                        BROKEN["raises_on_import"]), "check"], 2,
     "importing 'raises_on_import' raised RuntimeError at {p}/raises_on_import.py:3: boom"),
    ("operators-missing-dependency", lambda p: ["--operators", _user_file(p, "missing_dependency",
                                                                          BROKEN["missing_dependency"]), "list"], 2,
     "missing_dependency.py:1: ModuleNotFoundError: No module named 'not_a_package_zz'"),
    ("operators-declares-nothing", lambda p: ["--operators", _user_file(p, "declares_nothing",
                                                                        BROKEN["declares_nothing"]), "check"], 2,
     "'declares_nothing' ({p}/declares_nothing.py) declares no operator"),
    ("operators-no-such-file", lambda p: ["--operators", "../nowhere.py", "list"], 2, "no such file '../nowhere.py'"),
    ("closure-target-by-path-raises", lambda p: ["closure", _user_file(p, "raises_on_import",
                                                                       BROKEN["raises_on_import"]) + ".py:factory"],
     2, "target: importing 'raises_on_import.py' raised RuntimeError at {p}/raises_on_import.py:3"),
    ("contract-typo", lambda p: ["prove", "--contract", "nul_receiver"], 2, "did you mean 'null_receiver'"),
    ("replay-corrupted", lambda p: ["replay", _corrupt_artifact(p), "--replays", str(p / "replays")], 2,
     "not a readable replay artifact"),
    ("replay-missing", lambda p: ["replay", "nope-1234", "--replays", str(p)], 2, "no replay artifact"),
    ("replay-external-without-operators", lambda p: ["replay", _external_artifact(p), "--replays", str(p)], 2,
     "tokenlaw --operators MODULE replay ID"),
    ("gate-wrong-baseline", lambda p: ["gate", "--baseline", _wrong_baseline(p), "--current", _wrong_baseline(p)], 2,
     "rows[0].id should be a string"),
    ("gate-known-failure-typo", lambda p: ["gate", "--baseline", _known_typo(p)[0], "--current", _known_typo(p)[0],
                                           "--known-failures", _known_typo(p)[1]], 2, "did you mean"),
    ("closure-factory-raises", lambda p: ["closure", "factories:raises"], 2, "raised RuntimeError: no weights here"),
    ("closure-nan-input", lambda p: ["closure", "factories:nan_input"], 2, "x: contains NaN"),
    ("closure-not-importable", lambda p: ["closure", "nowhere:factory"], 2, "cannot import"),
    ("mutate-unknown", lambda p: ["mutate", "--mutant", "oattention_max_over_al"], 2, "--mutant"),
    ("unknown-flag", lambda p: ["check", "--examplez", "3"], 2, "unrecognized arguments"),
]


@pytest.mark.parametrize("build, code, text", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_invocation_is_one_line_exit_2(here, capsys, build, code, text):
    rc, _, err = run(capsys, *build(here))
    assert rc == code, err
    assert text.replace("{p}", str(here)) in one_line_error(err)


def test_unwritable_out_is_refused_before_the_run(here, capsys):
    """No row runs: the check would take minutes; the refusal takes none and writes nothing."""
    rc, out, err = run(capsys, "check", "--out", _unwritable(here))
    assert rc == 2 and "[" not in err.split("error:")[0] and out == ""


def test_internal_crash_has_its_own_exit_code(here, capsys, monkeypatch):
    def crash(args):
        raise ZeroDivisionError("a bug inside tokenlaw")

    from tokenlaw.app import check_cmd

    monkeypatch.setattr(check_cmd, "cmd_list", crash)          # what `list` names; cli.main looks it up per call
    rc, _, err = run(capsys, "list")
    assert rc == cli.EXIT_INTERNAL == 70
    line = one_line_error(err)
    assert "internal error: ZeroDivisionError" in line and "not a finding" in line


def test_users_module_next_to_them_works_and_its_replay_too(here, capsys):
    """--operators mymod from the current directory (not installed); the printed replay id replays with it."""
    rc, out, err = run(capsys, "--operators", "mymod", "list", "--json")
    assert rc == 0, err
    assert "myop_leaky" in [o["name"] for o in json.loads(out)["operators"]]
    rc, out, err = run(capsys, "--operators", "mymod", "check", "--operator", "myop_leaky", "--examples", "3",
                       "--dtype", "float64", "--out", "out", "--json")
    assert rc == 1, err                        # a row fails: exit 1 means exactly that
    assert not Path("reports").exists()        # replays respect --out
    stored = sorted(Path("out/replays").glob("myop_leaky-*.json"))
    assert stored
    rid = stored[0].stem
    rc, out, err = run(capsys, "--operators", "mymod", "replay", rid, "--replays", "out/replays", "--json")
    assert rc == 0, err
    assert json.loads(out)["reproduced"] is True


def test_new_writes_into_the_current_directory_unless_it_is_the_checkout(here, capsys, monkeypatch):
    """Installed (wheel or editable) or not: outside the checkout, `tokenlaw new` writes into the current
    directory (a project marker or not); inside site-packages it refuses."""
    import tokenlaw.operators as ops

    rc, out, err = run(capsys, "new", "wheelop", "--json")
    assert rc == 0, err
    assert Path(json.loads(out)["path"]).resolve() == (here / "wheelop.py").resolve()
    assert (here / "test_wheelop.py").exists()
    site = here / "site"
    site.mkdir()
    real = sysconfig.get_paths
    monkeypatch.setattr(sysconfig, "get_paths", lambda *a, **k: {**real(*a, **k), "purelib": str(site)})
    monkeypatch.chdir(site)
    rc, _, err = run(capsys, "new", "wheelop2")
    assert rc == 2 and "--dir" in one_line_error(err) and "site-packages" in err
    assert not (site / "wheelop2.py").exists()
    monkeypatch.chdir(Path(list(ops.__path__)[0]).resolve().parent / "docs")     # inside the checkout
    from tokenlaw.app import scaffold
    assert scaffold.default_dir() == Path(list(ops.__path__)[0]).resolve()


def test_every_command_has_json():
    def walk(parser, prefix):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            yield prefix, any("--json" in a.option_strings for a in parser._actions)
            return
        for name, sp in subs[0].choices.items():
            yield from walk(sp, f"{prefix} {name}")

    commands = dict(walk(cli.build_parser(), "tokenlaw"))
    assert {"tokenlaw mutate", "tokenlaw report merge", "tokenlaw bench", "tokenlaw reproduce ablation"} <= set(commands)
    assert [c for c, has in commands.items() if not has] == []


def test_every_commands_json_is_documented():
    schema = (Path(__file__).resolve().parents[2] / "docs" / "report-schema.md").read_text()
    for command in ("tokenlaw list --json", "tokenlaw check --json", "tokenlaw replay", "tokenlaw report merge",
                    "tokenlaw mutate --json", "tokenlaw campaign --json", "tokenlaw gate --json", "tokenlaw new", "tokenlaw closure",
                    "tokenlaw reproduce", "tokenlaw prove --json", "tokenlaw bench --json", "tokenlaw docs"):
        assert command in schema, command


def test_plain_mutate_without_gpu_runs_what_it_can_and_says_what_it_left_out(here, capsys, monkeypatch):
    import torch

    from tokenlaw.app import fuzz_cmd

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    ran = []

    def run_mutants(registry, mutants, **kw):      # record what would run; the runs themselves are tested elsewhere
        ran.extend(mutants)
        return [], set()

    monkeypatch.setattr(fuzz_cmd, "run_mutants", run_mutants)       # the names the command calls
    monkeypatch.setattr(fuzz_cmd.formats, "write",
                        lambda *a, **k: {"mutation-md": Path("m.md"), "mutation-json": Path("m.json")})
    rc, out, err = run(capsys, "mutate", "--json")
    assert rc == 0, err
    assert ran and all(m.backend == "eager" for m in ran)
    left = json.loads(out)["left_out"]
    from tokenlaw.app.fuzz_cmd import mutant_catalogue
    kernel = [m.name for m in mutant_catalogue() if m.backend != "eager"]
    assert left == kernel
    if kernel:
        assert "TRITON_INTERPRET" in err and "tokenlaw mutate --backend triton" in err


def test_operators_module_selects_its_own_operators_unless_builtins_are_asked_for(here):
    """`--operators mymod check` checks mymod's operators only; --with-builtins or --operator widen it."""
    from tokenlaw.app import selection

    sys.path.insert(0, str(here))             # as cli.main does
    parse = cli.build_parser().parse_args
    assert selection.operators(parse(["--operators", "mymod", "check"])) == ("myop_leaky",)
    assert selection.operators(parse(["--operators", "./mymod.py", "prove"])) == ("myop_leaky",)
    assert selection.operators(parse(["--operators", "mymod", "check", "--with-builtins"])) is None
    assert selection.operators(parse(["--operators", "mymod", "verify", "--operator", "sdpa"])) == ("sdpa",)
    assert selection.operators(parse(["check"])) is None
    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for command in ("check", "prove", "verify"):
        assert "only the module's own operators run" in " ".join(sub.choices[command].format_help().split())


def test_profiles_are_named_for_what_they_are_and_the_old_names_still_work():
    from tokenlaw.app import argtypes
    from tokenlaw.fuzz import engine

    assert dict(engine.PROFILES) == argtypes.PROFILES and engine.ALIASES == argtypes.PROFILE_ALIASES
    assert engine.DEFAULT_PROFILE == argtypes.DEFAULT_PROFILE == "ci"
    assert engine.PROFILES["quick"] == engine.PROFILES["ci"] == 100 and "default" in engine.PROFILES
    parse = cli.build_parser().parse_args
    assert parse(["check"]).profile == "ci"
    assert runs_settings(parse(["check", "--profile", "quick"])).profile == "ci"       # one name in reports
    assert runs_settings(parse(["check", "--profile", "default"])).profile == "thorough"
    text = " ".join(sub_help("check").split())
    assert "(default: ci, the CI gate)" in text and "quick = ci" in text


def runs_settings(args):
    from tokenlaw.app import check_cmd

    return check_cmd.check_settings(args)


def sub_help(command: str) -> str:
    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command].format_help()


def test_workers_default_to_the_usable_cores(monkeypatch):
    import os

    from tokenlaw.app import argtypes

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3, 5})
    assert argtypes.usable_cores() == 3
    assert cli.build_parser().parse_args(["check"]).workers == 3
    assert "default: the 3 usable cores of this machine" in " ".join(sub_help("check").split())
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set())
    assert argtypes.usable_cores() == 1
