"""Laws of whole Hugging Face models: tiny random models from a config, judged in float64 and float32.

Public interface (the sweep, the bisector and the bug benchmark call only this)::

    Traits(...)                       what an architecture IS (declared, never guessed from a result)
    Knobs(...)                        the config knobs a search draws (attention implementation, window, ...)
    LAWS: dict[str, Law]              name -> law; law.applies(traits) -> None or the reason it does not apply
    judge(law_name, build_config_fn, traits, *, dtype, examples, seed, version=None) -> Result
    judge_laws(law_names, build_config_fn, traits, *, ...) -> [Result]   (one subprocess when pinned)
    replay(law_name, build_config_fn, traits, case, *, dtype, seed, version=None) -> Result
    Case                              one drawn example (knobs, length, batch, padding, edit); to_json/from_json
    Result                            status, detail, counterexample (a Case), gap, bound, examples and seconds
                                      to the first violation, examples run and judged, setup (pinning steps)
    Status                            HOLDS / VIOLATED / NOT_APPLICABLE / COULD_NOT_BUILD / INCONCLUSIVE

``build_config_fn(knobs) -> transformers config``: a top-level function (or a ``functools.partial`` of
one: it is pickled by reference when a pinned version runs it in a subprocess) that writes the drawn
knobs into a tiny config of its architecture.  ``judge`` builds the model from that config with no
download (``AutoModelForCausalLM`` or ``AutoModelForMaskedLM``, per ``traits.head``), seeded, in the
dtype judged and in the other one (float64 / float32), and runs a seeded Hypothesis search over
:class:`Case`: the knobs (sliding window on/off and its size, chunk size, per-layer types, the GQA
ratio, the attention implementation, each only where the traits say the architecture has it) with the
sequence length, left/right padding, batch, the edited position and whether a mask is passed.  A
violation is shrunk by Hypothesis (length, padding, edited position, knobs) and returned as a
:class:`Case`, which :func:`replay` runs again.  ``version="4.39.3"`` runs the same search against that
``transformers`` release installed in an isolated cache (:mod:`.pins`), in a subprocess.

**The bound.**  Each law is a small pure function ``law(run, case) -> [Pair(a, b), ...]``: pairs of
logits that agree in exact arithmetic when the law holds, ``b`` the reference side (no edit, no padding,
no cache, the reference implementation).  The same function runs on the model in float64 and in float32
(same weights).  The error the model makes in dtype D is predicted from the reference side's own
float32 error, scaled by the unit roundoff D computes in (``properties/tolerance.py``'s model)::

    err32 = max |b_32 - b_64|                    (normwise, over the compared rows)
    bound_D = 2 K ((u_D / u_32) err32 + u_D max |b_64|) + K tiny_D          K = 8

where u_D is float64's unit roundoff except for runs through :data:`FLOAT32_SOFTMAX` (HF's ``eager``
takes its softmax in float32 whatever the dtype), which compute at float32's.  The bound never holds
``|a - b|`` of the side under test.  A pair whose float32 run is not first-order close to float64
(``err32 > FIRST_ORDER_LIMIT max |b_64|``: MoE routing that flips, say) judges nothing (the example is
inconclusive, never a pass); ``a`` non-finite where ``b`` is finite is a violation.

Example::

    >>> LAWS["causality"].applies(Traits(causal=False))
    'bidirectional: every position sees every token'
"""
from __future__ import annotations

import base64
import contextlib
import copy
import dataclasses
import enum
import json
import math
import pickle
import time
from typing import Callable

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hseed
from hypothesis import strategies as st

try:
    import transformers  # optional: pip install 'tokenlaw[hf]'
except ImportError:       # hidden or absent: judge() calls require() first
    transformers = None

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.process.cpu_paths import one_thread

from . import pins, require

K = 8.0
FIRST_ORDER_LIMIT = 1 / 16
U = {"float64": 2.0 ** -53, "float32": 2.0 ** -24}
TINY = {"float64": 2.0 ** -1074, "float32": 2.0 ** -149}
DTYPES = ("float64", "float32")
OTHER = {"float64": "float32", "float32": "float64"}
POSITIONS = ("rotary", "absolute", "alibi", "none", "relative")
HEADS = ("causal_lm", "masked_lm")
LAYER_TYPES = ("full_attention", "sliding_attention", "chunked_attention")
# Implementations whose softmax runs in float32 for every input dtype (HF's eager_attention_forward:
# softmax(..., dtype=torch.float32).to(query.dtype)): a float64 run through them is float32-accurate.
FLOAT32_SOFTMAX = frozenset({"eager"})
LAYERS, HIDDEN, HEAD_COUNT, VOCAB = 2, 32, 4, 64
MAX_TOKENS, MAX_PAD, MAX_BATCH, MAX_WINDOW = 20, 4, 3, 4
EXAMPLES = 40          # the default search's examples per law


