"""The README is short and true: a newcomer's page whose every command, flag, path and code exists.

It is read in five minutes (at most 250 lines); its first two commands are the whole set-up on a fresh
machine, and the second is exactly what CI (``.ci/run``) runs.  Every ``tokenlaw SUB --flag`` it shows is
accepted by the parser, every ``tokenlaw docs TOPIC`` is a shipped topic, every path it names exists, its
exit-code table is the one of ``tokenlaw.app.exits``, and its layer drawing is the one the layering test
enforces.  Each check is attacked below with a README that breaks it.
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from tokenlaw.app import cli, docs_cmd, exits
from tokenlaw.properties.catalogue import CONTRACTS

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_LINES = 250
SECTIONS = ("## The two commands", "## A five-minute tour", "## Everyday commands", "### Exit codes",
            "## Layout", "Where a new thing goes", "## Where to go next")
FOLDERS = ("app", "experiments", "reports", "fuzz", "symbolic", "kernels", "properties", "operators", "docs",
           "tests", "examples", ".ci")
# what the tour's commands write: named in the README, not in the checkout
WRITTEN = re.compile(r"^reports/(conformance|proofs|verification|campaign)\.|^operators/gated_square\.py$")
COMMAND = re.compile(r"(?<![\w.-])tokenlaw((?:\s+--operators\s+\S+)?)\s+([a-z][\w-]*)([^`#\n]*)")


def _subparsers(parser: argparse.ArgumentParser) -> dict:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    return {}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return set(parser._option_string_actions)


def _code(text: str) -> list[str]:
    """The command-like lines: indented code lines and inline `code` spans."""
    lines = [line for line in text.splitlines() if line.startswith("    ")]
    return lines + re.findall(r"`([^`\n]+)`", text)


def problems(text: str, ci_run: str) -> list[str]:
    """What is false or missing in README ``text``, one line each (empty: the README is true)."""
    bad = []
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        bad.append(f"{len(lines)} lines, more than {MAX_LINES}")
    bad += [f"no section {s!r}" for s in SECTIONS if s not in text]

    # the two commands: the first two code lines of their section; the second is .ci/run's last line
    section = text.split("## The two commands", 1)[-1].split("\n## ", 1)[0]
    commands = [line.strip() for line in section.splitlines() if line.startswith("    ")][:2]
    ci = [line.strip() for line in ci_run.splitlines() if line.strip() and not line.startswith(("#", "set ", "cd "))]
    if len(commands) < 2 or not commands[0].startswith("bash .ci/setup && tokenlaw check"):
        bad.append(f"the first command is not the set-up plus `tokenlaw check`: {commands[:1]}")
    if len(commands) < 2 or not ci or commands[1] != ci[-1]:
        bad.append(f"the second command {commands[1:2]} is not what .ci/run runs ({ci[-1:]})")

    # every subcommand and flag shown exists
    parser = cli.build_parser()
    subs, pages = _subparsers(parser), docs_cmd.topics()
    for snippet in _code(text):
        for prefix, sub, rest in COMMAND.findall(snippet):
            if sub not in subs:
                bad.append(f"`tokenlaw {sub}`: no such command")
                continue
            sp = subs[sub]
            words = rest.split()
            if _subparsers(sp) and words and words[0] in _subparsers(sp):
                sp = _subparsers(sp)[words[0]]
            allowed = _options(sp) | _options(parser)
            bad += [f"`tokenlaw {sub} {flag}`: no such option" for flag in re.findall(r"(?<![\w-])--[a-z][\w-]*", rest)
                    if flag not in allowed]
            if sub == "docs" and words and re.fullmatch(r"[a-z][\w-]*", words[0]) \
                    and words[0] not in pages and words[0] != docs_cmd.GENERATED:
                bad.append(f"`tokenlaw docs {words[0]}`: no such topic")

    # every path named in code exists (placeholders in capitals or <...> are not paths)
    for span in re.findall(r"`([^`\s]+)`", text):
        path = span.split("#", 1)[0].split(":", 1)[0].rstrip(".,")
        if path.split("/", 1)[0] in FOLDERS and "/" in path and not re.search(r"[<*{A-Z]|NAME|TOPIC", path) \
                and not WRITTEN.match(path) and not (ROOT / path).exists():
            bad.append(f"`{span}`: no such path")

    # the exit-code table is the one of tokenlaw.app.exits
    table = {int(c) for c in re.findall(r"^\| `(\d+)` \|", text, re.M)}
    codes = {v for k, v in vars(exits).items() if k.startswith("EXIT_") and isinstance(v, int)}
    if table != codes:
        bad.append(f"exit-code table lists {sorted(table)}, tokenlaw.app.exits defines {sorted(codes)}")

    # the tour's claims are contracts of the catalogue
    bad += [f"the tour claims {name!r}, not a contract" for name in re.findall(r'"(\w+)": "', text)
            if name not in CONTRACTS]

    # the layer drawing is the layering test's order
    from tests.test_layering import LAYERS
    drawn = {m.group(2): int(m.group(1)) for m in re.finditer(r"^ (\d)  (\w+)(?:/|\.py) ", text, re.M)}
    drawn.update({name: 4 for name in re.findall(r"(\w+)/", next((l for l in lines if l.startswith(" 4  ")), ""))})
    drawn.update({m.group(1): 0 for m in re.finditer(r"^    (\w+)\.py +tokenlaw\.", text, re.M)})  # beside layer 0
    if drawn != LAYERS:
        bad.append(f"the layer drawing {drawn} is not tests/test_layering.py's {LAYERS}")
    return bad


def _ci_run() -> str:
    return (ROOT / ".ci" / "run").read_text()


def test_the_readme_is_short_and_true():
    bad = problems(README.read_text(encoding="utf-8"), _ci_run())
    assert not bad, "\n".join(bad)


def test_every_shipped_topic_is_pointed_at():
    """A new docs page is listed under "Where to go next" (the README's map of the docs)."""
    text = README.read_text(encoding="utf-8").split("## Where to go next", 1)[1]
    firsts = re.findall(r"^\| (`[^|]+`) \|", text, re.M)            # a row's first cell: `a` or `a` / `b`
    listed = {name for cell in firsts for name in re.findall(r"`([\w-]+)`", cell)}
    assert listed == set(docs_cmd.topics()) | {docs_cmd.GENERATED}, listed


@pytest.mark.parametrize("edit, expected", [
    (lambda t: t + "\n" * 250, "more than 250"),
    (lambda t: t.replace("## A five-minute tour", "## A tour"), "no section '## A five-minute tour'"),
    (lambda t: t.replace('python3 -m pytest -q -n auto -m "not slow"', "python3 -m pytest -q", 1), "is not what .ci/run runs"),
    (lambda t: t.replace("bash .ci/setup && tokenlaw check", "tokenlaw check", 1), "the first command is not"),
    (lambda t: t.replace("tokenlaw list [--json]", "tokenlaw lst [--json]"), "`tokenlaw lst`: no such command"),
    (lambda t: t.replace("tokenlaw gate [--update-baseline]", "tokenlaw gate [--update-base]", 1),
     "`tokenlaw gate --update-base`: no such option"),
    (lambda t: t.replace("tokenlaw report merge a.json", "tokenlaw report merge --shards a.json"),
     "`tokenlaw report --shards`: no such option"),
    (lambda t: t.replace("`tokenlaw docs mathematics`", "`tokenlaw docs mathematic`", 1), "no such topic"),
    (lambda t: t.replace("`examples/my_backend/`", "`examples/my_kernel/`", 1), "`examples/my_kernel/`: no such path"),
    (lambda t: t.replace("| `3` |", "| `5` |"), "exit-code table lists"),
    (lambda t: t.replace('"null_gradient": "', '"null_grad": "'), "the tour claims 'null_grad'"),
    (lambda t: t.replace(" 7  experiments/", " 6  experiments/"), "the layer drawing"),
    (lambda t: t.replace(" 1  process/", " 2  process/"), "the layer drawing"),
    (lambda t: t.replace("    errors.py     tokenlaw.errors", "    errs.py       tokenlaw.errors"), "the layer drawing"),
])
def test_a_false_readme_is_refused(edit, expected):
    text = README.read_text(encoding="utf-8")
    changed = edit(text)
    assert changed != text, "the attack did not apply"
    bad = problems(changed, _ci_run())
    assert any(expected in b for b in bad), bad


def test_ci_runs_the_readmes_test_command():
    """Control for the attack above: .ci/run's command line is the README's second command, verbatim."""
    assert 'python3 -m pytest -q -n auto -m "not slow"' in _ci_run().splitlines()[-1]


TOUR_IMPORTS = """import torch

from tokenlaw.operators import arguments, limits
from tokenlaw.operators.presence import presence
from tokenlaw.operators.registry import Domain, declare
"""


def tour_operator(text: str) -> str:
    """The tour's declaration, as the README shows it (its indented block), with the imports it needs."""
    lines = text.split("**1. Declare an operator.**", 1)[1].split("**2. Check it.**", 1)[0].splitlines()
    code = "\n".join(line[4:] for line in lines if line.startswith("    ") or not line.strip())
    return TOUR_IMPORTS + "\n\n" + code.strip() + "\n"


def _check(tmp_path, source: str, *args) -> tuple[int, dict]:
    import json
    import workflow_env as W
    (tmp_path / "tour_op.py").write_text(source)
    out = W.run(["-m", "tokenlaw.app.cli", "--operators", "tour_op", "check", "--operator", "gated_square",
                 "--profile", "smoke", "--seed", "0", "--out", str(tmp_path / "r"), "--json", *args],
                cwd=tmp_path, env=W.env(tmp_path))
    return out.returncode, (json.loads(out.stdout) if out.stdout.strip().startswith("{") else {"stderr": out.stderr})


def test_the_tour_operator_passes_its_check_as_the_readme_says(tmp_path):
    """The declaration the tour shows, run as the tour runs it: exit 0, 6 rows, none failing."""
    code, summary = _check(tmp_path, tour_operator(README.read_text(encoding="utf-8")))
    assert code == 0, summary
    claimed = summary["claimed"]
    said = f"{summary['result']}: {claimed['established']} of {claimed['rows']} claimed rows established " \
           f"({claimed['proved']} proved); {claimed['not_run']} not run"
    assert said in README.read_text(encoding="utf-8"), said          # the headline the tour prints
    assert f"{summary['rows']} rows, {len(summary['failing'])} failing" in README.read_text(encoding="utf-8")
    assert "**PASS**" in (tmp_path / "r" / "conformance.md").read_text()


def test_without_its_limit_the_tour_operator_fails_differential(tmp_path):
    """Attack: the README's reason for `limits=` is true: without it float16's differential cell fails."""
    source = tour_operator(README.read_text(encoding="utf-8")).replace(",\n" + " " * 44 + "limits=limits.FLOAT16_NORM2", "")
    assert "limits=" not in source
    code, summary = _check(tmp_path, source, "--contract", "differential", "--dtype", "float16")
    assert code == 1, summary
