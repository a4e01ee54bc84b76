"""Every causal-LM architecture of the installed ``transformers``, built tiny from its config.

:func:`architectures` lists them from transformers' own auto mapping (``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``:
200 in 5.25), so a new release's architectures join the sweep without a line here.  :func:`tiny_config`
shrinks an architecture's default config generically, attribute by attribute (:data:`SHRINK`: widths,
layers, heads, vocabulary, intermediate sizes, experts, low-rank and state sizes), recursing into its
sub-configs (a multimodal model's ``text_config`` and ``vision_config``), and :data:`OVERRIDES` holds the
few per-family facts the generic rule cannot know.  :func:`build` makes the model, random, on the CPU, in
the given dtype; an architecture that cannot be built tiny is reported with the reason
(:class:`NotBuilt`), never dropped.

:func:`facts` reads what an architecture *is* from its config and its model (never from a law's
result): whether its attention is causal, its kind of positions, whether it takes position ids, its
window / chunk / per-layer types, whether it routes tokens to experts, which attention implementations
it supports; :func:`knobs` says which config knobs the search may draw for it.

Example::

    >>> arch = Arch("llama")
    >>> cfg = tiny_config(arch)
    >>> cfg.hidden_size, cfg.num_hidden_layers
    (32, 2)
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import io
import sys
import warnings

import torch

try:
    import transformers  # optional: pip install 'tokenlaw[hf]'
except ImportError:       # hidden or absent: every entry point calls require() first
    transformers = None

from tokenlaw.operators.errors import InvalidArgument

from . import require
from .model_laws import LAYER_TYPES, Traits

WIDTH, LAYERS, HEADS, KV_HEADS, VOCAB, POSITIONS = 32, 2, 4, 2, 128, 128

# attribute name -> its tiny value (a config's attribute of that name is set when the config has it)
SHRINK = {
    **dict.fromkeys(("hidden_size", "d_model", "n_embd", "n_embed", "embed_dim", "dim", "hidden_dim",
                     "word_embed_proj_dim", "embedding_size", "model_dim", "d_embed"), WIDTH),
    **dict.fromkeys(("num_hidden_layers", "n_layer", "n_layers", "num_layers", "decoder_layers",
                     "encoder_layers", "num_decoder_layers", "num_encoder_layers"), LAYERS),
    **dict.fromkeys(("num_attention_heads", "n_head", "n_heads", "num_heads", "decoder_attention_heads",
                     "encoder_attention_heads", "num_decoder_attention_heads"), HEADS),
    **dict.fromkeys(("num_key_value_heads", "n_kv_heads", "num_kv_heads", "multi_query_group_num",
                     "num_key_value_groups_ignored"), KV_HEADS),
    "head_dim": WIDTH // HEADS, "kv_channels": WIDTH // HEADS, "attention_head_dim": WIDTH // HEADS,
    "global_head_dim": WIDTH // HEADS,
    **dict.fromkeys(("intermediate_size", "ffn_dim", "n_inner", "decoder_ffn_dim", "encoder_ffn_dim",
                     "ffn_hidden_size", "d_ff", "mlp_dim", "dff", "filter_size", "d_inner"), 2 * WIDTH),
    **dict.fromkeys(("moe_intermediate_size", "shared_expert_intermediate_size", "expert_intermediate_size",
                     "intermediate_size_mlp", "ffn_dim_moe", "moe_ffn_hidden_size", "expert_dim",
                     "shared_intermediate_size", "intermediate_size_moe"), WIDTH),
    **dict.fromkeys(("vocab_size", "n_vocab", "text_vocab_size"), VOCAB),
    **dict.fromkeys(("max_position_embeddings", "n_positions", "n_ctx", "max_seq_len",
                     "max_sequence_length", "seq_length", "max_target_positions",
                     "max_source_positions", "original_max_position_embeddings"), POSITIONS),
    **dict.fromkeys(("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts",
                     "num_experts_ignored"), 4),
    **dict.fromkeys(("num_experts_per_tok", "moe_topk", "num_experts_per_token", "top_k", "moe_k",
                     "router_top_k"), 2),
    **dict.fromkeys(("n_group", "topk_group", "n_shared_experts", "num_shared_experts",
                     "moe_num_shared_experts", "first_k_dense_replace", "moe_layer_start_index"), 1),
    **dict.fromkeys(("q_lora_rank", "kv_lora_rank"), 16),
    **dict.fromkeys(("qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"), 8),
    **dict.fromkeys(("state_size", "mamba_d_state", "ssm_state_size", "d_state"), 8),
    **dict.fromkeys(("mamba_n_heads",), 4),
    **dict.fromkeys(("mamba_d_head", "mamba_head_dim"), 16),
    **dict.fromkeys(("time_step_rank", "mamba_dt_rank"), 8),
    **dict.fromkeys(("n_groups", "mamba_n_groups"), 1),
    "num_buckets": 8,
}

# attributes a default config leaves None for the model to derive, set so the tiny model derives nothing odd
FILL = {"head_dim": WIDTH // HEADS}

# the per-family facts a generic rule cannot know (model_type -> attribute -> value)
OVERRIDES: dict[str, dict] = {}


@dataclasses.dataclass(frozen=True)
class Arch:
    """One causal-LM architecture: its ``model_type`` and the class the auto mapping names for it."""

    name: str
    class_name: str = ""

    def __post_init__(self):
        if not self.class_name:
            mapping = causal_lm_mapping()
            if self.name not in mapping:
                raise InvalidArgument(f"--arch: {self.name!r} is not a causal-LM architecture of transformers "
                                      f"{transformers.__version__} (see `tokenlaw hf sweep --list`)")
            object.__setattr__(self, "class_name", mapping[self.name])


class NotBuilt(Exception):
    """An architecture that could not be built tiny; ``str(err)`` is the reason the report shows."""


def causal_lm_mapping() -> dict[str, str]:
    """model_type -> causal-LM class name, as the installed transformers maps them."""
    require()
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES  # optional: as above
    return dict(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


def architectures(names=None) -> list[Arch]:
    """The architectures to sweep: ``names`` (None or ``["all"]``: every one, sorted)."""
    mapping = causal_lm_mapping()
    if names is None or list(names) == ["all"]:
        return [Arch(n, c) for n, c in sorted(mapping.items())]
    return [Arch(n) for n in names]


def _layer_count(d: dict) -> int | None:
    """The config's number of layers (the first layer-count attribute it has)."""
    for key in ("num_hidden_layers", "n_layer", "n_layers", "num_layers", "decoder_layers"):
        if isinstance(d.get(key), int):
            return d[key]
    return None


