"""The worked third-party backend (examples/my_backend): accepted when right, rejected when wrong.

``examples/my_backend`` is a package of its own that registers two backends
under the ``tokenlaw.backends`` entry-point group: ``example`` (OAttention
as a chunked online softmax) and ``example_wrong`` (the same code with a
null source's exp(s_ij) left in the denominator).

* The fast tests register them in-process (``backends.register``) and judge a
  few cells: the plan gives the example every row tokenlaw's own Triton
  kernel gets, the right one holds, the wrong one is caught with a small
  counterexample; the example's report records its provenance (its own
  source hashes and bindings) and its environment, and its own seeded bug
  is killed by ``tokenlaw mutate --backend example`` -- all through the
  backend interface, with no edit of tokenlaw.
* The slow test does what a user does: builds a tokenlaw wheel and the
  example's wheel, installs both into a fresh virtual environment (torch &c.
  from the system site, tokenlaw from the *wheel*, never the editable
  checkout) and runs ``tokenlaw check --backend example`` (exit 0, every
  applicable row) and ``--backend example_wrong`` (exit 1, a shrunk
  counterexample that ``tokenlaw replay`` reproduces).
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tokenlaw.app import cli
from tokenlaw.fuzz.engine import run_cell
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties import backends
from tokenlaw.properties import verdict as V
from tokenlaw.properties.case import Case
from tokenlaw.properties.catalogue import CONTRACTS, default_registry
from tokenlaw.properties.plan import plan

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_SRC = ROOT / "examples" / "my_backend"
sys.path.insert(0, str(EXAMPLE_SRC))        # the example package, importable without installing it
from tokenlaw_example_backend import backend as example_backend  # noqa: E402
from tokenlaw_example_backend.backend import ExampleBackend, WrongExampleBackend  # noqa: E402
from tokenlaw_example_backend.common import CountTranscendentals  # noqa: E402

sys.path.remove(str(EXAMPLE_SRC))


@contextlib.contextmanager
def registered(*items):
    """The given backends known by name for the block (skipping names an installed entry point gives)."""
    with contextlib.ExitStack() as stack:
        for b in items:
            if b.name not in backends.names():
                stack.enter_context(backends.register(b))
        yield


def _triton():
    from tokenlaw.kernels.backend import TritonBackend

    return TritonBackend()


def _row_set(rows) -> dict:
    """{contract: judged?} -- the row and whether the backend's implementation answers it."""
    return {r.contract: bool(r.cells) for r in rows}


# -- fast, in-process ------------------------------------------------------------------------------------------
IMPLEMENTED = ("oattention", "pn_fir_tau")


@pytest.mark.parametrize("operator", IMPLEMENTED)
def test_example_plans_every_row_the_triton_kernel_gets(operator, monkeypatch):
    """The same rows as tokenlaw's own kernel of the operator: declared, universal and implementation laws."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")          # planning only: the triton backend is then available
    reg = default_registry()
    with registered(ExampleBackend(), _triton()):
        mine = plan(reg, operators=[operator], backend="example")
        theirs = plan(reg, operators=[operator], backend="triton")
    assert _row_set(mine) == _row_set(theirs)
    judged = {c for c, j in _row_set(mine).items() if j}
    assert {"eager_agreement", "nan_padding", "determinism", "gradient_agreement", "differential"} <= judged
    assert all(c.backend == "example" for r in mine for c in r.cells)


def test_example_leaves_out_what_it_does_not_implement():
    reg = default_registry()
    with registered(ExampleBackend()):
        everything = plan(reg, backend="example")
    assert {r.operator for r in everything} == set(IMPLEMENTED)
    assert set(everything.left_out) == {op.name for op in reg} - set(IMPLEMENTED)
    assert all("implements only" in why for why in everything.left_out.values())


CASES = [("oattention", "eager_agreement", torch.float32), ("oattention", "null_source_insertion", torch.float16),
         ("oattention", "nan_padding", torch.float32), ("oattention", "null_carrier_gradient", torch.float32),
         ("pn_fir_tau", "eager_agreement", torch.float16), ("pn_fir_tau", "silent_gradient", torch.float32),
         ("pn_fir_tau", "tau_covariance", torch.float32)]


@pytest.mark.parametrize("operator,contract,dtype", CASES, ids=[f"{o}-{c}-{str(d)[6:]}" for o, c, d in CASES])
def test_example_backend_holds(operator, contract, dtype):
    op = default_registry()[operator]
    with registered(ExampleBackend()):
        v = run_cell(op, CONTRACTS[contract], dtype, examples=6, seed=0, backend="example", replay_dir=None)
    assert v.status == V.Status.HOLDS, v.detail


@pytest.mark.parametrize("contract", ["eager_agreement", "null_source_insertion"])
def test_wrong_example_backend_is_rejected_with_a_small_counterexample(contract):
    """The null source's exp(s_ij) in the denominator moves every row that sees it: caught and shrunk."""
    op = default_registry()["oattention"]
    with registered(WrongExampleBackend()):
        v = run_cell(op, CONTRACTS[contract], torch.float32, examples=6, seed=0, backend="example_wrong",
                     replay_dir=None)
    assert v.violated, v.detail
    assert v.counterexample["backend"] == "example_wrong"
    assert v.counterexample["n"] <= 3 and v.counterexample["batch"] == 1, v.counterexample


