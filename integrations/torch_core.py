"""torch's attention at the core, declared with ``declare_core``: SDPA per backend, nn.MultiheadAttention paths,
FlexAttention's eager path.

SDPA (``torch.nn.functional.scaled_dot_product_attention``), one implementation per backend, each
pinned with ``torch.nn.attention.sdpa_kernel``:

* ``sdpa_math``: the reference backend, every keyword, grouped heads, Ev != E;
* ``sdpa_flash_cpu``: the CPU flash kernel (Ev = E only: it refuses Ev != E); two findings recorded as
  expected violations: a NaN in a query row gives 0 instead of NaN (pytorch issue 141128), and a value
  with more rows than the key is accepted, returning a tensor (pytorch PR 193728: the kernel takes the key
  count from the value and reads past the key);
* ``sdpa_efficient`` / ``sdpa_cudnn`` / ``sdpa_flash_cuda``: CUDA kernels; not runnable on a machine
  without a CUDA GPU (the reason is each row's status).

``nn.MultiheadAttention`` and ``F.multi_head_attention_forward`` at the core: identity in- and
out-projections with zero biases (so the module computes attention of the given q, k, v themselves,
H heads of width E as one embedding of H * E), the module's default scale 1 / sqrt(E), a mask given in
the module's own convention (a bool mask's True means *hidden* there; the wrapper converts).  Each path
is its own implementation, and every one must agree with ``mha_sdpa`` (``core_paths_agree``):

* ``mha_sdpa``: need_weights=False in training mode (dropout 0): the SDPA path;
* ``mha_weights`` / ``mha_weights_per_head``: need_weights=True, average_attn_weights True / False: the
  explicit softmax path, which gives NaN for a fully masked row (pytorch issue 160064, expected violation);
* ``mha_seq_first``: batch_first=False;
* ``mha_key_padding``: a key_padding_mask alone (masks shaped (B, 1, 1, S));
* ``mha_key_padding_attn``: a key_padding_mask (the keys a batch element hides from every row) with the
  attn_mask;
* ``mha_functional``: ``F.multi_head_attention_forward`` with the same weights.

* ``mha_fast_path``: the eval fast path, the module's own ``torch._native_multi_head_attention`` call (the
  module takes it only when query, key and value are one tensor; the kernel takes three of one shape, so the
  path is declared square, L = S): a fully masked row gives NaN (pytorch PR 190486, open, expected violation).

``flex_eager``: FlexAttention called eagerly with identity mods (no score_mod, no block_mask); it has no CPU
backward, so its ``core_gradient`` row is not runnable here.
"""
from __future__ import annotations

import functools
import warnings

import torch
import torch.nn.attention
import torch.nn.functional as F

from tokenlaw.operators.core import declare_core
from tokenlaw.operators.errors import NotRunnableHere
from tokenlaw.operators.flex import flex_api

_CUDA = "needs a CUDA GPU (torch.cuda.is_available() is False on this machine)"


