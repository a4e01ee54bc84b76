"""The layers run one way: every import of a tokenlaw module goes down the order, never sideways or up.

The order (README "Layout"):

    0 docs (data only) | errors  <  1 process  <  2 operators  <  3 properties
        <  4 fuzz | symbolic | kernels | integrations  <  5 reports  <  6 orchestration  <  7 experiments  <  8 app
        <  9 the public face (tokenlaw/__init__.py)

Peers in layer 3 never import each other.  ``orchestration`` (settings -> plan ->
tier runs -> one report document) is a layer of its own, above ``reports``
(which only renders documents: it imports no tier) and below the commands and
the experiments that call it: the app stays thin, and a library user gets
``orchestration.runs.check`` without the command line.  Every import counts: module-level,
inside a function, relative, and a string literal that names a tokenlaw module
(``importlib.import_module("tokenlaw.x")``, a tuple of module names, a
``"tokenlaw.x.y:function"`` a parser names as the work it runs): a dependency
hidden in a string is still a dependency.  A cycle between modules
is refused too, inside one package as well.  Plug-ins are found through entry
points (``tokenlaw.backends``, ``tokenlaw.operators``), which is how a lower
layer reaches code it does not import.

The checkout's root holds two modules of the package: ``errors.py`` (``tokenlaw.errors``, importing
nothing, at the bottom) and ``__init__.py`` (``tokenlaw``, the public face, at the top: it may name
everything, and nothing inside the package imports it).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {"docs": 0, "errors": 0, "process": 1, "operators": 2, "properties": 3,
          "fuzz": 4, "symbolic": 4, "kernels": 4, "integrations": 4, "reports": 5,
          "orchestration": 6, "experiments": 7, "app": 8, "__init__": 9}
FACE = "__init__"        # the root's __init__.py: the module ``tokenlaw`` itself
MODULE_NAME = re.compile(r"(tokenlaw(?:\.[A-Za-z_]\w*)+)(:[A-Za-z_]\w*)?")      # module, or module:attribute


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["tokenlaw", *parts])


def imports(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, imported tokenlaw module) for every import in ``path``, at any depth, and module-name strings."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text(), str(path))
    groups = {id(k.value) for k in ast.walk(tree) if isinstance(k, ast.keyword) and k.arg == "group"}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # `from pkg import mod` imports the submodule pkg.mod when it is one (then: that, not pkg)
            subs = [f"{target}.{a.name}" for a in node.names if _is_module(f"{target}.{a.name}", root)]
            out += [(node.lineno, s) for s in subs] if subs else [(node.lineno, target)]
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_NAME.fullmatch(node.value)
              and id(node) not in groups):      # an entry-point group's name (group="tokenlaw.x") is not an import
            out.append((node.lineno, MODULE_NAME.fullmatch(node.value).group(1)))
    return [(line, t) for line, t in out if t == "tokenlaw" or t.startswith("tokenlaw.")]


def _is_module(name: str, root: Path) -> bool:
    if name == "tokenlaw":
        return (root / "__init__.py").is_file()
    rel = Path(*name.split(".")[1:])
    return (root / rel).with_suffix(".py").is_file() or (root / rel / "__init__.py").is_file()


def layer(module: str) -> tuple[str, int] | None:
    top = module.split(".")[1] if module.count(".") else FACE if module == "tokenlaw" else ""
    return (top, LAYERS[top]) if top in LAYERS else None


def modules(root: Path = ROOT) -> list[Path]:
    """Every module of the package: the folders' and the root's own (``__init__.py``, ``errors.py``)."""
    return sorted([*(p for top in LAYERS for p in (root / top).rglob("*.py")), *root.glob("*.py")])


def violations(root: Path = ROOT) -> list[str]:
    """Every import that climbs a layer or crosses to a peer, as 'file:line: a -> b (why)'."""
    out = []
    for path in modules(root):
        src = layer(module_name(path, root))
        for line, target in imports(path, root):
            dst = layer(target)
            if dst is None or dst[0] == src[0]:
                continue
            if dst[1] > src[1]:
                out.append(f"{path.relative_to(root)}:{line}: {src[0]} (layer {src[1]}) imports {target} "
                           f"(layer {dst[1]}): an import that climbs")
            elif dst[1] == src[1]:
                out.append(f"{path.relative_to(root)}:{line}: {src[0]} imports its peer {target}")
    return out


def cycles(root: Path = ROOT) -> list[list[str]]:
    """Strongly connected components of more than one module in the import graph (Tarjan)."""
    graph: dict[str, set] = {}
    for path in modules(root):
        name = module_name(path, root)
        graph.setdefault(name, set())
        for _, target in imports(path, root):
            if target != name and _is_module(target, root):
                graph[name].add(target)
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def late_imports(root: Path = ROOT) -> list[str]:
    """Imports inside a function without an ``# optional:`` comment saying which optional dependency it defers."""
    out = []
    for path in modules(root):
        lines = path.read_text().split("\n")
        for fn in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, (ast.Import, ast.ImportFrom)):
                        text = "\n".join(lines[node.lineno - 1:node.end_lineno])
                        if "# optional:" not in text:
                            out.append(f"{path.relative_to(root)}:{node.lineno}: {text.strip()}")
    return out


# Layers that may use only some of the layers below them: reports render documents, they run no tier.
RENDER_ONLY = {"reports": {"fuzz", "symbolic", "kernels"}}


