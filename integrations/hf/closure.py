"""Closure of a Hugging Face model, layer by layer: ``tokenlaw closure --hf-config llama``.

The closure analyser (:mod:`tokenlaw.integrations.closure.analyser`) runs the
model of :mod:`.models` with and without a null hidden state inserted after
the embeddings (padding mask and position ids grown with it) and compares
every submodule call.  This module names each call's *role* in its decoder
layer, so the report reads per layer:

* ``norm`` (RMSNorm, LayerNorm), ``projection`` (Linear, GPT-2's Conv1D),
  ``attention`` (the module that mixes tokens), ``mlp``, ``residual`` (a
  decoder layer's output, and BERT's dense + residual + LayerNorm blocks),
  ``activation`` / ``other`` for the rest;
* ``position`` calls (a rotary table) and the embedding module itself are left
  out of the verdict: a rotary table is cos/sin of position ids, a function of
  where a token sits, never of its hidden state, so its row at the null is not
  a property of the null; the embedding output is where the null is put.

The first break is the first kept call, in completion order, whose inputs
were closed and whose output is not.
"""
from __future__ import annotations

import dataclasses

from tokenlaw.integrations.closure.analyser import ClosureReport, LayerResult, analyse

from .models import AfterEmbeddings

SKIPPED = ("position", "embedding")


def role(type_name: str, name: str, layers: frozenset) -> str:
    """The role of a call of a module of class ``type_name`` named ``name`` (``layers``: decoder layer names)."""
    if name in layers:
        return "residual"
    if "Rotary" in type_name or "PositionalEmbedding" in type_name:
        return "position"
    if "Norm" in type_name:
        return "norm"
    if type_name in ("Linear", "Conv1D"):
        return "projection"
    if type_name.endswith(("SelfAttention", "Attention")):
        return "attention"
    if "MLP" in type_name or type_name.endswith("Intermediate"):
        return "mlp"
    if type_name.endswith("Output"):
        return "residual"      # BERT's BertSelfOutput / BertOutput: LayerNorm(dense(x) + input)
    if "Activation" in type_name or type_name in ("SiLU", "GELU", "ReLU", "Tanh"):
        return "activation"
    return "other"


def decoder_layers(wrapper: AfterEmbeddings) -> frozenset:
    """Qualified names of the decoder layers: the elements of the model's longest ModuleList."""
    lists = [(n, m) for n, m in wrapper.named_modules() if type(m).__name__ == "ModuleList"]
    if not lists:
        return frozenset()
    name, longest = max(lists, key=lambda nm: len(nm[1]))
    return frozenset(f"{name}.{i}" for i in range(len(longest)))


@dataclasses.dataclass(frozen=True)
class Row:
    """One submodule call of the analyser, with its role."""

    layer: LayerResult
    role: str

    @property
    def label(self) -> str:
        name = self.layer.name
        if name == "hf":
            return f"<{self.layer.type}>"          # the Hugging Face model's own output
        return name[len("hf."):] if name.startswith("hf.") else ("<model>" if name == "" else name)


@dataclasses.dataclass(frozen=True)
class HFPosition:
    position: int
    rows: tuple

    @property
    def first_break(self) -> Row | None:
        return next((r for r in self.rows if r.role not in SKIPPED and r.layer.breaks), None)

    def to_json(self) -> dict:
        fb = self.first_break
        return dict(position=self.position, first_break=fb and dict(fb.layer.to_json(), label=fb.label, role=fb.role),
                    rows=[dict(r.layer.to_json(), label=r.label, role=r.role) for r in self.rows])


@dataclasses.dataclass(frozen=True)
class HFClosureReport:
    """The analyser's report with roles; ``first_break`` and ``holds`` ignore position and embedding rows."""

    report: ClosureReport
    embedding: str
    positions: tuple

    @property
    def first_break(self) -> Row | None:
        order = {r.label: i for i, r in enumerate(self.positions[0].rows)}
        breaks = [p.first_break for p in self.positions if p.first_break is not None]
        return min(breaks, key=lambda r: order.get(r.label, 1 << 30), default=None)

    @property
    def holds(self) -> bool:
        return self.first_break is None

    def to_json(self) -> dict:
        fb = self.first_break
        return dict(model=self.report.model, shape=list(self.report.shape), inserted_after=self.embedding,
                    holds=self.holds, first_break=fb and dict(fb.layer.to_json(), label=fb.label, role=fb.role),
                    positions=[p.to_json() for p in self.positions])


def _rows(layers, embedding: str, hf_layers: frozenset) -> tuple:
    """Each call with its role; every call that completes up to the embedding output is ``embedding``."""
    rows, before = [], True
    for r in layers:
        inner = r.name[len("hf."):] if r.name.startswith("hf.") else ""
        if before:
            rows.append(Row(r, "embedding"))
            before = inner != embedding
        else:
            rows.append(Row(r, "model" if r.name in ("", "hf") else role(r.type, inner, hf_layers)))
    return tuple(rows)


def analyse_hf(example, positions=None, *, trials: int = 3, seed: int = 0) -> HFClosureReport:
    """Run the closure analyser on an example of :func:`.models.example` and give each call its role."""
    report = analyse(example, positions, trials=trials, seed=seed)
    hf_layers = frozenset(n[len("hf."):] for n in decoder_layers(example.model))
    return HFClosureReport(report, example.model.embedding,
                           tuple(HFPosition(p.position, _rows(p.layers, example.model.embedding, hf_layers))
                                 for p in report.positions))
