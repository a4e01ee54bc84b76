"""Cross-checks against published implementations of a row map (``@declare(external=...)``, operators/external.py)."""
from __future__ import annotations

import torch

from .contract import AdversaryOptions, Gap, SHARED_AXES, SymbolicOptions, contract
from .judging import relation
from .score_laws import scores, visibility, weights

# Where the catalogue lists this module's laws (tokenlaw.properties.catalogue.laws_modules).
ORDER = 35

# A masked key is handed to the package this far below its row's largest visible score: out of the
# support of sparsemax (which needs s_max - s_j < 1) and of entmax-1.5 (which needs (s_max - s_j)/2 < 1),
# so it gets weight exactly 0 and moves no threshold -- what masking means -- without an -inf, which
# the package's sorted cumulative sums would turn into inf - inf.
MASKED_BELOW = 4.0


def _installed(op, dtype, backend):
    if op.external is not None and op.external.load() is None:
        return Gap(op.external.missing)
    return None


def _package_weights(case, fn, s, seen, dtype):
    """The package's weights on the visible keys of each row (a masked key placed MASKED_BELOW under the row's
    largest visible score), rows that see nothing set to 0, as float64."""
    m = visibility(case)
    m = torch.ones_like(s) if m is None else m
    top = torch.where(m > 0, s, torch.full_like(s, -torch.inf)).amax(-1, keepdim=True)
    top = torch.where(seen[..., None], top, torch.zeros_like(top))
    fed = torch.where(m > 0, s, top - MASKED_BELOW)
    with torch.no_grad():
        return fn(fed.to(dtype), dim=-1).double() * seen[..., None]


@contract(exact=False, requires={"score_normaliser"}, needs={"weights", "external"}, evaluated="weights",
          skip=_installed,
          symbolic=SymbolicOptions(none="the package is eager PyTorch code (a sort), not an xp function: judged by "
                                        "the fuzz tier"),
          adversary=AdversaryOptions(rank=4, sees=frozenset({"drop_key"})))
def package_agreement(case):
    """The weights the operator applies equal the declared published implementation's on the same scores."""
    fn = case.op.external.load()
    s = scores(case)
    m = visibility(case)
    seen = torch.ones(s.shape[:-1], dtype=torch.bool) if m is None else m.sum(-1) > 0
    ours = lambda dt: weights(case, s, dt).double() * seen[..., None]           # noqa: E731
    theirs = lambda dt: _package_weights(case, fn, s, seen, dt)                 # noqa: E731
    name = f"{case.op.external.package}.{case.op.external.function}"
    return relation(case, ours, theirs, f"applied weights vs {name} on rows that see a key")
