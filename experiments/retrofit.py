"""Zero-fine-tune retrofit: swap O components into a trained in-context regressor and measure RMSE.

Paper 1 swaps hidden-carrier OAttention (and then the full O stack) into a
pretrained TabPFN regressor without retraining and reports mean RMSE
changes of +0.088 % and +0.177 %.  TabPFN's weights cannot be downloaded
here, so this trains a small TabPFN-like model (``tabular_model``) on
synthetic tasks (``tabular_tasks``) on the CPU, then evaluates, on 18
held-out (dataset, seed) pairs and a grid of tau:

* ``hidden_carrier``: OAttention with presence from the hidden state;
* ``full_o``: OInject, ONorm, OAttention, OFFN;

reporting the relative RMSE change ``100 (RMSE_swap - RMSE_std) / RMSE_std``.

Everything is seeded; training runs on one thread (the machine is shared and
a second thread only adds contention) for a fixed number of steps, so a
rerun reproduces the same weights.  The trained weights are cached in
``<out>/retrofit_model.pt`` together with the configuration that produced
them; a rerun with the same configuration reuses them (``--retrain``
ignores the cache).
"""
from __future__ import annotations

import dataclasses
import json
import math
import statistics
import time
from pathlib import Path

import torch

from tokenlaw.process.files import atomic_write
from tokenlaw.reports import svgplot

from . import tabular_tasks as T
from .retrofit_plot import plot
from .tabular_model import TabularRegressor, swapped

TAUS = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0, 3.0, 10.0, 100.0)
VARIANTS = ("hidden_carrier", "full_o")
PAPER = {"hidden_carrier": 0.088, "full_o": 0.177}


@dataclasses.dataclass(frozen=True)
class Config:
    width: int = 64
    heads: int = 4
    depth: int = 3
    hidden: int = 128
    steps: int = 1600
    batch: int = 16
    tokens: int = 64            # rows per training task (context + query)
    lr: float = 1e-3
    seed: int = 0
    eval_ctx: int = 48
    eval_qry: int = 64
    eval_seeds: int = 3          # 6 datasets x 3 seeds = 18 pairs
    taus: tuple = TAUS

    @property
    def arch(self) -> dict:
        return dict(width=self.width, heads=self.heads, depth=self.depth, hidden=self.hidden)


QUICK = Config(width=16, heads=2, depth=1, hidden=32, steps=30, batch=4, tokens=24, eval_ctx=12, eval_qry=8,
               taus=(1e-2, 1.0))