def test_wrong_example_backend_passes_the_laws_its_bug_does_not_touch():
    """The bug is in the denominator's source mass only: a null *receiver* is still gated to exactly 0."""
    op = default_registry()["oattention"]
    with registered(WrongExampleBackend()):
        v = run_cell(op, CONTRACTS["null_receiver"], torch.float32, examples=6, seed=0, backend="example_wrong",
                     replay_dir=None)
    assert v.status == V.Status.HOLDS, v.detail


def test_layout_does_not_change_a_bit():
    """nan_padding at --profile quick found pn_fir_tau 2e-7 off in float32 when q, k, v sat in strided NaN
    buffers (a strided matmul sums in another order); the cores now read dense copies.  Its shrunk case:"""
    op = default_registry()["pn_fir_tau"]
    case = Case(op=op, dtype=torch.float32, seed=0, n=13, d=8, heads=1, backend="example")
    with registered(ExampleBackend()):
        v = CONTRACTS["nan_padding"](case)
    assert v.status == V.Status.HOLDS, v.detail


def test_transcendentals_are_measured_not_declared():
    """The example counts the exp/log calls torch evaluates: OAttention's softmax has some, pn_fir_tau none."""
    reg, b = default_registry(), ExampleBackend()
    oa = b.transcendentals(reg["oattention"], Case(op=reg["oattention"], dtype=torch.float32, n=5))
    pn = b.transcendentals(reg["pn_fir_tau"], Case(op=reg["pn_fir_tau"], dtype=torch.float32, n=5))
    assert oa.get("exp", 0) > 0 and oa.get("log", 0) > 0, oa
    assert pn == {}, pn
    t = torch.rand(3)
    with CountTranscendentals() as counter:      # the counter itself: functions and methods, not x ** 2
        torch.exp(t), t.log(), t ** 2, t * t, torch.pow(t, 0.5)
    assert counter.calls == {"exp": 1, "log": 1, "pow": 1}, counter.calls


