"""The mutation report: each mutant, what it breaks, and the contracts that killed it."""
from __future__ import annotations

import json
from pathlib import Path

from .writers import atomic_write


def to_json(results, baseline, meta) -> dict:
    return {"meta": meta, "baseline_failing": sorted(baseline),
            "killed": sum(r.killed for r in results), "total": len(results),
            "mutants": [{"name": r.name, "backend": r.backend, "description": r.description,
                         "operators": list(r.operators), "killed": r.killed, "killers": r.killers,
                         "replays": r.replays, "rows": r.rows, "seconds": round(r.seconds, 2)} for r in results]}


def to_markdown(results, baseline, meta) -> str:
    killed = sum(r.killed for r in results)
    lines = ["# tokenlaw mutation report", "",
             f"**{killed}/{len(results)} mutants killed** ({meta.get('examples')} examples per cell per dtype, "
             f"seed {meta.get('seed')}). A survivor is a defect of the suite.", ""]
    if baseline:
        lines += [f"Rows failing before any mutation (not counted as kills): {', '.join(sorted(baseline))}", ""]
    lines += ["| mutant | backend | seeded bug | rows run | killed by |", "|---|---|---|---|---|"]
    for r in results:
        killers = ", ".join(f"`{k}`" + (f" (replay `{r.replays[k]}`)" if k in r.replays else "") for k in r.killers)
        lines.append(f"| `{r.name}` | {r.backend} | {r.description} | {r.rows} | {killers or '**SURVIVED**'} |")
    lines.append("")
    return "\n".join(lines)


def write(results, baseline, out_dir: Path, *, meta: dict):
    out_dir = Path(out_dir)
    md, js = out_dir / "mutation.md", out_dir / "mutation.json"
    atomic_write(js, json.dumps(to_json(results, baseline, meta), indent=1) + "\n")
    atomic_write(md, to_markdown(results, baseline, meta))
    return md, js
