"""``tokenlaw hf bisect --arch NAME --law LAW OLD..NEW``: the last release that breaks a law and the first that keeps it.

The releases of the package between OLD and NEW (final releases only, from ``pip index versions``)
are searched by bisection: OLD must violate the law and NEW must hold it (both are judged first; if
not, the bisection stops and says so).  Each probed release is installed into the pin cache
(:mod:`.pins`) and judged in a subprocess with the same seed and example budget
(:func:`.model_laws.judge`).  A release where the law is neither violated nor held (could not build,
inconclusive) is skipped, as ``git bisect skip`` does, and listed.

Example::

    >>> parse_range("4.37.0..4.41.0")
    ('4.37.0', '4.41.0')
"""
from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import time

from packaging.version import InvalidVersion, Version

from tokenlaw.operators.errors import InvalidArgument

from . import model_laws as ML
from .pins import PinError
from .arches import arch

EXAMPLES = 60          # per probed release: the law judged on enough draws that a pass means something
RANGE = re.compile(r"^([^.\s][^\s]*?)\.\.([^\s]+)$")


@dataclasses.dataclass(frozen=True)
class Bisection:
    """The outcome: last bad and first good release (None where not found), every probe, and why it stopped."""

    arch: str
    law: str
    last_bad: str | None
    first_good: str | None
    probes: tuple           # ((version, Result), ...) in the order judged
    skipped: tuple
    detail: str
    seconds: float


def parse_range(text: str) -> tuple:
    """``OLD..NEW`` as two version strings (OLD < NEW), or InvalidArgument naming the range."""
    m = RANGE.match(text or "")
    if not m:
        raise InvalidArgument(f"RANGE: expected OLD..NEW (e.g. 4.37.0..4.41.0), got {text!r}")
    old, new = m.groups()
    try:
        if Version(old) >= Version(new):
            raise InvalidArgument(f"RANGE: OLD must come before NEW, got {text!r}")
    except InvalidVersion:
        raise InvalidArgument(f"RANGE: {text!r} does not name two versions") from None
    return old, new


def releases(package: str = "transformers") -> list:
    """The package's final releases on the index, oldest first (``pip index versions``)."""
    done = subprocess.run([sys.executable, "-m", "pip", "index", "versions", package, "--disable-pip-version-check"],
                          capture_output=True, text=True)
    m = re.search(r"Available versions:\s*(.+)", done.stdout)
    if done.returncode or not m:
        tail = (done.stderr or done.stdout).strip().splitlines()[-2:]
        raise PinError(f"pip index versions {package} failed (exit {done.returncode}): {' | '.join(tail)}")
    out = []
    for v in m.group(1).split(","):
        try:
            parsed = Version(v.strip())
        except InvalidVersion:
            continue
        if not parsed.is_prerelease and not parsed.is_devrelease:
            out.append(parsed)
    return [str(v) for v in sorted(out)]


def between(versions: list, old: str, new: str) -> list:
    """The versions from ``old`` to ``new`` inclusive, oldest first; both ends must be among them."""
    for end in (old, new):
        if end not in versions:
            raise InvalidArgument(f"RANGE: {end} is not a release on the index (nearby: "
                                  f"{', '.join(v for v in versions if v.split('.')[:2] == end.split('.')[:2])})")
    return [v for v in versions if Version(old) <= Version(v) <= Version(new)]


def bisect(arch_name: str, law: str, old: str, new: str, *, dtype: str = "float32", examples: int = EXAMPLES,
           seed: int = 0, versions: list | None = None, judge=None, progress=None) -> Bisection:
    """Bisect ``versions`` (default: the index's releases from ``old`` to ``new``) for law ``law`` of ``arch_name``.

    ``judge(version) -> Result`` replaces the pinned judging (tests); ``progress(text)`` is told each probe.
    """
    a = arch(arch_name)
    if law not in ML.LAWS:
        raise InvalidArgument(f"--law: expected one of {', '.join(ML.LAWS)}, got {law!r}")
    if judge is None:
        def judge(version):
            return ML.judge(law, a.build, a.traits, dtype=dtype, examples=examples, seed=seed, version=version)
    t0 = time.perf_counter()
    versions = versions if versions is not None else between(releases(), old, new)
    probes, skipped, verdict = [], [], {}

    def probe(i):
        if i not in verdict:
            r = judge(versions[i])
            probes.append((versions[i], r))
            verdict[i] = {ML.Status.VIOLATED: "bad", ML.Status.HOLDS: "good"}.get(r.status)
            if verdict[i] is None:
                skipped.append(versions[i])
            if progress:
                progress(f"{versions[i]}: {r.status.value} ({r.detail})")
        return verdict[i]

    def done(last_bad, first_good, detail):
        return Bisection(arch_name, law, last_bad, first_good, tuple(probes), tuple(skipped), detail,
                         round(time.perf_counter() - t0, 1))

    lo, hi = 0, len(versions) - 1
    if probe(lo) != "bad":
        return done(None, None, f"{versions[lo]} does not violate {law} ({probes[-1][1].status.value}): "
                                f"nothing to bisect")
    if probe(hi) != "good":
        return done(None, None, f"{versions[hi]} does not hold {law} ({probes[-1][1].status.value}): "
                                f"no good release in the range")
    # invariant: versions[lo] bad, versions[hi] good; unknown releases between them are skipped
    while hi - lo > 1:
        candidates = list(range(lo + 1, hi))
        mid = (lo + hi) // 2
        order = sorted(candidates, key=lambda i: abs(i - mid))
        for i in order:
            v = probe(i)
            if v == "bad":
                lo = i
                break
            if v == "good":
                hi = i
                break
        else:
            return done(versions[lo], versions[hi], f"first good {versions[hi]}, last bad {versions[lo]}; "
                                                    f"between them only unclassified releases: {', '.join(skipped)}")
    return done(versions[lo], versions[hi], f"last bad {versions[lo]}, first good {versions[hi]} "
                                            f"({len(probes)} releases judged of {len(versions)})")
