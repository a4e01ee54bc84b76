"""tokenlaw new: a scaffolded operator fails by name until written, then its cells appear everywhere.

Two paths: ``--dir`` into a user's package (collected with ``--operators``),
and the default ``operators/`` folder of a copy of this checkout, where no
other edit is needed for ``tokenlaw check`` and pytest to pick it up.
"""
from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.app import cli, scaffold

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import workflow_env as W  # noqa: E402

pytest_plugins = ["pytester"]

BODY = "    return x * 2.0   # filled in by the test\n"


def fill_in(path: Path, body=BODY):
    """Replace the stub's raise in the operator body with a small real reference."""
    text = path.read_text()
    stub = re.search(r"^    raise NotImplementedError\(\"(\w+): write the eager math.*\n", text, re.M)
    assert stub, "the scaffold has an eager stub that raises"
    path.write_text(text[:stub.start()] + body + text[stub.end():])


@pytest.fixture
def userpkg(tmp_path, monkeypatch):
    pkg = tmp_path / "userops"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""A user\'s operators."""\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    yield pkg
    for name in [m for m in sys.modules if m == "userops" or m.startswith("userops.")]:
        del sys.modules[name]


def check(capsys, *args):
    capsys.readouterr()
    rc = cli.main(["--operators", "userops", "check", "--operator", "myop", "--examples", "5",
                   "--out", "r", "--json", *args])
    capsys.readouterr()
    return rc, json.loads(Path("r/conformance.json").read_text())


def test_stub_fails_by_name_then_filled_reference_holds(userpkg, capsys):
    assert cli.main(["new", "myop", "--dir", str(userpkg)]) == 0
    text = (userpkg / "myop.py").read_text()
    assert '"zero_absorption":' in text and '"gradcheck":' in text     # claims chosen from the catalogue
    rc, doc = check(capsys)
    assert rc == 1
    rows = {r["id"]: r for r in doc["rows"]}
    assert rows["myop-zero_absorption"]["outcome"] == "operator raised"       # the stub raises: not a violation
    detail = rows["myop-zero_absorption"]["cells"][0]["verdict"]["detail"]
    assert "NotImplementedError" in detail and "myop: write the eager math" in detail
    for name in [m for m in sys.modules if m.startswith("userops")]:
        del sys.modules[name]
    fill_in(userpkg / "myop.py")
    rc, doc = check(capsys)
    assert rc == 0
    assert {r["id"]: r["outcome"] for r in doc["rows"]} == {"myop-zero_absorption": "holds",
                                                            "myop-gradcheck": "holds",
                                                            "myop-differential": "holds",   # universal
                                                            "myop-spec_reference": "not runnable here",
                                                            "myop-finite": "holds"}
    assert "myop-zero_absorption" in Path("r/conformance.md").read_text()
    assert "myop-zero_absorption-eager-float16" in Path("r/conformance.xml").read_text()
    assert "myop" in Path("r/conformance.html").read_text()


def test_like_copies_domain_traits_and_claims(userpkg, capsys):
    assert cli.main(["new", "myattn", "--like", "oattention", "--dir", str(userpkg), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["path"].endswith("myattn.py")
    from tokenlaw.properties.catalogue import collect, default_registry

    spec = collect("userops")["myattn"]
    like = default_registry()["oattention"]
    assert spec.traits == like.traits and set(spec.claims) == set(like.claims)
    assert spec.domain.mask == "random" and spec.reference is not None   # formula_equivalence needs it
    assert spec.violates == {}   # kept commented until the body exists
    assert "# violates={" in (userpkg / "myattn.py").read_text()
    assert spec.domain.limits == like.domain.limits     # every field of each Limit copied (|h|^2 too)


def test_like_copies_offset_limits(userpkg, capsys):
    assert cli.main(["new", "mysdpa", "--like", "sdpa", "--dir", str(userpkg), "--json"]) == 0
    capsys.readouterr()
    from tokenlaw.properties.catalogue import collect, default_registry

    assert collect("userops")["mysdpa"].domain.limits == default_registry()["sdpa"].domain.limits


def test_bad_arguments_name_themselves(userpkg):
    for args, word in ((["oattention"], "already exists"), (["Bad-Name"], "identifier"),
                       (["x1", "--like", "nope"], "--like"), (["x2", "--traits", "wobbly"], "--traits"),
                       (["x3", "--claims", "nonsense"], "--claims"), (["x4", "--dir", "missing"], "--dir")):
        with pytest.raises(InvalidArgument, match=re.escape(word)):
            scaffold.scaffold(*args[:1], **_kw(args[1:]))


def _kw(flags):
    kw = {}
    for flag, value in zip(flags[::2], flags[1::2]):
        key = {"--like": "like", "--traits": "traits", "--claims": "claims", "--dir": "folder"}[flag]
        kw[key] = value.split(",") if key in ("traits", "claims") else value
    return kw


@pytest.mark.slow  # three fresh interpreters importing torch (~20 s on a shared 2-core machine)
def test_default_folder_needs_no_other_edit(tmp_path):
    """In a copy of the checkout: `tokenlaw new myop` + a body -> check and pytest include myop."""
    tree = W.copy_tree(tmp_path / "checkout")
    e = W.env(W.dev_path(tree), keep_path=False)
    out = W.run(["-m", "tokenlaw.app.cli", "new", "myop"], cwd=tree, env=e)
    assert out.returncode == 0, out.stderr
    assert (tree / "operators" / "myop.py").exists()
    fill_in(tree / "operators" / "myop.py")
    out = W.run(["-m", "tokenlaw.app.cli", "check", "--operator", "myop", "--examples", "5", "--json"],
                cwd=tree, env=e)
    assert out.returncode == 0, out.stdout + out.stderr
    doc = json.loads((tree / "reports" / "conformance.json").read_text())
    assert sorted(r["id"] for r in doc["rows"]) == ["myop-differential", "myop-finite", "myop-gradcheck",
                                                    "myop-spec_reference", "myop-zero_absorption"]
    # pytest: the generated cells of tokenlaw's own operators (and the lead's tests/test_cells.py once present)
    args = ["-m", "pytest", *W.plugin_args(), "--tokenlaw", "tokenlaw.operators", "--tokenlaw-examples", "5",
            "-k", "myop", "-v", "-p", "no:cacheprovider"]
    if (W.ROOT / "tests" / "test_cells.py").exists():   # with its conftest and helpers
        shutil.copytree(W.ROOT / "tests", tree / "tests", ignore=shutil.ignore_patterns("__pycache__"))
        args.append("tests/test_cells.py")
    out = W.run(args, cwd=tree, env=e)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "myop-zero_absorption" in out.stdout and "passed" in out.stdout
