"""operators/dtypes.py is the one list of dtypes; operators/roles.py says which parameters a drawn example adjusts.

The dtype scan parses every module and refuses a literal (tuple, list, set,
dict keys) naming all four dtypes -- as strings or as ``torch.<dtype>`` --
outside ``operators/dtypes.py``; it is attacked with a module that adds one.
The roles are checked through the declaration: an operator whose parameters
have other names is adjusted once its ``Domain(roles=...)`` says so, and
``properties/`` names none of the registry's parameters.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

from tokenlaw.operators import dtypes, tree
from tokenlaw.operators.errors import DeclarationError, InvalidArgument
from tokenlaw.operators.registry import Domain
from tokenlaw.operators.roles import Adjustments, Roles, adjust

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("process", "operators", "properties", "symbolic", "fuzz", "kernels", "reports", "app", "experiments")
OWNER = Path("process") / "dtype_names.py"
FOUR = {"float64", "float32", "float16", "bfloat16"}


def test_the_names_and_their_facts():
    assert dtypes.NAMES == ("float64", "float32", "float16", "bfloat16")
    assert dtypes.FLOATS == tuple(getattr(torch, n) for n in dtypes.NAMES)
    assert dtypes.LOW == ("float32", "float16", "bfloat16") and dtypes.REFERENCE == "float64"
    assert dtypes.OTHER_HALF[torch.float16] is torch.bfloat16 and dtypes.OTHER_HALF[torch.bfloat16] is torch.float16
    assert all(dtypes.of(dtypes.name(d)) is d for d in dtypes.FLOATS)
    with pytest.raises(TypeError):
        dtypes.DTYPES["float8"] = torch.float32        # read-only: nobody extends the list from outside


@pytest.mark.parametrize("bad", ["float8", "Float32", None, torch.float32])
def test_an_unknown_dtype_name_is_an_error_naming_the_argument(bad):
    with pytest.raises(InvalidArgument, match=r"^--dtype: expected one of \['float64'"):
        dtypes.of(bad, "--dtype")


def _literal_names(node) -> set:
    elts = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", [])
    out = set()
    for e in elts:
        if isinstance(e, ast.Constant) and isinstance(e.value, str):
            out.add(e.value)
        elif isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "torch":
            out.add(e.attr)
    return out


def dtype_lists(root: Path) -> list[str]:
    """``path:line`` of every literal that names all four dtypes, outside operators/dtypes.py."""
    out = []
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            if path.relative_to(root) == OWNER:
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)) and FOUR <= _literal_names(node):
                    out.append(f"{path.relative_to(root)}:{node.lineno}")
    return out


def test_the_four_dtypes_are_listed_once():
    assert dtype_lists(ROOT) == []


@pytest.mark.parametrize("literal", [
    'ALL = ("float64", "float32", "float16", "bfloat16")',
    'ORDER = ["bfloat16", "float16", "float32", "float64", "int8"]',
    'import torch\nFLOATS = {torch.float64, torch.float32, torch.float16, torch.bfloat16}',
    'import torch\nBY_NAME = {"float64": torch.float64, "float32": torch.float32, "float16": 1, "bfloat16": 2}',
])
def test_an_added_dtype_list_is_caught(tmp_path, literal):
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "again.py").write_text(literal + "\n")
    assert len(dtype_lists(tmp_path)) == 1


def test_fewer_dtypes_or_the_owner_are_not_a_second_list(tmp_path):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "caps.py").write_text('import torch\nKERNEL = (torch.float32, torch.float16, torch.bfloat16)\n')
    assert dtype_lists(tmp_path) == []
    (tmp_path / "operators").mkdir()
    (tmp_path / "operators" / "mine.py").write_text((ROOT / OWNER).read_text())
    found = dtype_lists(tmp_path)       # the owner's own list, seen when not exempt
    assert len(found) == 1 and found[0].startswith("operators/mine.py:")


# -- roles -------------------------------------------------------------------------------------

def _block(names=("wq", "bq", "wk", "bk")):
    g = torch.Generator().manual_seed(0)
    shape = {"w": (4, 4), "b": (4,)}
    return {**{n: torch.randn(*shape[n[0]], generator=g, dtype=torch.float64) for n in names}, "heads": 2, "tau": 0.5}


def test_adjustments_follow_the_declared_roles():
    block = _block()
    out = adjust({"blocks": [block, block]}, Roles(), Adjustments(bias_scale=10.0, heads=1, threshold=2.0))
    for b in out["blocks"]:
        assert torch.equal(b["bq"], block["bq"] * 10.0) and torch.equal(b["wq"], block["wq"])
        assert b["heads"] == 1 and b["tau"] == 2.0
    assert block["heads"] == 2, "the drawn tree is not mutated"
    assert adjust(block, Roles(), Adjustments()) == block        # the defaults adjust nothing


def test_the_score_offset_pins_every_score():
    block = _block()
    out = adjust(block, Roles(), Adjustments(score_offset=-50.0))
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    q, k = (x @ out["wq"] + out["bq"]).view(3, 2, 2), (x @ out["wk"] + out["bk"]).view(3, 2, 2)
    s = torch.einsum("ihd,jhd->hij", q, k) / 2 ** 0.5
    assert float((s + 50.0).abs().max()) < 5.0           # every score near -50, the drawn part a few units
    no_scores = {"blocks": [{"w": torch.ones(2), "heads": 1}]}    # no query / key projections: nothing to pin
    assert torch.equal(adjust(no_scores, Roles(), Adjustments(score_offset=-50.0))["blocks"][0]["w"], torch.ones(2))


def test_an_operator_with_other_names_is_adjusted_once_it_declares_them():
    theirs = Roles(biases=("b_query", "b_key"), heads="n_heads", threshold="theta", query=("w_query", "b_query"),
                   key=("w_key", "b_key"))
    block = {**{n: torch.ones(4, 4, dtype=torch.float64) for n in ("w_query", "b_query", "w_key", "b_key")},
             "n_heads": 2, "theta": 0.5}
    how = Adjustments(bias_scale=3.0, heads=1, threshold=0.0, score_offset=8.0)
    untouched = adjust(block, Roles(), how)              # the default roles do not know these names
    assert all(torch.equal(untouched[k], block[k]) for k in block if torch.is_tensor(block[k]))
    assert untouched["theta"] == 0.5 and untouched["n_heads"] == 2
    moved = Domain(params=lambda g, d, dt: block, roles=theirs).adjust(block, how)
    assert moved["theta"] == 0.0 and moved["n_heads"] == 1
    assert not torch.equal(moved["b_query"], block["b_query"] * 3.0)   # scaled, then pinned by the offset
    assert torch.equal(moved["w_query"], block["w_query"] / 16)


def test_a_domain_refuses_roles_that_are_not_roles():
    with pytest.raises(DeclarationError, match=r"^Domain.roles: expected a roles.Roles"):
        Domain(roles={"threshold": "tau"})


def test_properties_names_no_parameter_of_the_registry_in_the_case_and_runner():
    """The drawn example and its runner adjust parameters through the declaration, never by name."""
    from tokenlaw.properties.catalogue import default_registry

    reg = default_registry()
    names = set()
    for op in reg:
        names |= {k for k in tree.keys(op.domain.draw(torch.Generator().manual_seed(0), op.domain.d_model[0]))
                  if isinstance(k, str)}
    assert {"tau", "eps_den", "bq", "heads", "wq"} <= names      # the scan knows what to look for
    for module in ("case.py", "runner.py"):
        source = ast.parse((ROOT / "properties" / module).read_text())
        strings = {n.value for n in ast.walk(source) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        keys = {n.slice.value for n in ast.walk(source) if isinstance(n, ast.Subscript)
                and isinstance(n.slice, ast.Constant)}
        assert not (strings | keys) & names, module
