"""benchmarks/arch/compare.py: two report trees are the same but for what differs by design, and nothing else is masked."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[2] / "benchmarks" / "arch" / "compare.py"
SHA = {"a": "1" * 64, "b": "2" * 64, "c": "3" * 64}


@pytest.fixture(scope="module")
def compare():
    spec = importlib.util.spec_from_file_location("arch_compare", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tree(root: Path, *, kernel_sha: str, seconds: float, outcome: str = "holds") -> Path:
    (root / "check").mkdir(parents=True)
    meta = {"seed": 0, "command": f"tokenlaw check --out {root}/check",
            "kernel_sources": {"kernels/tiles.py": kernel_sha, "integrations/torch_sdpa.py": SHA["c"]}}
    doc = {"meta": meta, "rows": [{"operator": "oattention", "outcome": outcome, "seconds": seconds}]}
    (root / "check" / "conformance.json").write_text(json.dumps(doc, indent=1))
    (root / "check" / "conformance.md").write_text(f"| oattention | {outcome} | {seconds}s |\nsources {kernel_sha}\n")
    return root


def test_the_same_reports_from_other_dirs_other_seconds_and_an_edited_kernel_are_identical(tmp_path, compare, capsys):
    a = _tree(tmp_path / "a", kernel_sha=SHA["a"], seconds=1.5)
    b = _tree(tmp_path / "b", kernel_sha=SHA["b"], seconds=7.25)
    assert compare.compare(a, b, changed=["kernels/tiles.py"]) == 0
    out = capsys.readouterr().out
    assert "IDENTICAL: 2 files" in out and "kernels/tiles.py" in out


def test_a_digest_that_differs_outside_the_changed_files_is_a_difference(tmp_path, compare, capsys):
    a = _tree(tmp_path / "a", kernel_sha=SHA["a"], seconds=1.5)
    b = _tree(tmp_path / "b", kernel_sha=SHA["b"], seconds=1.5)
    assert compare.compare(a, b, changed=["kernels/ops.py"]) == 1
    assert "outside --changed: kernels/tiles.py" in capsys.readouterr().out


def test_an_outcome_that_differs_is_found(tmp_path, compare, capsys):
    a = _tree(tmp_path / "a", kernel_sha=SHA["a"], seconds=1.5)
    b = _tree(tmp_path / "b", kernel_sha=SHA["a"], seconds=1.5, outcome="VIOLATED")
    assert compare.compare(a, b) == 1
    out = capsys.readouterr().out
    assert "DIFFERENT: 2 of 2 files" in out and '"outcome": "VIOLATED"' in out


def test_a_report_in_one_tree_only_is_a_difference(tmp_path, compare, capsys):
    a = _tree(tmp_path / "a", kernel_sha=SHA["a"], seconds=1.5)
    b = _tree(tmp_path / "b", kernel_sha=SHA["a"], seconds=1.5)
    (b / "lawtable.md").write_text("| law |\n")
    assert compare.compare(a, b) == 1
    assert "only in B: lawtable.md" in capsys.readouterr().out
