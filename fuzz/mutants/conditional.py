"""Predicate-conditional mutants: an operator that is wrong only when a predicate on its input holds.

The standing adversary (:mod:`tokenlaw.fuzz.mutants.adversary`) wraps a registered
operator's callable ``op.fn`` in a :class:`Conditional`: the wrapper calls the
real operator and, on the calls where its :class:`Predicate` holds for the
input (``x`` and the keyword arguments the operator is called with), returns
a wrong output made by a :class:`Wrongness`.  The wrapper keeps ``fn``'s
signature (the score laws read it), works on whatever backend calls
``op.fn`` (the eager one) and is picklable, so the cells of a mutant run on
Dask workers too.  A mutant is a *new* registry (``dataclasses.replace`` of
the one spec); the registry it was built from is never changed.

Predicates come one family per axis of the operator's own domain (length
bands and block edges, width parity / primes / bands, batch, heads, dtype,
mask, magnitude, null and near-null rows, call parity); a wrongness is a
generic change of the output (scale, position-dependent scale, a leak of the
next token's output, a leak into a null row) or of the call (a visible key
dropped through the mask, or, for a causal operator without a mask, the first
token dropped by re-running on the rest).  Each wrongness names the contracts
meant to see it (``targets``); a mutant is built only for an operator that
claims one of them.

The wrapper also *records*: on every call it appends, once per process, the
names of the predicates that held (and, for a mutant, whether its output
really changed) to a folder, so the adversary knows which predicates the
default check ever drew and which mutants ever did anything.

>>> import torch
>>> from tokenlaw.properties.catalogue import default_registry
>>> reg = default_registry()
>>> bad = mutant_registry(reg, "fir", predicate("n_2_8"), wrongness("scale"))
>>> bad["fir"].fn is reg["fir"].fn, reg["fir"].fn is default_registry()["fir"].fn
(False, True)
"""
from __future__ import annotations

import dataclasses
import inspect
import math
import os
from typing import Callable

import torch

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.registry import Registry

SCALE = 1e-2          # the size of every wrong output: 1 % (far above any tolerance bound at float32)
TINY_SCALE = 1e-6     # a change only exact laws can be asked to see
NEAR_NULL = 1e-4      # a row with 0 < max |x_i| < NEAR_NULL is near-null


# -- predicates ---------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Predicate:
    """A test on one call's input: ``test(x, kwargs, call)`` (``call``: this wrapper's call count, from 0)."""

    name: str
    axis: str
    text: str
    test: Callable
    needs: str = ""            # "mask": only for operators that take a mask; "heads": that take a head count


def _n(x):
    return x.shape[-2] if x.ndim >= 2 else 1


def _d(x):
    return x.shape[-1]


def _prime(k: int) -> bool:
    return k >= 2 and all(k % p for p in range(2, math.isqrt(k) + 1))


def _rows_norm(x):
    return x.detach().double().abs().amax(dim=-1)


def _length(lo, hi):
    return lambda x, kw, call: lo <= _n(x) <= hi


def _mask(kw):
    return kw.get("mask")


LENGTH_BANDS = ((1, 1), (2, 8), (9, 32), (33, 64), (65, 128), (129, 256), (257, math.inf))
BLOCK_EDGES = (64, 65, 128, 129, 256, 257)


def _band_name(lo, hi):
    return f"n_{lo}" if lo == hi else f"n_ge_{lo}" if hi == math.inf else f"n_{lo}_{hi}"


