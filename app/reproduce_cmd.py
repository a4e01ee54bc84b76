"""``tokenlaw reproduce all|NAME``: run the papers' experiments, write their reports, map the result to an exit code.

The experiments live in ``tokenlaw.experiments`` (one module each, returning
results); this command only parses arguments, calls one and writes
``<out>/<name>.md`` / ``.json`` (and the retrofit plot).  Exit code 0 when the
run completed and its acceptance checks hold, 1 otherwise (``exits``).  The
pn_fir_tau paper's experiments (recall, distractors, unanswerable, sink) pass
when they ran and produced their figures: a figure the run does not reproduce
is a finding, stated in the report with its reason, not a failed command.
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import sys
import time
from pathlib import Path

from tokenlaw.experiments import (ablation, distractors, exactness, fidelity, recall, retrofit, sink,
                                  unanswerable)
from tokenlaw.process.command_line import writable_dir
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.process.files import atomic_write

from .exits import EXIT_OK, passed


def _positive_int(value, name):
    if not isinstance(value, int) or value < 1:
        raise InvalidArgument(f"{name}: expected a positive int, got {value!r}")
    return value


def cmd_ablation(args) -> int:

    writable_dir(args.out, "--out")
    _positive_int(args.width, "--width")
    _positive_int(args.seeds, "--seeds")
    for w in args.sweep_widths:
        _positive_int(w, "--sweep-widths")
    cfg = ablation.Config(width=args.width, seeds=args.seeds, gains=tuple(args.gains),
                          sweep_widths=tuple(args.sweep_widths))
    start = time.perf_counter()
    result = ablation.run(cfg)
    result["seconds"] = time.perf_counter() - start
    md = ablation.to_markdown(result)
    out = Path(args.out)
    atomic_write(out / "ablation.md", md)
    atomic_write(out / "ablation.json", json.dumps(result, indent=1))
    rows = {(r["variant"], r["gain"]): r for r in result["rows"]}
    ok = all(rows[("otransformer", g)]["exact_zero"] for g in cfg.gains) and \
        all(rows[("oa_only", g)]["old_shift_max"] > 1e-3 for g in cfg.gains)
    if args.json:
        print(json.dumps({"result": "PASS" if ok else "FAIL", "markdown": str(out / "ablation.md"),
                          "report": str(out / "ablation.json")}, indent=1))
    else:
        print(md)
        print(f"wrote {out / 'ablation.md'} and {out / 'ablation.json'} ({result['seconds']:.1f} s)")
    return passed(ok)


def cmd_retrofit(args) -> int:

    writable_dir(args.out, "--out")
    if not args.json:
        return passed(retrofit.main(args))
    with contextlib.redirect_stdout(io.StringIO()):
        code = passed(retrofit.main(args))
    out = Path(args.out)
    print(json.dumps({"result": "PASS" if code == EXIT_OK else "FAIL", "markdown": str(out / "retrofit.md"),
                      "report": str(out / "retrofit.json")}, indent=1))
    return code


PN_FIR_TAU = {"recall": recall, "distractors": distractors, "unanswerable": unanswerable, "sink": sink}


def cmd_pn_fir_tau(args) -> int:
    """One of the pn_fir_tau paper's experiments: run it, write ``<out>/<name>.md``, ``.json`` and its plots."""
    writable_dir(args.out, "--out")
    module = PN_FIR_TAU[args.experiment]
    cfg = module.QUICK if args.quick else module.Config()
    if args.seeds is not None:
        cfg = dataclasses.replace(cfg, seeds=_positive_int(args.seeds, "--seeds"))
    result = module.run(cfg, log=lambda line: print(line, file=sys.stderr, flush=True))
    result["quick"] = bool(args.quick)
    result["figures"] = module.figures(result)
    out = Path(args.out)
    name = args.experiment
    atomic_write(out / f"{name}.md", module.to_markdown(result))
    atomic_write(out / f"{name}.json", json.dumps(result, indent=1))
    plots = module.plots(result)
    for file, svg in plots.items():
        atomic_write(out / file, svg)
    ok = bool(result["figures"])
    if args.json:
        print(json.dumps({"result": "PASS" if ok else "FAIL", "markdown": str(out / f"{name}.md"),
                          "report": str(out / f"{name}.json"), "figures": result["figures"]}, indent=1))
    else:
        print(module.to_markdown(result))
        print(f"wrote {out / f'{name}.md'}, {out / f'{name}.json'} and {', '.join(str(out / f) for f in plots)} "
              f"({result['seconds']:.1f} s)")
    return passed(ok)


def cmd_exactness(args) -> int:
    writable_dir(args.out, "--out")
    _positive_int(args.seeds, "--seeds")
    cfg = dataclasses.replace(exactness.QUICK if args.quick else exactness.Config(), seeds=args.seeds)
    result = exactness.run(cfg)
    md = exactness.to_markdown(result)
    out = Path(args.out)
    atomic_write(out / "exactness.md", md)
    atomic_write(out / "exactness.json", json.dumps(result, indent=1))
    if args.json:
        print(json.dumps({"markdown": str(out / "exactness.md"), "report": str(out / "exactness.json"),
                          "figures": exactness.figures(result)}, indent=1))
    else:
        print(md)
        print(f"wrote {out / 'exactness.md'} and {out / 'exactness.json'}")
    return EXIT_OK


def cmd_all(args) -> int:
    writable_dir(args.out, "--out")
    known = [e.name for e in fidelity.EXPERIMENTS]
    for name in args.only or ():
        if name not in known:
            raise InvalidArgument(f"--only: no experiment {name!r}; expected some of {known}")
    readme = Path(args.readme) if args.readme else None
    if readme is not None:            # refuse a page without the markers before the run, not after it
        fidelity.render.generated(_read(readme, "--readme"))
    record = fidelity.run_all(Path(args.out), quick=args.quick, names=args.only,
                              log=lambda line: print(line, file=sys.stderr, flush=True))
    typed = fidelity.render.FidelityRecord.from_json(record)
    out = Path(args.out)
    if readme is not None:
        source = os.path.relpath((out / "fidelity.md").resolve(), readme.resolve().parent)
        atomic_write(readme, fidelity.render.splice(_read(readme, "--readme"),
                                                    fidelity.render.readme(typed, Path(source).as_posix())))
    if args.json:
        print(json.dumps({"report": str(out / "fidelity.md"), "seconds": typed.seconds,
                          "statuses": fidelity.render.counts(typed)}, indent=1))
    else:
        print((out / "fidelity.md").read_text(), end="")
        print(f"wrote {out / 'fidelity.md'}, {out / 'fidelity.json'} and {out / 'fidelity.html'} "
              f"({typed.seconds:.0f} s)")
    return EXIT_OK


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as err:
        raise InvalidArgument(f"{what}: cannot read {str(path)!r} ({err.strerror})") from None
