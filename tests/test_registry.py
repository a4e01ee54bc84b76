"""Meta-tests of the framework: the registry, the catalogue and mark-then-collect."""
from __future__ import annotations

import sys
import textwrap
import types

import pytest

from tokenlaw.operators.errors import DeclarationError
from tokenlaw.operators.registry import Domain, collect, declare
from tokenlaw.properties.catalogue import CONTRACTS
from tokenlaw.properties.plan import plan


def test_registry_is_not_empty(registry):
    assert len(registry) >= 20


def test_every_contract_is_exercised_by_some_operator(registry):
    from tokenlaw.kernels.backend import KERNEL_CLAIMS, PER_KERNEL   # kernel laws are claimed per kernel

    used = {c for op in registry for c in list(op.claims) + list(op.violates)}
    used |= {n for n, c in CONTRACTS.items() if c.universal}      # planned for every operator
    used |= set(KERNEL_CLAIMS) | {c for claims in PER_KERNEL.values() for c in claims}
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
    from tokenlaw.fuzz.campaign import run_rows
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
