"""tokenlaw's Triton kernels are a plug-in like any other: nothing outside ``kernels/`` knows them.

Everything about a backend is declared by the backend itself
(``tokenlaw.properties.backends.Backend``: its binding table, recorded
environment, provenance, mutants, benchmark) and found through the
``tokenlaw.backends`` entry-point group.  So no module of the package outside
``kernels/``

* imports ``tokenlaw.kernels`` or ``triton`` (at any depth, relative imports included), nor
* names them, or one of the kernels' functions, in a string constant (an f-string's parts included):
  a module path or kernel name in a string is the same dependency, hidden.

Prose is exempt: docstrings, and the ``help=`` / ``description=`` / ``epilog=`` texts of the command line
(which may tell a user about the plug-in).  The test attacks itself below: a module that names one is caught.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from test_layering import LAYERS

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = "kernels"
PROSE_KEYWORDS = {"help", "description", "epilog"}


def kernel_names(folder: Path = ROOT / PLUGIN) -> set[str]:
    """The kernels' own names, read off their sources: Triton ``*_kernel`` functions, the public launchers of
    ``ops.py``, the kernel modules (``*_fwd``, ``*_bwd``, ``fir_key_grad``) and the binding table's names."""
    names = set()
    for path in folder.glob("*.py"):
        tree = ast.parse(path.read_text())
        if path.stem.endswith(("_fwd", "_bwd")) or path.stem == "fir_key_grad":
            names.add(path.stem)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and (
                    node.name.endswith("_kernel") or (path.name == "ops.py" and not node.name.startswith("_"))):
                names.add(node.name)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and \
                    any(getattr(t, "id", "") == "BINDINGS" for t in node.targets):       # its values, not operators
                names |= {v.value for v in node.value.values if isinstance(v, ast.Constant)}
    return names


def _forbidden(names) -> re.Pattern:
    words = "|".join(sorted(map(re.escape, names), key=len, reverse=True))
    return re.compile(rf"tokenlaw\.kernels|triton|\b(?:{words})\b", re.I)


def _prose(tree) -> set[int]:
    """ids of the string constants that are prose: docstrings and command-line help texts."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
        if isinstance(node, ast.keyword) and node.arg in PROSE_KEYWORDS:
            out |= {id(c) for c in ast.walk(node.value) if isinstance(c, ast.Constant)}
    return out


def _package(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(["tokenlaw", *(parts[:-1] if parts[-1] == "__init__" else parts[:-1])])


def mentions(path: Path, root: Path = ROOT, names=None) -> list[str]:
    """'file:line: what' for every import of the plug-in or Triton, and every string constant naming them."""
    pattern = _forbidden(kernel_names(root / PLUGIN) if names is None else names)
    tree = ast.parse(path.read_text(), str(path))
    prose = _prose(tree)
    rel = path.relative_to(root)
    out = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = _package(path, root).split(".")
                base = ".".join(pkg[:len(pkg) - node.level + 1] + ([node.module] if node.module else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for t in targets:
            if t == "triton" or t.startswith("triton.") or t == f"tokenlaw.{PLUGIN}" \
                    or t.startswith(f"tokenlaw.{PLUGIN}."):
                out.append(f"{rel}:{node.lineno}: imports {t}")
                break
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            hit = pattern.search(node.value)
            if hit:
                out.append(f"{rel}:{node.lineno}: a string names {hit.group(0)!r}")
    return out


def modules(root: Path = ROOT) -> list[Path]:
    return sorted(p for top in LAYERS if top != PLUGIN for p in (root / top).rglob("*.py"))


def boundary(root: Path = ROOT) -> list[str]:
    names = kernel_names(root / PLUGIN)
    return [m for path in modules(root) for m in mentions(path, root, names)]


def test_the_kernel_names_are_read_off_the_plug_in():
    """The names the check looks for exist (a rename inside kernels/ must not empty the check)."""
    names = kernel_names()
    assert {"oattention_fwd", "sm_fir_fwd", "pn_fir_tau_fwd", "oattention_fwd_kernel", "fir_key_grad"} <= names


def test_nothing_outside_the_plug_in_names_it():
    assert boundary() == []


# -- the test can fail: attack it on a copy of the tree -------------------------------------

def _copy(tmp_path: Path) -> Path:
    for top in LAYERS:
        for p in (ROOT / top).rglob("*.py"):
            dst = tmp_path / p.relative_to(ROOT)
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_text(p.read_text())
    return tmp_path


@pytest.mark.parametrize("where, line, expect", [
    ("app/scratch_added.py", "from tokenlaw.kernels import ops", "imports tokenlaw.kernels"),
    ("reports/scratch_added.py", "def f():\n    import triton  # optional: Triton\n", "imports triton"),
    ("orchestration/scratch_added.py", "from ..kernels.backend import TRITON", "imports tokenlaw.kernels"),
    ("operators/scratch_added.py", "KERNEL = 'oattention_fwd'", "'oattention_fwd'"),
    ("fuzz/scratch_added.py", "ENV_FIXED_BY = ('triton',)", "'triton'"),
    ("app/scratch_added.py", "M = 'tokenlaw.kernels.mutants'", "'tokenlaw.kernels'"),
    ("properties/scratch_added.py", "def f(n):\n    return f'{n}: sm_fir_bwd_dq_kernel'\n", "'sm_fir_bwd_dq_kernel'"),
    ("symbolic/scratch_added.py", "ENV = {'TRITON_INTERPRET': '1'}", "'TRITON'"),
])
def test_a_module_that_names_the_plug_in_is_caught(tmp_path, where, line, expect):
    root = _copy(tmp_path)
    assert boundary(root) == []
    (root / where).write_text(f'"""A scratch module."""\n{line}\n')
    found = boundary(root)
    assert len(found) == 1 and found[0].startswith(where) and expect in found[0], found


def test_prose_and_other_names_are_not_caught(tmp_path):
    """Controls: a docstring and a help text may mention the plug-in; a string naming an operator is not a
    kernel's name; the kernels' own folder names itself freely."""
    root = _copy(tmp_path)
    (root / "app/scratch_added.py").write_text(
        '"""Runs tokenlaw.kernels (Triton) when installed."""\n'
        "def register(sp):\n"
        "    '''The oattention_fwd kernel's command.'''\n"
        "    sp.add_argument('--x', help='e.g. the Triton kernels (TRITON_INTERPRET=1)')\n"
        "    return 'oattention', 'pn_fir_tau', 'kernel', 'kernels'\n")
    (root / "kernels/scratch_added.py").write_text("import triton\nNAME = 'tokenlaw.kernels.oattention_fwd'\n")
    assert boundary(root) == []