def _resample(seq: list, n: int) -> list:
    """A per-layer list cut to ``n`` layers that keeps every distinct kind it had (in first-seen order)."""
    kinds = list(dict.fromkeys(map(repr, seq)))
    firsts = {repr(v): v for v in reversed(seq)}
    n = max(n, len(kinds))
    if len(kinds) == 1:
        return [seq[0]] * n
    return [firsts[kinds[i % len(kinds)]] for i in range(n)]


def _shrink(d: dict, overrides: dict) -> dict:
    """The tiny version of one config's ``to_dict()`` (sub-config dicts shrunk too)."""
    old_layers = _layer_count(d)
    out = {}
    for key, value in d.items():
        if isinstance(value, dict) and "model_type" in value:
            value = _shrink(value, overrides)                                   # a sub-config
        elif key in SHRINK and isinstance(value, int) and not isinstance(value, bool):
            value = min(value, SHRINK[key]) if value > 0 else value
        elif key in SHRINK and isinstance(value, list) and all(isinstance(v, int) for v in value):
            value = [min(v, SHRINK[key]) for v in value]                        # a per-layer size
        elif key in FILL and value is None:
            value = FILL[key]                                                   # derived in the model
        out[key] = value
    heads, kv = d.get("num_attention_heads"), d.get("num_key_value_heads")
    if isinstance(heads, int) and isinstance(kv, int) and "num_key_value_heads" in out:
        # the kind of attention is kept: multi-head stays multi-head (MLA needs it), multi-query stays so
        out["num_key_value_heads"] = out["num_attention_heads"] if kv == heads else 1 if kv == 1 else KV_HEADS
    new_layers = _layer_count(out)
    for key, value in d.items():
        if old_layers and new_layers and isinstance(value, list) and len(value) == old_layers \
                and old_layers != new_layers and key not in SHRINK:
            out[key] = _resample(value, new_layers)                             # per-layer list
    if "layer_types" in out and isinstance(out["layer_types"], list) and new_layers:
        n = len(out["layer_types"])
        for key in ("num_hidden_layers", "n_layer", "n_layers", "num_layers", "decoder_layers"):
            if isinstance(out.get(key), int):
                out[key] = n
    for key, value in out.items():              # token ids must lie inside the tiny vocabulary
        if (key.endswith("_token_id") or key.endswith("_token_index")) and isinstance(value, int) \
                and value >= VOCAB:
            out[key] = VOCAB - 1 - (hash(key) % 8)
        elif (key.endswith("_token_id") or key.endswith("_token_ids")) and isinstance(value, list):
            out[key] = [v if not isinstance(v, int) or v < VOCAB else VOCAB - 1 for v in value]
    out.update(overrides.get(out.get("model_type"), {}))
    return out


