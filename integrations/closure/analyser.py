"""Closure analyser for any ``nn.Module``: where does a model stop commuting with null insertion?

The closure contract (``null_laws.closure``) judges declared hosts; this
applies the same relation to a user's own model, layer by layer.  For each
insertion position k it runs the model on x and on x with a null token
inserted at k (masks grown by their convention), records every submodule's
input and output with forward hooks, and asks of each call:

* is the inserted token still exactly null in the output (float64, ``== 0``)?
* how far did the old tokens move (L_inf), against the derived tolerance of
  ``tokenlaw.properties.tolerance`` (float32 runs measure the rounding)?

A call *breaks* closure when its inputs were still closed (null input at k,
old tokens unmoved) but its output is not: **zero absorption lost** (the null
came out non-zero) and/or **contextual erasure lost** (the null moved the
old tokens).  The first such call, in completion order, is where closure
breaks.

Example::

    >>> from tokenlaw.integrations.closure.examples import otransformer
    >>> analyse(otransformer(), positions=[1]).holds
    True
"""
from __future__ import annotations

import copy
import dataclasses

import torch
from torch import nn

from tokenlaw.operators.errors import InvalidArgument

from tokenlaw.properties.mask_insertion import insert_into_mask, insert_slice
from tokenlaw.properties.module_trace import trace
from tokenlaw.properties.tolerance import compare

ZERO_ABSORPTION = "zero absorption lost"
CONTEXTUAL_ERASURE = "contextual erasure lost"


@dataclasses.dataclass
class ClosureExample:
    """A model and how to call it: ``model(x, **kwargs)``.

    x:        example tokens, (batch, tokens, features) when ``token_axis=1``.
    kwargs:   other call arguments; masks among them are named in ``masks``.
    masks:    kwarg name -> convention (visibility / blocked / additive / padding),
              so the mask grows with the inserted null token (which stays visible).
    """

    model: nn.Module
    x: torch.Tensor
    kwargs: dict = dataclasses.field(default_factory=dict)
    masks: dict = dataclasses.field(default_factory=dict)
    token_axis: int = 1
    name: str = ""


@dataclasses.dataclass
class LayerResult:
    """One submodule call, compared between the run without and with the null token."""

    name: str
    index: int
    type: str
    null_in: float | None        # max |input at the null position| (None: no token axis)
    null_out: float | None       # max |output at the null position|
    old_in_shift: float | None   # L_inf movement of the old tokens' input
    old_out_shift: float | None  # L_inf movement of the old tokens' output
    ratio: float | None          # worst old-token |shift| / its derived rounding bound (> 1: moved)
    in_closed: bool
    out_closed: bool
    kinds: tuple = ()            # what this call broke, if its input was closed

    @property
    def label(self) -> str:
        return self.name or "<model>"

    @property
    def breaks(self) -> bool:
        return bool(self.kinds)

    def to_json(self) -> dict:
        return dict(dataclasses.asdict(self), label=self.label, kinds=list(self.kinds))


@dataclasses.dataclass
class PositionResult:
    position: int
    layers: list

    @property
    def first_break(self) -> LayerResult | None:
        return next((r for r in self.layers if r.breaks), None)

    @property
    def first_old_shift(self) -> LayerResult | None:
        """The first call that moved old tokens that were unmoved at its input."""
        return next((r for r in self.layers if CONTEXTUAL_ERASURE in r.kinds), None)

    @property
    def output(self) -> LayerResult:
        return next(r for r in reversed(self.layers) if r.name == "")

    def to_json(self) -> dict:
        fb, fo = self.first_break, self.first_old_shift
        return dict(position=self.position, first_break=fb and fb.to_json(),
                    first_old_shift=fo and fo.to_json(), output=self.output.to_json(),
                    layers=[r.to_json() for r in self.layers])


@dataclasses.dataclass
class ClosureReport:
    model: str
    shape: tuple
    positions: list

    @property
    def holds(self) -> bool:
        return all(p.first_break is None for p in self.positions)

    @property
    def first_break(self) -> LayerResult | None:
        """The earliest breaking call over every position tried."""
        order = {(r.name, r.index): i for i, r in enumerate(self.positions[0].layers)}
        breaks = [p.first_break for p in self.positions if p.first_break is not None]
        return min(breaks, key=lambda r: order.get((r.name, r.index), 1 << 30), default=None)

    def to_json(self) -> dict:
        fb = self.first_break
        return dict(model=self.model, shape=list(self.shape), holds=self.holds,
                    first_break=fb and fb.to_json(), positions=[p.to_json() for p in self.positions])


# -- running --------------------------------------------------------------------

def _cast(value, dtype):
    if torch.is_tensor(value) and value.is_floating_point():
        return value.to(dtype)
    return value


def _runs(example, k):
    """{(inserted, dtype): {(name, index): Call}} for the four runs."""
    out = {}
    for dtype in (torch.float64, torch.float32):
        model = copy.deepcopy(example.model).to(dtype).eval()
        for inserted in (False, True):
            x = _cast(example.x, dtype)
            kwargs = {n: _cast(v, dtype) for n, v in example.kwargs.items()}
            if inserted:
                x = insert_slice(x, example.token_axis, k)
                for n, conv in example.masks.items():
                    if kwargs.get(n) is not None:
                        kwargs[n] = insert_into_mask(kwargs[n], conv, k, n)
            calls = trace(model, (x,), kwargs)
            out[(inserted, dtype)] = {(c.name, c.index): c for c in calls}
    return out


