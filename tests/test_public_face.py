"""``import tokenlaw`` is the public face: the names a user or a plug-in author needs, the errors under one root,
loaded without torch; the examples and the scaffold's output import only from it."""
from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tokenlaw
from tokenlaw import errors

ROOT = Path(__file__).resolve().parents[1]
PINNED = ("MKL_CBWR", "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA")       # what tokenlaw.operators pins


def _fresh(code: str) -> dict:
    """Run ``code`` in a fresh interpreter with no CPU path pinned beforehand; return what it prints (JSON)."""
    env = {k: v for k, v in os.environ.items() if k not in PINNED}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


REPORT = ("import json, os, sys; print(json.dumps({'torch': 'torch' in sys.modules, "
          "'pinned': [k for k in %r if k in os.environ], "
          "'loaded': sorted(m for m in sys.modules if m.startswith('tokenlaw'))}))" % (PINNED,))


@pytest.mark.parametrize("statement", ["import tokenlaw.errors", "from tokenlaw.errors import InvalidArgument",
                                       "import tokenlaw", "from tokenlaw import InvalidArgument, TokenlawError"])
def test_the_errors_load_no_torch_and_pin_no_cpu_path(statement):
    got = _fresh(f"{statement}\n{REPORT}")
    assert got == {"torch": False, "pinned": [], "loaded": ["tokenlaw", "tokenlaw.errors"]}, got


def test_the_probe_sees_torch_when_it_is_loaded():
    """The control: the same probe reports torch and the pinned paths once a name that needs them is used."""
    got = _fresh(f"import tokenlaw; tokenlaw.declare\n{REPORT}")
    assert got["torch"] and got["pinned"] == list(PINNED) and "tokenlaw.operators.registry" in got["loaded"], got


def test_every_error_is_under_one_root():
    for name in ("InvalidArgument", "DeclarationError", "NotRunnableHere"):
        assert issubclass(getattr(errors, name), errors.TokenlawError), name
        assert getattr(tokenlaw, name) is getattr(errors, name)
    assert issubclass(errors.InvalidArgument, ValueError)          # `except ValueError` keeps working
    from tokenlaw.operators import errors as historical              # the old path names the same classes
    from tokenlaw.properties.backends import Unanswerable
    assert historical.InvalidArgument is errors.InvalidArgument and issubclass(Unanswerable, errors.TokenlawError)


def test_every_public_name_resolves_and_an_unknown_one_is_refused():
    for name in tokenlaw.__all__:
        assert getattr(tokenlaw, name) is not None, name
    assert set(tokenlaw.__all__) <= set(dir(tokenlaw))
    assert tokenlaw.check.__module__ == "tokenlaw.orchestration.runs" and callable(tokenlaw.gate)
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        tokenlaw.nonesuch
    with pytest.raises(ImportError):
        exec("from tokenlaw import nonesuch", {})


# -- the examples and the scaffold import only from the face ---------------------------------

# Reaches past the face an example makes on purpose, each with its reason (a new one fails the test).
ON_PURPOSE = {
    ("examples/flex/oattention_mods.py", "tokenlaw.operators"): "re-expresses the built-in OAttention from the",
    ("examples/flex/oattention_mods.py", "tokenlaw.operators.oattention"): "built-in's own parts: its parameters,",
    ("examples/flex/oattention_mods.py", "tokenlaw.operators.presence"): "presence, flex core, projections, reference",
}


def past_the_face(source: str) -> list[str]:
    """Every import in ``source`` of a tokenlaw module other than ``tokenlaw`` itself (``tokenlaw.errors`` is
    the face's own error module), as the module names."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            out += [f"{node.module}.{a.name}" if node.module == "tokenlaw" and a.name not in tokenlaw.__all__
                    else node.module for a in node.names]
    return sorted({m for m in out if m.startswith("tokenlaw.") and m != "tokenlaw.errors"})


def reaches(root: Path = ROOT) -> list[str]:
    return [f"{p.relative_to(root)}: {m}" for p in sorted((root / "examples").rglob("*.py"))
            for m in past_the_face(p.read_text()) if (str(p.relative_to(root)), m) not in ON_PURPOSE]


def test_the_examples_import_only_from_the_face():
    assert reaches() == []


@pytest.mark.parametrize("line", ["from tokenlaw.operators.registry import declare",
                                  "import tokenlaw.orchestration.runs", "from tokenlaw import runs"])
def test_an_example_reaching_past_the_face_is_caught(tmp_path, line):
    for p in (ROOT / "examples").rglob("*.py"):
        dst = tmp_path / p.relative_to(ROOT)
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(p.read_text())
    assert reaches(tmp_path) == []
    target = tmp_path / "examples/core_kernel/mykernel.py"
    target.write_text(target.read_text() + "\n" + line + "\n")
    found = reaches(tmp_path)
    assert len(found) == 1 and "examples/core_kernel/mykernel.py" in found[0], found


# Reaches past the face a page of docs/ makes on purpose, each with its reason (a new one fails the test).
DOCS_ON_PURPOSE = {
    ("docs/flex.md", "tokenlaw.integrations.flex_compiled"): "a measurement recipe, run in a checkout: it times",
    ("docs/flex.md", "tokenlaw.properties.runner"): "one compiled backend call on the runner's own inputs",
}
DOC_CODE = re.compile(r"^(?:\s*>>> |\s*)((?:from|import) tokenlaw\b.*)$", re.M)


def docs_reaching(root: Path = ROOT) -> list[str]:
    """Every import statement in a page of docs/ (a code line, indented or in a fence) naming a tokenlaw
    module past the face."""
    out = []
    for page in sorted((root / "docs").glob("*.md")):
        for line in DOC_CODE.findall(page.read_text()):
            try:
                names = past_the_face(line.strip())
            except SyntaxError:          # prose that starts like an import
                continue
            out += [f"{page.relative_to(root)}: {m}" for m in names
                    if (str(page.relative_to(root)), m) not in DOCS_ON_PURPOSE]
    return out


def test_the_docs_import_only_from_the_face():
    assert docs_reaching() == []


def test_a_page_reaching_past_the_face_is_caught(tmp_path):
    (tmp_path / "docs").mkdir()
    for page in (ROOT / "docs").glob("*.md"):
        (tmp_path / "docs" / page.name).write_text(page.read_text())
    assert docs_reaching(tmp_path) == []
    page = tmp_path / "docs" / "hf.md"
    page.write_text(page.read_text() + "\n    from tokenlaw.integrations.hf import attention\n")
    assert docs_reaching(tmp_path) == ["docs/hf.md: tokenlaw.integrations.hf"]


def test_the_scaffold_writes_imports_of_the_face_only():
    from tokenlaw.app import scaffold
    source = scaffold.render("myop", traits={"token_local"}, claims={"gradcheck": "smooth"}, violates={},
                             others=[], where="myop.py")
    compile(source, "myop.py", "exec")
    assert past_the_face(source) == [] and "from tokenlaw import" in source
    assert past_the_face(scaffold.render_test("myop", "myop.py")) == []
