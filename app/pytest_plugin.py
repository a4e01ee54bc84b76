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

import sys

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
    if report.passed:
        # a row a collected test file already judges (the file `tokenlaw new` writes, run by the same pytest)
        # is not added twice (issue 47: every row ran twice when that file was present)
        judged = _rows_in(items)
        config.stash[_SKIPPED] = [i for i in report.result if i.row.id in judged]
        report.result = [i for i in report.result if i.row.id not in judged]
    session.ihook.pytest_collectreport(report=report)
    if report.passed:
        items.extend(report.result)


_SKIPPED = pytest.StashKey[list]()


def _rows_in(items) -> set:
    """Ids of the tokenlaw rows that collected test items judge through ``cells.judge`` (a parametrised
    ``row``, as in the file ``tokenlaw new`` writes)."""
    from tokenlaw.properties.plan import Row  # optional: only with --tokenlaw

    return {p.id for item in items for p in getattr(getattr(item, "callspec", None), "params", {}).values()
            if isinstance(p, Row)}


def pytest_report_collectionfinish(config, start_path, items):
    skipped = config.stash.get(_SKIPPED, [])
    if skipped:
        return (f"tokenlaw: {len(skipped)} row{'s' if len(skipped) != 1 else ''} of --tokenlaw already collected "
                "from a test file (not run twice): " + ", ".join(i.row.id for i in skipped))


class DeclaredCells(pytest.Collector):
    """The rows of the operators declared in the --tokenlaw modules."""

    def collect(self):
        from tokenlaw.properties.catalogue import collect  # optional: only with --tokenlaw
        from tokenlaw.properties.plan import plan, validate_dtypes  # optional: only with --tokenlaw

        from tokenlaw.process import user_modules  # optional: only with --tokenlaw
        from tokenlaw.operators.errors import InvalidArgument  # optional: only with --tokenlaw
        from tokenlaw.process.unshadow import unshadow  # optional: only with --tokenlaw

        modules = self.config.getoption("tokenlaw")
        dtypes = validate_dtypes(self.config.getoption("tokenlaw_dtype"))
        # Like the CLI, a module (or .py file) in the directory pytest runs from is found without installing it.
        cwd = str(self.config.invocation_params.dir)
        if cwd not in sys.path:
            sys.path.insert(0, cwd)
            unshadow()      # a checkout's root goes after every installed package (its kernels/ shadows HF's)
        try:
            registry = collect(*[user_modules.load(m, "--tokenlaw") for m in modules])
        except InvalidArgument as err:
            raise pytest.UsageError(str(err)) from None
        if not len(registry):
            raise pytest.UsageError(f"--tokenlaw: no operator declared in {modules}")
        for row in plan(registry, dtypes=dtypes):
            item = ContractRow.from_parent(self, name=row.id, nodeid=f"tokenlaw::{row.id}",
                                           row=row, registry=registry)
            item.add_marker("tokenlaw")
            yield item


class ContractRow(pytest.Item):
    """One (operator, contract) row: all its dtype cells, judged against the declaration."""

    def __init__(self, *, row, registry, **kw):
        super().__init__(**kw)
        self.row, self.registry = row, registry
        self.spec = registry[row.operator]

    def runtest(self):
        from tokenlaw.app import cells  # optional: only with --tokenlaw

        cells.judge(self.registry, self.row, examples=self.config.getoption("tokenlaw_examples"),
                    seed=self.config.getoption("tokenlaw_seed"), replay_dir=self.replay_dir,
                    modules=self.config.getoption("tokenlaw"),
                    record=lambda outcome: self.user_properties.append(("outcome", outcome)))

    @property
    def replay_dir(self):
        chosen = self.config.getoption("tokenlaw_replays")
        if chosen:
            return chosen
        from tokenlaw.app import cells  # optional: only with --tokenlaw

        return cells.replay_dir(self.config)

    def reportinfo(self):
        return self.spec.source, None, f"tokenlaw {self.row.id}"
