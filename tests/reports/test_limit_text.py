"""The report prints a declared limit as the registry states it (every field: scores, |h|^2, score offset)."""
from __future__ import annotations

from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import default_registry
from tokenlaw.properties.evidence import FuzzEvidence
from tokenlaw.properties.plan import Cell, Row
from tokenlaw.reports.text import limits


def test_every_shipping_limit_reads_back_as_its_declared_text():
    seen = 0
    for op in default_registry():
        for dtype, lim in op.domain.limits:
            limit = {"scores": lim.scores, "norm2": lim.norm2, "offset": lim.offset, "reason": lim.reason}
            verdict = V.holds(evidence=FuzzEvidence(limit=limit))
            row = Row(op.name, "simplex", "claims", "", [Cell(op.name, "simplex", "eager", dtype, verdict)])
            assert f"{dtype}: {limits(row)[dtype]}" == lim.text(dtype)
            seen += lim.offset is not None
    assert seen   # the offset limits are among them (a report that dropped them printed "float32:  (reason)")
