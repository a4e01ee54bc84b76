"""A violation on an example whose operator output is not finite says so first (issue 47, point 2).

A user's causal weighted mean whose weights exp(200 x) overflow on a token the law draws (causality changes
the future tokens), masked by multiplication: 0 * inf = NaN reaches the past rows.  ``check --contract causality`` must report "output non-finite at float64 ... for an input of
the domain" before the causality comparison (it read "|lhs - rhs| = inf vs bound 0": a mask bug hunt).
"""
from __future__ import annotations

import json
import textwrap

from tokenlaw.app import cli

OPS = textwrap.dedent('''
    from tokenlaw.operators.registry import Domain, declare


    def _params(gen, d_model, dtype=None):
        return {}


    @declare(name="user_zero_over_zero", domain=Domain(params=_params, dtypes=("float64",), n_max=4),
             traits={"token_mixing", "causal"}, claims={"causality": "a lower-triangular mask"})
    def user_zero_over_zero(xp, x):
        m = xp.tril(xp.ones_like(xp.matmul(x, xp.swapaxes(x, -1, -2))))      # (B, n, n) causal
        w = xp.exp(200.0 * x)                                 # overflows to inf for x > 3.5
        return xp.div(xp.matmul(m, w * x), xp.matmul(m, w))   # a masked inf: 0 * inf = NaN in the past rows
''')


def test_non_finite_output_is_named_before_the_law(user_module, capsys):
    tmp_path = user_module("user_nan", OPS)
    code = cli.main(["--operators", "user_nan.py", "check", "--contract", "causality", "--workers", "1",
                     "--profile", "smoke", "--out", str(tmp_path / "r")])
    assert code == 1, capsys.readouterr()
    doc = json.loads((tmp_path / "r" / "conformance.json").read_text())
    (row,) = [r for r in doc["rows"] if r["contract"] == "causality"]
    detail = row["cells"][0]["verdict"]["detail"]
    assert detail.startswith("output non-finite at float64 on eager for an input of the domain"), detail
    assert "|lhs - rhs|" in detail                     # the law's own comparison follows
    md = (tmp_path / "r" / "conformance.md").read_text()
    assert "output non-finite at float64" in md