def test_example_report_records_its_provenance_and_environment(monkeypatch, tmp_path, capsys):
    """What tokenlaw records for its own kernels, it records for the example, read off the backend."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(example_backend.BLOCK_ENV, str(ExampleBackend.block))      # as read at import
    with registered(ExampleBackend()):
        assert cli.main(["check", "--backend", "example", "--operator", "oattention", "--contract",
                         "eager_agreement", "--dtype", "float32", "--examples", "2", "--out", "r", "--json"]) == 0
    run = json.loads((tmp_path / "r" / "conformance-example.json").read_text())["meta"]
    assert run["env"] == {example_backend.BLOCK_ENV: str(ExampleBackend.block)}
    own = {f for f in run["kernel_sources"] if f.startswith("tokenlaw_example_backend/")}
    assert own == {f"tokenlaw_example_backend/{p.name}" for p in (EXAMPLE_SRC / "tokenlaw_example_backend").glob("*.py")}
    assert run["kernels"]["oattention_layer"] == {"operators": ["oattention"],
                                                  "source": "tokenlaw_example_backend/oattention.py"}
    assert run["kernels"]["pn_fir_tau_layer"]["source"] == "tokenlaw_example_backend/pn_fir_tau.py"


def test_example_block_size_is_validated():
    assert example_backend._block({}) == 4 and example_backend._block({example_backend.BLOCK_ENV: "8"}) == 8
    with pytest.raises(InvalidArgument, match=example_backend.BLOCK_ENV):
        example_backend._block({example_backend.BLOCK_ENV: "0"})


def test_example_mutant_is_caught_only_while_active():
    """The example's own seeded bug, from ``Backend.mutants()``: a cell that holds on the shipped layer is
    violated while the mutant's patch is active, and the shipped layer is back afterwards."""
    backend = ExampleBackend()
    (mutant,) = backend.mutants()
    assert mutant.backend == "example" and mutant.operators == ("oattention",)
    assert WrongExampleBackend().mutants() == ()
    op, law = default_registry()["oattention"], CONTRACTS["softmax_reduction"]
    shipped = backend.layers()["oattention"].func
    with registered(backend):
        assert run_cell(op, law, torch.float32, examples=4, seed=0, backend="example",
                        replay_dir=None).status == V.Status.HOLDS                                   # control
        with mutant.patch():
            assert backend.layers()["oattention"].func is not shipped
            v = run_cell(op, law, torch.float32, examples=4, seed=0, backend="example", replay_dir=None)
        assert v.violated, v.detail
    assert backend.layers()["oattention"].func is shipped


