"""Meta-tests of the framework: the registry, the catalogue and mark-then-collect."""
from __future__ import annotations

import sys
import textwrap
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

from tokenlaw.process import user_modules
from tokenlaw.operators.errors import DeclarationError
from tokenlaw.operators.registry import Domain, Interval, declare
from tokenlaw.properties.catalogue import collect
from tokenlaw.properties.catalogue import CONTRACTS
from tokenlaw.properties.plan import plan


def test_registry_is_not_empty(registry):
    assert len(registry) >= 20


def test_every_contract_is_exercised_by_some_operator(registry):
    """Every contract is claimed or violated by an operator tokenlaw ships: the default registry, the
    opt-in zoo package (masked_row, package_agreement), the FlexAttention examples (the mod laws) or the opt-in
    torch core declarations (integrations/torch_core.py: the core laws)."""
    flex = user_modules.load(str(ROOT / "examples" / "flex" / "flex_mods.py"), "--operators")
    shipped = list(registry) + list(collect("tokenlaw.operators.zoo")) + list(collect(flex))
    shipped += list(collect("tokenlaw.integrations.torch_core"))
    used = {c for op in shipped for c in list(op.claims) + list(op.violates) + list(op.implementation_claims)}
    used |= {n for n, c in CONTRACTS.items() if c.universal}      # planned for every operator
    used |= {n for n, c in CONTRACTS.items() if c.implementation}  # planned for every non-reference backend
    assert set(CONTRACTS) - used == set()


def test_every_declared_contract_exists_and_every_operator_claims_something(registry):
    for op in registry:
        assert op.claims, op.name
        assert set(op.claims) | set(op.violates) <= set(CONTRACTS)


def test_every_contract_states_its_law_in_one_line():
    for name, c in CONTRACTS.items():
        assert c.law and not c.law.endswith(":"), name


def _module(name, source):
    mod = types.ModuleType(name)
    mod.__file__ = f"<{name}.py>"
    sys.modules[name] = mod
    exec(textwrap.dedent(source), mod.__dict__)
    return mod


def test_scratch_operator_is_picked_up_with_no_other_file_touched():
    mod = _module("scratch_ops", """
        from tokenlaw.operators.registry import Domain, declare

        @declare(name="double", domain=Domain(params=lambda g, d, dt=None: {}), traits={"token_local"},
                 claims={"zero_absorption": "2 * 0 = 0"})
        def double(xp, x):
            return x + x
    """)
    reg = collect(mod)
    assert reg.names() == ["double"]
    rows = plan(reg)
    # + the universal ones (no reference= declared: spec_reference is not runnable, with that reason)
    assert [r.id for r in rows] == ["double-zero_absorption", "double-differential", "double-spec_reference",
                                    "double-finite"]
    from tokenlaw.fuzz.rows import run_rows
    done = run_rows(reg, rows, examples=5, progress=False)
    assert [r.outcome for r in done] == ["holds", "holds", "not runnable here", "holds"]


