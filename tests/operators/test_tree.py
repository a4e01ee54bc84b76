"""operators/tree.py: the one walk over parameter trees, and a scan that no other module writes its own.

Each operation is checked on a host-shaped tree (a dict holding a list of
per-block dicts, a tuple of taps) and on the symbolic tier's leaves (numpy
object arrays of z3 terms).  The scan parses every module of the package
and refuses a recursive function that tests for dict / list / tuple outside
``operators/tree.py``; it is attacked with a module that adds such a walk.
"""
from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import z3

from tokenlaw.operators import tree
from tokenlaw.operators.errors import InvalidArgument

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("process", "operators", "properties", "symbolic", "fuzz", "kernels", "reports", "app", "experiments")
OWNER = Path("operators") / "tree.py"


def host():
    return {"blocks": [{"wq": torch.ones(2, 2), "tau": 0.5}, {"wq": torch.zeros(2, 2), "tau": 1.5}],
            "taps": (0.25, 0.75), "heads": 2}


# -- the operations ----------------------------------------------------------------------------

def test_leaves_are_depth_first_with_their_paths():
    got = [(p, v) for p, v in tree.leaves(host()) if not torch.is_tensor(v)]
    assert got == [(("blocks", 0, "tau"), 0.5), (("blocks", 1, "tau"), 1.5),
                   (("taps", 0), 0.25), (("taps", 1), 0.75), (("heads",), 2)]
    assert [tree.path_name(p) for p, _ in tree.leaves(host())][:2] == ["blocks[0].wq", "blocks[0].tau"]
    assert list(tree.leaves({"a": [], "b": {}})) == []          # an empty container has no leaf
    assert list(tree.leaves(3.0)) == [((), 3.0)]                # a bare leaf is its own tree


def test_map_keeps_container_types_and_does_not_mutate():
    t = host()
    doubled = tree.map(lambda v: v * 2, t)
    assert isinstance(doubled["taps"], tuple) and doubled["taps"] == (0.5, 1.5)
    assert isinstance(doubled["blocks"], list) and doubled["blocks"][1]["tau"] == 3.0
    assert t["blocks"][1]["tau"] == 1.5 and doubled["blocks"] is not t["blocks"]
    assert tree.map(lambda v: v, {"a": (1, [2])}, sequence=list) == {"a": [1, [2]]}
    assert isinstance(tree.map(lambda v: v, {"a": (1, [2])}, sequence=list)["a"], list)


def test_map_with_path_sees_each_leaf_path():
    named = tree.map_with_path(lambda p, v: tree.dotted(p, "params."), {"blocks": [{"tau": 0.5}], "taps": (1.0,)})
    assert named == {"blocks": [{"tau": "params.blocks.0.tau"}], "taps": ("params.taps.0",)}


def test_map_nodes_is_top_down_and_stops_at_a_match():
    seen = []

    def match(node):
        seen.append(type(node).__name__)
        return isinstance(node, dict) and "tau" in node

    out = tree.map_nodes(lambda d: {**d, "tau": -d["tau"]}, host(), match)
    assert [b["tau"] for b in out["blocks"]] == [-0.5, -1.5] and out["taps"] == (0.25, 0.75)
    assert seen.count("dict") == 3          # the root and the two blocks; a matched block is not searched further


def test_keys_and_find():
    assert tree.keys(host()) == {"blocks", "wq", "tau", "taps", "heads"}
    assert tree.find(host(), "tau") == 0.5                      # the first block's
    assert tree.find({"heads": 4, "blocks": [{"heads": 1}]}, "heads") == 4    # nearest the root wins
    assert tree.find({"blocks": [{"eps": 1.0}, {"eps": 2.0, "tau": 3.0}]}, "tau") == 3.0
    assert tree.find(host(), "eps_den") is None and tree.find(host(), "eps_den", 7) == 7


def test_get_and_replace():
    t = host()
    assert tree.get(t, ("blocks", 1, "tau")) == 1.5
    new = tree.replace(t, ("taps", 1), 0.5)
    assert new["taps"] == (0.25, 0.5) and isinstance(new["taps"], tuple) and t["taps"] == (0.25, 0.75)
    assert new["blocks"][0]["tau"] == 0.5 and new["heads"] == 2       # the rest is as it was
    assert tree.replace(t, (), "whole") == "whole"


@pytest.mark.parametrize("path, named", [
    (("blocks", 2, "tau"), "blocks[2]"),            # index past the list
    (("blocks", 0, "eps"), "blocks[0].eps"),        # a key the block lacks
    (("heads", 0), "heads[0]"),                     # descending into a leaf
    (("blocks", "0"), "blocks.0"),                  # a string index of a list
])
def test_a_missing_path_is_an_error_naming_it(path, named):
    with pytest.raises(InvalidArgument, match="^" + re.escape(named) + ": no such entry"):
        tree.get(host(), path)
    with pytest.raises(InvalidArgument, match="no such entry"):
        tree.replace(host(), path, 0.0)


