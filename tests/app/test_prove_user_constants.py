"""``tokenlaw prove`` on a user's operators whose code passes constants to ``xp`` (issue 47, point 1).

A causal mask built as ``xp.asarray(<nested list>, like)`` is modelled (an array of constants): causality is
proved.  A constant the reals cannot hold (``inf`` in a guard) is ``not symbolically traceable`` at the user's
file:line, and the run's other rows still finish: no exit 70 (it was ``Z3Exception: b'parser error'``).
"""
from __future__ import annotations

import json
import textwrap

from tokenlaw.app import cli

OPS = textwrap.dedent('''
    import math

    from tokenlaw.operators.registry import Domain, declare


    def _params(gen, d_model, dtype=None):
        return {}


    def causal_mean(xp, x, mask_of):
        n = x.shape[-2]
        m = mask_of(xp, n, x)
        return xp.div(xp.matmul(m, x), xp.sum(m, axis=-1, keepdims=True))


    def list_mask(xp, n, like):
        return xp.asarray([[1.0 if j <= i else 0.0 for j in range(n)] for i in range(n)], like)


    @declare(name="user_listmask", domain=Domain(params=_params, dtypes=("float64",), n_max=4),
             traits={"token_mixing", "causal"}, claims={"causality": "the mask is lower-triangular"})
    def user_listmask(xp, x):
        return causal_mean(xp, x, list_mask)


    @declare(name="user_infguard", domain=Domain(params=_params, dtypes=("float64",), n_max=4),
             traits={"token_mixing", "causal"}, claims={"causality": "the mask is lower-triangular"})
    def user_infguard(xp, x):
        x = xp.where(xp.lt(x, xp.asarray(math.inf, x)), x, xp.zeros_like(x))   # INF LINE
        return causal_mean(xp, x, list_mask)
''')


def test_prove_models_list_constants_and_names_the_line_of_an_inf(user_module, capsys):
    tmp_path = user_module("user_consts", OPS)
    code = cli.main(["--operators", "user_consts.py", "prove", "--contract", "causality", "--workers", "1",
                     "--out", str(tmp_path / "r")])
    out = capsys.readouterr()
    assert "internal error" not in out.err and code != 70, out.err
    doc = json.loads((tmp_path / "r" / "proofs.json").read_text())
    rows = {(r["operator"], r["contract"]): r for r in doc["rows"]}
    assert rows[("user_listmask", "causality")]["outcome"] == "proved", rows
    inf = rows[("user_infguard", "causality")]
    line = OPS.splitlines().index(next(s for s in OPS.splitlines() if "INF LINE" in s)) + 1
    assert inf["outcome"] == "not symbolically traceable", inf
    detail = inf["cells"][0]["verdict"]["detail"]
    assert f"user_consts.py:{line}" in detail and "constant inf" in detail, detail
