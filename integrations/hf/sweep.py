"""The all-architectures sweep's cells, triage and report (run on Dask by :mod:`tokenlaw.orchestration.hf_sweep`).

A sweep judges every (architecture × law × dtype) cell: :func:`facts_cell` builds an architecture tiny
and reads its traits (:func:`.zoo.facts`) or the reason it could not be built; :func:`law_cell` runs one
law's seeded search (:func:`.model_laws.judge`) on it.  Both are plain top-level functions of plain
arguments, so a Dask worker on any machine runs them.  Each violation is then triaged (:func:`triage`):

* **upstream**: a bug of the installed ``transformers``, linked to its upstream issue or written up with a
  standalone repro under ``docs/`` (:data:`UPSTREAM`, keyed by architecture and law);
* **expected**: a violation the architecture's traits predict, with the one-line reason derived from them
  (:data:`EXPECTED`, each a predicate over the traits);
* **untriaged**: neither; the report lists it as such, never as a pass.

:func:`render` writes the report: a Markdown table (architecture × law, one mark per law and dtype, or
"could not build tiny: reason") and the same rows as JSON.

Example::

    >>> mark({"status": "holds"})
    'ok'
"""
from __future__ import annotations

import dataclasses
import functools
import json
import time
from typing import Callable

import torch

from . import model_laws, zoo


# -- cells -----------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _facts(name: str):
    return zoo.facts(zoo.Arch(name))


def facts_cell(name: str) -> dict:
    """{arch, class, traits, source, built, reason, cpu}: one architecture built tiny and read."""
    t0 = time.process_time()
    row = {"arch": name, "class": zoo.Arch(name).class_name}
    try:
        f = _facts(name)
        row.update(built=True, traits=dataclasses.asdict(f.traits), source=f.source, reason=None)
    except zoo.NotBuilt as err:
        row.update(built=False, traits=None, source=None, reason=str(err))
    except Exception as err:  # noqa: BLE001 -- reading the traits failed: the row says how, the sweep goes on
        row.update(built=False, traits=None, source=None, reason=f"reading its traits failed: {zoo._reason(err)}")
    row["cpu"] = round(time.process_time() - t0, 3)
    return row


def law_cell(name: str, law: str, dtype: str, examples: int, seed: int) -> dict:
    """One (architecture, law, dtype) cell: the law's Result as JSON, its CPU and wall seconds."""
    torch.set_num_threads(1)
    t0, w0 = time.process_time(), time.perf_counter()
    try:
        traits = _facts(name).traits
        result = model_laws.judge(law, functools.partial(zoo.config_for, name), traits, dtype=dtype,
                                  examples=examples, seed=seed)
        row = {"arch": name, **result.to_json()}
    except Exception as err:  # noqa: BLE001 -- a cell that raised judged nothing: stated, never a pass
        row = {"arch": name, "law": law, "dtype": dtype, "status": model_laws.Status.COULD_NOT_BUILD.value,
               "detail": f"the cell raised {zoo._reason(err)}", "counterexample": None, "examples": 0,
               "judged": 0, "examples_to_first": None}
    row["cpu"] = round(time.process_time() - t0, 3)
    row["wall"] = round(time.perf_counter() - w0, 3)
    return row


# -- triage ----------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Finding:
    """A known cause of violations: ``match(cell, traits) -> bool`` over a violated cell and its traits.

    kind: ``upstream`` (a bug of the installed library; ``link`` is its issue or the write-up under docs/)
    or ``expected`` (the traits predict it; ``reason`` is the one line).  A match reads only the cell's
    own record (law, dtype, the shrunk case's knobs and padding, the detail) and the architecture's traits.
    """

    id: str
    kind: str
    reason: str
    match: Callable
    link: str = ""


def _padded(c: dict) -> bool:
    ce = c.get("counterexample") or {}
    return bool(ce.get("pad_left") or ce.get("pad_right"))


def _attn(c: dict) -> str:
    return ((c.get("counterexample") or {}).get("knobs") or {}).get("attn", "")


def _eager_float64_padding_nan(c: dict, t) -> bool:
    """float64, eager drawn (or compared), padding, a non-finite output where the reference is finite."""
    eager = _attn(c) == "eager" or (c["law"] == "implementation_agreement" and "eager" in t.implementations)
    return c["dtype"] == "float64" and eager and _padded(c) and "non-finite" in c["detail"]


def _within_float32_bound(c: dict, t) -> bool:
    """float64, finite, and the gap within the bound recomputed at float32's unit roundoff (the bound is
    linear in it: x 2**29), in an architecture whose code computes in float32 whatever the dtype."""
    return c["dtype"] == "float64" and "non-finite" not in c["detail"] and zoo.computes_in_float32(c["arch"]) \
        and c.get("gap") is not None and _attn(c) != "eager" and c["law"] != "implementation_agreement" \
        and c["gap"] <= c["bound"] * 2.0 ** 29          # an eager run's bound is at float32's roundoff already


