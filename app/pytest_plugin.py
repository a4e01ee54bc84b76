"""pytest plugin: ``pytest --tokenlaw my.module`` runs the declared cells inside your own test suite.

Registered as the ``tokenlaw`` entry point of group ``pytest11``, so an
installed tokenlaw makes the option available everywhere; without the
option the plugin does nothing (and imports nothing heavy).  Where tokenlaw
is not installed, load it explicitly: ``pytest -p tokenlaw.app.pytest_plugin``.

One test per declared (operator, contract) row, named like the report rows
(``tokenlaw::my_op-zero_absorption``).  It runs every dtype cell on the fuzz
tier and passes when the row matches its declaration: a claimed law holds
(or is proved) in every dtype, an expected violation is reproduced in some
dtype; it fails on an UNEXPECTED violation or an expected violation NOT
reproduced, printing the minimal counterexample; it is skipped, with the
reason, when the cell is not runnable here or the result is unknown.
``-k`` and ``-m`` select among them like any other test.

Example::

    pytest --tokenlaw my_package.operators --tokenlaw-examples 25 -k zero_absorption
"""
from __future__ import annotations

import pytest


def pytest_addoption(parser):
    group = parser.getgroup("tokenlaw", "tokenlaw contract cells")
    group.addoption("--tokenlaw", action="append", default=[], metavar="MODULE",
                    help="collect the operators declared in MODULE (repeatable) and run their contract cells")
    group.addoption("--tokenlaw-examples", type=int, default=10, metavar="N",
                    help="examples per cell per dtype (default 10, the smoke profile)")
    group.addoption("--tokenlaw-seed", type=int, default=0, metavar="SEED", help="fuzz seed (default 0)")
    group.addoption("--tokenlaw-replays", default=None, metavar="DIR",
                    help="store violations here for `tokenlaw replay ID --replays DIR` "
                         "(default: the pytest cache, .pytest_cache/d/tokenlaw-replays)")
    group.addoption("--tokenlaw-dtype", action="append", default=None, metavar="DTYPE",
                    help="only this dtype (repeatable)")


def pytest_configure(config):
    config.addinivalue_line("markers", "tokenlaw: a generated tokenlaw contract cell")


@pytest.hookimpl(tryfirst=True)   # before -k / -m deselection sees the items
def pytest_collection_modifyitems(session, config, items):
    if not config.getoption("tokenlaw"):
        return
    # Collected through the ordinary hooks, so the terminal counts the items and a bad
    # declaration shows as a collection error naming its file.
    collector = DeclaredCells.from_parent(session, name="tokenlaw", nodeid="tokenlaw")
    session.ihook.pytest_collectstart(collector=collector)
    report = session.ihook.pytest_make_collect_report(collector=collector)
    session.ihook.pytest_collectreport(report=report)
    if report.passed:
        items.extend(report.result)


class DeclaredCells(pytest.Collector):
    """The rows of the operators declared in the --tokenlaw modules."""

    def collect(self):
        from tokenlaw.properties.catalogue import collect  # optional: only with --tokenlaw
        from tokenlaw.properties.plan import plan, validate_dtypes  # optional: only with --tokenlaw

        modules = self.config.getoption("tokenlaw")
        dtypes = validate_dtypes(self.config.getoption("tokenlaw_dtype"))
        registry = collect(*modules)
        if not len(registry):
            raise pytest.UsageError(f"--tokenlaw: no operator declared in {modules}")
        for row in plan(registry, dtypes=dtypes):
            item = ContractRow.from_parent(self, name=row.id, nodeid=f"tokenlaw::{row.id}",
                                           row=row, spec=registry[row.operator])
            item.add_marker("tokenlaw")
            yield item


class RowFailed(Exception):
    """A row that does not match its declaration."""


class ContractRow(pytest.Item):
    """One (operator, contract) row: all its dtype cells, judged against the declaration."""

    def __init__(self, *, row, spec, **kw):
        super().__init__(**kw)
        self.row, self.spec = row, spec

    def runtest(self):
        from tokenlaw.fuzz.engine import run_cell  # optional: only with --tokenlaw
        from tokenlaw.properties import verdict as V  # optional: only with --tokenlaw
        from tokenlaw.properties.case import DTYPES  # optional: only with --tokenlaw
        from tokenlaw.properties.catalogue import CONTRACTS  # optional: only with --tokenlaw

        examples = self.config.getoption("tokenlaw_examples")
        seed = self.config.getoption("tokenlaw_seed")
        for cell in self.row.cells:
            cell.verdict = run_cell(self.spec, CONTRACTS[self.row.contract], DTYPES[cell.dtype],
                                    examples=examples, seed=seed, replay_dir=self.replay_dir)
        outcome = self.row.outcome
        self.user_properties.append(("outcome", outcome))
        if outcome in V.FAILING:
            raise RowFailed(self._explain(outcome))
        if outcome in V.UNDECIDED | V.NOT_RUN | {V.Outcome.NOT_APPLICABLE_BY_DESIGN, V.Outcome.UNDECLARED}:
            details = "; ".join(f"{c.dtype}: {c.verdict.detail}" for c in self.row.cells if c.verdict)
            pytest.skip(f"{self.row.id}: {outcome} ({details})")

    def _explain(self, outcome) -> str:
        from tokenlaw.reports.writers import example  # optional: only with --tokenlaw

        lines = [f"{self.row.id}: {outcome}", f"  declared: {self.row.declared} - {self.row.reason}"]
        for c in self.row.cells:
            v = c.verdict
            lines.append(f"  {c.dtype}: {v.status}, {v.examples} examples, discrepancy {v.discrepancy:.3g} "
                         f"vs bound {v.bound:.3g}")
            if v.violated:
                lines.append(f"      counterexample: {example(v.counterexample)}")
                lines.append(f"      {v.detail}")
                if v.replay:
                    lines.append(f"      replay: tokenlaw replay {v.replay} --replays {self.replay_dir}")
        return "\n".join(lines)

    @property
    def replay_dir(self):
        chosen = self.config.getoption("tokenlaw_replays")
        if chosen:
            return chosen
        cache = getattr(self.config, "cache", None)
        return str(cache.mkdir("tokenlaw-replays")) if cache is not None else None

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, RowFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.spec.source, None, f"tokenlaw {self.row.id}"
