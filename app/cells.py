"""One planned row judged as a test: the body shared by ``pytest --tokenlaw`` and the tests ``tokenlaw new`` writes.

A row passes when it matches its declaration; it fails (``pytest.fail``, a
message naming the row, each cell's verdict, its counterexample and the
command that replays it) when it does not; it is skipped, with the reason,
when it decided nothing (unknown, vacuous, not runnable here, not applicable).

>>> registry, rows = rows_of("my_project/sigmoid_attn.py")       # doctest: +SKIP
>>> judge(registry, rows[0], examples=10)                         # doctest: +SKIP
"""
from __future__ import annotations

import pytest

from tokenlaw.fuzz.engine import run_cell
from tokenlaw.operators.dtypes import DTYPES
from tokenlaw.process import user_modules
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import collect, with_user_contracts
from tokenlaw.properties.plan import contracts_of, plan, validate_dtypes
from tokenlaw.reports.text import example, replay


def rows_of(*modules, dtypes=None, what: str = "module") -> tuple:
    """(registry, planned rows) of the operators the ``modules`` (names or .py paths) declare."""
    loaded = [user_modules.load(str(m), what) for m in modules]
    registry = collect(*loaded, contracts=with_user_contracts(*loaded))     # their own @contract laws too
    return registry, plan(registry, dtypes=validate_dtypes(dtypes))


def judge(registry, row, *, examples: int = 10, seed: int = 0, replay_dir=None, modules=(), record=None) -> str:
    """Run ``row``'s cells; fail the test (message only) when it does not match its declaration, skip when it decided nothing; return the outcome.

    ``modules``: how the user names the modules, for the replay command in a failure's message;
    ``record(outcome)``: called with the outcome before the test fails or skips.
    """
    for cell in row.cells:
        cell.verdict = run_cell(registry[row.operator], contracts_of(registry)[row.contract], DTYPES[cell.dtype],
                                examples=examples, seed=seed, replay_dir=replay_dir)
    outcome = row.outcome
    if record is not None:
        record(outcome)
    if outcome in V.FAILING:
        pytest.fail(explain(row, outcome, replay_dir, modules), pytrace=False)   # the message is the whole story
    if outcome in V.UNDECIDED | V.NOT_RUN | {V.Outcome.NOT_APPLICABLE_BY_DESIGN, V.Outcome.UNDECLARED}:
        details = "; ".join(f"{c.dtype}: {c.verdict.detail}" for c in row.cells if c.verdict)
        pytest.skip(f"{row.id}: {outcome} ({details})")
    return outcome


def replay_dir(config) -> str | None:
    """Where a pytest run stores counterexamples: the pytest cache (``.pytest_cache/d/tokenlaw-replays``), kept
    between runs so a printed replay command keeps working; None (not stored) without a cache."""
    cache = getattr(config, "cache", None)
    return str(cache.mkdir("tokenlaw-replays")) if cache is not None else None


def explain(row, outcome: str, replay_dir=None, modules=()) -> str:
    """The failure message: the row, its declaration, each cell's verdict and counterexample, the replay command."""
    lines = [f"{row.id}: {outcome}", f"  declared: {row.declared} - {row.reason}"]
    for c in row.cells:
        v = c.verdict
        lines.append(f"  {c.dtype}: {v.status}, {v.examples} examples, discrepancy {v.discrepancy:.3g} "
                     f"vs bound {v.bound:.3g}")
        if v.violated:
            lines.append(f"      counterexample: {example(v.counterexample)}")
            lines.append(f"      {v.detail}")
            if v.replay:
                lines.append(f"      replay: {replay(v.replay, modules=modules, where=str(replay_dir))}")
    return "\n".join(lines)
