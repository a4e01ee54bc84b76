"""Measure the systematic-bias criterion of ``differential`` (properties/tolerance.py, *Systematic bias*):
run ``tokenlaw check`` (or ``adversary``) in this process with --workers 1 and record, per (dtype), the
largest |beta_D| / bias bound seen, the largest bias bound, and how often the bias was judged.

    source .dev-setup.sh && python benchmarks/bias/bias_ratios.py check --operator onorm_rms --contract differential --workers 1
"""
from __future__ import annotations

import json
import sys

from tokenlaw.properties import tolerance

STATS: dict = {}
DECIDED: dict = {}     # only the comparisons whose example reached a decision (differential_laws._judge not inconclusive)
CURRENT = {"operator": "?"}


def _wrap(original):
    def differential(*args, **kwargs):
        c = original(*args, **kwargs)
        if kwargs.get("bias"):
            dtype = str(args[3]).replace("torch.", "")
            s = STATS.setdefault(f"{CURRENT['operator']}:{dtype}", {"judged": 0, "not_judged": 0, "worst_ratio": 0.0, "worst_bias": 0.0,
                                         "worst_bound": 0.0, "least_bound": float("inf")})
            if c.bias_bound > 0:
                s["judged"] += 1
                if c.bias_ratio > s["worst_ratio"]:
                    s["worst_ratio"], s["worst_bias"], s["worst_bound"] = c.bias_ratio, c.bias, c.bias_bound
                s["least_bound"] = min(s["least_bound"], c.bias_bound)
            else:
                s["not_judged"] += 1
        return c
    return differential


def main(argv=None) -> int:
    from tokenlaw.properties import differential_laws
    differential_laws.compare_differential = _wrap(tolerance.differential)
    rows = differential_laws._compare_rows

    def compare_rows(*args, **kwargs):
        case = kwargs.get("case")
        CURRENT["operator"] = getattr(getattr(case, "op", None), "name", "?")
        return rows(*args, **kwargs)
    differential_laws._compare_rows = compare_rows
    judge = differential_laws._judge

    def judged(case, c, counts, what, keep=None):
        v = judge(case, c, counts, what, keep)
        if c is not None and c.bias_bound > 0 and not v.inconclusive:
            key = f"{case.op.name}:{str(case.dtype).replace('torch.', '')}"
            s = DECIDED.setdefault(key, {"decided": 0, "worst_ratio": 0.0, "worst_bias": 0.0, "worst_bound": 0.0,
                                         "violated_by_bias": 0})
            s["decided"] += 1
            s["violated_by_bias"] += int(c.ratio <= 1.0 and c.bias_ratio > 1.0)
            if c.bias_ratio > s["worst_ratio"]:
                s["worst_ratio"], s["worst_bias"], s["worst_bound"] = c.bias_ratio, c.bias, c.bias_bound
        return v
    differential_laws._judge = judged
    from tokenlaw.app import cli
    rc = cli.main(list(sys.argv[1:] if argv is None else argv))
    print("BIAS " + json.dumps(STATS, sort_keys=True), flush=True)
    print("DECIDED " + json.dumps(DECIDED, sort_keys=True), flush=True)
    for k, v in sorted(DECIDED.items(), key=lambda kv: -kv[1]["worst_ratio"])[:12]:
        print(f"DECIDED-WORST {k} ratio {v['worst_ratio']:.3g} (|beta| {v['worst_bias']:.3g}, bound {v['worst_bound']:.3g}; "
              f"decided {v['decided']}, violated by the bias {v['violated_by_bias']})", flush=True)
    judged = {k: v for k, v in STATS.items() if v["judged"]}
    for k, v in sorted(judged.items(), key=lambda kv: -kv[1]["worst_ratio"])[:12]:
        print(f"BIAS-WORST {k} ratio {v['worst_ratio']:.3g} (|beta| {v['worst_bias']:.3g}, bound {v['worst_bound']:.3g}; "
              f"judged {v['judged']}, not judged {v['not_judged']})", flush=True)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