class Status(enum.Enum):
    HOLDS = "holds"
    VIOLATED = "violated"
    NOT_APPLICABLE = "not applicable"
    COULD_NOT_BUILD = "could not build"
    INCONCLUSIVE = "inconclusive"


@dataclasses.dataclass(frozen=True)
class Traits:
    """What an architecture is, declared from its code and config class (never from a result).

    causal: a decoder whose position i sees tokens <= i (a BERT-style LM head without ``is_decoder``
    is not); positions: how it knows where a token is (:data:`POSITIONS`); takes_position_ids: its
    forward takes ``position_ids`` (then padding laws pass them, derived from the mask); sliding_window /
    attention_chunk_size / layer_types: its config has that knob (the search draws it); gqa: it has
    ``num_key_value_heads``; moe: routed experts; kv_cache: incremental decoding with ``past_key_values``;
    implementations: the ``attn_implementation`` values it supports; head: the auto class built;
    position_start: the position id of the first real token, as the model's own default derives it: 0, or
    ``padding_idx + 1`` for the RoBERTa family (fairseq's ``make_positions``: real tokens at
    ``padding_idx + 1 + index``, padding at ``padding_idx``; such a model also reads padding from
    ``input_ids == padding_idx``, so the laws never draw that id as a real token).
    """

    causal: bool = True
    positions: str = "rotary"
    takes_position_ids: bool = True
    sliding_window: bool = False
    attention_chunk_size: bool = False
    layer_types: tuple = ()
    gqa: bool = False
    moe: bool = False
    kv_cache: bool = True
    implementations: tuple = ("eager", "sdpa")
    head: str = "causal_lm"
    position_start: int = 0

    def __post_init__(self):
        if self.positions not in POSITIONS:
            raise InvalidArgument(f"traits.positions: expected one of {POSITIONS}, got {self.positions!r}")
        if self.head not in HEADS:
            raise InvalidArgument(f"traits.head: expected one of {HEADS}, got {self.head!r}")
        if not self.implementations or isinstance(self.implementations, str):
            raise InvalidArgument(f"traits.implementations: expected a non-empty tuple of names, "
                                  f"got {self.implementations!r}")
        bad = [t for t in self.layer_types if t not in LAYER_TYPES]
        if bad or isinstance(self.layer_types, str):
            raise InvalidArgument(f"traits.layer_types: expected a tuple drawn from {LAYER_TYPES}, "
                                  f"got {self.layer_types!r}")
        if not isinstance(self.position_start, int) or isinstance(self.position_start, bool) \
                or self.position_start < 0:
            raise InvalidArgument(f"traits.position_start: expected an int >= 0, got {self.position_start!r}")
        object.__setattr__(self, "implementations", tuple(self.implementations))
        object.__setattr__(self, "layer_types", tuple(self.layer_types))


@dataclasses.dataclass(frozen=True)
class Knobs:
    """The config knobs a search draws: what the builder writes into the tiny config (None: knob off)."""

    attn: str = "eager"
    sliding_window: int | None = None
    attention_chunk_size: int | None = None
    layer_types: tuple | None = None
    kv_heads: int = HEAD_COUNT
    layers: int = LAYERS
    hidden: int = HIDDEN
    heads: int = HEAD_COUNT
    vocab: int = VOCAB


@dataclasses.dataclass(frozen=True)
class Case:
    """One example: knobs, real length, batch, row 0's left/right padding, edited real position, mask passed."""

    knobs: Knobs
    tokens: int = 8
    batch: int = 1
    pad_left: int = 0
    pad_right: int = 0
    edit: int = 0
    pass_mask: bool = True
    seed: int = 0

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "Case":
        k = dict(d["knobs"])
        if k.get("layer_types") is not None:
            k["layer_types"] = tuple(k["layer_types"])
        return cls(**{**d, "knobs": Knobs(**k)})


@dataclasses.dataclass(frozen=True)
class Pair:
    """Two logits tensors equal in exact arithmetic when the law holds; ``b`` is the reference side."""

    a: torch.Tensor
    b: torch.Tensor
    what: str


@dataclasses.dataclass(frozen=True)
class Law:
    """A model law: ``fn(run, case) -> [Pair]`` (empty: the example judges nothing) and where it applies."""

    name: str
    fn: Callable
    applies: Callable
    doc: str


