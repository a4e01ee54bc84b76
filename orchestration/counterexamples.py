"""A stored counterexample as Python values: ``(inputs, params)``, the operator's output, the law's verdict.

``tokenlaw replay ID --python`` prints a snippet that, pasted into a fresh Python (a REPL, a debugger, a
file), rebuilds the stored example with :func:`load`, checks it bit for bit against the values the
artifact stores (the float64 tokens, mask and drawn parameters), and judges the law again::

    example = load("linattn-causality-float32-3f2a9c1e", replays="reports/replays", operators=["my_ops.py"])
    inputs, params = example.inputs, example.params      # float64: x (batch, n, d), mask; the drawn weights
    out = example.run()                                  # the operator's output in the finding's dtype
    example.judge().detail                               # the violation, as tokenlaw check reported it
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os

from tokenlaw.fuzz import replay as R
from tokenlaw.fuzz.mutants.seeded import catalogue
from tokenlaw.process import user_modules
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties.case import Case
from tokenlaw.properties.plan import contracts_of

from . import runs


@dataclasses.dataclass(frozen=True)
class Counterexample:
    """One stored example, rebuilt: ``case`` draws exactly the stored values (checked by :func:`load`)."""

    artifact: R.Artifact
    case: Case
    contract: object
    mutant: object = None

    @property
    def inputs(self) -> dict:
        """{"x": float64 tokens (batch, n, d), "mask": float64 (batch, n, n) or None}."""
        return {"x": self.case.x, "mask": self.case.mask}

    @property
    def params(self):
        """The drawn float64 parameters, as the operator takes them (keyword arguments)."""
        return self.case.params

    @property
    def operator(self):
        """The operator's function, ``f(xp, x, [mask], **params)`` (``tokenlaw.operators.xp.TORCH`` for eager)."""
        return self.case.op.fn

    def _patched(self):
        return self.mutant.patch() if self.mutant is not None else contextlib.nullcontext()

    def run(self, dtype=None):
        """The operator's output on ``inputs`` in ``dtype`` (default: the finding's), on the finding's backend."""
        with self._patched():
            return self.case.runner.run(self.case.x, self.case.mask, dtype=dtype)

    def judge(self):
        """The law's verdict on this example, judged again (a :class:`~tokenlaw.properties.verdict.Verdict`)."""
        with self._patched():
            return self.contract.judge(self.case)


def load(artifact, *, replays=None, operators=()) -> Counterexample:
    """The counterexample of ``artifact`` (an id, a path to its JSON, or the artifact's dict), with the user's
    ``operators`` modules collected; InvalidArgument when the rebuilt example is not the stored one bit for bit."""
    if isinstance(artifact, dict):
        art = R.Artifact(**artifact)
    elif isinstance(artifact, R.Artifact):
        art = artifact
    else:
        art = R.load(artifact, R.replay_dir(replays))
    registry = runs.registry(list(operators) or None)
    mutant = R._mutant(art.mutant, catalogue(subtle=True))
    if mutant is not None:
        registry = mutant.apply(registry)
    if art.operator not in registry:
        raise InvalidArgument(f"operators: {art.id!r} is an example of {art.operator!r}, which is not collected; "
                              "pass the module that declares it: operators=['my_ops.py']")
    contracts = contracts_of(registry)
    if art.contract not in contracts:
        raise InvalidArgument(f"artifact: contract {art.contract!r} (from {art.id}) is not in the catalogue")
    case = Case.from_fields(registry[art.operator], art.case)
    differs = [name for name, now, stored in (("x", R._hex(case.x), art.x), ("mask", R._hex(case.mask), art.mask),
                                              ("params", R.params_hex(case.params), art.params))
               if stored is not None and now != stored]
    if differs:
        raise InvalidArgument(f"artifact: {art.id!r} rebuilds other values than it stores ({', '.join(differs)}): "
                              "another version of the operator or of tokenlaw drew them")
    return Counterexample(art, case, contracts[art.contract], mutant)


def snippet(art: R.Artifact, operators=()) -> str:
    """Python source that reproduces ``art`` in a fresh process: the artifact inline (no file needed), the
    user's ``operators`` modules as absolute paths (pasted anywhere on this machine)."""
    modules = [os.path.abspath(m) if user_modules.is_path(m) else m for m in operators or ()]
    detail = " ".join(str(art.verdict.get("detail", "")).split())[:400]
    return "\n".join([
        f"# tokenlaw counterexample {art.id}: {art.operator} / {art.contract} / {art.dtype} / {art.backend}"
        + (f" / mutant {art.mutant}" if art.mutant else ""),
        f"# stored verdict: {art.verdict.get('status')}: {detail}",
        "import json",
        "from tokenlaw.operators.xp import TORCH",
        "from tokenlaw.orchestration.counterexamples import load",
        "",
        f"ARTIFACT = json.loads({json.dumps(json.dumps(dataclasses.asdict(art), sort_keys=True))})",
        f"example = load(ARTIFACT, operators={modules!r})",
        "inputs, params = example.inputs, example.params    # float64 tensors: x (batch, n, d) and mask; the drawn "
        "parameters",
        "out = example.run()                                # the operator's output in the finding's dtype",
        "# the operator by hand: example.operator(TORCH, inputs['x'], **params) (add mask=inputs['mask'] if it "
        "takes one)",
        "verdict = example.judge()                          # the law, judged again on this example",
        "print(verdict.status, verdict.detail)",
        "",
    ])
