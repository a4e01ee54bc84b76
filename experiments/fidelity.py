"""The papers' figures side by side with ours: ``tokenlaw reproduce all`` writes ``<out>/fidelity.{md,json,html}``.

Every figure the two papers report gets one row (``reports.fidelity.COLUMNS``):
the paper's number, ours, our setting, seeds and spread, a status, and a
one-line reason for any difference.  The rows of an experiment that runs here
come from that experiment's own ``figures(result)``: numbers are measured by
the run, never typed.  A figure that cannot be measured on this machine
(:data:`NOT_HERE`: the GPU kernel timings and memory, the 50k-step WikiText-2
perplexity) is listed with the reason and the command that measures it on a
machine that can.

Statuses: ``reproduced`` (our number matches the paper's within our spread or
the stated tolerance), ``direction reproduced`` (the effect has the paper's
sign, not its size), ``not reproduced`` (with the reason), ``not reproducible
here`` (with the reason).

Each experiment is a module of this package with ``Config`` (a full and a
quick preset), ``run`` and ``figures``; :data:`EXPERIMENTS` lists them in the
order they run.
"""
from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

from tokenlaw.process.files import atomic_write
from tokenlaw.reports import fidelity as render

from . import ablation, distractors, exactness, recall, retrofit, sink, unanswerable


@dataclasses.dataclass(frozen=True)
class Experiment:
    """How ``reproduce all`` runs one experiment: its module's run at the full or the quick configuration."""

    name: str
    full: object
    quick: object
    run: object              # run(cfg, out, log) -> the JSON-able result
    figures: object          # figures(result) -> rows
    markdown: object         # to_markdown(result) -> str
    plots: object = None     # plots(result) -> {file name: SVG text}, written beside the report


def _retrofit_run(cfg, out, log):
    return retrofit.run(cfg, out, log=log)


def _pn_fir_tau_run(module):
    return lambda cfg, out, log: module.run(cfg, log=log)


EXPERIMENTS = (
    Experiment("exactness", exactness.Config(), exactness.QUICK, lambda cfg, out, log: exactness.run(cfg),
               exactness.figures, exactness.to_markdown),
    Experiment("ablation", ablation.Config(),
               ablation.Config(width=8, tokens=4, seeds=2, gains=(1.0, 2.0), positions=(0, 4), sweep_widths=(8, 16),
                               sweep_gains=(1.0, 4.0)),
               lambda cfg, out, log: ablation.run(cfg), ablation.figures, ablation.to_markdown,
               lambda result: {"ablation_sweep.svg": ablation.sweep_svg(result)}),
    Experiment("retrofit", retrofit.Config(), retrofit.QUICK, _retrofit_run, retrofit.figures, retrofit.to_markdown,
               lambda result: {"retrofit_sweep.svg": retrofit.sweep_svg(result)}),
    *(Experiment(m.__name__.rsplit(".", 1)[-1], m.Config(), m.QUICK, _pn_fir_tau_run(m), m.figures, m.to_markdown,
                 m.plots) for m in (recall, distractors, unanswerable, sink)),
)

# What cannot be measured on a CPU machine: the reason, and the command that measures it where it can be.
NOT_HERE = (
    dict(figure="kernels: time per training step against softmax (bf16)", paper="22.5-31.6 % faster",
         reason="needs a GPU: the fused kernels only run in an interpreter on a CPU, where their time says nothing",
         command="tokenlaw bench (the kernels' benchmark, on a CUDA machine)"),
    dict(figure="kernels: speed-up over the eager implementation", paper="21.70x",
         reason="needs a GPU (as above)", command="tokenlaw bench (the kernels' benchmark, on a CUDA machine)"),
    dict(figure="kernels: intermediate memory at N = 1024", paper="1886.9 MB -> 109.3 MB",
         reason="needs a GPU: peak device memory of the fused kernels against eager",
         command="tokenlaw bench (the kernels' benchmark, on a CUDA machine)"),
    dict(figure="language modelling: WikiText-2 perplexity, pn_fir_tau vs softmax", paper="114.80 vs 117.13",
         reason="needs WikiText-2 (no download here) and 50k steps of a 6-layer 1.8 M-parameter model (GPU hours); "
                "the sink experiment trains a small model on offline text instead",
         command="not shipped: the training recipe is the paper's"),
)


def not_here_rows() -> list[dict]:
    return [dict(figure=r["figure"], paper=r["paper"], ours="not measured here", setting="-", seeds="-",
                 status="not reproducible here", reason=f"{r['reason']}; measure with: {r['command']}")
            for r in NOT_HERE]


def run_all(out: Path, *, quick: bool = False, names=None, log=print) -> dict:
    """Run the experiments (``names``: a subset, in :data:`EXPERIMENTS` order), write each one's
    ``<out>/<name>.{md,json}`` and the fidelity report; the JSON-able record."""
    out = Path(out)
    chosen = [e for e in EXPERIMENTS if names is None or e.name in names]
    rows, runs, plots = [], {}, []
    start = time.perf_counter()
    for i, e in enumerate(chosen, 1):
        log(f"[{i}/{len(chosen)}] {e.name} ({'quick' if quick else 'full'}) ...")
        t0 = time.perf_counter()
        result = e.run(e.quick if quick else e.full, out, log)
        seconds = time.perf_counter() - t0
        atomic_write(out / f"{e.name}.md", e.markdown(result))
        atomic_write(out / f"{e.name}.json", json.dumps(result, indent=1, default=str))
        figs = e.figures(result)
        for f in figs:
            f["experiment"] = e.name
        rows += figs
        runs[e.name] = dict(seconds=seconds, report=f"{e.name}.md", figures=len(figs),
                            cached=bool(result.get("cached")))      # a model reused from <out>, not trained
        log(f"[{i}/{len(chosen)}] {e.name}: {len(figs)} figures in {seconds:.0f} s")
        for file, svg in (e.plots(result) if e.plots else {}).items():
            atomic_write(out / file, svg)
            plots.append(file)
    rows += not_here_rows()
    record = dict(quick=quick, seconds=time.perf_counter() - start, experiments=runs, rows=rows, plots=plots)
    atomic_write(out / "fidelity.json", json.dumps(record, indent=1))
    typed = render.FidelityRecord.from_json(record)
    atomic_write(out / "fidelity.md", render.markdown(typed))
    atomic_write(out / "fidelity.html", render.html(typed, {p: (out / p).read_text() for p in typed.plots}))
    return record
