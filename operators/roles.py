"""Which drawn parameters are what: the declaration's answer, so the tiers adjust parameters by role, not by name.

A drawn example may push an operator's parameters into a corner: huge
projection biases (a null token then has a huge key), another head count, a
presence threshold or denominator epsilon at an edge, every attention score
pinned near a large offset.  Which parameters play those parts is a fact of
the operator's declaration (``Domain(roles=...)``); the default is the
convention of :mod:`tokenlaw.operators.projections`, which every attention
here follows.  :func:`adjust` applies a set of :class:`Adjustments` at every
nesting level of the tree (a host keeps one parameter dict per block).
"""
from __future__ import annotations

import dataclasses

from . import tree

_SPREAD = 1.0 / 16     # what is left of the drawn projections when the scores are pinned at an offset


@dataclasses.dataclass(frozen=True)
class Roles:
    """The parameter names that play each part (a name the tree lacks is simply never met).

    biases:    projection biases, multiplied by ``bias_scale``;
    heads:     the head count; threshold: the presence threshold (tau); eps_den: the denominator epsilon;
    query / key / value: the (weight, bias) pairs of the projections (q . k is the attention score);
    output:    the output projection's weight; taps: an FIR's taps;
    affine:    the (weight, bias) pairs a gradient law judges as one matrix [W; b];
    per_head:  parameters with one entry per head (a learned sink logit b_h): a drawn head count
               resizes them (their drawn entries repeated cyclically), and the one-head probe of
               ``properties/applied.py`` keeps head 0's.

    A contract names a part, never a parameter: ``roles.threshold`` is the parameter that plays tau,
    and :meth:`named` turns keywords by part (``threshold=0.5``) into keywords by parameter.

    >>> Roles(threshold="theta").named({"threshold": 0.5, "mask": None})
    {'theta': 0.5, 'mask': None}
    """

    biases: tuple = ("bq", "bk", "bv")
    heads: str = "heads"
    threshold: str = "tau"
    eps_den: str = "eps_den"
    query: tuple = ("wq", "bq")
    key: tuple = ("wk", "bk")
    value: tuple = ("wv", "bv")
    per_head: tuple = ()
    output: str = "wo"
    taps: str = "taps"
    affine: tuple = (("wq", "bq"), ("wk", "bk"), ("wv", "bv"), ("w1", "b1"), ("w2", "b2"), ("w", "b"))

    @property
    def projections(self) -> tuple:
        """The projections an attention takes: query, key and value (weight, bias), output weight, head count."""
        return (*self.query, *self.key, *self.value, self.output, self.heads)

    def standard(self, params: dict, *, output: bool = True) -> dict:
        """The projections of ``params`` under the standard names (those of ``Roles()``, which
        ``operators.projections`` and the plain SDPA take): a law that calls them passes these.
        ``output=False``: without the output weight (``projections.project_qkv`` takes none)."""
        pairs = zip(STANDARD.projections, self.projections)
        return {std: params[own] for std, own in pairs if own in params and (output or own != self.output)}

    def named(self, by_part: dict) -> dict:
        """Keywords by part (``threshold``, ``eps_den``, ``heads``, ``output``, ``taps``) as keywords by
        this operator's parameter names; a keyword that names no single-name part passes unchanged."""
        return {getattr(self, k) if k in SINGLE_PARTS else k: v for k, v in by_part.items()}

    def part(self, name: str) -> str:
        """The parameter that plays the single-name part ``name`` (else ``name`` itself)."""
        return getattr(self, name) if name in SINGLE_PARTS else name


# the parts that one parameter plays (named by Roles.named / Roles.part)
SINGLE_PARTS = ("heads", "threshold", "eps_den", "output", "taps")
STANDARD = Roles()


@dataclasses.dataclass(frozen=True)
class Adjustments:
    """What a drawn example changes; each default leaves the parameters as drawn."""

    bias_scale: float = 1.0
    heads: int | None = None
    threshold: float | None = None
    eps_den: float | None = None
    score_offset: float = 0.0


def adjust(params, roles: Roles, how: Adjustments):
    """``params`` with ``how`` applied at every nesting level: overrides first, then the score offset."""
    def leaf(path, v):
        k = path[-1] if path else None
        if k in roles.biases and how.bias_scale != 1.0:
            return v * how.bias_scale
        if k in roles.per_head and how.heads is not None:
            return v[[h % v.shape[0] for h in range(how.heads)]]
        for name, new in ((roles.heads, how.heads), (roles.threshold, how.threshold), (roles.eps_den, how.eps_den)):
            if k == name and new is not None:
                return new
        return v

    out = tree.map_with_path(leaf, params)
    if not how.score_offset:
        return out
    return tree.map_nodes(lambda block: _offset_scores(block, roles, how.score_offset), out,
                          lambda node: isinstance(node, dict) and _scored(node, roles))


def _scored(block: dict, roles: Roles) -> bool:
    return {*roles.query, *roles.key, roles.heads} <= set(block)


def has_scores(params, roles: Roles) -> bool:
    """Whether some block of ``params`` has attention scores (query, key and a head count): the blocks a
    drawn ``score_offset`` moves (:func:`adjust`).  An operator without one (presence, a norm, a FIR) is not
    changed by an offset at all.

    >>> has_scores({"tau": 1.0}, STANDARD), has_scores({"wq": 0, "bq": 0, "wk": 0, "bk": 0, "heads": 1}, STANDARD)
    (False, True)
    """
    found = []
    tree.map_nodes(lambda node: found.append(node) or node, params,
                   lambda node: isinstance(node, dict) and _scored(node, roles))
    return bool(found)


def _offset_scores(block: dict, roles: Roles, offset: float) -> dict:
    """Pin every attention score of ``block`` near ``offset``: s_ij = offset + O(spread).

    The drawn q, k projections (weights and biases) are scaled by 1/16 and a
    constant a (resp. sign(offset) a) is added to every entry of the query
    (key) bias with sqrt(dh) a^2 = |offset|, so <q_i, k_j> / sqrt(dh) =
    offset plus a small token-dependent part: all scores of a row are
    strongly negative (or positive) together, the regime where exp(-max) and
    exp(max) overflow.
    """
    (wq, bq), (wk, bk) = roles.query, roles.key
    dh = block[bq].shape[-1] // block[roles.heads]
    a = (abs(offset) / dh ** 0.5) ** 0.5
    sign = 1.0 if offset > 0 else -1.0
    out = dict(block)
    out[wq], out[wk] = block[wq] * _SPREAD, block[wk] * _SPREAD
    out[bq] = block[bq] * _SPREAD + a
    out[bk] = block[bk] * _SPREAD + sign * a
    return out