@pytest.mark.parametrize("decl, message", [
    (dict(claims={"no_such_law": "x"}), "unknown contract 'no_such_law'"),
    (dict(claims={"zero_absorption": "x"}, violates={"zero_absorption": "y"}), "both claimed and expected violated"),
    (dict(claims={"zero_absorption": "x"}, domain=None), "domain is missing"),
    (dict(claims={}), "claims no contract"),
    (dict(claims={"zero_absorption": ""}), "needs a one-line reason"),
    (dict(claims={"silence": "x"}), "needs traits"),
    (dict(claims={"zero_absorption": "x"}, traits={"token_local", "flying"}), "unknown traits"),
    # implementation claims (laws every backend implementing the operator owes) are validated alike
    (dict(claims={"zero_absorption": "x"}, implementation_claims={"no_such_law": "x"}),
     "implementation_claims unknown contract 'no_such_law'"),
    (dict(claims={"zero_absorption": "x"}, implementation_claims={"masked_gradient": "x"}), "needs traits"),
    (dict(claims={"zero_absorption": "x"}, implementation_claims={"zero_absorption": "x"}),
     "both declared and in implementation_claims"),
    # parameter domains (issue 11 point 3): declared once, checked against the drawn parameters
    (dict(claims={"zero_absorption": "x"}, domain=Domain(params=lambda g, d, dt=None: {"tau": 1.0},
                                                         positive=("tau", "eps_den"))),
     "unknown parameter(s) ['eps_den']"),
    (dict(claims={"zero_absorption": "x"}, domain=Domain(params=lambda g, d, dt=None: {"tau": 1.0})),
     "['tau'] have no declared domain"),
    (dict(claims={"zero_absorption": "x"}, domain=Domain(params=lambda g, d, dt=None: {"tau": -1.0},
                                                         positive=("tau",))),
     "outside its declared domain tau > 0"),
    (dict(claims={"zero_absorption": "x"}, domain=Domain(params=lambda g, d, dt=None: {"blocks": [{"eps": 0.0}]},
                                                         intervals={"eps": Interval(0.0, 1.0, lo_open=True)})),
     "outside its declared domain 0 < eps <= 1"),
])
def test_bad_declarations_raise_naming_the_file(decl, message):
    kwargs = dict(name="bad", domain=Domain(params=lambda g, d, dt=None: {}), traits={"token_local"})
    kwargs.update(decl)
    mod = types.ModuleType("bad_ops")
    mod.__file__ = "/somewhere/bad_ops.py"

    def bad(xp, x):
        return x

    bad.__module__ = "bad_ops"
    mod.bad = declare(**kwargs)(bad)
    with pytest.raises(DeclarationError) as err:
        collect(mod)
    assert message in str(err.value) and "/somewhere/bad_ops.py" in str(err.value)


def test_unknown_operator_lookup_names_it(registry):
    with pytest.raises(DeclarationError, match="operator='nope'"):
        registry["nope"]


def test_domain_itself_rejects_inconsistent_declarations():
    with pytest.raises(DeclarationError, match="two domains"):
        Domain(positive=("tau",), reals=("tau",))
    with pytest.raises(DeclarationError, match="lo <= hi"):
        Interval(1.0, 0.0)
    with pytest.raises(DeclarationError, match="tuple of parameter names"):
        Domain(positive="tau")


def test_every_registered_scalar_parameter_has_a_declared_domain(registry):
    from tokenlaw.operators.registry import scalar_parameters
    import torch

    for op in registry:
        tree = op.domain.params(torch.Generator().manual_seed(0), op.domain.d_model[0], torch.float64)
        for path, value in scalar_parameters(tree):
            assert value in op.domain.scalar(path[-1]), (op.name, path)


@pytest.mark.parametrize("interval", [
    Interval(0.0, float("inf"), lo_open=True), Interval(0.0, float("inf")), Interval(),
    Interval(-1.0, 2.0, hi_open=True), Interval(float("-inf"), 3.0, hi_open=True),
])
def test_fuzz_draws_scalar_parameters_from_the_declared_domain(interval):
    """The fuzz tier's tau / eps_den overrides come from the same declaration as the prover's premises."""
    from hypothesis import given, settings

    from tokenlaw.fuzz.strategies import within

    seen = []

    @settings(max_examples=60, deadline=None, database=None)
    @given(within(interval, exponents=(-4, 3), span=8.0))
    def draw(v):
        seen.append(v)
        assert v in interval, (v, interval)

    draw()
    assert len(set(seen)) > 3
    if interval == Interval(0.0, float("inf")):
        assert 0.0 in seen or any(v < 1e-3 for v in seen)      # the closed end is reachable


# -- per-dtype limits on the draws (issue 19, point 4) ----------------------------------------------

