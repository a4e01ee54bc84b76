"""Tiny Hugging Face models from a config, run from the hidden state right after their embeddings.

The closure relation inserts a null *hidden state*, so a model is called on
the stream its embeddings produce, not on token ids.  :class:`AfterEmbeddings`
does that without knowing the architecture: it calls the model on dummy ids
and a forward hook, first in line, swaps the embedding module's output for the
given hidden states ``h``.  Everything after it (masks, rotary tables, layers)
is the model's own code.  Which module ends the embeddings is a per-family
fact (:data:`EMBEDDING_OUTPUT`): GPT-2 adds its position table after ``wte``,
so its stream starts at ``drop``; BERT's ``embeddings`` ends with a LayerNorm.

The call arguments are the padding mask (bool, True = padding) and the
position ids, so the closure analyser grows both by their conventions
(``padding`` and ``positions`` of :mod:`tokenlaw.properties.mask_insertion`).
A 2-D attention mask is always passed: with none, Hugging Face reads position
ids that do not step by one as *packed sequences* and splits the batch rows.

Example::

    >>> ex = example("gpt2", layers=1, hidden=16, heads=2)
    >>> tuple(ex.x.shape)
    (2, 6, 16)
"""
from __future__ import annotations

import dataclasses

import torch
from torch import nn

try:
    import transformers  # optional: pip install 'tokenlaw[hf]'
except ImportError:       # hidden or absent: every entry point calls require() first
    transformers = None

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.integrations.closure.analyser import ClosureExample

from . import require

BATCH, TOKENS, VOCAB, SEED = 2, 6, 64, 0

# The module whose output is the token stream the layers read, per model_type.
EMBEDDING_OUTPUT = {"llama": "embed_tokens", "mistral": "embed_tokens", "qwen2": "embed_tokens",
                    "gpt2": "drop", "bert": "embeddings", "roberta": "embeddings"}
FAMILIES = ("llama", "bert", "gpt2")