def _sdpa_on(backend_name: str, device: str = "cpu"):
    def sdpa(q, k, v, *, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
        # through the torch module, not a global of this file: a worker unpickles the closure (Dask ships a
        # user's registry by value) and SDPBackend itself does not pickle
        attention = torch.nn.attention
        backend = getattr(attention.SDPBackend, backend_name)
        dev = torch.device(device)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)     # "kernel not used because": the error says it
            with attention.sdpa_kernel(backend):
                out = F.scaled_dot_product_attention(q.to(dev), k.to(dev), v.to(dev),
                                                     attn_mask=None if attn_mask is None else attn_mask.to(dev),
                                                     is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
        return out.to(q.device)
    sdpa.__name__ = f"sdpa_{backend_name.lower()}"
    return sdpa


_SDPA = dict(mask_with_causal=False, causal="top_left", masked_row=0.0)

sdpa_math = declare_core("sdpa_math", _sdpa_on("MATH"), conventions=_SDPA)

sdpa_flash_cpu = declare_core(
    "sdpa_flash_cpu", _sdpa_on("FLASH_ATTENTION"), conventions=_SDPA, distinct_ev=False, agrees_with=sdpa_math,
    violates={
        "core_nan": "pytorch issue 141128: the CPU flash kernel gives 0, not NaN, for a NaN in a query row "
                    "(the math backend propagates it)",
        "core_shape_contract": "pytorch PR 193728 (open): CPU flash takes the key count from v, so a v longer "
                               "than k is accepted and a tensor returned (math refuses it)",
    })


def _cuda_sdpa(name: str, backend: str):
    why = None if torch.cuda.is_available() else _CUDA
    return declare_core(name, _sdpa_on(backend, "cuda"), conventions=_SDPA, not_runnable=why,
                        agrees_with=sdpa_math, distinct_ev=backend != "FLASH_ATTENTION")


sdpa_efficient = _cuda_sdpa("sdpa_efficient", "EFFICIENT_ATTENTION")
sdpa_cudnn = _cuda_sdpa("sdpa_cudnn", "CUDNN_ATTENTION")
sdpa_flash_cuda = _cuda_sdpa("sdpa_flash_cuda", "FLASH_ATTENTION")


# -- nn.MultiheadAttention ---------------------------------------------------------------------------
@functools.lru_cache(maxsize=64)
def _module(embed: int, heads: int, dtype: torch.dtype, batch_first: bool) -> torch.nn.MultiheadAttention:
    """An nn.MultiheadAttention whose projections are identities with zero biases."""
    m = torch.nn.MultiheadAttention(embed, heads, batch_first=batch_first, dtype=dtype)
    with torch.no_grad():
        m.in_proj_weight.copy_(torch.eye(embed, dtype=dtype).repeat(3, 1))
        m.in_proj_bias.zero_()
        m.out_proj.weight.copy_(torch.eye(embed, dtype=dtype))
        m.out_proj.bias.zero_()
    return m


def _to_module(mask, b: int, h: int, L: int, S: int):
    """A core mask (bool True = visible, or additive) in the module's convention: (L, S) or (B * H, L, S),
    bool True = hidden, or the same additive floats."""
    if mask is None:
        return None
    m = ~mask if mask.dtype == torch.bool else mask
    return m if m.dim() == 2 else m.expand(b, h, L, S).reshape(b * h, L, S)


def _mha_path(*, need_weights=False, average=True, batch_first=True, padding=None, functional=False):
    """The core function of one path of nn.MultiheadAttention (module docstring)."""
    def mha(q, k, v, *, attn_mask=None):
        b, h, L, e = q.shape
        S = k.shape[2]
        embed = h * e
        m = _module(embed, h, q.dtype, batch_first)
        m.train()

        def tokens(t):
            x = t.transpose(1, 2).reshape(t.shape[0], t.shape[2], t.shape[1] * t.shape[3])
            return x if batch_first else x.transpose(0, 1)
        kpm, mask = None, attn_mask
        if padding == "alone" and attn_mask is not None:
            kpm = ~attn_mask.reshape(attn_mask.shape[0], attn_mask.shape[-1])      # (B, 1, 1, S) -> (B, S)
            mask = None
        elif padding == "with_mask" and attn_mask is not None and attn_mask.dtype == torch.bool:
            full = attn_mask.expand(b, h, L, S)
            kpm = ~full.any(dim=(1, 2))                              # keys no row of batch b sees
        am = _to_module(mask, b, h, L, S)
        if functional:
            out, _ = F.multi_head_attention_forward(
                tokens(q).transpose(0, 1) if batch_first else tokens(q), *(
                    tokens(t).transpose(0, 1) if batch_first else tokens(t) for t in (k, v)),
                embed, h, m.in_proj_weight, m.in_proj_bias, None, None, False, 0.0, m.out_proj.weight,
                m.out_proj.bias, training=True, key_padding_mask=kpm, need_weights=need_weights, attn_mask=am,
                average_attn_weights=average)
            out = out.transpose(0, 1)
        else:
            out, _ = m(tokens(q), tokens(k), tokens(v), attn_mask=am, key_padding_mask=kpm,
                       need_weights=need_weights, average_attn_weights=average)
            out = out if batch_first else out.transpose(0, 1)
        return out.reshape(b, L, h, e).transpose(1, 2)
    return mha


_MHA = dict(mask_shapes=("full", "square"), masked_row=0.0)
_MHA_SHAPES = dict(gqa=False, distinct_ev=False)
_ISSUE_160064 = ("pytorch issue 160064 (open): need_weights=True runs an explicit softmax that gives NaN for a "
                 "fully masked row or head, where the module's need_weights=False path gives 0")
_ALL_NAN = ("pytorch issue 160064 (open): the NaN of a fully masked head reaches every head's output through "
            "out_proj (the issue's 'all NaN'), so rows that see keys are NaN too")
_WEIGHTS = {"core_masked_row": _ISSUE_160064, "core_paths_agree": _ISSUE_160064, "core_formula": _ALL_NAN,
            "core_key_permutation": _ALL_NAN, "core_mask_forms": _ALL_NAN,
            "core_gradient": "pytorch issue 160064 (open): the NaN output of a fully masked row or head is NaN in "
                             "the gradients too (d/dv of every key it reaches through out_proj)"}
_NAN_141128 = {"core_nan": "pytorch issue 141128: need_weights=False runs SDPA, whose CPU flash kernel gives 0, "
                          "not NaN, for a NaN in a query row"}

mha_sdpa = declare_core("mha_sdpa", _mha_path(), conventions=_MHA, violates=_NAN_141128, **_MHA_SHAPES)
mha_weights = declare_core("mha_weights", _mha_path(need_weights=True), conventions=_MHA, agrees_with=mha_sdpa,
                           violates=_WEIGHTS, **_MHA_SHAPES)
mha_weights_per_head = declare_core(
    "mha_weights_per_head", _mha_path(need_weights=True, average=False), conventions=_MHA, agrees_with=mha_sdpa,
    violates=_WEIGHTS, **_MHA_SHAPES)
mha_seq_first = declare_core("mha_seq_first", _mha_path(batch_first=False), conventions=_MHA, agrees_with=mha_sdpa,
                             violates=_NAN_141128, **_MHA_SHAPES)
mha_key_padding = declare_core("mha_key_padding", _mha_path(padding="alone"), agrees_with=mha_sdpa,
                               conventions=dict(mask_shapes=("padding",), mask_kinds=("bool",)),
                               violates=_NAN_141128, **_MHA_SHAPES)
mha_key_padding_attn = declare_core("mha_key_padding_attn", _mha_path(padding="with_mask"), agrees_with=mha_sdpa,
                                    conventions=dict(_MHA, mask_kinds=("bool",)), violates=_NAN_141128,
                                    **_MHA_SHAPES)
mha_functional = declare_core("mha_functional", _mha_path(functional=True), conventions=_MHA, agrees_with=mha_sdpa,
                              violates=_NAN_141128, **_MHA_SHAPES)


# -- the eval fast path -----------------------------------------------------------------------------
_PR_190486 = ("pytorch PR 190486 (open, 'Zero fully-masked rows in fastpath masked_softmax to match SDPA'): the "
              "eval fast path's masked softmax gives NaN for a fully masked row where the SDPA path gives 0")
_PR_190486_ALL = ("pytorch PR 190486 (open): the fast path's NaN row reaches every head's output through out_proj, "
                  "so rows that see keys are NaN too")


def _mha_fast(q, k, v, *, attn_mask=None):
    """nn.MultiheadAttention's eval fast path: in eval mode under no_grad, the mask canonicalised and merged as
    the module's forward does, then ``torch._native_multi_head_attention`` (the call the forward makes).  The
    module itself takes it only when query, key and value are one tensor; the kernel takes three of one shape,
    so the path is declared square (L = S) with Ev = E."""
    b, h, L, e = q.shape
    m = _module(h * e, h, q.dtype, True)
    m.eval()

    def tokens(t):
        return t.transpose(1, 2).reshape(t.shape[0], t.shape[2], t.shape[1] * t.shape[3])
    am = _to_module(attn_mask, b, h, L, k.shape[2])
    if am is not None:
        am = F._canonical_mask(mask=am, mask_name="attn_mask", other_type=None, other_name="",
                               target_type=q.dtype, check_other=False)
    with torch.no_grad():
        merged, kind = m.merge_masks(am, None, tokens(q))
        out, _ = torch._native_multi_head_attention(
            tokens(q), tokens(k), tokens(v), m.embed_dim, m.num_heads, m.in_proj_weight, m.in_proj_bias,
            m.out_proj.weight, m.out_proj.bias, merged, False, True, kind)
    return out.reshape(b, L, h, e).transpose(1, 2)


mha_fast_path = declare_core(
    "mha_fast_path", _mha_fast, conventions=dict(_MHA, mask_kinds=("bool",)), agrees_with=mha_sdpa, square=True,
    backward=False, violates={"core_masked_row": _PR_190486, "core_paths_agree": _PR_190486,
                              "core_formula": _PR_190486_ALL, "core_key_permutation": _PR_190486_ALL},
    **_MHA_SHAPES)


# -- FlexAttention, eager, identity mods ------------------------------------------------------------
def _flex_eager(q, k, v, *, scale=None, enable_gqa=False):
    """``flex_attention`` called eagerly with no score_mod and no block_mask (identity mods): flex's own dense
    body.  Inference only: flex has no CPU backward ("FlexAttention does not support backward on CPU")."""
    flex = flex_api()                  # imported on first use (it loads torch._dynamo: seconds)
    if torch.is_grad_enabled() and q.device.type == "cpu" and any(t.requires_grad for t in (q, k, v)):
        raise NotRunnableHere("FlexAttention does not support backward on CPU (torch's NotImplementedError)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return flex.flex_attention(q, k, v, scale=scale, enable_gqa=enable_gqa)


flex_eager = declare_core("flex_eager", _flex_eager, agrees_with=sdpa_math)