@pytest.mark.parametrize("kwargs, match", [
    (dict(reason="x"), "bounds nothing"),
    (dict(scores=0.0, reason="x"), "Limit.scores"),
    (dict(scores=float("inf"), reason="x"), "Limit.scores"),
    (dict(norm2=-1.0, reason="x"), "Limit.norm2"),
    (dict(offset=float("nan"), reason="x"), "Limit.offset"),
    (dict(scores=True, reason="x"), "Limit.scores"),
    (dict(scores=8.0, reason=""), "Limit.reason"),
    (dict(scores=8.0, reason="two\nlines"), "Limit.reason"),
])
def test_a_bad_limit_is_rejected_naming_its_field(kwargs, match):
    from tokenlaw.operators.registry import Limit

    with pytest.raises(DeclarationError, match=match):
        Limit(**kwargs)


def test_domain_limits_are_validated_and_read_back():
    from tokenlaw.operators.registry import Domain, Limit

    lim = Limit(scores=8.0, reason="example")
    d = Domain(limits={"float16": lim})
    assert d.limit("float16") is lim and d.limit("float32") is None
    assert lim.text("float16") == "float16: |scores| <= 8 (example)"
    with pytest.raises(DeclarationError, match="not one of the declared dtypes"):
        Domain(dtypes=("float64",), limits={"float16": lim})
    with pytest.raises(DeclarationError, match="expected {dtype: Limit}"):
        Domain(limits={"float16": 8.0})
    with pytest.raises(DeclarationError, match="d_max"):
        Domain(d_model=(4, 8), d_max=6)


def test_the_shipping_limits_each_state_a_reason_and_come_from_the_dtype():
    """float16: its range (65504) for scores and |h|^2; float32: the score spacing past 2^24 on the hosts only;
    a softmax row's offset where the dtype's spacing reaches one unit (operators/limits.py)."""
    from tokenlaw.properties.catalogue import default_registry

    declared = {(op.name, dt): lim for op in default_registry() for dt, lim in op.domain.limits}
    assert declared and all(lim.reason for lim in declared.values())
    half = [lim for (_, dt), lim in declared.items() if dt == "float16" and (lim.scores or lim.norm2)]
    assert half and all(v in (None, 65504) for lim in half for v in (lim.scores, lim.norm2))
    single = {name: lim for (name, dt), lim in declared.items() if dt == "float32" and lim.scores is not None}
    assert all(lim.scores == 2.0 ** 24 and lim.norm2 is None for lim in single.values())
    assert "tabular_otransformer" in single and "otransformer_l3" in single and "standard_host" in single
    assert "oattention" not in single and "sdpa" not in single and "layernorm" not in single
    assert {dt for (_, dt), lim in declared.items() if lim.scores or lim.norm2} == {"float16", "float32"}
    offsets = {(name, dt): lim.offset for (name, dt), lim in declared.items() if lim.offset is not None}
    assert offsets[("sdpa", "float32")] == 2.0 ** 23 and offsets[("sdpa", "bfloat16")] == 2.0 ** 7
    assert offsets[("sdpa", "float16")] == 2.0 ** 10 and offsets[("standard_host_l1", "bfloat16")] == 2.0 ** 7
    assert offsets[("standard_host", "float32")] == 2.0 ** 23            # combined with its spacing limit
    assert ("pn", "float32") not in offsets and ("oattention", "float32") not in offsets
    assert ("oattention", "float16") in declared and ("layernorm", "float16") not in declared


def test_a_limit_on_offsets_caps_the_offset_draws_only():
    import torch

    from tokenlaw.fuzz.strategies import offset_exponents, score_offsets
    from tokenlaw.operators.registry import Limit

    lim = Limit(offset=2.0 ** 7, reason="example")
    assert lim.text("bfloat16") == "bfloat16: |score offset| <= 128 (example)"
    assert offset_exponents(torch.bfloat16, lim) == (-2, 7) and offset_exponents(torch.bfloat16) == (-2, 126)
    assert max(score_offsets(torch.bfloat16, lim)) <= 128 < max(score_offsets(torch.bfloat16))