def reaches_a_tier(root: Path = ROOT) -> list[str]:
    """Every import from a render-only layer (``reports``) of a tier it must not run, as 'file:line: a -> b'."""
    out = []
    for top, banned in RENDER_ONLY.items():
        for path in sorted((root / top).rglob("*.py")):
            for line, target in imports(path, root):
                dst = layer(target)
                if dst is not None and dst[0] in banned:
                    out.append(f"{path.relative_to(root)}:{line}: {top} imports {target}: it renders, it runs no tier")
    return out


def test_every_folder_of_the_package_has_a_layer():
    mapped = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    assert mapped <= set(LAYERS), f"folders without a layer: {sorted(mapped - set(LAYERS))}"
    root_modules = {p.stem for p in ROOT.glob("*.py")}
    assert root_modules <= set(LAYERS), f"root modules without a layer: {sorted(root_modules - set(LAYERS))}"


def test_imports_only_go_down():
    assert violations() == []


def test_reports_import_no_tier():
    assert reaches_a_tier() == []


def test_no_import_cycles():
    assert cycles() == []


def test_late_imports_only_defer_optional_dependencies():
    """An import inside a function is for an optional dependency (Triton, redis, matplotlib; the pytest
    plug-in's tiers, which load only with --tokenlaw) and says so; every other import is at the top."""
    assert late_imports() == []


# -- the test can fail: attack it on a copy of the tree -------------------------------------

def _copy(tmp_path: Path) -> Path:
    for p in ROOT.glob("*.py"):
        (tmp_path / p.name).write_text(p.read_text())
    for top in LAYERS:
        for p in (ROOT / top).rglob("*.py"):
            dst = tmp_path / p.relative_to(ROOT)
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_text(p.read_text())
    return tmp_path


@pytest.mark.parametrize("where, line, expect", [
    ("operators/xp.py", "from tokenlaw.properties import verdict", "climbs"),
    ("properties/verdict.py", "    from tokenlaw.kernels import capabilities", "climbs"),       # late, still counted
    ("fuzz/engine.py", "from tokenlaw.symbolic import prover", "peer"),
    ("fuzz/mutants/seeded.py", "from tokenlaw.kernels import mutants", "peer"),   # the mutant room imports no plug-in
    ("fuzz/mutants/adversary.py", "from tokenlaw.reports import mutations", "climbs"),
    ("symbolic/prover.py", "X = 'tokenlaw.reports.writers'", "climbs"),                        # a module-name string
    ("kernels/ops.py", "from ..reports import writers", "climbs"),                              # relative
    ("reports/writers.py", "from tokenlaw.orchestration import runs", "climbs"),
    ("orchestration/runs.py", "from tokenlaw.app import cli", "climbs"),
    ("reports/writers.py", "X = 'tokenlaw.app.check_cmd:cmd_check'", "climbs"),            # a module:function string
    ("errors.py", "import torch\nfrom tokenlaw.operators import xp", "climbs"),       # the errors stay at the bottom
    ("app/cli.py", "from tokenlaw import check", "climbs"),                         # the package imports no face
    ("app/cli.py", "    import tokenlaw", "climbs"),
    ("process/files.py", "from tokenlaw.operators import xp", "climbs"),          # the plumbing stays below
    ("process/unshadow.py", "X = 'tokenlaw.properties.verdict'", "climbs"),
])
def test_an_added_upward_import_is_caught(tmp_path, where, line, expect):
    root = _copy(tmp_path)
    before = set(violations(root))
    path = root / where
    body = path.read_text()
    if line.startswith("    "):
        body += "\n\ndef _added():\n" + line + "\n"
    else:
        body += "\n" + line + "\n"
    path.write_text(body)
    found = sorted(set(violations(root)) - before)
    assert len(found) == 1 and where in found[0] and expect in found[0], found


@pytest.mark.parametrize("line", ["from tokenlaw.fuzz import engine", "    from tokenlaw.symbolic import prover",
                                  "X = 'tokenlaw.kernels.backend'"])
def test_a_tier_imported_by_reports_is_caught(tmp_path, line):
    root = _copy(tmp_path)
    assert reaches_a_tier(root) == []
    path = root / "reports/writers.py"
    path.write_text(path.read_text() + ("\n\ndef _added():\n" if line.startswith("    ") else "\n") + line + "\n")
    found = reaches_a_tier(root)
    assert len(found) == 1 and "reports/writers.py" in found[0], found
    path.write_text(path.read_text() + "\nfrom tokenlaw.properties import plan\n")       # control: a lower layer
    assert reaches_a_tier(root) == found


def test_an_added_late_import_is_caught(tmp_path):
    root = _copy(tmp_path)
    path = root / "reports/writers.py"
    path.write_text(path.read_text() + "\n\ndef _late():\n    from tokenlaw.properties import plan\n")
    assert [v for v in late_imports(root) if "reports/writers.py" in v] != []


def test_an_added_cycle_is_caught(tmp_path):
    root = _copy(tmp_path)
    before = cycles(root)
    (root / "properties/verdict.py").write_text((root / "properties/verdict.py").read_text()
                                                 + "\nfrom tokenlaw.properties import plan\n")
    found = [c for c in cycles(root) if c not in before]
    assert any({"tokenlaw.properties.verdict", "tokenlaw.properties.plan"} <= set(c) for c in found), found
