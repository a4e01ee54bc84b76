"""Laws of the attention core: what a q/k/v kernel declared with ``declare_core`` must do.

Each law judges the function itself (``OperatorSpec.core``, operators/core.py) on a drawn
:class:`~tokenlaw.properties.core_case.CoreCase` (``fuzz/core_strategies.py``): q (B, Hq, L, E),
k (B, Hkv, S, E), v (B, Hkv, S, Ev), a mask in one accepted kind and shape, is_causal and scale where
the function takes them.  The tensors are drawn in float64 and rounded to the cell's dtype.

The tolerance of the laws that compare two computations is derived, never fitted: for a row that sees
keys, the formula's float64 weights w, the worst score error of the visible keys
``ds = gamma(E + 6) * scale * |q| |k|^T (+ gamma(1) |additive bias|)`` and ``A = sum_j w_j |v_j|``::

    |out - exact| <= [ (e^(2 ds) - 1)(1 + g) + g ] A + u A,      g = gamma(2 S + E + 8) (1 + u) + u

(a perturbation of every score by at most ds moves each weight by a factor within e^(+-2 ds); the exp,
the row sum, the division, an online kernel's per-key rescaling and the weighted sum of S values each
add at most a unit roundoff per operation).  A comparison with the float64 formula adds the formula's
own bound at u = 2^-53; a comparison of two runs adds both runs' bounds.
"""
from __future__ import annotations

import dataclasses
import math

import torch

from tokenlaw.operators import dtypes as _dtypes
from tokenlaw.operators.core import formula, repeat_kv, visibility
from tokenlaw.operators.errors import NotRunnableHere

from . import core_backward as _backward
from . import tolerance as _tolerance
from . import verdict as V
from .contract import FuzzOptions, Gap, SymbolicOptions, contract
from .core_case import SHAPES

# Where the catalogue lists this module's laws (tokenlaw.properties.catalogue.laws_modules).
ORDER = 26

DTYPES = ("float32",)
_NO_SYMBOLIC = SymbolicOptions(none="a core kernel is a callable over tensors (any library, any backend): "
                                    "no real-arithmetic trace")
_PLAIN = FuzzOptions(core="plain")
_SQUARE = FuzzOptions(core="square")
_GROUPED = FuzzOptions(core="grouped")
_MASKED = FuzzOptions(core="masked")


def _not_runnable(op, dtype, backend):
    core = getattr(op, "core", None)
    if core is not None and core.not_runnable:
        return Gap(core.not_runnable)
    return None


def core_law(*, exact: bool, fuzz=_PLAIN, dtypes=DTYPES):
    return contract(exact=exact, needs={"core"}, dtypes=dtypes, skip=_not_runnable, fuzz=fuzz,
                    symbolic=_NO_SYMBOLIC)


# -- running and bounding ---------------------------------------------------------------------------
def _cast(t, dtype):
    if t is None or t.dtype == torch.bool:
        return t
    return t.to(dtype)


def run(case, q, k, v, core=None, **kw) -> torch.Tensor:
    """The core function on float64 q, k, v (and mask) rounded to the case's dtype; the output as float64."""
    core = case.core if core is None else core
    kw = case.keywords(**kw)
    kw["attn_mask"] = _cast(kw["attn_mask"], case.dtype)
    with torch.no_grad():
        out = core(_cast(q, case.dtype), _cast(k, case.dtype), _cast(v, case.dtype), **kw)
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"{case.op.name} returned {type(out).__name__}, not a tensor")
    return out.double()


def gamma(n: int, u: float) -> float:
    return n * u / (1 - n * u)