@dataclasses.dataclass(frozen=True)
class Result:
    """What ``judge`` established for one (law, architecture, dtype, version)."""

    law: str
    status: Status
    detail: str
    dtype: str
    version: str
    examples: int = 0                 # examples run
    judged: int = 0                   # examples that compared something
    counterexample: Case | None = None
    gap: float | None = None          # the shrunk counterexample's worst |a - b|
    bound: float | None = None        # and its bound
    examples_to_first: int | None = None
    seconds_to_first: float | None = None
    seconds: float = 0.0
    setup: tuple = ()                 # what was done to run a pinned version

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d["status"] = self.status.value
        d["counterexample"] = None if self.counterexample is None else self.counterexample.to_json()
        d["setup"] = list(self.setup)
        return d

    @classmethod
    def from_json(cls, d: dict) -> "Result":
        ce = d.get("counterexample")
        return cls(**{**d, "status": Status(d["status"]), "setup": tuple(d.get("setup", ())),
                      "counterexample": None if ce is None else Case.from_json(ce)})


# -- inputs -----------------------------------------------------------------------------------------

def ids(case: Case, vocab: int, avoid: int | None = None) -> torch.Tensor:
    """(batch, tokens) token ids drawn from the case's seed (never the padding id 0, nor ``avoid``: the
    padding id of a model that reads padding from its ids, :attr:`Traits.position_start`)."""
    g = torch.Generator().manual_seed(case.seed)
    x = torch.randint(1, vocab, (case.batch, case.tokens), generator=g)
    if avoid is not None and avoid > 0:
        x = torch.where(x == avoid, 1 + avoid % (vocab - 1), x)
        x = torch.where(x == avoid, 1 + (avoid + 1) % (vocab - 1), x)
    return x


def edited(x: torch.Tensor, position: int, vocab: int, avoid: int | None = None) -> torch.Tensor:
    """``x`` with row 0's token at ``position`` replaced by another id (never ``avoid``)."""
    y = x.clone()
    new = 1 + (int(y[0, position]) % (vocab - 1))
    if new == avoid:
        new = 1 + (new % (vocab - 1))
    y[0, position] = new
    return y


def padded(x: torch.Tensor, left: int, right: int, pass_mask: bool = True, start: int = 0) -> tuple:
    """Row 0 padded with ``left`` / ``right`` pad tokens, the other rows right-padded to the same width:
    (ids, attention mask (1 = real; None where nothing is padded and ``pass_mask`` is False), position
    ids from the mask (:func:`positions`, first real token at ``start``), row 0's real columns)."""
    b, n = x.shape
    width = n + left + right
    out = torch.zeros(b, width, dtype=x.dtype)
    mask = torch.zeros(b, width, dtype=torch.long)
    out[0, left:left + n], mask[0, left:left + n] = x[0], 1
    out[1:, :n], mask[1:, :n] = x[1:], 1
    if not pass_mask and left == right == 0:
        return out, None, None, slice(0, n)
    return out, mask, positions(mask, start), slice(left, left + n)


def positions(mask: torch.Tensor, start: int = 0) -> torch.Tensor:
    """Position ids derived from the mask, as the model's own default numbers an unpadded sequence:
    ``start`` + each real token's index among the real tokens; padding at 0, or at ``start - 1``
    (``padding_idx``) where the positions start past 0 (:attr:`Traits.position_start`: RoBERTa's
    ``padding_idx + 1 + cumsum``)."""
    index = (mask.cumsum(-1) - 1).clamp(min=0) * mask
    if start == 0:
        return index
    return (index + start) * mask + (start - 1) * (1 - mask)


# -- running a model --------------------------------------------------------------------------------