def tiny_config(arch: Arch, **knobs):
    """The architecture's default config, shrunk (:data:`SHRINK`, :data:`OVERRIDES`), with ``knobs`` set."""
    require()
    cls = model_class(arch).config_class          # a multimodal family's causal LM takes its text config
    with _quiet():
        d = _shrink(cls().to_dict(), OVERRIDES)
        for k in ("transformers_version", "architectures", "_name_or_path"):
            d.pop(k, None)
        d.update(knobs)
        return cls(**d)


@contextlib.contextmanager
def _quiet():
    """Silence transformers' advice and Python warnings while building (a sweep builds 200 models)."""
    level = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        transformers.logging.set_verbosity(level)


def model_class(arch: Arch):
    """The causal-LM class the auto mapping names for ``arch``."""
    require()
    return getattr(transformers, arch.class_name)


def build(arch: Arch, *, dtype=torch.float64, seed: int = 0, config=None, attn_implementation=None,
          experts_implementation=None):
    """A random tiny ``arch`` on the CPU in ``dtype`` (eval mode); :class:`NotBuilt` with the reason if it cannot.

    experts_implementation: a mixture of experts' kernel; None: ``"eager"`` in float64 (transformers' default
    ``grouped_mm`` takes no float64 on the CPU), transformers' own choice otherwise.
    """
    try:
        config = tiny_config(arch) if config is None else config
        if attn_implementation is not None:
            config._attn_implementation = attn_implementation
        if experts_implementation is None and dtype == torch.float64:
            experts_implementation = "eager"
        if experts_implementation is not None:
            config._experts_implementation = experts_implementation
        torch.manual_seed(seed)
        with _quiet():
            model = model_class(arch)(config)
        return model.to(dtype).eval()
    except Exception as err:  # noqa: BLE001 -- any failure to build is the row's reason
        raise NotBuilt(_reason(err)) from err


def _reason(err: BaseException) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    return f"{type(err).__name__}: {text[:200]}"


# -- what an architecture is ----------------------------------------------------------------------------

# what a family's code says and neither its config nor its modules declare (read from the modeling file)
DECLARED = {
    "cpmant": dict(causal=False, why="CpmAntModel.forward builds its mask with context = all ones "
                   "(_prepare_attention_mask): every token attends every token; attention_mask is a "
                   "'dummy parameter for text-generation pipeline' (padding is read from ids == 0)"),
}

# families whose code computes part of the model in float32 whatever the dtype (read from the modeling file)
FLOAT32_INSIDE = {
    "deepseek_v32": "the DSA indexer scores in float32 (q.float() @ k.float(), modeling_deepseek_v32.py)",
}

# families whose forward takes attention_mask and ignores it (read from the modeling file)
IGNORES_ATTENTION_MASK = {
    "cpmant": "CpmAntForCausalLM.forward: attention_mask is a 'dummy parameter for text-generation pipeline'",
}

CPU_FLEX = False          # see facts(): flex_attention is drawn only where it runs in both dtypes
EXPERT_COUNTS = ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")
POSITION_TABLES = ("wpe", "position_embeddings", "embed_positions", "pos_emb", "position_embedding",
                   "embed_position")


@dataclasses.dataclass(frozen=True)
class Facts:
    """An architecture's :class:`~.model_laws.Traits` and, per trait, where it was read from."""

    traits: object
    source: dict