def bound(case, q, k, v, *, attn_mask, is_causal, scale, u: float):
    """(exact float64 output, its bound at unit roundoff ``u``, which rows see a key) for this call."""
    hq, S, E = q.shape[1], k.shape[2], q.shape[-1]
    sc = 1.0 / math.sqrt(E) if scale is None else scale
    kk, vv = repeat_kv(k, hq), repeat_kv(v, hq)
    ds = gamma(E + 6, u) * abs(sc) * (q.abs() @ kk.abs().transpose(-1, -2))
    if attn_mask is not None and attn_mask.dtype != torch.bool:
        ds = ds + gamma(1, u) * torch.where(attn_mask > -math.inf, attn_mask.abs(), torch.zeros_like(attn_mask))
    seen = visibility(attn_mask, q.shape[2], S, causal=is_causal, alignment=case.core.conventions.causal)
    seen = seen.expand(ds.shape)
    big = torch.where(seen, ds, torch.zeros_like(ds)).amax(-1, keepdim=True)
    # w from the formula itself: its weights are the formula with v = identity on the keys
    w = formula(q, k, torch.eye(S, dtype=torch.float64).expand(k.shape[0], k.shape[1], S, S), attn_mask=attn_mask,
                is_causal=is_causal, scale=scale, alignment=case.core.conventions.causal, masked_row=0.0)
    a = w.abs() @ vv.abs()
    g = gamma(2 * S + E + 8, u) * (1 + u) + u
    b = ((torch.expm1(2 * big) * (1 + g) + g) + u) * a
    exact = formula(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale,
                    alignment=case.core.conventions.causal, masked_row=case.core.conventions.masked_row)
    return exact, b, seen.any(-1)


def _u(case) -> float:
    return _dtypes.UNIT_ROUNDOFF[case.dtype]


def _worst(gap: torch.Tensor, allowed: torch.Tensor, rows: torch.Tensor) -> tuple:
    """(discrepancy / bound ratio summary): the worst (gap, bound, index) over the rows that see a key."""
    keep = rows[..., None].expand(gap.shape)
    if not bool(keep.any()):
        return 0.0, 0.0, None
    over = torch.where(keep, gap - allowed, torch.full_like(gap, -math.inf))
    nan = keep & gap.isnan()
    if bool(nan.any()):
        idx = tuple(int(i) for i in nan.nonzero()[0])
        return float("nan"), float(allowed[idx]), idx
    idx = tuple(int(i) for i in torch.nonzero(over == over.max())[0])
    return float(gap[idx]), float(allowed[idx]), idx


def _compare(what: str, a, b, allowed, rows) -> V.Verdict:
    gap = (a - b).abs()
    d, bd, idx = _worst(gap, allowed, rows)
    if idx is None:
        return V.Verdict(V.Status.HOLDS, 0.0, 0.0, f"{what}: no row sees a key", inconclusive=True)
    return V.judge(d, bd, f"{what}: worst |difference| {d:.3g} vs derived bound {bd:.3g} at (b, h, i, c) {idx}")


def _shape(case) -> str:
    mask = case.core_mask if case.core_mask == "none" else f"{case.core_mask} {case.mask_shape}"
    return (f"B {case.batch}, Hq {case.hq}, Hkv {case.hkv}, L {case.n}, S {case.s}, E {case.d}, Ev {case.ev}, "
            f"mask {mask}, causal {case.causal}, scale {case.scale_value}")


def _with(verdict: V.Verdict, case) -> V.Verdict:
    return dataclasses.replace(verdict, detail=f"{_shape(case)}: {verdict.detail}")


# -- the laws ------------------------------------------------------------------------------------
def _against_formula(case, what: str, **kw) -> V.Verdict:
    q, k, v = case.qkv
    out = run(case, q, k, v, **kw)
    kw = case.keywords(**kw)
    kw = dict(attn_mask=kw["attn_mask"], is_causal=kw["is_causal"], scale=kw["scale"])
    exact, b, rows = bound(case, q, k, v, u=_u(case), **kw)
    _, b64, _ = bound(case, q, k, v, u=_dtypes.UNIT_ROUNDOFF[torch.float64], **kw)
    if tuple(out.shape) != tuple(exact.shape):
        return V.violated(float("inf"), 0.0, f"{what}: output shape {tuple(out.shape)}, expected {tuple(exact.shape)}")
    return _compare(f"{what} vs the float64 formula", out, exact, b + b64, rows)


