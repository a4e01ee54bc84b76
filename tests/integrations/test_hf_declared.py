"""HF attention functions as declared operators (issue 24, point 3): a user's function that drops the padding
mask is caught with a shrunk counterexample that replays; HF's own sdpa passes every claim; HF's eager shows
what its float32 softmax costs in float64."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from tokenlaw.integrations import hf  # noqa: E402

transformers = pytest.importorskip("transformers", reason=hf.INSTALL)

from tokenlaw.app.cli import main  # noqa: E402
from tokenlaw.fuzz import replay as R  # noqa: E402
from tokenlaw.fuzz.engine import run_cell  # noqa: E402
from tokenlaw.integrations.hf.declared import declare_hf_attention, hf_mask  # noqa: E402
from tokenlaw.operators.errors import DeclarationError, InvalidArgument  # noqa: E402
from tokenlaw.operators.xp import TORCH  # noqa: E402
from tokenlaw.properties import verdict as V  # noqa: E402
from tokenlaw.properties.case import Case  # noqa: E402
from tokenlaw.properties.catalogue import CONTRACTS, collect  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "hf_ops.py"
REG = collect("tests.fixtures.hf_ops")


def test_a_function_that_drops_the_mask_fails_mask_respect_with_a_counterexample_that_replays(tmp_path):
    v = run_cell(REG["hf_maskless"], CONTRACTS["mask_respect"], torch.float64, examples=10, seed=0,
                 replay_dir=tmp_path)
    assert v.status == V.Status.VIOLATED and V.outcome("claims", v) == V.Outcome.UNEXPECTED, v.detail
    assert v.counterexample["n"] <= REG["hf_maskless"].domain.n_max + 1, v.counterexample     # shrunk
    replayed = R.replay(v.replay, tmp_path, registry=REG)
    assert replayed.reproduced and replayed.verdict.violated
    # the same contract on HF's own sdpa, same seed and budget: the mask reaches it
    ok = run_cell(REG["hf_sdpa"], CONTRACTS["mask_respect"], torch.float64, examples=10, seed=0, replay_dir=None)
    assert ok.status == V.Status.HOLDS and ok.evidence.judged >= 5, ok.detail


def _check(tmp_path, *operators) -> tuple[int, dict]:
    argv = ["--operators", str(FIXTURE), "check", "--profile", "smoke", "--workers", "1", "--progress", "off",
            "--out", str(tmp_path)]
    for op in operators:
        argv += ["--operator", op]
    code = main(argv)
    rows = json.loads((tmp_path / "conformance.json").read_text())["rows"]
    return code, {(r["operator"], r["contract"]): r["outcome"] for r in rows}


def test_hf_sdpa_and_eager_pass_every_row_they_declare(tmp_path):
    code, rows = _check(tmp_path, "hf_sdpa", "hf_causal_sdpa", "hf_eager")
    assert code == 0, {k: o for k, o in rows.items() if o in {str(f) for f in V.FAILING}}
    for name in ("hf_sdpa", "hf_causal_sdpa"):
        for contract in ("mask_respect", "spec_reference", "finite", "gradcheck"):
            assert rows[(name, contract)] == str(V.Outcome.HOLDS), (name, contract, rows[(name, contract)])
        for contract in ("null_receiver", "null_source_insertion", "null_gradient"):
            assert rows[(name, contract)] == str(V.Outcome.EXPECTED), (name, contract)
    assert rows[("hf_sdpa", "permutation_equivariance")] == str(V.Outcome.HOLDS)
    assert rows[("hf_causal_sdpa", "causality")] == str(V.Outcome.HOLDS)
    # eager's float32 softmax: each float64 consequence reproduced, the mask still respected
    for contract in ("gradcheck", "permutation_equivariance", "spec_reference", "finite"):
        assert rows[("hf_eager", contract)] == str(V.Outcome.EXPECTED), (contract, rows[("hf_eager", contract)])
    assert rows[("hf_eager", "mask_respect")] == str(V.Outcome.HOLDS)


def test_the_mask_arrives_in_the_format_each_function_reads():
    like = torch.zeros(1, 2, 3, 4, dtype=torch.float64)
    m = torch.tensor([[[1.0, 0.0, 1.0], [1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]])
    seen = hf_mask(m, like, "bool", causal=False)
    assert seen.dtype == torch.bool and seen.shape == (1, 1, 3, 3) and torch.equal(seen[0, 0], m[0] > 0)
    add = hf_mask(m, like, "additive", causal=False)
    assert add.dtype == torch.float64
    assert torch.equal(add[0, 0] == 0, m[0] > 0) and bool((add[0, 0][m[0] == 0] == torch.finfo(torch.float64).min).all())
    causal = hf_mask(m, like, "bool", causal=True)[0, 0]
    assert torch.equal(causal, (m[0] > 0) & torch.ones(3, 3, dtype=torch.bool).tril())
    assert hf_mask(None, like, "bool", causal=False) is None
    assert torch.equal(hf_mask(None, like, "bool", causal=True)[0, 0], torch.ones(3, 3, dtype=torch.bool).tril())


@pytest.mark.parametrize("kwargs,names", [
    (dict(fn=42), "fn"), (dict(fn="no_such_attention"), "fn"), (dict(fn="sdpa", mask_format="dense"), "mask_format"),
    (dict(fn="sdpa", causal="yes"), "causal"), (dict(fn="sdpa", claims=["mask_respect"]), "claims"),
])
def test_bad_declarations_name_the_argument(kwargs, names):
    with pytest.raises(DeclarationError, match=f"^{names}:"):
        declare_hf_attention("bad", module="doctest", **kwargs)


def test_a_function_returning_the_wrong_shape_is_refused_naming_it():
    def heads_first(module, query, key, value, attention_mask, **kw):     # (B, H, N, dh): forgot the transpose
        return torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask), None
    op = declare_hf_attention("heads_first", fn=heads_first, module="doctest")
    case = Case(REG["hf_sdpa"], torch.float64)
    with pytest.raises(InvalidArgument, match="^heads_first: the attention function returned"):
        op(TORCH, case.x, case.mask, **case.params)