def _lr(step, cfg):
    """Linear warm-up for 5 % of the steps, then cosine decay to 10 % of the peak."""
    warm = max(1, cfg.steps // 20)
    if step < warm:
        return cfg.lr * (step + 1) / warm
    t = (step - warm) / max(1, cfg.steps - warm)
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def train(cfg: Config, log=print) -> tuple[TabularRegressor, list]:
    """Train the standard-attention regressor on random tasks; returns the model and its loss curve."""
    torch.manual_seed(cfg.seed)
    model = TabularRegressor(variant="standard", **cfg.arch)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=1e-4)
    g = torch.Generator().manual_seed(cfg.seed)
    curve, running, start = [], None, time.perf_counter()
    for step in range(cfg.steps):
        n_ctx = int(torch.randint(cfg.tokens // 4, cfg.tokens - 8, (1,), generator=g))
        x, y = T.batch(g, cfg.batch, n_ctx, cfg.tokens - n_ctx)
        loss = ((model(x, y, n_ctx) - y[:, n_ctx:]) ** 2).mean()
        for group in opt.param_groups:
            group["lr"] = _lr(step, cfg)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        running = loss.item() if running is None else 0.98 * running + 0.02 * loss.item()
        if (step + 1) % max(1, cfg.steps // 20) == 0:
            curve.append((step + 1, running))
            log(f"  step {step + 1:5d}/{cfg.steps}  loss (EMA) {running:.4f}  {time.perf_counter() - start:6.1f}s")
    return model.eval(), curve


def trained_model(cfg: Config, out: Path, retrain=False, log=print):
    """Load the cached model for this exact configuration, or train and cache it."""
    path = out / "retrofit_model.pt"
    key = json.dumps(dataclasses.asdict(cfg), sort_keys=True)
    if path.exists() and not retrain:
        blob = torch.load(path, weights_only=False)
        if blob.get("config") == key:
            model = TabularRegressor(variant="standard", **cfg.arch)
            model.load_state_dict(blob["state"])
            log(f"reusing trained weights from {path} (same configuration; --retrain to train again)")
            return model.eval(), blob["curve"], blob["train_seconds"], True
    start = time.perf_counter()
    model, curve = train(cfg, log)
    seconds = time.perf_counter() - start
    out.mkdir(parents=True, exist_ok=True)
    torch.save({"config": key, "state": model.state_dict(), "curve": curve, "train_seconds": seconds}, path)
    return model, curve, seconds, False


def rmse(model, x, y, n_ctx) -> float:
    with torch.no_grad():
        return float(((model(x, y, n_ctx) - y[:, n_ctx:]) ** 2).mean().sqrt())


def carrier_norms(model: TabularRegressor, x, y, n_ctx) -> dict:
    """Squared norms the presence rho = |h|^2 / (tau + |h|^2) sees: embedding input rows and every block input."""
    seen = {"input": [], "hidden": []}

    def record(key):
        return lambda module, args: seen[key].append((args[0] ** 2).sum(-1))

    handles = [model.embed.register_forward_pre_hook(record("input"))]
    handles += [b.register_forward_pre_hook(record("hidden")) for b in model.blocks]
    try:
        with torch.no_grad():
            model(x, y, n_ctx)
    finally:
        for h in handles:
            h.remove()
    return {k: torch.cat([t.flatten() for t in v]) for k, v in seen.items()}


def evaluate(model: TabularRegressor, cfg: Config) -> dict:
    """RMSE of the trained model and of every swapped variant, per (dataset, seed) pair, in float64."""
    base = model.double()
    pairs, norms = [], {"input": [], "hidden": []}
    for name in T.FAMILIES:
        for seed in range(cfg.eval_seeds):
            x, y = T.dataset(name, seed, cfg.eval_ctx, cfg.eval_qry)
            x, y = x.double(), y.double()
            for k, v in carrier_norms(base, x, y, cfg.eval_ctx).items():
                norms[k].append(v)
            row = dict(dataset=name, seed=seed, rmse_standard=rmse(base, x, y, cfg.eval_ctx),
                       rmse_mean_predictor=float(y[:, cfg.eval_ctx:].pow(2).mean().sqrt()), swaps={})
            for variant in VARIANTS:
                for tau in cfg.taus:
                    r = rmse(swapped(base, variant, tau, **cfg.arch), x, y, cfg.eval_ctx)
                    row["swaps"][f"{variant}@{tau:g}"] = dict(
                        rmse=r, change_pct=100.0 * (r - row["rmse_standard"]) / row["rmse_standard"])
            pairs.append(row)
    summary = []
    for variant in VARIANTS:
        for tau in cfg.taus:
            ch = [p["swaps"][f"{variant}@{tau:g}"]["change_pct"] for p in pairs]
            summary.append(dict(variant=variant, tau=tau, mean_change_pct=statistics.fmean(ch),
                                median_change_pct=statistics.median(ch), max_abs_change_pct=max(abs(c) for c in ch),
                                sem_change_pct=statistics.stdev(ch) / math.sqrt(len(ch)) if len(ch) > 1 else 0.0,
                                pairs=len(ch)))
    quantiles = {k: {q: float(torch.quantile(torch.cat(v), q)) for q in (0.0, 0.5)} for k, v in norms.items()}
    return dict(pairs=pairs, summary=summary, squared_norms={k: {"min": v[0.0], "median": v[0.5]}
                                                               for k, v in quantiles.items()})


def to_markdown(result: dict) -> str:
    cfg = result["config"]
    ev = result["evaluation"]
    base = [p["rmse_standard"] for p in ev["pairs"]]
    trivial = [p["rmse_mean_predictor"] for p in ev["pairs"]]
    lines = [
        "# Zero-fine-tune retrofit of a small in-context tabular regressor",
        "",
        f"Model: {cfg['depth']} pre-norm blocks, width {cfg['width']}, {cfg['heads']} heads, FFN hidden {cfg['hidden']}; "
        f"trained with standard attention for {cfg['steps']} steps x {cfg['batch']} synthetic tasks of "
        f"{cfg['tokens']} rows (seed {cfg['seed']}, one CPU thread, {result['train_seconds']:.0f} s"
        f"{', cached' if result['cached'] else ''}). Evaluated in float64 on {len(ev['pairs'])} held-out "
        f"(dataset, seed) pairs, {cfg['eval_ctx']} context + {cfg['eval_qry']} query rows each.",
        "",
        f"Mean RMSE of the trained model: {statistics.fmean(base):.4f} (predicting the context mean: "
        f"{statistics.fmean(trivial):.4f}), in units of the context's target standard deviation.",
        "",
        f"Squared norms presence sees (rho = |h|^2 / (tau + |h|^2) ~ 1 - tau / |h|^2): block inputs |h|^2 "
        f"min {ev['squared_norms']['hidden']['min']:.3g}, median {ev['squared_norms']['hidden']['median']:.3g}; "
        f"embedding input rows min {ev['squared_norms']['input']['min']:.3g}, "
        f"median {ev['squared_norms']['input']['median']:.3g}.",
        "",
        "Relative RMSE change of the swapped model, 100 (RMSE_swap - RMSE_std) / RMSE_std, over the pairs "
        "(paper, pretrained TabPFN: hidden-carrier +0.088 %, full O +0.177 %):",
        "",
        "| variant | tau | mean change % | median % | max abs % |",
        "|---|---|---|---|---|",
    ]
    for s in ev["summary"]:
        lines.append(f"| {s['variant']} | {s['tau']:g} | {s['mean_change_pct']:+.4f} | {s['median_change_pct']:+.4f} | "
                     f"{s['max_abs_change_pct']:.4f} |")
    taus = cfg["taus"]
    lines += ["", "Per pair (RMSE of the standard model; change % of each swap at each tau):", "",
              "| dataset | seed | RMSE std | " + " | ".join(f"HC {t:g}" for t in taus) + " | "
              + " | ".join(f"O {t:g}" for t in taus) + " |",
              "|---|---|---|" + "---|" * (2 * len(taus))]
    for p in ev["pairs"]:
        cells = [f"{p['swaps'][f'{v}@{t:g}']['change_pct']:+.3f}" for v in VARIANTS for t in taus]
        lines.append(f"| {p['dataset']} | {p['seed']} | {p['rmse_standard']:.4f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def run(cfg: Config, out: Path, retrain: bool = False, log=print) -> dict:
    """Train (or reuse the cached weights under ``out``), swap, evaluate: the JSON-able result."""
    torch.set_num_threads(1)
    start = time.perf_counter()
    model, curve, train_seconds, cached = trained_model(cfg, out, retrain=retrain, log=log)
    evaluation = evaluate(model, cfg)
    result = dict(config=dataclasses.asdict(cfg), quick=cfg == QUICK, train_seconds=train_seconds, cached=cached,
                  loss_curve=curve, evaluation=evaluation, paper=dict(PAPER))
    result["seconds"] = time.perf_counter() - start
    return result


def main(args) -> bool:
    cfg = dataclasses.replace(QUICK if args.quick else Config(), seed=args.seed)
    out = Path(args.out)
    result = run(cfg, out, retrain=getattr(args, "retrain", False))
    result["quick"] = bool(args.quick)
    md = to_markdown(result)
    atomic_write(out / "retrofit.md", md)
    atomic_write(out / "retrofit.json", json.dumps(result, indent=1))
    png = plot(result["evaluation"]["summary"], out / "retrofit.png")
    print(md)
    print(f"wrote {out / 'retrofit.md'}, {out / 'retrofit.json'} and {png} ({result['seconds']:.1f} s)")
    return all(math.isfinite(s["mean_change_pct"]) for s in result["evaluation"]["summary"])

NAMES = {"hidden_carrier": "hidden-carrier OAttention", "full_o": "full O (OInject, ONorm, OAttention, OFFN)"}


def figures(result: dict) -> list[dict]:
    """The paper's retrofit figures beside ours (``experiments.fidelity``): for each variant, the tau (a setting
    the paper leaves unstated) whose mean change is within two standard errors of the paper's, or none."""
    cfg, ev = result["config"], result["evaluation"]
    setting = (f"a TabPFN-like regressor trained here ({cfg['depth']} blocks, width {cfg['width']}, {cfg['steps']} "
               f"steps, seed {cfg['seed']}; TabPFN's weights cannot be downloaded), float64 evaluation; "
               f"tau swept over {list(cfg['taus'])}")
    out = []
    for variant, paper in PAPER.items():
        rows = sorted((s for s in ev["summary"] if s["variant"] == variant), key=lambda s: s["tau"])
        # reproduced at a tau: the paper's mean within 2 standard errors of ours, and ours resolved from 0
        # (2 standard errors below the paper's effect: a spread wide enough to contain anything proves nothing)
        within = [s for s in rows if abs(s["mean_change_pct"] - paper) <= 2 * s["sem_change_pct"] < paper]
        signed = [s for s in rows if s["mean_change_pct"] - 2 * s["sem_change_pct"] > 0]
        closest = min(rows, key=lambda s: abs(s["mean_change_pct"] - paper))
        ours = "; ".join(f"tau {s['tau']:g}: {s['mean_change_pct']:+.3g} % (+-{s['sem_change_pct']:.2g})" for s in rows)
        if within:
            status = "reproduced"
            reason = "within 2 standard errors of the paper's mean at tau " + ", ".join(f"{s['tau']:g}" for s in within)
        elif signed:
            status = "direction reproduced"
            reason = ("RMSE rises (mean 2 standard errors above 0) at tau " + ", ".join(f"{s['tau']:g}" for s in signed)
                      + f", but no tau gives the paper's size; closest tau {closest['tau']:g} "
                      f"({closest['mean_change_pct']:+.3g} %)")
        else:
            status = "not reproduced"
            reason = (f"no tau gives the paper's mean within 2 standard errors that resolve it from 0; closest tau "
                      f"{closest['tau']:g} ({closest['mean_change_pct']:+.3g} % +- {closest['sem_change_pct']:.2g}); "
                      f"our regressor is a small stand-in trained here, not the pretrained TabPFN")
        out.append(dict(figure=f"retrofit: mean RMSE change, {NAMES[variant]}", paper=f"+{paper} %", ours=ours,
                        setting=setting, seeds=f"{rows[0]['pairs']} (dataset, seed) pairs", status=status,
                        reason=reason))
    return out


def sweep_svg(result: dict) -> str:
    """Mean RMSE change (%) against tau per swapped variant, the paper's two figures dashed (SVG, deterministic)."""
    summary = result["evaluation"]["summary"]
    taus = sorted({s["tau"] for s in summary})
    series = [svgplot.Series(NAMES[v], [(s["tau"], s["mean_change_pct"],
                                         f"{v} tau {s['tau']:g}: {s['mean_change_pct']:+.3g} % (+-{s['sem_change_pct']:.2g})")
                                        for s in sorted((s for s in summary if s["variant"] == v), key=lambda s: s["tau"])],
                             line=True) for v in VARIANTS]
    series += [svgplot.Series(f"paper: {NAMES[v]} +{p} %", [(t, p, f"paper {p} %") for t in taus], line=True, dashed=True)
               for v, p in PAPER.items()]
    return svgplot.chart(series, xlabel="tau (presence threshold)", ylabel="mean RMSE change (%)", logx=True,
                         title="Retrofit sweep: where the paper's figures fall")
