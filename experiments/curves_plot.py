"""The pictures a person would rather look at than a table: training curves and attention-mass distributions.

Plain SVG from :func:`tokenlaw.reports.svgplot.chart` (no plotting library; the same result gives the same
bytes). Each experiment's ``plots(result)`` returns ``{file name: svg text}``; the command writes them.
"""
from __future__ import annotations

from tokenlaw.reports.svgplot import PALETTE, Series, chart


def _colours(names):
    order = list(dict.fromkeys(names))
    return {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(order)}


def training_curves(runs: list, title: str, ylabel: str = "training loss (cross-entropy)") -> str:
    """One line per run (normaliser, seed), the seeds of a normaliser in one colour."""
    colour = _colours(r["normaliser"] for r in runs)
    series = [Series(f"{r['normaliser']} s{r['seed']}", [(s, v, f"{r['normaliser']} seed {r['seed']} step {s}")
                                                          for s, v in r["curve"]],
                     color=colour[r["normaliser"]], line=True, dashed=r["seed"] > 0)
              for r in runs]
    return chart(series, xlabel="step", ylabel=ylabel, title=title, logy=True)


def sorted_masses(masses: dict, title: str, xlabel: str) -> str:
    """Each normaliser's masses sorted (a quantile curve): x = quantile, y = mass (log, zeros on their lane)."""
    colour = _colours(masses)
    series = []
    for name, values in masses.items():
        values = sorted(values)
        step = max(1, len(values) // 100)
        pts = [((i + 0.5) / len(values), v, f"{name} q{(i + 0.5) / len(values):.2f}: {v:.3g}")
               for i, v in enumerate(values) if i % step == 0]
        series.append(Series(name, pts, color=colour[name], line=True))
    return chart(series, xlabel="quantile", ylabel=xlabel, title=title, logy=True)