@core_law(exact=False)
def core_formula(case):
    """Every row that sees a key equals softmax(q k^T scale + mask) v within the derived rounding bound."""
    # the drawn call, and where it masks (a mask, is_causal) the same q, k, v unmasked: every key visible
    verdicts = [_against_formula(case, "the drawn call")]
    if case.attn_mask is not None or case.causal:
        verdicts.append(_against_formula(case, "unmasked", attn_mask=None, is_causal=False))
    worst = next((v for v in verdicts if v.violated), max(verdicts, key=lambda v: (not v.inconclusive, v.ratio)))
    return _with(worst, case)


@core_law(exact=True, fuzz=_MASKED)
def core_masked_row(case):
    """A row that sees no key (masked rows, a masked head, causal rows before the first key) gives the declared value."""
    q, k, v = case.qkv
    out = run(case, q, k, v)
    empty = ~case.seen().any(-1)
    if not bool(empty.any()):
        return _with(V.Verdict(V.Status.HOLDS, 0.0, 0.0, "no fully masked row drawn", inconclusive=True), case)
    want = case.core.conventions.masked_row
    rows = out[empty]
    bad = ~rows.isnan() if math.isnan(want) else (rows != want)
    n_bad = int(bad.any(-1).sum())
    where = [tuple(int(i) for i in ix) for ix in empty.nonzero()[:4]]
    detail = (f"{int(empty.sum())} fully masked rows (first (b, h, i): {where}); declared value {want:g}; "
              f"{n_bad} differ" + (f", e.g. {rows[bad.any(-1)][0][:4].tolist()}" if n_bad else ""))
    return _with(V.judge(float(n_bad), 0.0, detail), case)