def _ignores_attention_mask(c: dict, t) -> bool:
    return c["arch"] in zoo.IGNORES_ATTENTION_MASK and c["law"] in ("left_padding", "right_padding",
                                                                    "batch_invariance", "padding_nan")


FINDINGS: tuple = (
    Finding("hf-eager-float64-padding-nan", "upstream",
            "eager attention in float64 adds finfo(float64).min to masked scores, then takes the softmax in "
            "float32, where that is -inf: a fully masked padding row turns NaN, and 0 x NaN carries it "
            "into the real tokens at the next layer",
            _eager_float64_padding_nan, link="docs/upstream/hf-eager-float64-padding-nan.md"),
    Finding("hf-ergo-kv-cache", "upstream",
            "Ergo's cached decoding differs from its full forward by 0.1-0.7 even with full attention and "
            "dense MLPs (cause not isolated)",
            lambda c, t: c["arch"] == "ergo" and c["law"] == "kv_cache", link="docs/upstream/hf-ergo-kv-cache.md"),
    Finding("hf-deepseek-v4-compressed-left-padding", "upstream",
            "DeepSeek-V4's compressed sparse attention compresses blocks cut at columns: a left pad shifts "
            "them and changes the real tokens' logits from the first full block on",
            lambda c, t: c["arch"] == "deepseek_v4" and "non-finite" not in c["detail"] and
            (c["law"] == "left_padding" or (c["law"] in ("batch_invariance", "padding_nan")
                                            and (c.get("counterexample") or {}).get("pad_left"))),
            link="docs/upstream/hf-deepseek-v4-compressed-left-padding.md"),
    Finding("hf-moshi-sliding-window", "upstream",
            "Moshi's full forward masks with create_causal_mask (no window) while DynamicCache(config) gives every "
            "layer a DynamicSlidingWindowLayer: the full forward ignores sliding_window, the cached decode drops "
            "the keys beyond it", lambda c, t: c["arch"] == "moshi" and c["law"] in ("kv_cache", "window_locality")
            and ((c.get("counterexample") or {}).get("knobs") or {}).get("sliding_window") is not None,
            link="docs/upstream/hf-moshi-sliding-window.md"),
    Finding("hf-prophetnet-padding", "upstream",
            "ProphetNet's decoder logits move by ~5e-4 when the sequence is right-padded under a mask, whatever "
            "the pad ids (transformers issue 24289, closed unfixed)", lambda c, t: c["arch"] == "prophetnet"
            and c["law"] in ("right_padding", "batch_invariance", "padding_nan") and "non-finite" not in c["detail"]
            and bool((c.get("counterexample") or {}).get("pad_right")),
            link="https://github.com/huggingface/transformers/issues/24289 (docs/upstream/hf-prophetnet-right-padding.md)"),
    Finding("hf-kv-cache-window-1", "upstream",
            "with sliding_window=1 the full forward lets a token see only itself, the cached decode lets it see "
            "the previous token too", lambda c, t: c["law"] == "kv_cache" and
            ((c.get("counterexample") or {}).get("knobs") or {}).get("sliding_window") == 1,
            link="docs/models.md (Findings, 1)"),
    Finding("float32-inside", "expected",
            "its code computes part of the model in float32 whatever the dtype (zoo.computes_in_float32), so a "
            "float64 run is float32-accurate there; the gap is within the bound taken at float32's roundoff "
            "(the laws' float64 bound assumes float64 throughout)", _within_float32_bound),
    Finding("ignores-attention-mask", "expected",
            "its forward ignores attention_mask (zoo.IGNORES_ATTENTION_MASK): padding is attended",
            _ignores_attention_mask),
)


def triage(row: dict, traits: dict | None) -> dict:
    """{kind, reason, link, id} for a violated cell: the first :data:`FINDINGS` entry that matches, else untriaged."""
    t = model_laws.Traits(**{**traits, "layer_types": tuple(traits["layer_types"]),
                             "implementations": tuple(traits["implementations"])})
    for f in FINDINGS:
        if f.match(row, t):
            return {"kind": f.kind, "reason": f.reason, "link": f.link, "id": f.id}
    return {"kind": "untriaged", "reason": "no upstream finding and no trait predicts it", "link": "", "id": ""}


# -- the report ------------------------------------------------------------------------------------

MARKS = {"holds": "ok", "not applicable": "n/a", "inconclusive": "?", "could not build": "nb"}


def mark(cell: dict) -> str:
    """A cell's mark in the table: ok, n/a, ? (inconclusive), nb (this knob/dtype could not build),
    BUG (upstream), exp (expected violation), VIOL (untriaged violation)."""
    if cell["status"] != "violated":
        return MARKS[cell["status"]]
    return {"upstream": "BUG", "expected": "exp", "untriaged": "VIOL"}[cell["triage"]["kind"]]


def counts(archs: list, cells: list) -> dict:
    """The sweep's totals: architectures, built, not built; cells by status; violations by triage kind."""
    by_status, by_kind = {}, {}
    for c in cells:
        by_status[c["status"]] = by_status.get(c["status"], 0) + 1
        if c["status"] == "violated":
            by_kind[c["triage"]["kind"]] = by_kind.get(c["triage"]["kind"], 0) + 1
    built = sum(a["built"] for a in archs)
    return {"architectures": len(archs), "built": built, "not_built": len(archs) - built,
            "cells": len(cells), "by_status": by_status, "violations": by_kind}