@contextlib.contextmanager
def default_dtype(dtype: str):
    """torch's default dtype set to the run's: old releases build masks with ``torch.full(...,
    finfo(model dtype).min)`` in the default dtype (4.39's float64 mask overflowed float32)."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, dtype))
    try:
        yield
    finally:
        torch.set_default_dtype(before)


class Run:
    """The models of one case in one dtype (one per implementation, same weights) and their forward."""

    def __init__(self, models: dict, config, traits: Traits, dtype: str):
        self.models, self.config, self.traits, self.dtype = models, config, traits, dtype
        self.vocab = int(config.vocab_size)
        self.start = traits.position_start
        self.avoid = traits.position_start - 1 if traits.position_start > 0 else None

    def ids(self, case: Case) -> torch.Tensor:
        """The case's token ids for this model (:func:`ids`, never its padding id)."""
        return ids(case, self.vocab, self.avoid)

    def edited(self, x: torch.Tensor, position: int) -> torch.Tensor:
        return edited(x, position, self.vocab, self.avoid)

    def padded(self, x: torch.Tensor, left: int, right: int, pass_mask: bool = True) -> tuple:
        """:func:`padded` with this model's position ids (:attr:`Traits.position_start`)."""
        return padded(x, left, right, pass_mask, self.start)

    def logits(self, x, mask=None, pos=None, *, impl=None, pass_mask=True) -> torch.Tensor:
        """Logits (batch, width, vocab) as float64; ``mask`` None and ``pass_mask``: an all-ones mask."""
        model = self.models[impl or next(iter(self.models))]
        kw = {"input_ids": x}
        if mask is None and pass_mask:
            mask = torch.ones_like(x)
        if mask is not None:
            kw["attention_mask"] = mask
            if self.traits.takes_position_ids:
                kw["position_ids"] = positions(mask, self.start) if pos is None else pos
        with torch.no_grad(), default_dtype(self.dtype):
            return model(**kw).logits.double()

    def decode(self, x, mask, prefix: int) -> torch.Tensor:
        """Logits of columns ``prefix..`` fed one token at a time after a cached prefix of ``prefix`` columns."""
        model = self.models[next(iter(self.models))]
        pos = positions(mask, self.start)

        def step(lo, hi, past):
            kw = {"input_ids": x[:, lo:hi], "attention_mask": mask[:, :hi], "use_cache": True}
            if self.traits.takes_position_ids:
                kw["position_ids"] = pos[:, lo:hi]
            if past is not None:
                kw["past_key_values"] = past
            with torch.no_grad(), default_dtype(self.dtype):
                out = model(**kw)
            return out.logits.double(), out.past_key_values
        _, past = step(0, prefix, None)
        outs = []
        for t in range(prefix, x.shape[1]):
            logits, past = step(t, t + 1, past)
            outs.append(logits)
        return torch.cat(outs, dim=1)


def receptive_field(config) -> tuple:
    """(radius, chunk) of one token's influence through the model, read from the built config.

    A sliding layer of window w lets key j reach query i only if i - j <= w (both conventions of where
    the window ends are covered); a full layer reaches everything (radius None); a model whose every layer
    is chunked keeps influence inside a chunk of ``attention_chunk_size`` positions (chunk).
    """
    if callable(getattr(config, "get_text_config", None)):
        config = config.get_text_config()     # a multimodal config: its text model's layers (Llama 4)
    n = int(getattr(config, "num_hidden_layers", 0) or 0)
    w = getattr(config, "sliding_window", None)
    c = getattr(config, "attention_chunk_size", None)
    types = getattr(config, "layer_types", None)
    if not types:
        if c:
            types = ["chunked_attention"] * n
        elif w and getattr(config, "use_sliding_window", True) is not False:
            types = ["sliding_attention"] * n
        else:
            types = ["full_attention"] * n
    if any(t not in ("sliding_attention", "chunked_attention") for t in types):
        return None, None
    if all(t == "chunked_attention" for t in types) and c:
        return None, int(c)
    radius = 0
    for t in types:
        size = w if t == "sliding_attention" else c
        if not size:
            return None, None
        radius += int(size)
    return radius, None


# -- the laws ---------------------------------------------------------------------------------------

def causality(run: Run, case: Case) -> list:
    """Editing token t leaves every earlier position's logits unchanged.

    The edited token is counted from the end (``t = tokens - 1 - case.edit``): the shrink target, edit 0,
    is the last token, with every other position compared.
    """
    t = case.tokens - 1 - case.edit
    if t <= 0:
        return []
    x, mask, pos, real = run.padded(run.ids(case), case.pad_left, case.pad_right, case.pass_mask)
    keep = slice(real.start, real.start + t)
    a = run.logits(run.edited(x, real.start + t), mask, pos, pass_mask=case.pass_mask)
    b = run.logits(x, mask, pos, pass_mask=case.pass_mask)
    return [Pair(a[0, keep], b[0, keep], f"positions < {t} after editing token {t}")]


def _padded_pair(run: Run, case: Case, left: int, right: int, side: str) -> list:
    """Row 0 padded by ``left`` / ``right`` tokens (position ids from the mask) against row 0 alone."""
    if left + right == 0:
        return []
    x = run.ids(case)
    xp, mask, pos, real = run.padded(x, left, right)
    a = run.logits(xp, mask, pos)[0, real]
    b = run.logits(x[:1], pass_mask=case.pass_mask)[0]
    return [Pair(a, b, f"row 0 {side}-padded by {left + right}")]


def left_padding(run: Run, case: Case) -> list:
    """Left padding (position ids from the mask) leaves the real tokens' logits unchanged."""
    return _padded_pair(run, case, case.pad_left, 0, "left")


def right_padding(run: Run, case: Case) -> list:
    """Right padding leaves the real tokens' logits unchanged."""
    return _padded_pair(run, case, 0, case.pad_right, "right")