def facts(arch: Arch):
    """The traits of ``arch`` read from its tiny config and its built model (:class:`NotBuilt` if it cannot).

    causal: an attention module declares ``is_causal`` True (BERT-style heads set it from ``is_decoder``);
    no module declaring it at all (a recurrent or state-space model) is causal by construction.
    positions: ``position_embedding_type`` relative_* -> relative; ALiBi in the config or the modeling
    code's attention bias -> alibi; a rotary module -> rotary; a learned position table -> absolute; else none.
    """
    try:
        config = tiny_config(arch)
    except Exception as err:  # noqa: BLE001 -- the reason is the row
        raise NotBuilt("its config cannot be shrunk: " + _reason(err)) from err
    model = build(arch, dtype=torch.float32, config=config)
    try:
        with torch.no_grad():
            model(input_ids=torch.randint(1, VOCAB, (1, 6)), attention_mask=torch.ones(1, 6, dtype=torch.long))
    except Exception as err:  # noqa: BLE001 -- the reason is the row
        raise NotBuilt("builds but its forward fails: " + _reason(err)) from err
    source = {}
    flags = [m.is_causal for m in model.modules() if isinstance(getattr(m, "is_causal", None), bool)]
    if arch.name in DECLARED:
        causal, source["causal"] = DECLARED[arch.name]["causal"], DECLARED[arch.name]["why"]
    elif flags:
        causal, source["causal"] = any(flags), f"{sum(flags)} of {len(flags)} attention modules declare is_causal"
    elif hasattr(config, "is_decoder"):
        causal, source["causal"] = bool(config.is_decoder), f"config.is_decoder={config.is_decoder}"
    elif isinstance(getattr(config, "causal", None), bool):
        causal, source["causal"] = config.causal, f"config.causal={config.causal} (the model builds its mask " \
                                                  "from it: XLM's get_masks is bidirectional unless causal)"
    else:
        causal, source["causal"] = True, "no attention module declares is_causal and no is_decoder: recurrent " \
                                         "/ state-space blocks, causal by construction"
    positions, source["positions"] = _positions(model, config)
    start, source["position_start"] = _position_start(model)
    params = inspect.signature(model.forward).parameters
    takes = "position_ids" in params
    source["takes_position_ids"] = f"forward({'position_ids, ' if takes else ''}...)"
    types = tuple(getattr(config, "layer_types", None) or ())
    window = hasattr(config, "sliding_window")
    drawable = tuple(dict.fromkeys(types + (("sliding_attention",) if window else ())))
    drawable = drawable if types and set(types) <= set(LAYER_TYPES) else ()
    source["layer_types"] = f"config.layer_types {sorted(set(types))}" if types else "no config.layer_types"
    chunk = hasattr(config, "attention_chunk_size")
    mla = getattr(config, "kv_lora_rank", None) is not None
    gqa = isinstance(getattr(config, "num_key_value_heads", None), int) and not mla
    moe = any(isinstance(getattr(config, k, None), int) and getattr(config, k) > 1 for k in EXPERT_COUNTS)
    cls = model_class(arch)
    impls = ("eager",) + (("sdpa",) if getattr(cls, "_supports_sdpa", False) else ())
    flex = getattr(cls, "_supports_flex_attn", False)
    # flex_attention on the CPU compiles through Inductor (minutes per shape under load) and takes no
    # float64, while one model serves both dtypes: a CPU sweep does not draw it, and says so
    source["implementations"] = (f"{arch.class_name}._supports_sdpa={getattr(cls, '_supports_sdpa', False)}, "
                                 f"_supports_flex_attn={flex}" + (" (flex_attention not drawn on the CPU)"
                                                                  if flex and not CPU_FLEX else ""))
    if flex and CPU_FLEX:
        impls += ("flex_attention",)
    cache = causal and ("past_key_values" in params or "cache" in params) and \
        bool(getattr(config, "use_cache", False))
    traits = Traits(causal=causal, positions=positions, takes_position_ids=takes, sliding_window=window,
                    attention_chunk_size=chunk, layer_types=drawable, gqa=gqa, moe=moe, kv_cache=cache,
                    implementations=impls, head="causal_lm", position_start=start)
    return Facts(traits, source)


def _position_start(model) -> tuple:
    """(position id of the first real token, where it was read): a module whose class numbers positions
    itself with ``create_position_ids_from_input_ids`` (fairseq's ``make_positions``, the RoBERTa family:
    ``padding_idx + 1 + cumsum`` over the non-padding ids) starts at its ``padding_idx + 1``; else 0."""
    for name, m in model.named_modules():
        pad = getattr(m, "padding_idx", None)
        if callable(getattr(type(m), "create_position_ids_from_input_ids", None)) and isinstance(pad, int) \
                and isinstance(getattr(m, "position_embeddings", None), torch.nn.Embedding):
            return pad + 1, (f"{name}: {type(m).__name__}.create_position_ids_from_input_ids numbers real tokens "
                             f"from padding_idx + 1 = {pad + 1}, padding at {pad}")
    return 0, "positions from 0 (no module numbers them from padding_idx)"


def _positions(model, config) -> tuple:
    kind = str(getattr(config, "position_embedding_type", "") or "")
    if kind.startswith("relative"):
        return "relative", f"config.position_embedding_type={kind!r}"
    if hasattr(config, "alibi"):
        if config.alibi:
            return "alibi", "config.alibi=True"
    elif _alibi_in_code(model):
        return "alibi", "the modeling code builds an ALiBi bias"
    names = [type(m).__name__ for m in model.modules()]
    if any("Rotary" in n for n in names):
        return "rotary", "a *Rotary* module"
    for name, m in model.named_modules():
        if isinstance(m, torch.nn.Embedding) and name.split(".")[-1] in POSITION_TABLES:
            return "absolute", f"a learned position table {name}"
    if any(k in config.to_dict() for k in ("rope_theta", "rope_parameters", "rotary_dim")) and \
            getattr(config, "rope_parameters", None):
        return "rotary", "config.rope_parameters (rotary applied in the attention code)"
    return "none", "no rotary module, position table or ALiBi"