def render(doc: dict) -> str:
    """The Markdown report of a sweep document (:func:`tokenlaw.orchestration.hf_sweep.run`'s result)."""
    meta, archs, cells = doc["meta"], doc["architectures"], doc["cells"]
    laws, dtypes = meta["laws"], meta["dtypes"]
    n = doc["counts"]
    out = [f"# tokenlaw hf sweep: transformers {meta['transformers']}, torch {meta['torch']}", "",
           f"`{meta['command']}`", "",
           f"- {n['architectures']} causal-LM architectures: {n['built']} built tiny, "
           f"{n['not_built']} could not be built (listed below with the reason)",
           f"- {n['cells']} cells (architecture x law x dtype), {meta['examples']} examples each, seed "
           f"{meta['seed']}: " + ", ".join(f"{v} {k}" for k, v in sorted(n["by_status"].items())),
           "- violations: " + (", ".join(f"{v} {k}" for k, v in sorted(n["violations"].items())) or "none"),
           f"- time: {meta['wall_s']:.0f} s wall, {meta['cpu_s']:.0f} s CPU on {meta['workers']} worker(s) "
           f"of a {meta['cores']}-core machine; load average {meta['load_start']} at start, {meta['load_end']} "
           "at end (other jobs share the machine)"]
    if meta.get("resumed"):
        out.append(f"- resumed: {meta['resumed']} cells kept from an earlier run's log (same traits, same seed, "
                   "built); the wall time above is this run's, the CPU time counts every cell")
    if meta.get("partial"):
        out.append(f"- **partial**: {meta['partial']}")
    for m in meta.get("amended", []):
        what = "their rows" if m.get("laws", laws) == laws else f"their {', '.join(m['laws'])} cells"
        every = set(m["archs"]) == {a["arch"] for a in archs}
        out.append(f"- amended: {'every architecture' if every else ', '.join(m['archs'])} re-run by `{m['command']}` ({m['wall_s']:.0f} s wall, "
                   f"{m['cpu_s']:.0f} s CPU){': ' + m['why'] if m.get('why') else ''}; {what} replace the "
                   "first run's")
    out += ["",
           "Marks (per dtype, " + " / ".join(dtypes) + "): ok holds, n/a not applicable (the traits say "
           "why), ? inconclusive (no example judged anything), nb this knob/dtype could not be built, "
           "BUG upstream bug, exp expected violation (reason below), VIOL untriaged violation.", ""]
    index = {(c["arch"], c["law"], c["dtype"]): c for c in cells}
    out.append("| architecture | " + " | ".join(laws) + " |")
    out.append("|---|" + "---|" * len(laws))
    for a in archs:
        if not a["built"]:
            out.append(f"| {a['arch']} | could not build tiny: {_cell_text(a['reason'])} |" + " |" * (len(laws) - 1))
            continue
        marks = [" / ".join(mark(index[(a["arch"], law, d)]) if (a["arch"], law, d) in index else "-"
                            for d in dtypes) for law in laws]
        out.append(f"| {a['arch']} | " + " | ".join(marks) + " |")
    violated = [c for c in cells if c["status"] == "violated"]
    out += ["", "## Violations, triaged", ""]
    if not violated:
        out.append("None.")
    for c in violated:
        t = c["triage"]
        link = f" ({t['link']})" if t.get("link") else ""
        out.append(f"- **{c['arch']} / {c['law']} / {c['dtype']}**: {t['kind']}{link}: {t['reason']}. "
                   f"{c['detail']}; examples to first {c['examples_to_first']}; shrunk case "
                   f"`{json.dumps(c['counterexample'], sort_keys=True)}`; replay: `tokenlaw hf sweep --arch "
                   f"{c['arch']} --laws {c['law']} --dtype {c['dtype']} --examples {meta['examples']} "
                   f"--seed {meta['seed']}`")
    out += ["", "## Could not build tiny", ""]
    out += [f"- {a['arch']} ({a['class']}): {a['reason']}" for a in archs if not a["built"]] or ["None."]
    out += ["", "## Traits (read from each config and model, never from a result)", "",
            "| architecture | causal | positions | position_ids (first) | window | chunk | layer types | GQA | MoE | "
            "cache | implementations |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for a in archs:
        if a["built"]:
            t = a["traits"]
            start = f" ({t['position_start']})" if t.get("position_start") else ""
            out.append(f"| {a['arch']} | {t['causal']} | {t['positions']} | {t['takes_position_ids']}{start} | "
                       f"{t['sliding_window']} | {t['attention_chunk_size']} | {', '.join(t['layer_types']) or '-'} "
                       f"| {t['gqa']} | {t['moe']} | {t['kv_cache']} | {', '.join(t['implementations'])} |")
    return "\n".join(out) + "\n"


def _cell_text(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:160]