def _hidden_change(case, seen, what: str) -> V.Verdict:
    """Change k and v at one key hidden from some rows; those rows' outputs stay bit-identical."""
    q, k, v = case.qkv
    j = case.pos % case.s
    hk = (case.pos // case.s) % case.hkv
    g = case.hq // case.hkv
    heads = slice(hk * g, (hk + 1) * g)
    rows = ~seen[:, heads, :, j]                                       # (B, g, L): rows of those heads hidden from j
    rows = rows & seen[:, heads].any(-1)                               # that still see some key
    if not bool(rows.any()):
        return V.Verdict(V.Status.HOLDS, 0.0, 0.0, f"key {j} of kv-head {hk} is hidden from no row that sees a key",
                         inconclusive=True)
    k2, v2 = k.clone(), v.clone()
    k2[:, hk, j] = case.random_like(k2[:, hk, j].shape, salt=11, scale=4.0)
    v2[:, hk, j] = case.random_like(v2[:, hk, j].shape, salt=12, scale=4.0)
    a, b = run(case, q, k, v)[:, heads], run(case, q, k2, v2)[:, heads]
    same = ((a == b) | (a.isnan() & b.isnan())).all(-1)
    bad = rows & ~same
    detail = f"{what}: key {j} of kv-head {hk} changed; {int(rows.sum())} rows hidden from it"
    if bool(bad.any()):
        ix = tuple(int(i) for i in bad.nonzero()[0])
        return V.violated(float((a - b).abs()[bad].nan_to_num(nan=math.inf).max()), 0.0,
                          f"{detail}: row (b, h-in-group, i) {ix} changed")
    return V.holds(0.0, 0.0, f"{detail}: unchanged")


@core_law(exact=True, fuzz=_MASKED)
def core_mask_respect(case):
    """A key the mask hides from row i never changes out_i (bit for bit)."""
    if case.attn_mask is None:
        return _with(V.Verdict(V.Status.HOLDS, 0.0, 0.0, "no mask drawn", inconclusive=True), case)
    return _with(_hidden_change(case, case.seen(), "mask"), case)


@core_law(exact=True)
def core_causality(case):
    """With is_causal, a key after row i under the declared alignment never changes out_i (bit for bit)."""
    case = _causal(case)
    return _with(_hidden_change(case, case.seen(), f"causal {case.core.conventions.causal}"), case)


def _causal(case):
    """The case with is_causal=True (without its mask where the function refuses a mask with is_causal)."""
    if case.core.conventions.mask_with_causal:
        return dataclasses.replace(case, causal=True)
    return dataclasses.replace(case, causal=True, core_mask="none", hidden_rows=(), hidden_head=None)


def _two_runs(case, what, first, second, kw1, kw2, inputs1, inputs2=None) -> V.Verdict:
    """Both runs agree within the sum of their derived bounds on the rows that see a key."""
    inputs2 = inputs1 if inputs2 is None else inputs2
    a, b = first(), second()
    if tuple(a.shape) != tuple(b.shape):
        return V.violated(float("inf"), 0.0, f"{what}: output shapes {tuple(a.shape)} vs {tuple(b.shape)}")
    _, b1, rows = bound(case, *inputs1, u=_u(case), **kw1)
    _, b2, _ = bound(case, *inputs2, u=_u(case), **kw2)
    return _compare(what, a, b, b1 + b2, rows)


@core_law(exact=False, fuzz=_MASKED)
def core_mask_forms(case):
    """Every accepted form of one visibility (bool, additive 0/-inf, broadcast or expanded) gives one output."""
    if case.attn_mask is None:
        return _with(V.Verdict(V.Status.HOLDS, 0.0, 0.0, "no mask drawn", inconclusive=True), case)
    conv = case.core.conventions
    vis = case.visible
    q, k, v = case.qkv
    full = SHAPES["full"](case.batch, case.hq, case.n, case.s)
    forms = [(kind, "drawn", case.mask_as(kind, vis)) for kind in conv.mask_kinds]
    if "full" in conv.mask_shapes and case.mask_shape != "full":
        forms += [(kind, "expanded", case.mask_as(kind, vis.expand(full).contiguous())) for kind in conv.mask_kinds]
    base_kind, _, base = forms[0]
    kw = dict(is_causal=case.causal, scale=case.scale_value)
    results = []
    for kind, shape, m in forms[1:]:
        verdict = _two_runs(case, f"{base_kind} {case.mask_shape} vs {kind} {shape if shape == 'expanded' else case.mask_shape}",
                            lambda: run(case, q, k, v, attn_mask=base), lambda m=m: run(case, q, k, v, attn_mask=m),
                            dict(kw, attn_mask=base), dict(kw, attn_mask=m), (q, k, v))
        results.append(verdict)
    if not results:
        return _with(V.Verdict(V.Status.HOLDS, 0.0, 0.0, "one accepted form only", inconclusive=True), case)
    worst = next((r for r in results if r.violated), max(results, key=lambda r: r.ratio))
    return _with(dataclasses.replace(worst, detail=f"{len(results)} forms compared; {worst.detail}"), case)


@core_law(exact=False, fuzz=_GROUPED)
def core_gqa(case):
    """Grouped kv heads give the output of the explicitly repeated kv heads (q-head h reads h // (Hq / Hkv))."""
    if case.hkv == case.hq:
        return _with(V.Verdict(V.Status.HOLDS, 0.0, 0.0, "Hkv = Hq: no grouping drawn", inconclusive=True), case)
    q, k, v = case.qkv
    kr, vr = repeat_kv(k, case.hq), repeat_kv(v, case.hq)
    kw = dict(attn_mask=case.attn_mask, is_causal=case.causal, scale=case.scale_value)
    verdict = _two_runs(case, f"Hkv {case.hkv} grouped vs repeated to {case.hq}",
                        lambda: run(case, q, k, v), lambda: run(case, q, kr, vr, enable_gqa=False),
                        kw, kw, (q, k, v), (q, kr, vr))
    return _with(verdict, case)


@core_law(exact=False)
def core_scale(case):
    """attention(c q, k, scale s) = attention(q, k, scale c s): only scale * q k^T enters the scores."""
    q, k, v = case.qkv
    s = 1.0 / math.sqrt(case.d) if case.scale_value is None else case.scale_value
    c = (0.5, 2.0, 3.0)[case.perm_seed % 3]
    kw = dict(attn_mask=case.attn_mask, is_causal=case.causal)
    verdict = _two_runs(case, f"q * {c:g} at scale {s:g} vs q at scale {c * s:g}",
                        lambda: run(case, q * c, k, v, scale=s), lambda: run(case, q, k, v, scale=c * s),
                        dict(kw, scale=s), dict(kw, scale=c * s), (q * c, k, v), (q, k, v))
    return _with(verdict, case)


@core_law(exact=False, fuzz=_SQUARE)
def core_decode(case):
    """Row i of causal attention over L = S tokens equals attention of q_i alone against k, v up to i."""
    q, k, v = case.qkv
    i = case.pos % case.n
    kw = dict(is_causal=True, scale=case.scale_value, attn_mask=None)
    qi, ki, vi = q[:, :, i:i + 1], k[:, :, :i + 1], v[:, :, :i + 1]
    full = run(case, q, k, v, attn_mask=None, is_causal=True)[:, :, i:i + 1]
    alone = run(case, qi, ki, vi, attn_mask=None, is_causal=False)
    if tuple(full.shape) != tuple(alone.shape):
        return _with(V.violated(float("inf"), 0.0, f"shapes {tuple(full.shape)} vs {tuple(alone.shape)}"), case)
    _, b1, _ = bound(case, q, k, v, u=_u(case), **kw)
    _, b2, rows = bound(case, qi, ki, vi, u=_u(case), **dict(kw, is_causal=False))
    return _with(_compare(f"causal row {i} of {case.n} vs q_{i} alone against {i + 1} keys", full, alone,
                          b1[:, :, i:i + 1] + b2, rows), case)


@core_law(exact=True)
def core_batch_head_independence(case):
    """Changing another batch element's or another kv group's q, k, v leaves an output bit-identical."""
    q, k, v = case.qkv
    if case.batch == 1 and case.hkv == 1:
        return _with(V.Verdict(V.Status.HOLDS, 0.0, 0.0, "one batch element and one kv head", inconclusive=True), case)
    base = run(case, q, k, v)
    q2, k2, v2 = q.clone(), k.clone(), v.clone()
    g = case.hq // case.hkv
    if case.batch > 1 and (case.hkv == 1 or case.perm_seed % 2):
        b = case.pos % case.batch
        q2[b], k2[b], v2[b] = (t[b] * 2 + 1 for t in (q, k, v))
        keep = torch.ones(case.batch, dtype=torch.bool)
        keep[b] = False
        a, c, what = base[keep], run(case, q2, k2, v2)[keep], f"batch element {b} changed"
    else:
        h = case.pos % case.hkv
        q2[:, h * g:(h + 1) * g] = q[:, h * g:(h + 1) * g] * 2 + 1
        k2[:, h], v2[:, h] = k[:, h] * 2 + 1, v[:, h] * 2 + 1
        keep = torch.ones(case.hq, dtype=torch.bool)
        keep[h * g:(h + 1) * g] = False
        a, c, what = base[:, keep], run(case, q2, k2, v2)[:, keep], f"kv-head {h} and its q-heads changed"
    same = (a == c) | (a.isnan() & c.isnan())
    n_bad = int((~same).sum())
    return _with(V.judge(float(n_bad), 0.0, f"{what}: {n_bad} other output entries differ"), case)


@core_law(exact=False)
def core_key_permutation(case):
    """Permuting the keys with their values (and the mask's key axis) leaves every output unchanged."""
    q, k, v = case.qkv
    if case.causal:
        case = dataclasses.replace(case, causal=False)
    perm = case.permutation(case.s)
    m = case.attn_mask
    mp = None if m is None else (m if m.shape[-1] == 1 else m[..., perm])
    kw = dict(is_causal=False, scale=case.scale_value)
    verdict = _two_runs(case, f"keys permuted by {perm.tolist()[:8]}", lambda: run(case, q, k, v, attn_mask=m),
                        lambda: run(case, q, k[:, :, perm], v[:, :, perm], attn_mask=mp),
                        dict(kw, attn_mask=m), dict(kw, attn_mask=mp), (q, k, v), (q, k[:, :, perm], v[:, :, perm]))
    return _with(verdict, case)


@core_law(exact=True)
def core_nan(case):
    """A NaN in q_i, or in a key or value row i sees, makes out_i NaN; an inf in such a value, non-finite."""
    q, k, v = case.qkv
    seen = case.seen()
    which = ("q", "k", "v", "v_inf")[case.perm_seed % 4]
    bad_value, is_bad = math.nan, torch.isnan
    if which == "v_inf":
        which, bad_value, is_bad = "v", -math.inf if case.pos % 2 else math.inf, lambda t: ~torch.isfinite(t)
    b, e = case.pos % case.batch, case.pos % case.d
    q2, k2, v2 = q.clone(), k.clone(), v.clone()
    g = case.hq // case.hkv
    if which == "q":
        h, i = case.pos % case.hq, case.pos % case.n
        q2[b, h, i, e] = math.nan
        must = torch.zeros_like(seen[..., 0])
        must[b, h, i] = bool(seen[b, h, i].any())
        cols = slice(None)
        where = f"q[{b}, {h}, {i}, {e}]"
    else:
        hk, j = case.pos % case.hkv, case.pos % case.s
        c = case.pos % case.ev
        (k2 if which == "k" else v2)[b, hk, j, e if which == "k" else c] = bad_value
        must = torch.zeros_like(seen[..., 0])
        must[b, hk * g:(hk + 1) * g] = seen[b, hk * g:(hk + 1) * g, :, j]
        cols = slice(None) if which == "k" else slice(c, c + 1)
        where = f"{which}[{b}, {hk}, {j}, {e if which == 'k' else c}]"
    if not bool(must.any()):
        return _with(V.Verdict(V.Status.HOLDS, 0.0, 0.0, f"{bad_value} at {where}: no row reads it", inconclusive=True),
                     case)
    out = run(case, q2, k2, v2)[..., cols]
    missed = must & ~is_bad(out).all(-1)
    n_bad = int(missed.sum())
    what = "NaN" if bad_value != bad_value else f"{bad_value}"
    detail = (f"{what} at {where}: {int(must.sum())} rows read it, {n_bad} of them not "
              f"{'NaN' if what == 'NaN' else 'non-finite'}")
    if n_bad:
        ix = tuple(int(t) for t in missed.nonzero()[0])
        detail += f" (first (b, h, i) {ix}: {out[ix][:4].tolist()})"
    return _with(V.judge(float(n_bad), 0.0, detail), case)


MISMATCHES = ("kv_length", "head_dim", "batch", "head_count", "mask")


def _sized(t: torch.Tensor, dim: int, n: int) -> torch.Tensor:
    """``t`` with ``n`` entries along ``dim`` (its own repeated, cyclically)."""
    index = torch.arange(n) % t.shape[dim]
    return t.index_select(dim, index)


@core_law(exact=True)
def core_shape_contract(case):
    """Inconsistent q/k/v/mask shapes raise an error; a tensor is never returned for them."""
    q, k, v = case.qkv
    kinds = [m for m in MISMATCHES if m != "mask" or "attn_mask" in case.core.takes]
    kind = kinds[case.pos % len(kinds)]
    kw = {}
    if kind == "kv_length":
        v = torch.cat([v, v[:, :, :1]], dim=2)
        what = f"v has S + 1 = {case.s + 1} rows, k {case.s}"
    elif kind == "head_dim":
        k = torch.cat([k, k[..., :1]], dim=-1)
        what = f"k has E + 1 = {case.d + 1} columns, q {case.d}"
    elif kind == "batch":
        # neither side 1 (a batch of 1 broadcasts in torch's matmul): q batch b >= 2, k and v b + 1
        b = max(case.batch, 2)
        q = _sized(q, 0, b)
        k, v = _sized(k, 0, b + 1), _sized(v, 0, b + 1)
        what = f"k, v have batch {b + 1}, q {b}"
    elif kind == "head_count":
        # neither side 1 (one head broadcasts): Hq >= 2, Hkv >= 2 not dividing it
        hq = max(case.hq, 2)
        hkv = next(h for h in range(2, hq + 2) if hq % h)
        q, k, v = _sized(q, 1, hq), _sized(k, 1, hkv), _sized(v, 1, hkv)
        what = f"k, v have {hkv} heads, which does not divide Hq = {hq}"
        kw["enable_gqa"] = "enable_gqa" in case.core.takes
    else:
        kw["attn_mask"] = torch.ones(case.batch, case.hq, case.n, case.s + 1, dtype=torch.bool)
        what = f"a (B, Hq, L, S + 1) = {tuple(kw['attn_mask'].shape)} mask for S = {case.s}"
    kw.setdefault("attn_mask", None)
    try:
        out = run(case, q, k, v, **kw)
    except Exception as err:  # noqa: BLE001 (refusing is what the law asks; any error type refuses)
        return _with(V.holds(0.0, 0.0, f"{what}: refused ({type(err).__name__}: {str(err).splitlines()[0][:120]})"),
                     case)
    return _with(V.violated(1.0, 0.0, f"{what}: returned a tensor of shape {tuple(out.shape)}"), case)


@core_law(exact=False)
def core_paths_agree(case):
    """Two declared paths of one implementation give one output (rows seeing a key within both bounds, others equal)."""
    peer = case.core.peer
    if peer is None:
        return V.Verdict(V.Status.NOT_RUNNABLE, detail="no agrees_with= path declared")
    conv = peer.conventions
    if peer.not_runnable:
        return V.Verdict(V.Status.NOT_RUNNABLE, detail=f"{peer.name}: {peer.not_runnable}")
    outside = [why for why, bad in (
        ("its masks", case.core_mask != "none" and (case.core_mask not in conv.mask_kinds
                                                   or case.mask_shape not in conv.mask_shapes
                                                   or "attn_mask" not in peer.takes)),
        ("is_causal", case.causal and "is_causal" not in peer.takes),
        ("scale", case.scale_value is not None and "scale" not in peer.takes),
        ("grouped heads", case.hkv != case.hq and not peer.gqa),
        ("Ev != E", case.ev != case.d and not peer.distinct_ev),
        ("L != S", case.n != case.s and peer.square)) if bad]
    if outside:
        return _with(V.Verdict(V.Status.HOLDS, 0.0, 0.0, f"outside {peer.name}'s domain: {', '.join(outside)}",
                               inconclusive=True), case)
    if peer.conventions.causal != case.core.conventions.causal and case.causal and case.n != case.s:
        return _with(V.Verdict(V.Status.HOLDS, 0.0, 0.0, "the paths declare different causal alignments",
                               inconclusive=True), case)
    q, k, v = case.qkv
    a, b = run(case, q, k, v), run(case, q, k, v, core=peer)
    what = f"{case.op.name} vs {peer.name}"
    if tuple(a.shape) != tuple(b.shape):
        return _with(V.violated(float("inf"), 0.0, f"{what}: shapes {tuple(a.shape)} vs {tuple(b.shape)}"), case)
    kw = dict(attn_mask=case.attn_mask, is_causal=case.causal, scale=case.scale_value)
    _, b1, rows = bound(case, q, k, v, u=_u(case), **kw)
    empty = ~rows
    if bool(empty.any()):
        ea, eb = a[empty], b[empty]
        differ = ~((ea == eb) | (ea.isnan() & eb.isnan()))
        if bool(differ.any()):
            ix = tuple(int(t) for t in empty.nonzero()[int(differ.any(-1).nonzero()[0])])
            return _with(V.violated(math.inf, 0.0, f"{what}: fully masked row (b, h, i) {ix} gives "
                                                   f"{ea[differ.any(-1)][0][:3].tolist()} vs "
                                                   f"{eb[differ.any(-1)][0][:3].tolist()}"), case)
    return _with(_compare(what, a, b, 2 * b1, rows), case)


# -- gradients ------------------------------------------------------------------------------------
def _implementation_gradients(case, q, k, v, cotangent, kw) -> dict:
    """{leaf: float64 gradient} of sum(out * cotangent) from the function's own backward in the case's dtype."""
    leaves = [_cast(t, case.dtype).detach().requires_grad_(True) for t in (q, k, v)]
    kw = dict(kw, attn_mask=_cast(kw["attn_mask"], case.dtype))
    out = case.core(*leaves, **kw)
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"{case.op.name} returned {type(out).__name__}, not a tensor")
    if out.grad_fn is None:
        raise TypeError(f"{case.op.name} returned an output with no autograd graph (declare backward=False "
                        f"where the function has no backward)")
    grads = torch.autograd.grad(out, leaves, _cast(cotangent, case.dtype), allow_unused=True)
    return {name: (torch.zeros_like(t, dtype=torch.float64) if g is None else g.double())
            for name, t, g in zip(_backward.LEAVES, (q, k, v), grads)}