def test_path_names():
    assert tree.path_name(("blocks", 0, "attn", "wq")) == "blocks[0].attn.wq"
    assert tree.path_name((1,), "taps") == "taps[1]" and tree.path_name(("wq",), "params") == "params.wq"
    assert tree.dotted(("blocks", 0, "tau"), "h.") == "h.blocks.0.tau"


def test_object_arrays_of_terms_are_leaves():
    """The symbolic tier's parameters: numpy object arrays of z3 terms, walked like tensors."""
    a = np.empty((2,), dtype=object)
    a[0], a[1] = z3.Real("w0"), z3.Real("w1")
    params = {"blocks": [{"wq": a, "tau": z3.Real("tau")}]}
    paths = [p for p, _ in tree.leaves(params)]
    assert paths == [("blocks", 0, "wq"), ("blocks", 0, "tau")]
    doubled = tree.map(lambda v: v * 2, params)
    assert isinstance(doubled["blocks"][0]["wq"], np.ndarray) and doubled["blocks"][0]["wq"].shape == (2,)
    assert z3.eq(z3.simplify(doubled["blocks"][0]["wq"][1]), z3.simplify(z3.Real("w1") * 2))


# -- nobody else walks the tree ----------------------------------------------------------------

_CONTAINER_NAMES = {"dict", "list", "tuple", "Mapping", "Sequence", "MutableMapping"}


def _tests_containers(fn: ast.AST) -> bool:
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "isinstance" and len(n.args) == 2:
            if _CONTAINER_NAMES & {e.id for e in ast.walk(n.args[1]) if isinstance(e, ast.Name)}:
                return True
        if isinstance(n, ast.Compare) and isinstance(n.left, ast.Call) and isinstance(n.left.func, ast.Name) \
                and n.left.func.id == "type":       # type(v) is dict, type(v) in (list, tuple)
            if _CONTAINER_NAMES & {e.id for c in n.comparators for e in ast.walk(c) if isinstance(e, ast.Name)}:
                return True
    return False


def _calls_itself(fn: ast.FunctionDef) -> bool:
    for n in ast.walk(fn):
        if isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, ast.Name) and f.id == fn.name:
                return True
            if isinstance(f, ast.Attribute) and f.attr == fn.name and isinstance(f.value, ast.Name) \
                    and f.value.id in ("self", "cls"):
                return True
    return False


def tree_walks(root: Path) -> list[str]:
    """``path:line name`` of every recursive function that tests for dict / list / tuple, outside tree.py."""
    out = []
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            if path.relative_to(root) == OWNER:
                continue
            for fn in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and _calls_itself(fn) \
                        and _tests_containers(fn):
                    out.append(f"{path.relative_to(root)}:{fn.lineno} {fn.name}")
    return out


def test_no_module_but_tree_walks_a_parameter_tree():
    assert tree_walks(ROOT) == []


def test_the_owner_itself_is_seen_by_the_scan(tmp_path):
    """Control: the scan does recognise tree.py's own walks when it is not exempt."""
    (tmp_path / "operators").mkdir()
    shutil.copy(ROOT / OWNER, tmp_path / "operators" / "mine.py")
    found = tree_walks(tmp_path)
    assert any("map_with_path" in f for f in found) and any(" find" in f for f in found)


WALK = '''
def cast_all(value, dtype):
    if isinstance(value, dict):
        return {k: cast_all(v, dtype) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(cast_all(v, dtype) for v in value)
    return value


class Holder:
    def flatten(self, t):
        if isinstance(t, (list, tuple)):
            return [x for u in t for x in self.flatten(u)]
        return [t]
'''

USES_TREE = '''
from tokenlaw.operators import tree


def cast_all(value, dtype):
    return tree.map(lambda v: v.to(dtype), value)


def depth(n):
    return 0 if n == 0 else 1 + depth(n - 1)      # recursive, but no container test: not a tree walk


def is_params(v):
    return isinstance(v, dict)                    # a container test, but no recursion
'''


@pytest.mark.parametrize("package", ["properties", "symbolic", "fuzz"])
def test_an_added_walk_is_caught(tmp_path, package):
    (tmp_path / package).mkdir()
    (tmp_path / package / "sneaky.py").write_text(WALK)
    assert tree_walks(tmp_path) == [f"{package}/sneaky.py:2 cast_all", f"{package}/sneaky.py:11 flatten"]


def test_code_that_uses_the_tree_module_is_accepted(tmp_path):
    (tmp_path / "properties").mkdir()
    (tmp_path / "properties" / "fine.py").write_text(USES_TREE)
    assert tree_walks(tmp_path) == []
