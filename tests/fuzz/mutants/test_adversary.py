"""The standing adversary: conditional mutants, the recorder baseline, the verdicts, the command.

The CI tests run a fixed handful of mutants of the cheap ``presence`` operator at a small example
count; the full matrix on the built-in registry is the slow test at the end.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import cloudpickle
import inspect
import pytest
import torch

from tokenlaw.app import cli
from tokenlaw.fuzz.mutants import adversary as A
from tokenlaw.fuzz.mutants import conditional as C
from tokenlaw.operators.registry import Registry
from tokenlaw.operators.xp import TORCH
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import default_registry
from tokenlaw.reports import kill_matrix

REG = default_registry()
EXAMPLES = 10


def _outcomes(doc):
    return {m["id"]: m for m in doc["mutants"]}


def test_a_mutant_is_a_fresh_registry_with_the_signature_kept():
    bad = C.mutant_registry(REG, "sdpa", C.predicate("always"), C.wrongness("scale"))
    assert bad["sdpa"].fn is not REG["sdpa"].fn and REG["sdpa"].fn is default_registry()["sdpa"].fn
    assert inspect.signature(bad["sdpa"].fn) == inspect.signature(REG["sdpa"].fn)   # applied.py reads it
    again = cloudpickle.loads(cloudpickle.dumps(bad["sdpa"].fn))                     # it travels to Dask workers
    assert inspect.signature(again) == inspect.signature(REG["sdpa"].fn)


def _call(reg, name, x, **kw):
    return reg[name].fn(TORCH, x, **kw)


def test_the_wrongness_applies_only_where_the_predicate_holds():
    x = torch.randn(1, 5, 4, dtype=torch.float64)
    tau = torch.tensor(1.0, dtype=torch.float64)
    good = _call(REG, "presence", x, tau=tau)
    f32 = C.mutant_registry(REG, "presence", C.predicate("float32"), C.wrongness("scale"))
    assert torch.equal(_call(f32, "presence", x, tau=tau), good)                     # float64: untouched
    assert torch.allclose(_call(f32, "presence", x.float(), tau=tau.float()), good.float() * 1.01)
    flaky = C.mutant_registry(REG, "presence", C.predicate("odd_call"), C.wrongness("scale"))
    first, second = (_call(flaky, "presence", x, tau=tau) for _ in range(2))
    assert torch.equal(first, good) and not torch.equal(second, good)


def test_each_structural_wrongness_changes_what_it_says():
    x = torch.randn(2, 6, 4, dtype=torch.float64)
    x[:, 2] = 0.0
    out = torch.randn(2, 6, 3, dtype=torch.float64)
    leak = C.wrongness("leak_future").make(None, None, x, {}, out)
    assert torch.equal(leak[:, -1], out[:, -1]) and torch.allclose(leak[:, 0], out[:, 0] + 0.01 * out[:, 1])
    null = C.wrongness("leak_null").make(None, None, x, {}, out)
    assert torch.allclose(null[:, 2], out[:, 2] + 0.01) and torch.equal(null[:, 3], out[:, 3])
    pos = C.wrongness("position").make(None, None, x, {}, out)
    assert torch.equal(pos[:, 0], out[:, 0]) and not torch.equal(pos[:, 5], out[:, 5])
    seen = []
    drop = C.wrongness("drop_key").make(lambda xp, x, mask: seen.append(mask) or out, None, x, {"mask": None}, out)
    assert drop is out and seen[0][0, 1:, 0].eq(0).all() and seen[0][0, 0, 0] == 1   # key 0 hidden from queries 1..


def test_mutants_follow_the_operators_domain_and_claims():
    ids = {m.id for m in A.mutants(REG)}
    assert "sdpa:mask_none:scale" in ids and "presence:mask_none:scale" not in ids   # presence takes no mask
    assert "pn:heads_ge_2:scale" in ids and "presence:heads_1:scale" not in ids
    assert "presence:always:leak_null" in ids and "presence:always:leak_future" not in ids   # token-local
    assert "fir:always:leak_future" in ids                                              # claims causality
    assert {m.id for m in A.mutants(REG) if m.wrongness.name == "identity"} == {f"{op.name}:always:identity"
                                                                                  for op in REG}


def test_a_fixed_sample_kills_the_controls_and_never_the_identity():
    ids = {"presence:always:identity", "presence:always:scale", "presence:always:leak_null",
           "presence:odd_call:scale"}
    doc = A.run(REG, operators={"presence"}, examples=EXAMPLES, mutant_ids=ids, stream=None)
    got = _outcomes(doc)
    assert set(got) == ids
    # the adversary can fail: the identity mutant returns the operator's own output, so it must never be killed
    assert got["presence:always:identity"]["status"] == "equivalent" and not got["presence:always:identity"]["killers"]
    assert got["presence:always:scale"]["status"] == "killed"
    assert got["presence:always:leak_null"]["status"] == "killed"
    assert got["presence:odd_call:scale"]["status"] == "killed"            # a nondeterministic operator
    assert doc["figure"]["non_equivalent"] == 3 and doc["axes"]["control"]["equivalent"] == 1
    assert REG["presence"].fn is default_registry()["presence"].fn        # the registry given is untouched


def test_a_predicate_never_drawn_is_a_gap_that_runs_no_cell(tmp_path):
    # batch >= 1000: no draw of any profile reaches it, so the verdict does not depend on the draws' tuning
    never = C.Predicate("batch_ge_1000", "batch", "batch >= 1000", lambda x, kw, call: x.shape[0] >= 1000)
    base = A.baseline(REG, {"presence"}, examples=EXAMPLES, seed=0, pool=None, folder=str(tmp_path))
    out = A.judge(REG, A.Mutant("presence", never, C.wrongness("scale")), base, examples=EXAMPLES, seed=0,
                  folder=str(tmp_path / "m"))
    assert out.status == "gap" and "never drawn" in out.reason and out.cells == 0


def test_skipping_the_rows_where_the_predicate_never_held_loses_no_kill(tmp_path):
    """Attack on the skip: run every row of a never-drawn mutant anyway; it must still survive (its outputs are
    the operator's on every call), and a drawn one must still die."""
    never = C.Predicate("batch_ge_1000", "batch", "batch >= 1000", lambda x, kw, call: x.shape[0] >= 1000)
    base = A.baseline(REG, {"presence"}, examples=EXAMPLES, seed=0, pool=None, folder=str(tmp_path))
    full = A.judge(REG, A.Mutant("presence", never, C.wrongness("scale")), base, examples=EXAMPLES, seed=0,
                   folder=str(tmp_path / "m"), every_row=True)
    assert full.status == "gap" and full.cells > 0 and not full.killers
    drawn = A.judge(REG, A.Mutant("presence", C.predicate("float16"), C.wrongness("scale")), base,
                    examples=EXAMPLES, seed=0, folder=str(tmp_path / "m"), every_row=True)
    assert drawn.status == "killed"
    # the skip is per cell: a float16 mutant runs every float16 cell (its calls there are float16) and only the
    # other cells whose calls had some float16 input (a half probe), never all of them
    rows = base.rows["presence"]
    every = [c for r in rows if r.declared for c in r.cells]
    half = [c for _, cells in A._units(rows, base, C.predicate("float16")) for c in cells]
    assert {c.id for c in every if c.dtype == "float16"} <= {c.id for c in half} and len(half) < len(every)


def test_rows_failing_unmutated_never_count_as_kills():
    # presence wrong (x2) in every call: its value rows fail before any mutant; the identity mutant must stay
    # equivalent, and no kill may be credited to a row that already failed
    real = REG["presence"].fn

    def doubled(xp, x, *, tau):
        return 2 * real(xp, x, tau=tau)

    broken = Registry([dataclasses.replace(s, fn=doubled) if s.name == "presence" else s for s in REG], REG.contracts)
    doc = A.run(broken, operators={"presence"}, examples=EXAMPLES, stream=None,
                mutant_ids={"presence:always:identity", "presence:always:scale"})
    got = _outcomes(doc)
    assert doc["baseline_failing"]
    assert got["presence:always:identity"]["status"] == "equivalent"
    assert not set(got["presence:always:scale"]["killers"]) & set(doc["baseline_failing"])


def test_the_draws_reach_what_the_recorded_gaps_never_drew():
    """The record's survivors whose root was the draws (reports/adversary: n == 128, n == 256 and max |x| > 1e3
    never drawn; n >= 257, batch >= 4 and near-null rows drawn only in laws blind to a uniform scale; batch 3 set
    aside for a score offset presence does not have) are killed, here at a tenth of the default examples: every
    cell that takes a length draws the block edges, spec_reference draws the largest batch, a near-null row and
    a token scale of 1e3 as explicit edges, and an offset that moves no score sets nothing aside."""
    ids = {"presence:n_eq_128:scale", "presence:n_eq_256:scale", "presence:n_ge_257:scale",
           "presence:magnitude_gt_1e3:scale", "presence:near_null_row:scale", "presence:batch_ge_4:scale"}
    doc = A.run(REG, operators={"presence"}, examples=EXAMPLES, mutant_ids=ids, stream=None)
    got = _outcomes(doc)
    assert {i: got[i]["status"] for i in ids} == dict.fromkeys(ids, "killed"), {i: got[i]["reason"] for i in ids}
    # by the comparison with the independent reference (differential compares the mutant with itself in float64)
    assert {i: got[i]["killers"] for i in ids} == dict.fromkeys(ids, ["presence-spec_reference"])


def test_survivors_are_classified_mechanically():
    op = REG["presence"]
    m = A.Mutant("presence", C.predicate("n_1"), C.wrongness("position"))
    assert A.classify(m, op, drawn=True, changed=False, meant=set(), meant_drawn=False)[0] == "equivalent"
    # a predicate no draw reaches (n >= 257 was one until every cell drew its block edges: the test below)
    never = C.Predicate("batch_ge_1000", "batch", "batch >= 1000", lambda x, kw, call: x.shape[0] >= 1000)
    m = A.Mutant("presence", never, C.wrongness("scale"))
    assert A.classify(m, op, drawn=False, changed=False, meant={"x"}, meant_drawn=False)[0] == "gap"
    m = A.Mutant("presence", C.predicate("n_2_8"), C.wrongness("scale"))
    assert A.classify(m, op, drawn=True, changed=True, meant={"x"}, meant_drawn=True)[0] == "gap"
    # a uniform scale judged only by laws comparing the operator with itself: equivalent; by a reference: a gap
    m = A.Mutant("presence", C.predicate("always"), C.wrongness("scale"))
    self_only = dict(drawn=True, changed=True, meant={"x"}, meant_drawn=True)
    assert A.classify(m, op, **self_only, judged_by={"zero_absorption", "gradcheck", "differential"})[0] == "equivalent"
    assert A.classify(m, op, **self_only, judged_by={"zero_absorption", "spec_reference"})[0] == "gap"
    # finite asks only for finite values: no 1 % scale turns a finite value infinite
    assert A.classify(m, op, **self_only, judged_by={"zero_absorption", "finite"})[0] == "equivalent"
    # drawn only in blind rows while the operator claims a reference comparison: a gap of the draws, never equivalent
    assert A.classify(m, op, **self_only, judged_by={"differential", "finite"},
                      claimed={"differential", "finite", "spec_reference"})[0] == "gap"
    # an operator that claims no law comparing its values with a reference: its uniform scale is equivalent
    assert A.classify(m, op, **self_only, judged_by={"closure", "finite"},
                      claimed={"closure", "differential", "finite", "unmasked"})[0] == "equivalent"
    m = A.Mutant("presence", C.predicate("mask_none"), C.wrongness("scale"))      # mask=None is one side of unmasked
    assert A.classify(m, op, **self_only, judged_by={"unmasked"}, claimed={"unmasked", "finite"})[0] == "gap"
    m = A.Mutant("presence", C.predicate("float16"), C.wrongness("scale"))       # true on one side of differential
    assert A.classify(m, op, **self_only, judged_by={"differential"})[0] == "gap"
    # a change inside the bound says how near each law came, and how large it is in the dtype's own units
    m = A.Mutant("presence", C.predicate("bfloat16"), C.wrongness("scale"))
    status, why = A.classify(m, op, drawn=True, changed=True, meant={"differential"}, meant_drawn=True,
                             judged_by={"differential"}, closest={"differential": 0.17})
    assert status == "gap" and "differential at 0.17 of its bound" in why, why
    assert "the change 0.01 is 2.6 units of bfloat16's roundoff 0.0039" in why, why
    m = A.Mutant("presence", C.predicate("n_2_8"), C.wrongness("scale"))         # n differs across causality's sides
    assert A.classify(m, op, **self_only, judged_by={"causality"})[0] == "gap"
    m = A.Mutant("presence", C.predicate("float16"), C.wrongness("scale_tiny"))       # 1 + 1e-6 is 1 in float16
    assert A.classify(m, op, drawn=True, changed=False, meant={"x"}, meant_drawn=True)[0] == "equivalent"
    # drawn, and the wrong output never differed from the operator's own: inert where drawn, with its count
    m = A.Mutant("presence", C.predicate("float32"), C.wrongness("scale_tiny"))
    status, why = A.classify(m, op, drawn=True, changed=False, meant={"x"}, meant_drawn=True, held=12)
    assert status == "inert" and "held 12 times" in why, why
    narrow = dataclasses.replace(op.domain, dtypes=("float32", "float64"), limits=())
    assert "declared dtypes" in A.unreachable(C.predicate("float16"), dataclasses.replace(op, domain=narrow))
    assert A.unreachable(C.predicate("float16"), op) is None


USER_MODULE = '''
from tokenlaw.operators.registry import Domain, declare


@declare(name="my_double", domain=Domain(), traits={"token_local"}, claims={"zero_absorption": "2 * 0 = 0"})
def my_double(xp, x):
    return x + x
'''


def test_the_command_writes_the_report_and_exits_1_on_a_gap(tmp_path, capsys):
    base = ["adversary", "--operator", "presence", "--examples", str(EXAMPLES), "--workers", "1", "--json"]
    assert cli.main(base + ["--mutant", "presence:always:scale", "--out", str(tmp_path / "a")]) == 0
    doc = json.loads((tmp_path / "a" / "adversary.json").read_text())
    assert doc["figure"] == {"killed": 1, "non_equivalent": 1, "equivalent": 0, "gaps": 0, "inert": 0, "crashed": 0}
    assert "Per axis" in (tmp_path / "a" / "adversary.md").read_text()
    capsys.readouterr()
    # a user's operator with no reference: a 1 % scale of every output is seen by no row it has (a gap the
    # user learns of), while a leak into a null token is caught by its zero_absorption claim
    mod = tmp_path / "my_ops.py"
    mod.write_text(USER_MODULE)
    user = ["--operators", str(mod), "adversary", "--examples", str(EXAMPLES), "--workers", "1", "--json",
            "--out", str(tmp_path / "b"), "--mutant", "my_double:always:scale", "--mutant", "my_double:always:leak_null"]
    assert cli.main(user) == 1
    out = json.loads(capsys.readouterr().out)
    assert [g["id"] for g in out["gaps"]] == ["my_double:always:scale"] and out["killed"] == 1
    assert cli.main(["adversary", "--mutant", "presence:always:scal"]) == 2                 # names the argument


RECORD = Path(__file__).resolve().parents[3] / "reports" / "adversary" / "adversary.json"


def _command(meta, out, operators) -> list:
    args = ["adversary", "--workers", "2", "--seed", str(meta["seed"]), "--examples", str(meta["examples"]),
            "--out", str(out)]
    return args + [a for op in operators for a in ("--operator", op)]


def _pinned(doc, record, operators):
    """Every mutant of ``operators`` has the record's status: every killed one still killed, every survivor the
    record lists (its gaps named there) still a survivor, with the same kind."""
    got = {m["id"]: m["status"] for m in doc["mutants"] if m["operator"] in operators}
    want = {m["id"]: m["status"] for m in record["mutants"] if m["operator"] in operators}
    assert got == want, {k: (want.get(k), got.get(k)) for k in set(got) | set(want) if got.get(k) != want.get(k)}


@pytest.mark.slow
def test_the_recorded_figure_is_reproduced(tmp_path):
    """The record (reports/adversary/, `tokenlaw adversary --workers 2 --out reports/adversary` over its
    operators): the same operators, seed and examples give the same figure and the same survivors."""
    record = json.loads(RECORD.read_text())
    meta = record["meta"]
    assert cli.main(_command(meta, tmp_path, meta["operators"])) in (0, 1)
    doc = json.loads((tmp_path / "adversary.json").read_text())
    assert doc["figure"] == record["figure"]
    _pinned(doc, record, set(meta["operators"]))
    # the figure's claim: every non-equivalent mutant killed, but for the gaps the record lists by name
    assert {m["id"] for m in doc["mutants"] if m["status"] in ("gap", "crashed")} == \
        {m["id"] for m in record["mutants"] if m["status"] in ("gap", "crashed")}


@pytest.mark.slow
def test_the_full_matrix_on_the_built_in_registry(tmp_path):
    """Every mutant of every built-in operator, the default profile, --workers 2; the recorded operators'
    mutants as recorded."""
    record = json.loads(RECORD.read_text())
    assert cli.main(["adversary", "--workers", "2", "--out", str(tmp_path)]) in (0, 1)
    doc = json.loads((tmp_path / "adversary.json").read_text())
    assert doc["meta"]["mutants_run"] == doc["meta"]["mutants_built"] == len(A.mutants(REG))
    assert all(m["status"] == "killed" or m["reason"] for m in doc["mutants"])
    assert all(m["status"] != "killed" for m in doc["mutants"] if m["wrongness"] == "identity")
    _pinned(doc, record, set(record["meta"]["operators"]))


def test_a_claimed_cell_stopped_at_its_first_violation_fails_as_the_full_search_does():
    """run_cell(first_violation=True), what a mutant's claimed rows run: a violation wherever the full search
    finds one (fewer examples, nothing shrunk), and the very same verdict where it finds none."""
    from tokenlaw.fuzz.engine import run_cell
    from tokenlaw.properties.plan import contracts_of
    law = contracts_of(REG)["zero_absorption"]
    leaky = C.mutant_registry(REG, "presence", C.predicate("always"), C.wrongness("leak_null"))["presence"]
    full = run_cell(leaky, law, torch.float64, examples=EXAMPLES, seed=0, replay_dir=None)
    first = run_cell(leaky, law, torch.float64, examples=EXAMPLES, seed=0, replay_dir=None, first_violation=True)
    assert full.violated and first.violated and first.evidence.first_violation
    assert first.examples <= full.examples and full.evidence.shrink is not None and first.evidence.shrink is None
    good = [run_cell(REG["presence"], law, torch.float64, examples=EXAMPLES, seed=0, replay_dir=None,
                     first_violation=stop) for stop in (False, True)]
    assert good[0].status == good[1].status == "holds"
    assert good[0].evidence.draws == good[1].evidence.draws and good[0].examples == good[1].examples


def test_the_identity_control_catches_a_check_that_does_not_repeat_itself(tmp_path):
    """Attack on the determinism every skip rests on: an operator that changes between the baseline and the
    identity control's re-run (a 1 % scale switched on after the baseline) must not read equivalent."""
    real, drift = REG["presence"].fn, [False]

    def drifting(xp, x, *, tau):
        out = real(xp, x, tau=tau)
        return out * 1.01 if drift[0] else out

    reg = Registry([dataclasses.replace(s, fn=drifting) if s.name == "presence" else s for s in REG], REG.contracts)
    base = A.baseline(reg, {"presence"}, examples=EXAMPLES, seed=0, pool=None, folder=str(tmp_path))
    control = A.Mutant("presence", C.predicate("always"), C.wrongness("identity"))
    same = A.judge(reg, control, base, examples=EXAMPLES, seed=0, folder=str(tmp_path / "a"))
    assert same.status == "equivalent" and "repeated the baseline's status and draws" in same.reason
    assert same.cells == len([r for r in base.rows["presence"] if r.declared and r.outcome != V.Outcome.NOT_APPLICABLE_BY_DESIGN
                              and any(base.held(r, c, control.predicate) for c in r.cells)])   # one cell per row
    drift[0] = True
    moved = A.judge(reg, control, base, examples=EXAMPLES, seed=0, folder=str(tmp_path / "b"))
    assert moved.status == "gap" and "not deterministic" in moved.reason and kill_matrix.kind(moved.reason) == "not deterministic"


def test_mutants_unchanged_by_construction_are_classified_without_running(tmp_path):
    x = torch.randn(2, 5, 4, dtype=torch.float16)
    tiny = C.mutant_registry(REG, "presence", C.predicate("float16"), C.wrongness("scale_tiny"))
    tau = torch.tensor(1.0, dtype=torch.float16)
    assert torch.equal(_call(tiny, "presence", x, tau=tau), _call(REG, "presence", x, tau=tau))   # bit for bit
    base = A.Baseline({}, set(), {}, 0.0)
    for m in (A.Mutant("presence", C.predicate("float16"), C.wrongness("scale_tiny")),
              A.Mutant("sdpa", C.predicate("n_1"), C.wrongness("drop_key"))):
        out = A.judge(REG, m, base, examples=EXAMPLES, seed=0, folder=str(tmp_path))
        assert out.status == "equivalent" and out.cells == 0 and A.expected_cost(m, base) == 0.0
    assert A.unchanged(A.Mutant("presence", C.predicate("float32"), C.wrongness("scale_tiny"))) is None


def test_a_mutant_that_changes_nothing_where_drawn_is_inert_not_a_gap_nor_killed(tmp_path):
    """Standardising one token gives 0 whatever the scale (issue 43's n_1 survivors): the predicate is drawn,
    the wrong output equals the operator's own on every such call, so the mutant is ``inert`` with its count
    of calls -- never killed, never equivalent by construction, and not a gap of the search."""
    doc = A.run(REG, operators={"standardize"}, examples=EXAMPLES, mutant_ids={"standardize:n_1:scale"},
                stream=None)
    m = _outcomes(doc)["standardize:n_1:scale"]
    assert m["status"] == "inert" and "held" in m["reason"] and "times" in m["reason"], m
    assert doc["figure"]["inert"] == 1 and doc["figure"]["killed"] == 0 and doc["figure"]["non_equivalent"] == 1


def _fake(ops_mutants, **meta):
    mutants = [dict(id=f"{op}:{p}:scale", operator=op, predicate=p, axis="length", family="values", status=st,
                    reason="r", killers=[]) for op, p, st in ops_mutants]
    base = dict(seed=0, examples=100, workers=2, sample=None, operators=sorted({o for o, _, _ in ops_mutants}),
                mutants_built=len(mutants), mutants_run=len(mutants), seconds=1.0, baseline_seconds=0.5,
                baseline_cpu_seconds=0.1, mutants_cpu_seconds=0.5)
    return dict(meta=dict(base, **meta), **A._matrix(mutants), baseline_failing=[], not_implemented={},
                mutants=mutants)


def test_a_splice_replaces_only_the_re_run_operators_and_recomputes_the_figure():
    recorded = _fake([("a", "n_1", "killed"), ("b", "n_1", "gap"), ("b", "n_2_8", "killed")])
    fresh = _fake([("b", "n_1", "inert"), ("b", "n_2_8", "killed")])
    doc = A.splice(recorded, fresh)
    assert [(m["id"], m["status"]) for m in doc["mutants"]] == [("a:n_1:scale", "killed"), ("b:n_1:scale", "inert"),
                                                                ("b:n_2_8:scale", "killed")]
    assert doc["figure"] == dict(killed=2, non_equivalent=3, equivalent=0, gaps=0, inert=1, crashed=0)
    assert doc["meta"]["spliced"][0]["operators"] == ["b"] and doc["meta"]["seconds"] == 1.0
    assert "Spliced in: every mutant of b re-run" in kill_matrix.markdown(kill_matrix.KillMatrix.from_json(doc))
    with pytest.raises(C.InvalidArgument, match="--seed"):
        A.splice(recorded, _fake([("b", "n_1", "killed")], seed=1))
    with pytest.raises(C.InvalidArgument, match="--splice"):
        A.splice(recorded, _fake([("b", "n_1", "killed")], sample=3))
    # named mutants: each replaces its recorded self, every other mutant (of that operator too) kept
    named = A.splice(recorded, _fake([("b", "n_1", "inert")], mutant_ids=["b:n_1:scale"], mutants_built=2))
    assert [m["status"] for m in named["mutants"]] == ["killed", "inert", "killed"]
    assert named["meta"]["spliced"][0]["mutants"] == ["b:n_1:scale"] and named["figure"]["inert"] == 1
    with pytest.raises(C.InvalidArgument, match="--mutant"):
        A.splice(recorded, _fake([("b", "n_9", "killed")], mutant_ids=["b:n_9:scale"]))


def test_splice_refuses_what_it_cannot_update(tmp_path):
    out = ["adversary", "--out", str(tmp_path), "--splice"]
    assert cli.main(out) == 2                                            # no --operator
    assert cli.main(out + ["--operator", "presence"]) == 2               # nothing recorded there yet
    (tmp_path / "adversary.json").write_text(json.dumps(_fake([("presence", "n_1", "killed")], examples=7)))
    assert cli.main(out + ["--operator", "presence"]) == 2               # recorded at 7 examples, not 100
    assert cli.main(out + ["--operator", "presence", "--sample", "2", "--examples", "7"]) == 2
    assert cli.main(out + ["--operator", "presence", "--mutant", "presence:n_1:scal", "--examples", "7"]) == 2
