"""``tokenlaw hf laws | bisect | sweep``: thin commands over ``integrations.hf`` (model_laws, bisect, sweep)."""
from __future__ import annotations

import importlib
import json
import sys

from tokenlaw.integrations.hf import arches, bisect, model_laws, pins
from tokenlaw.operators.errors import InvalidArgument

from .exits import EXIT_CANNOT_RUN, EXIT_FAIL, EXIT_OK, EXIT_UNDECIDED

SWEEP = "tokenlaw.orchestration.hf_sweep"


def _dtype(args, default: str) -> str:
    dtype = args.dtype or default
    if dtype not in model_laws.DTYPES:
        raise InvalidArgument(f"--dtype: expected one of {', '.join(model_laws.DTYPES)}, got {dtype!r}")
    return dtype


def _examples(args, default: int) -> int:
    n = default if args.examples is None else args.examples
    if n < 1:
        raise InvalidArgument(f"--examples: expected a positive int, got {n}")
    return n


def pinned_version(args) -> str | None:
    """The transformers release ``--transformers`` / ``--with`` name (None: the installed one)."""
    specs = [pins.parse_spec(s, "--with") for s in args.with_]
    if args.transformers is not None:
        specs.append(pins.parse_spec(f"transformers=={args.transformers}", "--transformers"))
    others = [s for s in specs if not s.startswith("transformers==")]
    if others:
        raise InvalidArgument(f"--with: the model laws pin transformers only (got {', '.join(others)})")
    versions = sorted({s.split("==")[1] for s in specs})
    if len(versions) > 1:
        raise InvalidArgument(f"--transformers: two versions asked for ({', '.join(versions)})")
    return versions[0] if versions else None


def _case(text: str) -> model_laws.Case:
    try:
        return model_laws.Case.from_json(json.loads(text))
    except (ValueError, TypeError, KeyError) as err:
        raise InvalidArgument(f"--replay: expected a case as printed after 'shrunk:' ({err})") from None


def cmd_laws(args) -> int:
    a = arches.arch(args.arch)
    dtype, n = _dtype(args, "float32"), _examples(args, model_laws.EXAMPLES)
    for law in args.law:
        if law not in model_laws.LAWS:
            raise InvalidArgument(f"--law: expected one of {', '.join(model_laws.LAWS)}, got {law!r}")
    version = pinned_version(args)
    names = args.law or list(model_laws.LAWS)
    if args.replay is not None:
        if len(args.law) != 1:
            raise InvalidArgument(f"--replay: name the one law it replays with --law (got {len(args.law)})")
        results = [model_laws.replay(names[0], a.build, a.traits, _case(args.replay), dtype=dtype, seed=args.seed,
                                     version=version)]
    else:
        results = model_laws.judge_laws(names, a.build, a.traits, dtype=dtype, examples=n, seed=args.seed,
                                        version=version)
    if args.json:
        print(json.dumps([r.to_json() for r in results], indent=1))
    else:
        if results and results[0].setup:
            print("pinned:", *results[0].setup, sep="\n  ")
        for r in results:
            first = "" if r.examples_to_first is None else \
                f" [first violation after {r.examples_to_first} examples, {r.seconds_to_first} s]"
            print(f"{args.arch} {r.law} {dtype} transformers {r.version}: {r.status.value}: {r.detail}{first}")
            if r.counterexample is not None:
                case = json.dumps(r.counterexample.to_json(), sort_keys=True, separators=(",", ":"))
                pin = f" --transformers {version}" if version else ""
                print(f"  shrunk: {case}\n  replay: tokenlaw hf laws --arch {args.arch} --law {r.law} --dtype {dtype}"
                      f"{pin} --seed {args.seed} --replay '{case}'")
    statuses = {r.status for r in results}
    if model_laws.Status.VIOLATED in statuses:
        return EXIT_FAIL
    if statuses <= {model_laws.Status.HOLDS, model_laws.Status.NOT_APPLICABLE} and \
            model_laws.Status.HOLDS in statuses:
        return EXIT_OK
    return EXIT_UNDECIDED


def cmd_bisect(args) -> int:
    arches.arch(args.arch)
    if args.law not in model_laws.LAWS:
        raise InvalidArgument(f"--law: expected one of {', '.join(model_laws.LAWS)}, got {args.law!r}")
    old, new = bisect.parse_range(args.range)
    dtype, n = _dtype(args, "float32"), _examples(args, bisect.EXAMPLES)
    b = bisect.bisect(args.arch, args.law, old, new, dtype=dtype, examples=n, seed=args.seed,
                      progress=None if args.json else lambda t: print("  " + t, flush=True))
    if args.json:
        print(json.dumps({"arch": b.arch, "law": b.law, "last_bad": b.last_bad, "first_good": b.first_good,
                          "detail": b.detail, "seconds": b.seconds, "skipped": list(b.skipped),
                          "probes": [{"version": v, **r.to_json()} for v, r in b.probes]}, indent=1))
    else:
        print(f"{args.arch} {args.law}: {b.detail} ({b.seconds} s)")
        if b.first_good:
            print(f"first good: {b.first_good}\nlast bad: {b.last_bad}")
    return EXIT_OK if b.first_good else EXIT_FAIL


def cmd_sweep(args) -> int:
    try:
        sweep = importlib.import_module(SWEEP)
    except ModuleNotFoundError as err:
        if err.name != SWEEP:
            raise
        print(f"tokenlaw: hf sweep is not available in this build ({SWEEP} is missing); nothing was judged",
              file=sys.stderr)
        return EXIT_CANNOT_RUN
    return sweep.main(args)