PREDICATES: tuple[Predicate, ...] = (
    Predicate("always", "control", "every call", lambda x, kw, call: True),
    *(Predicate(_band_name(lo, hi), "length", f"n in [{lo}, {hi}]", _length(lo, hi)) for lo, hi in LENGTH_BANDS),
    *(Predicate(f"n_eq_{e}", "length", f"n == {e} (a 64-block edge)", _length(e, e)) for e in BLOCK_EDGES),
    Predicate("d_odd", "width", "d odd", lambda x, kw, call: _d(x) % 2 == 1),
    Predicate("d_even", "width", "d even", lambda x, kw, call: _d(x) % 2 == 0),
    Predicate("d_prime", "width", "d prime", lambda x, kw, call: _prime(_d(x))),
    Predicate("d_1_4", "width", "d in [1, 4]", lambda x, kw, call: _d(x) <= 4),
    Predicate("d_5_16", "width", "d in [5, 16]", lambda x, kw, call: 5 <= _d(x) <= 16),
    Predicate("d_ge_17", "width", "d >= 17", lambda x, kw, call: _d(x) >= 17),
    Predicate("batch_1", "batch", "batch == 1", lambda x, kw, call: x.ndim >= 3 and x.shape[0] == 1),
    Predicate("batch_3", "batch", "batch == 3", lambda x, kw, call: x.ndim >= 3 and x.shape[0] == 3),
    Predicate("batch_ge_4", "batch", "batch >= 4", lambda x, kw, call: x.ndim >= 3 and x.shape[0] >= 4),
    Predicate("heads_1", "head_count", "one head", lambda x, kw, call: kw.get("heads") == 1, needs="heads"),
    Predicate("heads_ge_2", "head_count", "two heads or more",
              lambda x, kw, call: isinstance(kw.get("heads"), int) and kw["heads"] >= 2, needs="heads"),
    *(Predicate(name, "dtype", f"x is {name}", (lambda dt: lambda x, kw, call: x.dtype == dt)(dt))
      for name, dt in (("float16", torch.float16), ("bfloat16", torch.bfloat16), ("float32", torch.float32),
                       ("float64", torch.float64))),
    Predicate("mask_none", "mask", "mask=None", lambda x, kw, call: "mask" in kw and _mask(kw) is None, needs="mask"),
    Predicate("mask_tensor", "mask", "a mask tensor", lambda x, kw, call: torch.is_tensor(_mask(kw)), needs="mask"),
    Predicate("mask_empty_row", "mask", "some query sees no key (a fully masked row)",
              lambda x, kw, call: torch.is_tensor(_mask(kw)) and bool((_mask(kw).sum(-1) == 0).any()), needs="mask"),
    Predicate("magnitude_gt_10", "magnitude", "max |x| > 10",
              lambda x, kw, call: x.numel() > 0 and float(x.detach().abs().max()) > 10),
    Predicate("magnitude_gt_1e3", "magnitude", "max |x| > 1e3",
              lambda x, kw, call: x.numel() > 0 and float(x.detach().abs().max()) > 1e3),
    Predicate("null_row", "null", "some token is exactly null (all zeros)",
              lambda x, kw, call: x.numel() > 0 and bool((_rows_norm(x) == 0).any())),
    Predicate("near_null_row", "null", f"some token has 0 < max |x_i| < {NEAR_NULL:g}",
              lambda x, kw, call: x.numel() > 0 and bool(((_rows_norm(x) > 0) & (_rows_norm(x) < NEAR_NULL)).any())),
    Predicate("odd_call", "call_parity", "every other call (a nondeterministic operator)",
              lambda x, kw, call: call % 2 == 1),
)
_PREDICATES = {p.name: p for p in PREDICATES}


def predicate(name: str) -> Predicate:
    if name not in _PREDICATES:
        raise InvalidArgument(f"predicate: expected one of {sorted(_PREDICATES)}, got {name!r}")
    return _PREDICATES[name]


def holds(p: Predicate, x, kw, call) -> bool:
    """Whether ``p`` holds on this call (False for an input it cannot read, e.g. not a tensor)."""
    if not torch.is_tensor(x) or x.ndim < 1:
        return False
    try:
        return bool(p.test(x, kw, call))
    except (TypeError, ValueError, IndexError, RuntimeError):
        return False


# -- wrongness ----------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Wrongness:
    """A wrong output: ``make(fn, xp, x, kw, out) -> out'``; ``targets``: the contracts meant to see it
    (None: every claimed law about values); ``needs``: a trait the operator must have ("token_mixing", ...)."""

    name: str
    family: str
    text: str
    make: Callable
    targets: frozenset | None = None
    needs: tuple = ()


def _same_rows(x, out):
    return torch.is_tensor(out) and out.ndim >= 2 and x.ndim >= 2 and out.shape[-2] == x.shape[-2]


def _identity(fn, xp, x, kw, out):
    return out


def _scale(factor):
    return lambda fn, xp, x, kw, out: out * (1.0 + factor) if torch.is_tensor(out) else out


def _position(fn, xp, x, kw, out):
    if not _same_rows(x, out):
        return out
    n = out.shape[-2]
    ramp = 1.0 + SCALE * torch.arange(n, dtype=torch.float64) / n
    return out * ramp.to(out.dtype).reshape((n, 1))


def _leak_future(fn, xp, x, kw, out):
    if not _same_rows(x, out) or out.shape[-2] < 2:
        return out
    nxt = torch.cat([out[..., 1:, :], torch.zeros_like(out[..., :1, :])], dim=-2)
    return out + SCALE * nxt


def _leak_null(fn, xp, x, kw, out):
    if not _same_rows(x, out) or out.ndim != x.ndim:
        return out
    null = (x.detach() == 0).all(dim=-1, keepdim=True)
    return out + SCALE * null.to(out.dtype)


