"""``tokenlaw bench``: run a backend plug-in's benchmark (e.g. the Triton kernels' tokens/s and peak memory).

A thin command over :attr:`tokenlaw.properties.backends.Backend.benchmark`:
``--backend NAME`` picks the plug-in (default: the one installed backend that
declares a benchmark).  Where the benchmark cannot measure (no GPU, say) the
command prints why and exits 3: no number is ever estimated or invented.
``--smoke`` runs the same harness on tiny shapes to test it; its output is
labelled SMOKE everywhere and is not a benchmark.
"""
from __future__ import annotations

import json
from pathlib import Path

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.process.files import atomic_write
from tokenlaw.properties import backends

from .exits import EXIT_CANNOT_RUN, EXIT_OK


def benchmarked(name: str | None):
    """The backend whose benchmark runs: ``name``'s, or the only known backend that declares one."""
    if name is not None:
        backend = backends.get(name)
        if backend.benchmark is None:
            raise InvalidArgument(f"--backend: the {name} backend declares no benchmark")
        return backend
    having = [n for n in backends.names() if backends.get(n).benchmark is not None]
    if len(having) != 1:
        raise InvalidArgument(f"--backend: expected one of the backends with a benchmark {having}, none given"
                              if having else "--backend: no installed backend declares a benchmark")
    return backends.get(having[0])


def cmd_bench(args) -> int:
    bench = benchmarked(args.backend).benchmark
    why = bench.prepare(args.smoke)
    if why:
        print(json.dumps({"result": "CANNOT_RUN", "reason": why}) if args.json else f"tokenlaw bench: {why}")
        return EXIT_CANNOT_RUN
    results = bench.run(smoke=args.smoke, skip_eager_above=args.skip_eager_above)
    path = Path(args.out) / ("bench-smoke.json" if args.smoke else "bench.json")
    atomic_write(path, json.dumps(results, indent=1) + "\n")
    if args.json:
        print(json.dumps({"result": "MEASURED", "report": str(path), "rows": results}, indent=1))
        return EXIT_OK
    print(bench.table(results))
    print(f"\nwrote {path}")
    return EXIT_OK
