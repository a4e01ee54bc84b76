"""The code cites the project's own mathematics, and every citation resolves.

The one statement of what the operators compute and what the contracts mean is
``docs/mathematics.md``; each of its sections carries an explicit, stable anchor
(``<a id="oattention"></a>`` on the heading).  Code, comments, docstrings and the
other docs cite a section as ``docs/mathematics.md#oattention`` (``mathematics.md#x``
from inside ``docs/``, ``(#x)`` inside the page itself).  This test fails on

* a citation of an anchor the page does not have (a renamed or deleted section), and
* any citation of "SPEC", a document this project has never had.

The word inside a string literal (``"SPEC" not in text``, a check that it is absent) is
not a citation.  This file is not scanned: it holds the bad citations it attacks with.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MATHEMATICS = Path("docs") / "mathematics.md"
SUFFIXES = {".py", ".md", ".toml", ".yml", ".yaml", ".sh", ".txt", ".cfg"}
SKIP_DIRS = {".git", ".dev", "__pycache__", "build", "dist", ".hypothesis", ".pytest_cache", ".venv"}

ANCHOR = re.compile(r'<a id="([A-Za-z0-9_-]+)"></a>')
CITATION = re.compile(r"mathematics\.md#([A-Za-z0-9_-]*)")
IN_PAGE = re.compile(r"\]\(#([A-Za-z0-9_-]*)\)")
SPEC = re.compile(r"""(?<!["'])\bSPEC\b""")


def anchors(page: str) -> set[str]:
    """The anchors of ``page``'s headings; an anchor off a heading, or twice, is refused."""
    found: list[str] = []
    for number, line in enumerate(page.splitlines(), 1):
        ids = ANCHOR.findall(line)
        if ids and not line.startswith("#"):
            raise AssertionError(f"{MATHEMATICS}:{number}: anchor {ids} is not on a heading")
        found += ids
    twice = sorted({a for a in found if found.count(a) > 1})
    assert not twice, f"{MATHEMATICS}: anchors declared twice: {twice}"
    return set(found)


def scanned_files(root: Path) -> list[Path]:
    """Tracked and untracked-but-not-ignored text files (git), else every text file under ``root``."""
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=root,
                             capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
        files = [root / name for name in out]
    except (OSError, subprocess.SubprocessError):
        files = [p for p in root.rglob("*") if not SKIP_DIRS & set(p.relative_to(root).parts)]
    return sorted(p for p in files if p.is_file() and p.suffix in SUFFIXES and p.resolve() != Path(__file__).resolve())


def problems(root: Path) -> list[str]:
    """One line per broken citation of the mathematics, and per citation of "SPEC", under ``root``."""
    page = (root / MATHEMATICS).read_text(encoding="utf-8")
    known = anchors(page)
    bad = []
    for path in scanned_files(root):
        rel = path.relative_to(root)
        in_page = IN_PAGE if rel == MATHEMATICS else None
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for anchor in CITATION.findall(line) + (in_page.findall(line) if in_page else []):
                if anchor not in known:
                    bad.append(f"{rel}:{number}: cites mathematics.md#{anchor}, which has no such section")
            if SPEC.search(line):
                bad.append(f"{rel}:{number}: cites SPEC, which this project does not have: {line.strip()}")
    return bad


def test_every_citation_names_a_section_of_the_mathematics():
    bad = problems(ROOT)
    assert not bad, "\n".join(bad)


def test_the_code_cites_the_mathematics():
    """Not vacuous: the operators' modules do cite sections, and the page has them."""
    cited = {a for p in (ROOT / "operators").glob("*.py") for a in CITATION.findall(p.read_text(encoding="utf-8"))}
    assert {"presence", "oattention", "sdpa", "fir", "normalisers", "hosts"} <= cited, cited
    assert cited <= anchors((ROOT / MATHEMATICS).read_text(encoding="utf-8"))


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / MATHEMATICS).write_text((ROOT / MATHEMATICS).read_text(encoding="utf-8"), encoding="utf-8")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("name, text, expected", [
    ("operators/bad.py", '"""Presence (docs/mathematics.md#presense)."""\n', "bad.py:1: cites mathematics.md#presense"),
    ("operators/old.py", "x = 1  # the formula (SPEC 2)\n", "old.py:1: cites SPEC"),
    ("operators/old2.py", '"""Written from SPEC\'s formula."""\n', "old2.py:1: cites SPEC"),
    ("docs/fuzz.md", "see [the FIR](mathematics.md#no-such-section)\n", "fuzz.md:1: cites mathematics.md#no-such"),
    ("docs/fuzz.md", "a bare [link](mathematics.md#)\n", "fuzz.md:1: cites mathematics.md#,"),
])
def test_a_bad_citation_is_refused(tmp_path, name, text, expected):
    bad = problems(_tree(tmp_path, {name: text}))
    assert len(bad) == 1 and expected in bad[0], bad


def test_controls_are_accepted(tmp_path):
    """A citation of an existing section, and the word in a string literal that checks it is absent, pass."""
    root = _tree(tmp_path, {"operators/good.py": '"""OAttention (docs/mathematics.md#oattention)."""\n'
                                                  'assert "SPEC" not in text and "SPEC.md" not in text\n'})
    assert problems(root) == []


def test_an_anchor_must_exist_once_on_a_heading(tmp_path):
    page = (ROOT / MATHEMATICS).read_text(encoding="utf-8")
    with pytest.raises(AssertionError, match="declared twice"):
        anchors(page + '\n## Again <a id="oattention"></a>\n')
    with pytest.raises(AssertionError, match="not on a heading"):
        anchors(page + '\nprose <a id="loose"></a>\n')
    gone = page.replace('<a id="fir"></a>', "")
    root = _tree(tmp_path, {})
    (root / MATHEMATICS).write_text(gone, encoding="utf-8")
    (root / "operators").mkdir()
    (root / "operators" / "fir.py").write_text('"""Causal FIR (docs/mathematics.md#fir)."""\n', encoding="utf-8")
    assert any("operators/fir.py:1: cites mathematics.md#fir" in b for b in problems(root))