@pytest.mark.slow   # every declared row of oattention, unmutated then mutated: ~3 min on 2 busy cores
def test_example_mutant_is_killed_by_mutate(monkeypatch, tmp_path, capsys):
    """``tokenlaw mutate --backend example`` lists and runs the example's own mutant (nothing else) and kills it."""
    monkeypatch.chdir(tmp_path)
    backend = ExampleBackend()
    (mutant,) = backend.mutants()
    with registered(backend):
        capsys.readouterr()
        assert cli.main(["mutate", "--backend", "example", "--list"]) == 0
        assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == [mutant.name]
        rc = cli.main(["mutate", "--backend", "example", "--examples", "3", "--out", "m", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert (rc, out["mutants"], out["killed"], out["survived"]) == (0, 1, 1, []), out
    (result,) = json.loads((tmp_path / "m" / "mutation.json").read_text())["mutants"]
    assert result["name"] == mutant.name and result["killers"], result


# -- slow: a user's fresh virtual environment, tokenlaw from its wheel ------------------------------------------
def _clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TOKENLAW_REPLAYS", "TRITON_INTERPRET")}
    return {**env, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1", **extra}


def _wheel(src: Path, out: Path, pattern: str) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(out)], check=True, cwd=out, env=_clean_env())
    (whl,) = out.glob(pattern)
    return whl


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh venv: system site for torch &c., tokenlaw and the example installed from their wheels."""
    base = tmp_path_factory.mktemp("example-venv")
    # Build from copies: setuptools writes build/ and *.egg-info next to the sources.
    src = base / "src"
    shutil.copytree(ROOT, src / "tokenlaw", ignore=shutil.ignore_patterns(
        ".git", ".dev", "build", "*.egg-info", "__pycache__", ".hypothesis", "replays"))
    wheels = base / "wheels"
    wheels.mkdir()
    tokenlaw_whl = _wheel(src / "tokenlaw", wheels, "tokenlaw-*.whl")
    example_whl = _wheel(src / "tokenlaw" / "examples" / "my_backend", wheels, "tokenlaw_example_backend-*.whl")
    env_dir = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    # --force-reinstall: the system site may hold an editable tokenlaw (a __editable__ finder pointing at a
    # checkout); the venv's own site-packages comes first on sys.path, so the wheel's copy is what imports.
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", "--no-index",
                    str(tokenlaw_whl), str(example_whl)], check=True, env=_clean_env())
    site = subprocess.run([str(python), "-c", "import tokenlaw.operators as o, tokenlaw.app.cli as c, "
                           "tokenlaw_example_backend as e; print(list(o.__path__)[0]); print(c.__file__); "
                           "print(e.__file__)"], check=True, capture_output=True, text=True, cwd=base,
                          env=_clean_env()).stdout.split()
    for path in site:           # tokenlaw and the example come from the venv, not from this checkout
        assert Path(path).resolve().is_relative_to(env_dir.resolve()), site
    return env_dir


def _tokenlaw(venv, *args, cwd, env=None):
    return subprocess.run([str(venv / "bin" / "tokenlaw"), *args], cwd=cwd, capture_output=True, text=True,
                          env=env or _clean_env(), timeout=900)


def _triton_rows(venv, cwd) -> dict:
    """{(operator, contract): judged?} the installed tokenlaw plans for its own Triton kernels."""
    code = ("import json; from tokenlaw.properties.catalogue import default_registry; "
            "from tokenlaw.properties.plan import plan; "
            f"print(json.dumps([[r.operator, r.contract, bool(r.cells)] for r in "
            f"plan(default_registry(), operators={list(IMPLEMENTED)!r}, backend='triton')]))")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", code], cwd=cwd, capture_output=True, text=True,
                         check=True, env=_clean_env(TRITON_INTERPRET="1"))
    return {(o, c): judged for o, c, judged in json.loads(out.stdout)}


@pytest.mark.slow   # two wheel builds, a venv and smoke runs of every row of both operators: ~1 min on 2 cores
def test_example_backend_from_a_fresh_venv(venv, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    ok = _tokenlaw(venv, "check", "--backend", "example", "--operator", "oattention", "--operator", "pn_fir_tau",
                   "--profile", "smoke", "--out", "good", "--progress", "off", cwd=run)
    good = json.loads((run / "good" / "conformance-example.json").read_text())
    # its provenance, next to the Triton kernels' (every installed plug-in is recorded), and its own mutant,
    # found through the entry point
    assert "tokenlaw_example_backend/oattention.py" in good["meta"]["kernel_sources"]
    assert "kernels/ops.py" in good["meta"]["kernel_sources"]
    assert good["meta"]["kernels"]["oattention_layer"]["source"] == "tokenlaw_example_backend/oattention.py"
    listed = _tokenlaw(venv, "mutate", "--backend", "example", "--list", cwd=run)
    assert listed.returncode == 0 and listed.stdout.split()[0] == "example_numerator_not_rescaled", listed
    assert ok.returncode == 0, ok.stdout[-3000:] + ok.stderr[-3000:]
    rows = {(r["operator"], r["contract"]): r for r in good["rows"]}
    # every row tokenlaw's own kernels of these operators get, judged alike
    assert {k: bool(r["cells"]) for k, r in rows.items()} == _triton_rows(venv, run)
    for name, r in rows.items():
        if r["cells"]:
            assert r["outcome"] not in V.FAILING, (name, r["outcome"])
            assert all(c["backend"] == "example" for c in r["cells"])
    assert good["summary"]["result"] == "PASS"

    bad = _tokenlaw(venv, "check", "--backend", "example_wrong", "--operator", "oattention", "--profile", "smoke",
                    "--out", "bad", "--progress", "off", cwd=run)
    assert bad.returncode == 1, bad.stdout[-3000:] + bad.stderr[-3000:]
    doc = json.loads((run / "bad" / "conformance-example_wrong.json").read_text())
    assert doc["summary"]["result"] == "FAIL"
    failing = {r["contract"]: r for r in doc["rows"] if r["outcome"] in V.FAILING}
    assert {"null_source_insertion", "eager_agreement"} <= set(failing), sorted(failing)
    row = failing["null_source_insertion"]
    cell = next(c for c in row["cells"] if c["verdict"] and c["verdict"]["status"] == V.Status.VIOLATED)
    example = cell["verdict"]["counterexample"]
    assert example["backend"] == "example_wrong" and example["n"] <= 3 and example["batch"] == 1, example
    replayed = _tokenlaw(venv, "replay", cell["verdict"]["replay"], "--replays", "bad/replays", cwd=run)
    assert replayed.returncode == 0, replayed.stdout[-2000:] + replayed.stderr[-2000:]