def _drop_key(fn, xp, x, kw, out):
    """Key 0 invisible to every later query: through the mask (masked operators), else by re-running the
    operator on tokens 1.. and splicing (a causal operator's rows 1.. then never see token 0)."""
    n = _n(x)
    if n < 2 or not _same_rows(x, out):
        return out
    if "mask" in kw:
        m = kw["mask"]
        if m is None:
            m = torch.ones(*x.shape[:-1], n, dtype=x.dtype)
        if not torch.is_tensor(m) or m.shape[-2:] != (n, n):
            return out
        m = m.clone()
        m[..., 1:, 0] = 0
        return fn(xp, x, **{**kw, "mask": m})
    rest = fn(xp, x[..., 1:, :], **kw)
    if not torch.is_tensor(rest) or rest.shape[-2] != n - 1:
        return out
    return torch.cat([out[..., :1, :], rest], dim=-2)


_VALUE_LAWS = None     # every claimed law
_EXACT = "exact"       # the operator's claimed exact laws (resolved per operator)
_DECLARED = frozenset({"declared"})   # the claimed laws whose AdversaryOptions.sees names the wrongness

WRONGNESSES: tuple[Wrongness, ...] = (
    Wrongness("identity", "control", "the output unchanged (a mutant no law can see: must never be killed)",
              _identity, frozenset()),
    Wrongness("scale", "values", f"the output scaled by 1 + {SCALE:g}", _scale(SCALE), _VALUE_LAWS),
    Wrongness("scale_tiny", "exact", f"the output scaled by 1 + {TINY_SCALE:g} (for exact laws)",
              _scale(TINY_SCALE), frozenset({_EXACT})),
    Wrongness("position", "position", f"output row i scaled by 1 + {SCALE:g} i / n (a position-dependent change)",
              _position, _DECLARED, ("token_mixing",)),
    Wrongness("leak_future", "future",
              f"output row i gets {SCALE:g} x output row i+1 (a future token leaks in)", _leak_future,
              _DECLARED, ("token_mixing",)),
    Wrongness("leak_null", "null", f"a null token's output gets + {SCALE:g} in every entry", _leak_null,
              _DECLARED),
    Wrongness("drop_key", "keys", "key 0 invisible to every later query", _drop_key, _DECLARED,
              ("token_mixing",)),
)
_WRONGNESSES = {w.name: w for w in WRONGNESSES}

# A law that compares the operator only with itself, in a form a common factor cancels from, declares the
# predicate axes on which a uniform scale of the output (``scale``, ``scale_tiny``) is invisible to it
# (``AdversaryOptions.scale_blind``: the predicate is true on both sides of the comparison or on neither).  A
# survivor judged only by such rows is equivalent (adversary.classify); every other law may see it.


def scale_blind(contract, axis: str) -> bool:
    """Whether a uniform scale of the output cancels from ``contract`` when the predicate is on ``axis``."""
    return axis in contract.adversary.scale_blind


# Wrongness families the adversary cannot build from ``op.fn`` alone, and why (reported).
NOT_IMPLEMENTED = {
    "move_mass": "moving row mass needs the operator's score-normalised weights, which live inside op.fn; "
                 "wrapping the declared weights= instead mutates the declaration, not the operator",
    "score_magnitude": "score decades need the operator's query / key projections (inside op.fn); the "
                       "magnitude axis reads the tokens instead",
}


def wrongness(name: str) -> Wrongness:
    if name not in _WRONGNESSES:
        raise InvalidArgument(f"wrongness: expected one of {sorted(_WRONGNESSES)}, got {name!r}")
    return _WRONGNESSES[name]


def targets(w: Wrongness, op, contracts) -> frozenset:
    """The contracts ``op`` claims that are meant to see ``w`` (every claimed one for a value wrongness)."""
    claimed = frozenset(op.claims) | {n for n, c in contracts.items() if c.universal and op.declared(n) is None}
    if w.targets is None:
        return claimed
    if w.targets == _DECLARED:
        return frozenset(n for n in claimed if n in contracts and w.name in contracts[n].adversary.sees)
    named = set(w.targets)
    if _EXACT in named:
        named = (named - {_EXACT}) | {n for n in claimed if n in contracts and contracts[n].exact}
    return claimed & named


def takes(op, need: str) -> bool:
    """Whether ``op`` has the input a predicate reads: a mask argument, a head count."""
    if need == "mask":
        return op.domain.mask != "none"
    if need == "heads":
        try:
            params = op.domain.draw(torch.Generator().manual_seed(0), op.domain.d_model[0], torch.float64)
        except Exception:  # noqa: BLE001 -- a domain that cannot draw has no head count to read
            return False
        return isinstance(params, dict) and "heads" in params
    return True


# -- the wrapper --------------------------------------------------------------------------------