@core_law(exact=False)
def core_gradient(case):
    """The function's gradients w.r.t. q, k and v equal the float64 formula's within the derived backward bound."""
    # The bound (properties/core_backward.py) is the textbook backward's first-order rounding bound in the
    # case's dtype plus the float64 formula's own at u_64.  A leaf whose bound passes BOUND_FRACTION of its
    # own scale would pass a wrong gradient of that size: it decides nothing in this example.
    q, k, v = case.qkv
    kw = case.keywords()
    mask = kw["attn_mask"]
    seen = case.seen()
    bias = None
    if mask is not None and mask.dtype != torch.bool:
        bias = torch.where(mask > -math.inf, mask, torch.zeros_like(mask))
    if math.isnan(case.core.conventions.masked_row) and not bool(seen.any(-1).all()):
        return _with(V.Verdict(V.Status.HOLDS, 0.0, 0.0, "a fully masked row is declared NaN: it has no gradient",
                               inconclusive=True), case)
    sc = 1.0 / math.sqrt(case.d) if case.scale_value is None else case.scale_value
    cotangent = case.random_like((case.batch, case.hq, case.n, case.ev), salt=21)
    try:
        got = _implementation_gradients(case, q, k, v, cotangent, kw)
    except NotRunnableHere as why:            # no backward on this machine (FlexAttention on CPU)
        return V.Verdict(V.Status.NOT_RUNNABLE, detail=f"no backward here: {why}")
    low = _backward.gradients(q, k, v, cotangent, seen=seen, bias=bias, scale=sc, dtype=case.dtype)
    high = _backward.gradients(q, k, v, cotangent, seen=seen, bias=bias, scale=sc, dtype=torch.float64)
    verdicts, inconclusive = [], []
    for name in _backward.LEAVES:
        exact, allowed = high[name].v, low[name].e + high[name].e
        if tuple(got[name].shape) != tuple(exact.shape):
            return _with(V.violated(math.inf, 0.0, f"d/d{name}: shape {tuple(got[name].shape)}, expected "
                                                   f"{tuple(exact.shape)}"), case)
        top = float(exact.abs().max())
        if float(allowed.max()) > _tolerance.BOUND_FRACTION * top:
            inconclusive.append(name)
            continue
        gap = (got[name] - exact).abs()
        if bool(gap.isnan().any()):
            ix = tuple(int(i) for i in gap.isnan().nonzero()[0])
            verdicts.append(V.violated(math.nan, float(allowed[ix]), f"d/d{name} is NaN at {ix} (formula: "
                                                                     f"{float(exact[ix]):.3g})"))
            continue
        ratio = torch.where(allowed > 0, gap / allowed, torch.where(gap > 0, math.inf, 0.0))
        ix = tuple(int(i) for i in torch.nonzero(ratio == ratio.max())[0])
        verdicts.append(V.judge(float(gap[ix]), float(allowed[ix]),
                                f"d/d{name}: |diff| {float(gap[ix]):.3g} vs derived bound {float(allowed[ix]):.3g} "
                                f"at {ix} (scale {top:.3g})"))
    note = (f"; inconclusive for {inconclusive} (bound past {_tolerance.BOUND_FRACTION:.3g} of the gradient's "
            f"scale)" if inconclusive else "")
    if not verdicts:
        return _with(V.Verdict(V.Status.HOLDS, 0.0, 0.0, f"every gradient inconclusive{note}", inconclusive=True), case)
    worst = next((x for x in verdicts if x.violated), max(verdicts, key=lambda x: x.ratio))
    return _with(dataclasses.replace(worst, detail=worst.detail + note), case)