def batch_invariance(run: Run, case: Case) -> list:
    """A sequence's logits do not depend on its batch neighbours."""
    if case.batch == 1:
        return []
    x, mask, pos, real = run.padded(run.ids(case), case.pad_left, case.pad_right, case.pass_mask)
    a = run.logits(x, mask, pos, pass_mask=case.pass_mask)[0]
    b = run.logits(x[:1], None if mask is None else mask[:1], None if pos is None else pos[:1],
                   pass_mask=case.pass_mask)[0]
    return [Pair(a[real], b[real], f"row 0 alone vs with {case.batch - 1} neighbours")]


def window_locality(run: Run, case: Case) -> list:
    """A token beyond the receptive field the config declares (sliding window, chunks) has no influence.

    The edited token is ``case.edit``, moved left as far as needed for a position beyond its field to exist.
    """
    radius, chunk = receptive_field(run.config)
    if radius is not None:
        t = min(case.edit, case.tokens - radius - 2)
        far = [i for i in range(case.tokens) if i > t + radius]
    elif chunk is not None:
        t = min(case.edit, (case.tokens - 1) // chunk * chunk - 1)
        far = [i for i in range(case.tokens) if i // chunk != t // chunk and i > t]
    else:
        return []
    if t < 0 or not far:
        return []
    x, mask, pos, real = run.padded(run.ids(case), case.pad_left, case.pad_right, case.pass_mask)
    cols = [real.start + i for i in far]
    a = run.logits(run.edited(x, real.start + t), mask, pos, pass_mask=case.pass_mask)
    b = run.logits(x, mask, pos, pass_mask=case.pass_mask)
    field = f"window radius {radius}" if radius is not None else f"chunks of {chunk}"
    return [Pair(a[0, cols], b[0, cols], f"positions {far[0]}.. after editing token {t} ({field})")]


def implementation_agreement(run: Run, case: Case) -> list:
    """Every attention implementation gives the reference implementation's logits."""
    impls = list(run.models)
    if len(impls) < 2:
        return []
    x, mask, pos, real = run.padded(run.ids(case), case.pad_left, case.pad_right, case.pass_mask)
    b = run.logits(x, mask, pos, impl=impls[0], pass_mask=case.pass_mask)
    return [Pair(run.logits(x, mask, pos, impl=i, pass_mask=case.pass_mask)[0, real], b[0, real],
                 f"{i} vs {impls[0]}") for i in impls[1:]]


def kv_cache(run: Run, case: Case) -> list:
    """Incremental decoding with the KV cache gives the full forward's logits."""
    prefix = case.edit
    if prefix == 0 or prefix >= case.tokens:
        return []
    x, mask, pos, real = run.padded(run.ids(case), case.pad_left, 0)
    start = real.start + prefix
    a = run.decode(x, mask, start)
    b = run.logits(x, mask, pos)[:, start:]
    return [Pair(a[0], b[0], f"tokens {prefix}.. decoded one by one after a cached prefix of {prefix}")]


def padding_nan(run: Run, case: Case) -> list:
    """No NaN reaches a real token from padding (fully masked padding rows included)."""
    if case.pad_left == 0 and case.pad_right == 0:
        return []
    x, mask, pos, real = run.padded(run.ids(case), case.pad_left, case.pad_right, case.pass_mask)
    a = run.logits(x, mask, pos)[0, real]
    b = run.logits(x[:1, :case.tokens], pass_mask=case.pass_mask)[0]
    return [Pair(torch.where(torch.isfinite(a), b, a), b, "real tokens' logits finite with padding")]


def _decoder(t: Traits):
    return None if t.causal else "bidirectional: every position sees every token"


def _padding(t: Traits):
    if t.takes_position_ids or t.positions in ("none", "alibi", "relative"):
        return None
    return f"{t.positions} positions and no position_ids argument: left padding shifts every position"


def _locality(t: Traits):
    if not t.causal:
        return "bidirectional"
    if not (t.sliding_window or t.attention_chunk_size or t.layer_types):
        return "no sliding window, chunk size or per-layer attention types in its config"
    return None


def _implementations(t: Traits):
    return None if len(t.implementations) > 1 else f"one attention implementation ({t.implementations[0]})"


def _cache(t: Traits):
    if not t.causal:
        return "bidirectional: no incremental decoding"
    return None if t.kv_cache else "declared without a KV cache"


def _always(t: Traits):
    return None


LAWS = {law.name: law for law in (
    Law("causality", causality, _decoder, causality.__doc__),
    Law("left_padding", left_padding, _padding, left_padding.__doc__),
    Law("right_padding", right_padding, _always, right_padding.__doc__),
    Law("batch_invariance", batch_invariance, _always, batch_invariance.__doc__),
    Law("window_locality", window_locality, _locality, window_locality.__doc__),
    Law("implementation_agreement", implementation_agreement, _implementations, implementation_agreement.__doc__),
    Law("kv_cache", kv_cache, _cache, kv_cache.__doc__),
    Law("padding_nan", padding_nan, _always, padding_nan.__doc__),
)}


# -- judging one example ----------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Verdict:
    judged: bool
    violated: bool = False
    gap: float = 0.0
    bound: float = 0.0
    where: str = ""


def precision(dtype: str, impls) -> float:
    """The unit roundoff a run in ``dtype`` computes at (float32's through :data:`FLOAT32_SOFTMAX`)."""
    if dtype == "float64" and any(i in FLOAT32_SOFTMAX for i in impls):
        return U["float32"]
    return U[dtype]


def compare(pairs_d: list, pairs_64: list, pairs_32: list, dtype: str, impls) -> Verdict:
    """The worst pair of the law's output in ``dtype`` against its derived bound (module docstring)."""
    u = precision(dtype, impls)
    worst = Verdict(judged=False)
    for pd, p64, p32 in zip(pairs_d, pairs_64, pairs_32):
        ok = torch.isfinite(p64.b) & torch.isfinite(pd.b) & torch.isfinite(p32.b)
        if not bool(ok.any()):
            continue
        scale = float(p64.b[ok].abs().max())
        err32 = float((p32.b[ok] - p64.b[ok]).abs().max())
        if err32 > FIRST_ORDER_LIMIT * max(scale, TINY["float64"]):
            continue          # float32 is not first-order close (routing flipped, say): no bound to derive
        bound = 2 * K * ((u / U["float32"]) * err32 + u * scale) + K * TINY[dtype]
        a, b = pd.a[ok], pd.b[ok]
        if not bool(torch.isfinite(a).all()):
            return Verdict(True, True, math.inf, bound, f"{pd.what}: non-finite where the reference is finite")
        gap = float((a - b).abs().max())
        v = Verdict(True, gap > bound, gap, bound, pd.what)
        if v.violated or not worst.judged or gap / bound > worst.gap / max(worst.bound, 1e-300):
            worst = v
        if v.violated:
            return v
    return worst


# -- building -------------------------------------------------------------------------------------------

class Builder:
    """Models per knobs, cached for one search: one per implementation, float64 and float32, same weights."""

    def __init__(self, build_config_fn: Callable, traits: Traits, seed: int):
        self.fn, self.traits, self.seed = build_config_fn, traits, seed
        self.cache: dict = {}

    def runs(self, knobs: Knobs, law: str) -> tuple:
        """(runs by dtype, None) or (None, reason the model could not be built)."""
        impls = ([knobs.attn] + [i for i in self.traits.implementations if i != knobs.attn]
                 if law == "implementation_agreement" else [knobs.attn])
        key = (knobs, tuple(impls))
        if key not in self.cache:
            self.cache[key] = self._build(knobs, impls)
        return self.cache[key]

    def _build(self, knobs: Knobs, impls: list) -> tuple:
        auto = transformers.AutoModelForCausalLM if self.traits.head == "causal_lm" else \
            transformers.AutoModelForMaskedLM
        try:
            config = self.fn(knobs)
            models, state = {}, None
            for impl in impls:
                torch.manual_seed(self.seed)
                m = auto.from_config(copy.deepcopy(config), attn_implementation=impl).eval()
                if state is None:
                    state = m.state_dict()
                else:
                    m.load_state_dict(state)
                models[impl] = m
        except Exception as err:      # noqa: BLE001 - any failure to build is the row's reason, stated
            return None, f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:300]
        runs = {"float32": Run({i: m.float() for i, m in models.items()}, config, self.traits, "float32")}
        runs["float64"] = Run({i: copy.deepcopy(m).double() for i, m in models.items()}, config, self.traits,
                              "float64")
        return runs, None


def check(law: Law, builder: Builder, case: Case, dtype: str) -> tuple:
    """(Verdict, None) for one example, or (None, the reason it could not be built or run)."""
    runs, why = builder.runs(case.knobs, law.name)
    if runs is None:
        return None, why
    try:
        p64 = law.fn(runs["float64"], case)
        p32 = law.fn(runs["float32"], case)
    except Exception as err:      # noqa: BLE001 - a model that cannot run the example: stated, judged nothing
        return None, f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:300]
    pd = p64 if dtype == "float64" else p32
    return compare(pd, p64, p32, dtype, list(runs[dtype].models)), None