def _alibi_in_code(model) -> bool:
    """Whether the model's modeling module builds an ALiBi bias (BLOOM, MPT): read from its source."""
    try:
        return "alibi" in inspect.getsource(sys.modules[type(model).__module__])
    except (OSError, TypeError, KeyError):
        return False


@functools.lru_cache(maxsize=None)
def computes_in_float32(name: str) -> bool:
    """Whether the family's modeling code casts to float32 outside the attention softmax (routers, linear
    attention and state-space kernels, norms): :data:`FLOAT32_INSIDE` or a ``.float()`` / ``torch.float32``
    line of its modeling file that is not a softmax."""
    if name in FLOAT32_INSIDE:
        return True
    try:
        code = inspect.getsource(sys.modules[model_class(Arch(name)).__module__])
    except (OSError, TypeError, KeyError, InvalidArgument):
        return False
    return any((".float()" in line or "torch.float32" in line) and "softmax" not in line
               for line in code.splitlines())


# -- the config a law's search builds ------------------------------------------------------------------

def config_for(name: str, knobs):
    """``arch``'s tiny config with the drawn :class:`~.model_laws.Knobs` written in (the laws' ``build_config_fn``).

    Only the knobs the architecture has are written (its traits gate what the search draws): the sliding
    window (its per-layer types re-derived by the config from it unless the layer types are drawn too),
    the chunk size, the per-layer types (the layer count follows them), the key/value head count.  A
    mixture of experts runs its ``eager`` experts (float64 and float32 share one model).
    """
    arch = Arch(name)
    cls = transformers.CONFIG_MAPPING[name]       # the class AutoModelForCausalLM maps to arch.class_name
    with _quiet():
        d = _shrink(cls().to_dict(), OVERRIDES)
    for k in ("transformers_version", "architectures", "_name_or_path"):
        d.pop(k, None)
    t = _knob_dict(d)
    if "sliding_window" in t:
        t["sliding_window"] = knobs.sliding_window
        if "use_sliding_window" in t:
            t["use_sliding_window"] = knobs.sliding_window is not None
            t["max_window_layers"] = 0
        if knobs.layer_types is None and _uniform_window_types(t.get("layer_types")):
            t.pop("layer_types", None)           # the config derives them from the window drawn
    if "attention_chunk_size" in t:
        t["attention_chunk_size"] = knobs.attention_chunk_size
    if knobs.layer_types is not None and "layer_types" in t:
        t["layer_types"] = list(knobs.layer_types)
        for key in ("num_hidden_layers", "n_layer", "n_layers", "num_layers", "decoder_layers"):
            if isinstance(t.get(key), int):
                t[key] = len(knobs.layer_types)
    if isinstance(t.get("num_key_value_heads"), int) and t.get("kv_lora_rank") is None:
        t["num_key_value_heads"] = knobs.kv_heads
    try:
        with _quiet():
            config = cls(**d)
    except Exception:  # noqa: BLE001 -- a config whose window must be an int: 'off' is every layer full
        if knobs.sliding_window is not None or "layer_types" not in cls().to_dict():
            raise
        n = _layer_count(d) or LAYERS
        d.update(sliding_window=cls().sliding_window, layer_types=["full_attention"] * n)
        with _quiet():
            config = cls(**d)
    config._experts_implementation = "eager"
    if not hasattr(config, "vocab_size"):         # a multimodal config: the laws read its text model's vocabulary
        config.vocab_size = config.get_text_config().vocab_size
    return config


KNOB_KEYS = ("sliding_window", "attention_chunk_size", "layer_types", "num_key_value_heads")


def _knob_dict(d: dict) -> dict:
    """Where the knobs live: the config itself, or, for a multimodal config that has none of them at its
    top (Llama 4, Qwen 3.5), its ``text_config`` (the traits were read from that text config)."""
    text = d.get("text_config")
    if isinstance(text, dict) and not any(k in d for k in KNOB_KEYS):
        return text
    return d


def _uniform_window_types(types) -> bool:
    """Per-layer types that only say 'full' or 'sliding' (derived from the window by such configs)."""
    return isinstance(types, list) and set(types) <= {"full_attention", "sliding_attention"}
