"""``tokenlaw --help`` and an argument error answer without importing torch (issue 21, point 7).

Each case runs the real command line in a fresh interpreter under ``python -X importtime``,
which writes one ``import time: ... | module`` line on stderr per module it imports; the
test reads the module names from those lines.  A control (``tokenlaw list``, which must
load the registry) shows the same reading does see torch when it is imported, so the
check can fail.  Exit codes and first lines of stderr are those of ``test_cli_contract``.
"""
from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from tokenlaw.app import argtypes, cli, gate_args

HEAVY = ("torch", "numpy", "sympy", "z3", "hypothesis", "triton", "matplotlib")
# tokenlaw's layers below app: each of them imports torch (operators/__init__ pins the CPU paths).
LAYERS = ("operators", "properties", "fuzz", "symbolic", "kernels", "reports", "orchestration", "experiments")


def run_cli(*argv):
    """(exit code, stdout, stderr without the importtime lines, the top-level modules imported)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "tokenlaw.app.cli", *argv],
                          capture_output=True, text=True, timeout=300)
    modules, rest = set(), []
    for line in done.stderr.splitlines():
        if line.startswith("import time:"):
            name = line.rsplit("|", 1)[1].strip()
            modules.add(name)
        else:
            rest.append(line)
    return done.returncode, done.stdout, "\n".join(rest), modules


def heavy(modules: set) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY
                  or (m.startswith("tokenlaw.") and m.split(".")[1] in LAYERS))


CASES = [
    (["--help"], 0, None, "usage: tokenlaw"),
    (["prove", "--help"], 0, None, "usage: tokenlaw prove"),
    (["mutate", "--help"], 0, None, "usage: tokenlaw mutate"),
    (["check", "--workers", "0"], 2, "tokenlaw check: error: argument --workers: expected an int >= 1, got 0", ""),
    (["nope"], 2, "tokenlaw: error: argument command: invalid choice: 'nope'", ""),
    (["check", "--profile", "nope"], 2, "tokenlaw check: error: argument --profile: invalid choice: 'nope'", ""),
    # issue 47: these error paths imported torch (3.5 s) to refuse a typo
    (["check", "--dtype", "float8"], 2, "tokenlaw check: error: argument --dtype: expected one of ['bfloat16', "
                                        "'float16', 'float32', 'float64'], got 'float8'", ""),
    (["campaign", "--minutes", "1", "--dtype", "float8"], 2, "tokenlaw campaign: error: argument --dtype:", ""),
    (["docs", "nosuch"], 2, "tokenlaw: error: topic: unknown name 'nosuch'; ", ""),
    (["docs", "fuz"], 2, "tokenlaw: error: topic: unknown name 'fuz'; did you mean 'fuzz'?", ""),
    (["replay", "nosuchid"], 2, "tokenlaw: error: id: no replay artifact 'reports/replays/nosuchid.json'", ""),
]


@pytest.mark.parametrize("argv, code, first_err, out_start", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_help_and_argument_errors_import_no_torch(argv, code, first_err, out_start):
    rc, out, err, modules = run_cli(*argv)
    assert rc == code, err
    assert "tokenlaw.app.cli" in modules or "runpy" in modules, "importtime lines were not read"
    assert heavy(modules) == [], heavy(modules)
    assert "Traceback" not in err
    if first_err is None:
        assert err.strip() == "" and out.startswith(out_start), (out[:200], err)
    else:
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith(first_err), err


def test_the_reading_sees_torch_when_a_command_imports_it():
    """Control: ``tokenlaw list`` loads the registry, so torch and the lower layers must show up."""
    rc, out, err, modules = run_cli("list", "--json")
    assert rc == 0, err
    assert "torch" in modules and "tokenlaw.process.cpu_paths" in modules and "tokenlaw.operators" in heavy(modules)


def test_restated_tables_equal_their_owners():
    """What the light parser restates (backend names, the gate's bound growth) is what the heavy modules own."""
    from tokenlaw.properties import backends
    from tokenlaw.reports import regressions

    assert argtypes.EAGER_BACKEND == backends.EAGER.name and argtypes.BACKENDS_GROUP == backends.GROUP
    assert argtypes.BACKENDS_MODULE == backends.__name__
    assert argtypes.backend_names() == backends.names()
    assert gate_args.BOUND_GROWTH == regressions.BOUND_GROWTH


def test_restated_dtypes_and_docs_topics_equal_their_owners():
    """``--dtype`` names, the docs topics and the replay folder the light prechecks use are the heavy modules'."""
    from tokenlaw.app import docs_cmd, docs_topics
    from tokenlaw.fuzz import replay
    from tokenlaw.operators.dtypes import DTYPES
    from tokenlaw.process import artifacts

    assert argtypes.DTYPE_NAMES == tuple(sorted(DTYPES))
    assert sorted(docs_topics.topic_names()) == sorted([*docs_cmd.topics(), docs_cmd.GENERATED])
    assert replay.replay_dir is artifacts.replay_dir and replay.DEFAULT_DIR == artifacts.DEFAULT_DIR


def test_backend_names_come_from_entry_points_without_loading_them(monkeypatch):
    """Without the backends module loaded, the names are the entry points' (none is imported)."""
    from importlib.metadata import entry_points

    monkeypatch.delitem(sys.modules, argtypes.BACKENDS_MODULE)
    installed = sorted({ep.name for ep in entry_points(group=argtypes.BACKENDS_GROUP)} - {"eager"})
    assert argtypes.backend_names() == ["eager", *installed]


def _specs(parser, prefix="tokenlaw"):
    """(command, "module:function") of every runnable subcommand of ``parser`` (and of its precheck, if any)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield prefix, parser.get_default("func")
        if parser.get_default("precheck"):
            yield f"{prefix} (precheck)", parser.get_default("precheck")
        return
    for name, sp in subs[0].choices.items():
        yield from _specs(sp, f"{prefix} {name}")


def test_every_command_names_a_function_that_exists():
    """The work is named by a string, so a typo would only show when the command runs: resolve them all."""
    specs = dict(_specs(cli.build_parser()))
    assert {"tokenlaw list", "tokenlaw check", "tokenlaw report merge", "tokenlaw reproduce retrofit",
            "tokenlaw docs", "tokenlaw docs (precheck)", "tokenlaw replay (precheck)"} <= set(specs)
    for name, spec in specs.items():
        assert isinstance(spec, str) and spec.startswith("tokenlaw.app.") and ":" in spec, (name, spec)
        assert callable(cli.command(spec)), (name, spec)
    with pytest.raises(AttributeError):                  # the check can fail: a misspelt function
        cli.command("tokenlaw.app.check_cmd:cmd_chek")