def _token_axis(new: torch.Tensor, old: torch.Tensor):
    """The one axis that grew by one token, or None."""
    if new is None or old is None or new.ndim != old.ndim:
        return None
    grown = [a for a in range(new.ndim) if new.shape[a] == old.shape[a] + 1]
    same = all(new.shape[a] == old.shape[a] for a in range(new.ndim) if a not in grown)
    return grown[0] if len(grown) == 1 and same else None


def _compare(get, k):
    """(null magnitude, old-token L_inf shift, worst shift / bound ratio, old tokens closed) for one side of a call."""
    new64, old64 = get(True, torch.float64), get(False, torch.float64)
    axis = _token_axis(new64, old64)
    if axis is None:
        return None, None, None, True
    keep = torch.tensor([i for i in range(new64.shape[axis]) if i != k])
    null = float(new64.select(axis, k).abs().max()) if new64.numel() else 0.0
    if new64.select(axis, k).isnan().any():
        null = float("nan")
    a = {torch.float64: new64.index_select(axis, keep), torch.float32: get(True, torch.float32).index_select(axis, keep)}
    b = {torch.float64: old64, torch.float32: get(False, torch.float32)}
    c = compare(a, b, torch.float64)
    return null, c.max_discrepancy, c.ratio, c.ok


def analyse_position(example: ClosureExample, k: int) -> PositionResult:
    runs = _runs(example, k)
    order = list(runs[(True, torch.float64)])
    layers = []
    for key in order:
        if any(key not in r for r in runs.values()):
            continue   # a call that only happens with the null token inserted: not comparable
        calls = {ab: runs[ab][key] for ab in runs}
        c0 = calls[(True, torch.float64)]
        n_in, s_in, _, ok_in = _compare(lambda ins, dt: calls[(ins, dt)].input, k)
        n_out, s_out, ratio, ok_out = _compare(lambda ins, dt: calls[(ins, dt)].output, k)
        in_null = n_in is None or n_in == 0.0
        out_null = n_out is None or n_out == 0.0
        kinds = []
        if in_null and not out_null:
            kinds.append(ZERO_ABSORPTION)
        if ok_in and not ok_out:
            kinds.append(CONTEXTUAL_ERASURE)
        layers.append(LayerResult(c0.name, c0.index, c0.type, n_in, n_out, s_in, s_out, ratio,
                                  in_closed=in_null and ok_in, out_closed=out_null and ok_out, kinds=tuple(kinds)))
    return PositionResult(k, layers)


def positions_for(n: int, positions=None, *, trials: int = 3, seed: int = 0) -> list:
    """Chosen insertion positions (validated, 0..n) or ``trials`` distinct ones drawn from a seed."""
    if positions:
        for k in positions:
            if not isinstance(k, int) or not 0 <= k <= n:
                raise InvalidArgument(f"positions: expected ints in 0..{n} (insertion points for {n} tokens), got {k!r}")
        return list(dict.fromkeys(positions))
    if not isinstance(trials, int) or trials < 1:
        raise InvalidArgument(f"trials: expected an int >= 1, got {trials!r}")
    perm = torch.randperm(n + 1, generator=torch.Generator().manual_seed(seed)).tolist()
    return sorted(perm[:trials])


def analyse(example, positions=None, *, trials: int = 3, seed: int = 0) -> ClosureReport:
    """Analyse closure of ``example`` (a :class:`ClosureExample`, or what a factory returns)."""
    example = as_example(example)
    n = example.x.shape[example.token_axis]
    ks = positions_for(n, positions, trials=trials, seed=seed)
    return ClosureReport(example.name or type(example.model).__name__, tuple(example.x.shape),
                         [analyse_position(example, k) for k in ks])


def as_example(obj, *, shape=None, seed: int = 0) -> ClosureExample:
    """Accept a ClosureExample, a model, (model, x) or (model, x, kwargs); draw x from ``shape`` if missing."""
    if isinstance(obj, ClosureExample):
        ex = obj
    elif isinstance(obj, nn.Module):
        ex = ClosureExample(obj, None)
    elif isinstance(obj, tuple) and obj and isinstance(obj[0], nn.Module) and len(obj) in (2, 3):
        ex = ClosureExample(obj[0], obj[1], dict(obj[2]) if len(obj) == 3 else {})
    else:
        raise InvalidArgument(f"factory: expected an nn.Module, (module, x[, kwargs]) or ClosureExample, "
                              f"got {type(obj).__name__}")
    if ex.x is None:
        if shape is None:
            raise InvalidArgument("shape: the factory gave no example input; pass --shape BATCH,TOKENS,FEATURES")
        ex = dataclasses.replace(ex, x=torch.randn(*shape, generator=torch.Generator().manual_seed(seed),
                                                   dtype=torch.float64))
    if not torch.is_tensor(ex.x) or not ex.x.is_floating_point():
        raise InvalidArgument(f"x: expected a floating tensor of tokens, got {type(ex.x).__name__}")
    if not 0 <= ex.token_axis < ex.x.ndim:
        raise InvalidArgument(f"token_axis: expected an axis of x (ndim {ex.x.ndim}), got {ex.token_axis}")
    unknown = set(ex.masks) - set(ex.kwargs)
    if unknown:
        raise InvalidArgument(f"masks: conventions given for {sorted(unknown)}, which are not call kwargs")
    return ex