_WRITTEN: set = set()     # (folder, line) already appended by this process
CALLED = "*called"        # the recorder's line for a cell in which the operator was called at all
_CELL = [""]              # the cell running in this process (``in_cell``): the recorder's lines name it


class in_cell:
    """Within it, the recorder's log lines name the cell ``key`` (the adversary's baseline runs each cell so)."""

    def __init__(self, key: str):
        self.key = key

    def __enter__(self):
        self.outer, _CELL[0] = _CELL[0], self.key
        return self

    def __exit__(self, *exc):
        _CELL[0] = self.outer
        return False


def _log(folder, line: str):
    if folder is None or (folder, line) in _WRITTEN:
        return
    _WRITTEN.add((folder, line))
    with open(os.path.join(folder, f"{os.getpid()}.log"), "a", encoding="utf-8") as fh:
        fh.write(line + "\n")


def read_log(folder) -> set:
    """Every line the wrappers of any process appended to ``folder``."""
    out = set()
    for name in os.listdir(folder):
        with open(os.path.join(folder, name), encoding="utf-8") as fh:
            out.update(line.rstrip("\n") for line in fh if line.strip())
    return out


class Conditional:
    """``fn`` that is wrong (``wrong``) on the calls where ``when`` holds; records to ``folder``.

    ``watch``: predicates whose truth is only recorded (the baseline's recorder: ``when`` None).  A log
    line is ``tag<TAB>predicate`` when a predicate held, ``tag<TAB>changed`` when the output changed; the
    recorder's lines are ``tag<TAB>cell<TAB>predicate`` (the cell of :class:`in_cell`), and
    ``tag<TAB>cell<TAB>*called`` once the cell called the operator.
    """

    def __init__(self, fn, *, tag: str, folder: str | None, when: Predicate | None = None,
                 wrong: Wrongness | None = None, watch: tuple = ()):
        self.fn, self.tag, self.folder, self.when, self.wrong, self.watch = fn, tag, folder, when, wrong, watch
        self.calls = 0
        self.held = 0             # calls where ``when`` held (this object's, in the process that judges it)
        self.__signature__ = inspect.signature(fn)
        self.__doc__ = fn.__doc__
        self.__name__ = getattr(fn, "__name__", "fn")

    def __call__(self, xp, x, **kw):
        call, self.calls = self.calls, self.calls + 1
        if self.watch:
            cell = _CELL[0]
            _log(self.folder, f"{self.tag}\t{cell}\t{CALLED}")
            for p in self.watch:
                line = f"{self.tag}\t{cell}\t{p.name}"
                # a predicate this process already recorded for the cell is not tested again (its line is
                # written once anyway): the recorder's cost falls as the cell's draws repeat themselves
                if (self.folder, line) not in _WRITTEN and holds(p, x, kw, call):
                    _log(self.folder, line)
        out = self.fn(xp, x, **kw)
        if self.when is None or not holds(self.when, x, kw, call):
            return out
        _log(self.folder, f"{self.tag}\t{self.when.name}")
        self.held += 1
        bad = self.wrong.make(self.fn, xp, x, kw, out)
        if bad is not out and torch.is_tensor(bad) and torch.is_tensor(out) and not _equal(bad, out):
            _log(self.folder, f"{self.tag}\tchanged")
        return bad

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("__signature__", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__signature__ = inspect.signature(self.fn)


def _equal(a, b) -> bool:
    with torch.no_grad():
        return a.shape == b.shape and torch.equal(torch.nan_to_num(a.detach()), torch.nan_to_num(b.detach()))


def with_fn(registry: Registry, name: str, fn) -> Registry:
    """A new registry in which operator ``name`` calls ``fn`` (the others, and ``registry``, unchanged)."""
    return Registry([dataclasses.replace(s, fn=fn) if s.name == name else s for s in registry], registry.contracts)


def mutant_registry(registry: Registry, name: str, when: Predicate, wrong: Wrongness, *, folder=None,
                    tag="mutant") -> Registry:
    """The registry with operator ``name`` wrong by ``wrong`` where ``when`` holds (a fresh copy)."""
    return with_fn(registry, name, Conditional(registry[name].fn, tag=tag, folder=folder, when=when, wrong=wrong))


def recording_registry(registry: Registry, names, tag: str | None, folder: str, predicates=PREDICATES) -> Registry:
    """The registry with each operator of ``names`` recording which ``predicates`` its calls satisfy (its log
    lines start ``operator<TAB>tag``, or ``operator`` when ``tag`` is None)."""
    names = set(names)
    return Registry([dataclasses.replace(s, fn=Conditional(s.fn, tag=s.name if tag is None else f"{s.name}\t{tag}",
                                                             folder=folder,
                                                             watch=tuple(predicates)))
                     if s.name in names else s for s in registry], registry.contracts)
