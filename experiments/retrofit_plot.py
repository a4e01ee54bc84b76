"""The retrofit figure: mean relative RMSE change against tau, one line per swapped variant."""
from __future__ import annotations

from pathlib import Path


def plot(summary: list, path: Path) -> Path:
    """Write a PNG of mean (and median) RMSE change % vs tau (log axis); returns the path."""
    import matplotlib  # optional: matplotlib, only for the figure

    matplotlib.use("Agg")   # no display on a build machine
    import matplotlib.pyplot as plt  # optional: matplotlib, only for the figure

    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    labels = {"hidden_carrier": "hidden-carrier OAttention", "full_o": "full O (OInject, ONorm, OAttention, OFFN)"}
    for variant, label in labels.items():
        rows = sorted((s for s in summary if s["variant"] == variant), key=lambda s: s["tau"])
        if not rows:
            continue
        taus = [s["tau"] for s in rows]
        line, = ax.plot(taus, [s["mean_change_pct"] for s in rows], marker="o", label=f"{label}: mean")
        ax.plot(taus, [s["median_change_pct"] for s in rows], ls="--", color=line.get_color(), alpha=0.6,
                label=f"{label}: median")
    for value, name, style in ((0.088, "paper (TabPFN): hidden-carrier +0.088 %", ":"),
                               (0.177, "paper (TabPFN): full O +0.177 %", "-.")):
        ax.axhline(value, color="grey", lw=0.8, ls=style, label=name)
    ax.axhline(0.0, color="black", lw=0.6)
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=0.01)
    ax.set_xlabel("tau (presence threshold)")
    ax.set_ylabel("RMSE change vs standard model (%)")
    pairs = summary[0]["pairs"] if summary else 0
    ax.set_title(f"Zero-fine-tune retrofit, {pairs} (dataset, seed) pairs")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
