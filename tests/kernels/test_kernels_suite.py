"""The kernel backend inside the suite: planned rows, not-runnable cells, the CLI."""
from __future__ import annotations

import json

import pytest
import torch

from tokenlaw.fuzz.engine import run_cell
from tokenlaw.kernels import capabilities, implementation
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import CONTRACTS
from tokenlaw.properties.plan import plan

pytestmark = pytest.mark.skipif(not capabilities.interpreting(), reason="these tests run the CPU interpreter")


IMPLEMENTATION_LAWS = {n for n, c in CONTRACTS.items() if c.implementation}


def test_the_triton_backend_is_a_plug_in_found_through_its_entry_point():
    from tokenlaw.kernels.backend import TRITON
    from tokenlaw.properties import backends

    assert "triton" in backends.names() and backends.get("triton") is TRITON
    assert IMPLEMENTATION_LAWS == {"eager_agreement", "nan_padding", "determinism", "gradient_agreement"}


def test_plan_covers_exactly_the_kernel_operators(registry):
    from tokenlaw.kernels.backend import TRITON

    rows = plan(registry, backend="triton")
    assert {r.operator for r in rows} == set(TRITON.binds()) == {"oattention", "sm_fir", "pn_fir_tau"}
    assert "'sdpa'" in rows.left_out["sdpa"]                # the others are left out, with why
    for op in ("oattention", "sm_fir", "pn_fir_tau"):
        judged = {r.contract for r in rows if r.operator == op and r.cells}
        assert IMPLEMENTATION_LAWS <= judged and "zero_transcendental" in judged
        assert set(registry[op].implementation_claims) <= judged
    assert all(c.backend == "triton" and c.dtype != "float64" for r in rows for c in r.cells)


def test_contracts_not_judged_on_the_kernel_are_listed_with_a_reason(registry):
    rows = plan(registry, backend="triton")
    skipped = {(r.operator, r.contract): r.reason for r in rows if not r.cells}
    assert ("sm_fir", "silence") in skipped and ("oattention", "gradcheck") in skipped
    assert all(reason.startswith("not judged on the triton backend") for reason in skipped.values())
    judged = {(r.operator, r.contract) for r in rows if r.cells}
    assert ("pn_fir_tau", "silence") in judged          # through tau (score_laws.silence_through_tau)
    assert {("sm_fir", "simplex"), ("pn_fir_tau", "sub_simplex"), ("pn_fir_tau", "tau_covariance")} <= judged


def test_bf16_cells_are_not_runnable_with_the_reason(registry):
    v = run_cell(registry["pn_fir_tau"], CONTRACTS["eager_agreement"], torch.bfloat16, examples=3, backend="triton")
    assert v.status == V.Status.NOT_RUNNABLE and "triton-lang/triton#11584" in v.detail


def test_implementation_has_the_eager_signature_and_refuses_what_it_cannot_run(registry):
    impl = implementation(registry["oattention"], "triton")
    x = torch.randn(1, 5, 4)
    from tokenlaw.properties.case import Case

    params = {k: (v.float() if torch.is_tensor(v) else v) for k, v in Case(op=registry["oattention"],
                                                                           dtype=torch.float32, d=4).params.items()}
    assert impl(x, None, **params).shape == (1, 5, 4)
    with pytest.raises(InvalidArgument, match="implement .*not .sdpa."):
        implementation(registry["sdpa"], "triton")
    with pytest.raises(InvalidArgument, match="backend"):
        implementation(registry["oattention"], "cuda-graphs")


def test_cli_check_on_the_kernel_backend(tmp_path, capsys):
    from tokenlaw.app.cli import main

    code = main(["check", "--backend", "triton", "--operator", "pn_fir_tau", "--contract", "eager_agreement",
                 "--contract", "zero_transcendental", "--examples", "2", "--out", str(tmp_path), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["failing"] == []
    report = json.loads((tmp_path / "conformance-triton.json").read_text())
    assert report["meta"]["backend"] == "triton"
    cells = {c["id"]: c["verdict"]["status"] for r in report["rows"] for c in r["cells"]}
    assert cells["pn_fir_tau-eager_agreement-triton-bfloat16"] == V.Status.NOT_RUNNABLE
    assert cells["pn_fir_tau-eager_agreement-triton-float32"] == V.Status.HOLDS
    assert "Cells not runnable here" in (tmp_path / "conformance-triton.md").read_text()


def test_cli_refuses_the_kernel_backend_without_gpu_or_interpreter(monkeypatch, capsys):
    from tokenlaw.app.cli import main

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the compiled backend can run")
    assert main(["check", "--backend", "triton", "--examples", "1"]) == 2
    assert "TRITON_INTERPRET" in capsys.readouterr().err


def test_bench_refuses_without_a_gpu_and_smoke_is_labelled(tmp_path, capsys, monkeypatch):
    from tokenlaw.app.cli import main
    from tokenlaw.app.exits import EXIT_CANNOT_RUN
    from tokenlaw.kernels import bench

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the real benchmark would run")
    assert main(["bench", "--out", str(tmp_path)]) == EXIT_CANNOT_RUN
    assert "no CUDA GPU" in capsys.readouterr().out and not list(tmp_path.iterdir())
    tiny = dict(bench.SMOKE, ns=(9,), kernels=None, layers=1, stack_n=9)
    monkeypatch.setattr(bench, "SMOKE", tiny)
    monkeypatch.setattr(bench, "KERNELS", ("pn_fir_tau",))
    assert main(["bench", "--smoke", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "bench-smoke.json").read_text())
    assert report["smoke"] is True and "NOT a benchmark" in report["label"]
    assert {r["impl"] for r in report["rows"]} == {"triton", "eager", "torch_sdpa"}
    assert all(r["peak_bytes"] is None for r in report["rows"])    # no memory figure is made up on the CPU