# -- the search ---------------------------------------------------------------------------------------

def cases(traits: Traits, law: str | None = None):
    """The Hypothesis strategy of :class:`Case` for an architecture with ``traits`` (module docstring).

    For ``window_locality`` the draws are the ones it can judge: the window and the chunk size always on
    (where the architecture has them), per-layer types drawn from its windowed kinds only (a full layer
    reaches everything, so a model with one has no position beyond a token's field), and sequences from just
    past the drawn knobs' field (``LAYERS * max(w, chunk) + 2`` tokens) up to ``MAX_TOKENS``,
    so a shrunk counterexample is as short as its window allows.  Every other law draws the knobs on or off.
    """
    local = law == "window_locality"
    none_or = lambda s, on: (s if local else st.one_of(st.none(), s)) if on else st.none()  # noqa: E731
    kinds = traits.layer_types
    if local and any(k != "full_attention" for k in kinds):
        kinds = tuple(k for k in kinds if k != "full_attention")
    knobs = st.builds(
        Knobs,
        attn=st.sampled_from(traits.implementations),
        sliding_window=none_or(st.integers(1, MAX_WINDOW), traits.sliding_window),
        attention_chunk_size=none_or(st.integers(2, MAX_WINDOW), traits.attention_chunk_size),
        layer_types=none_or(st.tuples(*[st.sampled_from(kinds)] * LAYERS), bool(kinds)),
        kv_heads=st.sampled_from((HEAD_COUNT, 2, 1) if traits.gqa else (HEAD_COUNT,)),
    )

    @st.composite
    def case(draw):
        # half the draws (every window_locality draw) long enough for a window or chunk to leave
        # positions beyond a token's field
        long = st.integers(MAX_TOKENS // 2, MAX_TOKENS)
        if local:
            # from just past the drawn field (receptive_field: at most LAYERS windows or chunks) up: the
            # shrink then reaches the shortest sequence that still leaves a position beyond the field
            k = draw(knobs)
            w, c = k.sliding_window or 0, k.attention_chunk_size or 0
            n = draw(st.integers(min(MAX_TOKENS // 2, LAYERS * max(w, c) + 2), MAX_TOKENS))
        else:       # the other laws' draws as recorded in reports/hf-sweep (length first, then the knobs)
            n = draw(st.one_of(st.integers(2, MAX_TOKENS // 2), long))
            k = draw(knobs)
        return Case(knobs=k, tokens=n, batch=draw(st.integers(1, MAX_BATCH)),
                    pad_left=draw(st.integers(0, MAX_PAD)), pad_right=draw(st.integers(0, MAX_PAD)),
                    edit=draw(st.integers(0, n - 1)), pass_mask=draw(st.booleans()),
                    seed=draw(st.integers(0, 2 ** 16)))
    return case()


def _check_args(law_name, traits, dtype, examples):
    if law_name not in LAWS:
        raise InvalidArgument(f"--law: expected one of {', '.join(LAWS)}, got {law_name!r}")
    if not isinstance(traits, Traits):
        raise InvalidArgument(f"traits: expected a Traits, got {type(traits).__name__}")
    if dtype not in DTYPES:
        raise InvalidArgument(f"--dtype: expected one of {DTYPES}, got {dtype!r}")
    if not isinstance(examples, int) or examples < 1:
        raise InvalidArgument(f"--examples: expected a positive int, got {examples!r}")


def judge(law_name: str, build_config_fn: Callable, traits: Traits, *, dtype: str = "float64",
          examples: int = EXAMPLES, seed: int = 0, version: str | None = None) -> Result:
    """Search ``examples`` seeded cases for a violation of law ``law_name`` (module docstring)."""
    _check_args(law_name, traits, dtype, examples)
    if version is not None:
        return _pinned("judge", dict(law_name=law_name, build_config_fn=build_config_fn, traits=traits,
                                     dtype=dtype, examples=examples, seed=seed), version)
    require()
    law = LAWS[law_name]
    here = transformers.__version__
    reason = law.applies(traits)
    if reason is not None:
        return Result(law_name, Status.NOT_APPLICABLE, reason, dtype, here)
    builder = Builder(build_config_fn, traits, seed)
    state = {"n": 0, "judged": 0, "first": None, "last": None, "unbuilt": None, "built": 0}
    t0 = time.perf_counter()

    @hseed(seed)
    @settings(max_examples=examples, database=None, deadline=None, derandomize=False, print_blob=False,
              suppress_health_check=list(HealthCheck))
    @given(cases(traits, law_name))
    def search(case):
        state["n"] += 1
        verdict, why = check(law, builder, case, dtype)
        if verdict is None:
            state["unbuilt"] = why
            return
        state["built"] += 1
        if not verdict.judged:
            return
        state["judged"] += 1
        if verdict.violated:
            if state["first"] is None:
                state["first"] = (state["n"], time.perf_counter() - t0)
            state["last"] = (case, verdict)
            raise AssertionError(verdict.where)

    try:
        with one_thread():
            search()
    except AssertionError:
        pass
    seconds = time.perf_counter() - t0
    base = dict(law=law_name, dtype=dtype, version=here, examples=state["n"], judged=state["judged"],
                seconds=round(seconds, 3))
    if state["last"] is not None:
        case, v = state["last"]
        n, s = state["first"]
        return Result(status=Status.VIOLATED, detail=f"{v.where}: |a - b| = {v.gap:.3g} > bound {v.bound:.3g}",
                      counterexample=case, gap=v.gap, bound=v.bound, examples_to_first=n,
                      seconds_to_first=round(s, 3), **base)
    if state["built"] == 0:
        return Result(status=Status.COULD_NOT_BUILD, detail=state["unbuilt"] or "no example built", **base)
    if state["judged"] == 0:
        return Result(status=Status.INCONCLUSIVE, detail="no example compared anything (every draw outside the "
                      "law's reach, or float32 not first-order close to float64)", **base)
    note = f" ({state['n'] - state['built']} draws could not build: {state['unbuilt']})" if state["unbuilt"] else ""
    return Result(status=Status.HOLDS, detail=f"{state['judged']} of {state['n']} examples judged, none violated"
                  + note, **base)


def judge_laws(law_names, build_config_fn: Callable, traits: Traits, *, dtype: str = "float64",
               examples: int = EXAMPLES, seed: int = 0, version: str | None = None) -> list:
    """:func:`judge` for each of ``law_names`` (one subprocess for all of them under a pinned version)."""
    law_names = list(law_names)
    for name in law_names:
        _check_args(name, traits, dtype, examples)
    if version is not None:
        return _pinned("judge_laws", dict(law_names=law_names, build_config_fn=build_config_fn, traits=traits,
                                          dtype=dtype, examples=examples, seed=seed), version)
    return [judge(name, build_config_fn, traits, dtype=dtype, examples=examples, seed=seed) for name in law_names]


def replay(law_name: str, build_config_fn: Callable, traits: Traits, case: Case, *, dtype: str = "float64",
           seed: int = 0, version: str | None = None) -> Result:
    """Run one stored counterexample again (the same model seed, inputs and knobs)."""
    _check_args(law_name, traits, dtype, 1)
    if not isinstance(case, Case):
        raise InvalidArgument(f"case: expected a Case, got {type(case).__name__}")
    if version is not None:
        return _pinned("replay", dict(law_name=law_name, build_config_fn=build_config_fn, traits=traits,
                                      case=case, dtype=dtype, seed=seed), version)
    require()
    law = LAWS[law_name]
    here = transformers.__version__
    reason = law.applies(traits)
    if reason is not None:
        return Result(law_name, Status.NOT_APPLICABLE, reason, dtype, here)
    t0 = time.perf_counter()
    with one_thread():
        v, why = check(law, Builder(build_config_fn, traits, seed), case, dtype)
    base = dict(law=law_name, dtype=dtype, version=here, examples=1, seconds=round(time.perf_counter() - t0, 3))
    if v is None:
        return Result(status=Status.COULD_NOT_BUILD, detail=why, **base)
    if not v.judged:
        return Result(status=Status.INCONCLUSIVE, detail="the case compares nothing", **base)
    status = Status.VIOLATED if v.violated else Status.HOLDS
    return Result(status=status, detail=f"{v.where}: |a - b| = {v.gap:.3g}, bound {v.bound:.3g}", judged=1,
                  counterexample=case if v.violated else None, gap=v.gap, bound=v.bound,
                  examples_to_first=1 if v.violated else None,
                  seconds_to_first=base["seconds"] if v.violated else None, **base)


# -- a pinned version: the same call in a subprocess -------------------------------------------------

def _pinned(what: str, kwargs: dict, version: str):
    pin = pins.install(f"transformers=={version}")
    request = base64.b64encode(pickle.dumps((what, kwargs))).decode()
    reply = json.loads(pins.run_module(pin, __name__, "_child", request))
    results = [dataclasses.replace(Result.from_json(r), setup=tuple(pin.actions)) for r in reply]
    return results if what == "judge_laws" else results[0]


_CALLS = {"judge": judge, "replay": replay, "judge_laws": judge_laws}


def _child(request: str) -> str:
    """The subprocess side of a pinned run: a pickled (what, kwargs) in, a JSON list of Results out."""
    what, kwargs = pickle.loads(base64.b64decode(request))
    got = _CALLS[what](**kwargs)
    return json.dumps([r.to_json() for r in (got if isinstance(got, list) else [got])])