@dataclasses.dataclass(frozen=True)
class Shape:
    """The size of a tiny model: ``--layers --hidden --heads --kv-heads`` (kv_heads: Llama's GQA)."""

    layers: int = 2
    hidden: int = 32
    heads: int = 4
    kv_heads: int | None = None

    def __post_init__(self):
        for name in ("layers", "hidden", "heads"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise InvalidArgument(f"--{name}: expected a positive int, got {v!r}")
        if self.hidden % self.heads:
            raise InvalidArgument(f"--heads: must divide --hidden {self.hidden}, got {self.heads}")
        if self.kv_heads is not None and (not isinstance(self.kv_heads, int) or self.kv_heads < 1
                                          or self.heads % self.kv_heads):
            raise InvalidArgument(f"--kv-heads: expected a positive divisor of --heads {self.heads}, "
                                  f"got {self.kv_heads!r}")


def config(family: str, shape: Shape = Shape(), attn: str = "sdpa"):
    """A ``transformers`` config of a tiny ``family`` model (no download)."""
    require()
    s = shape
    if family == "llama":
        cfg = transformers.LlamaConfig(hidden_size=s.hidden, intermediate_size=2 * s.hidden,
                                       num_hidden_layers=s.layers, num_attention_heads=s.heads,
                                       num_key_value_heads=s.kv_heads or s.heads, vocab_size=VOCAB,
                                       max_position_embeddings=128)
    elif family == "bert":
        cfg = transformers.BertConfig(hidden_size=s.hidden, intermediate_size=2 * s.hidden,
                                      num_hidden_layers=s.layers, num_attention_heads=s.heads, vocab_size=VOCAB,
                                      max_position_embeddings=128, hidden_dropout_prob=0.0,
                                      attention_probs_dropout_prob=0.0)
    elif family == "gpt2":
        cfg = transformers.GPT2Config(n_embd=s.hidden, n_layer=s.layers, n_head=s.heads, n_inner=2 * s.hidden,
                                      vocab_size=VOCAB, n_positions=128, bos_token_id=0, eos_token_id=0,
                                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    else:
        raise InvalidArgument(f"--hf-config: expected one of {', '.join(FAMILIES)}, got {family!r}")
    if s.kv_heads is not None and family != "llama":
        raise InvalidArgument(f"--kv-heads: only llama has key/value heads of their own, got --hf-config {family}")
    cfg._attn_implementation = attn
    return cfg


def build(family: str, shape: Shape = Shape(), *, seed: int = SEED, attn: str = "sdpa") -> nn.Module:
    """The tiny base model (``LlamaModel``, ``BertModel``, ``GPT2Model``) in float64, eval mode, seeded."""
    cfg = config(family, shape, attn)
    torch.manual_seed(seed)              # transformers draws its init from the global generator
    return transformers.AutoModel.from_config(cfg).double().eval()


def load(directory: str, *, attn: str = "sdpa") -> nn.Module:
    """A base model saved with ``save_pretrained`` in a local directory (no download), float64."""
    require()
    try:
        model = transformers.AutoModel.from_pretrained(directory, local_files_only=True, attn_implementation=attn)
    except (OSError, ValueError) as err:
        raise InvalidArgument(f"--hf-model: cannot load a model from {directory!r}: "
                              f"{str(err).splitlines()[0] if str(err) else type(err).__name__}") from None
    return model.double().eval()


def draw_biases(model: nn.Module, *, seed: int = SEED, bias_scale: float = 0.5) -> nn.Module:
    """Redraw every bias and norm shift N(0, bias_scale^2) and every norm scale 1 + N(0, 0.2^2), seeded.

    Hugging Face initialises biases to 0 and norm scales to 1; a trained model has neither, and with
    zero shifts a LayerNorm maps the null to 0, hiding the reactivation the analyser should find.
    """
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            norm = "Norm" in type(module).__name__
            for leaf, p in module.named_parameters(recurse=False):
                if leaf == "bias":
                    p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * bias_scale)
                elif norm and leaf == "weight":
                    p.copy_(1 + 0.2 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return model


def embedding_output(model: nn.Module) -> str:
    """The qualified name of the module whose output is the token stream (see :data:`EMBEDDING_OUTPUT`)."""
    kind = getattr(model.config, "model_type", "")
    name = EMBEDDING_OUTPUT.get(kind)
    if name is None:
        names = dict(model.named_modules())
        if "embeddings" in names:
            name = "embeddings"
        else:
            embed = model.get_input_embeddings()
            name = next(n for n, m in model.named_modules() if m is embed)
    try:
        model.get_submodule(name)
    except AttributeError:
        raise InvalidArgument(f"model: a {kind or type(model).__name__} model has no embedding module "
                              f"{name!r}") from None
    return name


class AfterEmbeddings(nn.Module):
    """``model`` run from the hidden state after its embeddings: ``forward(h, padding, position_ids)``.

    h: (batch, tokens, hidden); padding: bool (batch, tokens), True = padding; position_ids: (batch, tokens).
    Returns the last hidden state.
    """

    def __init__(self, model: nn.Module, embedding: str | None = None):
        super().__init__()
        self.hf = model
        self.embedding = embedding or embedding_output(model)

    def forward(self, h, padding, position_ids):
        ids = torch.zeros(h.shape[:2], dtype=torch.long, device=h.device)
        # prepend: this swap runs before any other hook on the module, which then sees h
        handle = self.hf.get_submodule(self.embedding).register_forward_hook(lambda m, a, out: h, prepend=True)
        try:
            out = self.hf(input_ids=ids, attention_mask=(~padding).long(), position_ids=position_ids)
        finally:
            handle.remove()
        return out.last_hidden_state


def _padding(batch: int, tokens: int) -> torch.Tensor:
    """The last row one token shorter (right padding), so the padding mask is exercised."""
    pad = torch.zeros(batch, tokens, dtype=torch.bool)
    if batch > 1:
        pad[-1, -1] = True
    return pad


class _Embedded(Exception):
    """Carries the embedding output out of a forward stopped right there (the layers never run)."""

    def __init__(self, h):
        super().__init__("embedding output")
        self.h = h


def stream(model: nn.Module, ids: torch.Tensor, padding: torch.Tensor, position_ids: torch.Tensor,
           embedding: str | None = None) -> torch.Tensor:
    """The hidden states the embeddings produce for ``ids``: ordinary inputs to the layers."""
    def stop(module, args, out):
        raise _Embedded(out.detach().clone())

    handle = model.get_submodule(embedding or embedding_output(model)).register_forward_hook(stop)
    try:
        with torch.no_grad():
            model(input_ids=ids, attention_mask=(~padding).long(), position_ids=position_ids)
    except _Embedded as done:
        return done.h
    finally:
        handle.remove()
    raise InvalidArgument(f"model: {type(model).__name__} never called its embedding module {embedding!r}")


def example(family_or_model, shape: Shape | None = None, *, seed: int = SEED, biases: str = "drawn",
            attn: str = "sdpa", tokens: int = TOKENS, name: str = "") -> ClosureExample:
    """A :class:`ClosureExample` of a tiny ``family`` (or a given base model): the stream of drawn ids.

    biases: ``drawn`` (:func:`draw_biases`, as a trained model has) or ``hf`` (Hugging Face's zero init).
    """
    require()
    if biases not in ("drawn", "hf"):
        raise InvalidArgument(f"--biases: expected drawn or hf, got {biases!r}")
    if isinstance(family_or_model, str):
        model = build(family_or_model, Shape() if shape is None else shape, seed=seed, attn=attn)
        if biases == "drawn":
            draw_biases(model, seed=seed)
        name = name or f"{type(model).__name__}({family_or_model}, biases {biases}, attention {attn})"
    else:
        model = family_or_model.double().eval()
        name = name or type(model).__name__
    g = torch.Generator().manual_seed(seed + 1)
    vocab = model.get_input_embeddings().num_embeddings
    ids = torch.randint(vocab, (BATCH, tokens), generator=g)
    padding = _padding(BATCH, tokens)
    positions = torch.arange(tokens).expand(BATCH, tokens).clone()
    wrapper = AfterEmbeddings(model)
    h = stream(model, ids, padding, positions, wrapper.embedding)
    return ClosureExample(wrapper, h, {"padding": padding, "position_ids": positions},
                          {"padding": "padding", "position_ids": "positions"}, name=name)
