"""Text shared by the renderings of a report document (Markdown, HTML, JUnit): labels, the reading guide,
how a counterexample and a run are described, and the cells grouped by the reason they were not judged.

The helpers read the typed rows of a :class:`~.document.Document` (``Row``, ``Cell``, ``Verdict`` and its
evidence), never its JSON view."""
from __future__ import annotations

import dataclasses
import shlex

from tokenlaw.operators import tree
from tokenlaw.properties import verdict as V
from tokenlaw.properties.case import Case
from tokenlaw.properties.evidence import FuzzEvidence
from tokenlaw.properties.verdict import Tier

from .meta import Meta


def by_reason(rows, status: str) -> dict:
    """{reason: [cell ids]} of the cells with ``status`` (not runnable / by design), each reason once."""
    out: dict[str, list] = {}
    for r in rows:
        for c in r.cells:
            if c.verdict is not None and c.verdict.status == status:
                out.setdefault(c.verdict.written_detail, []).append(c.id)
    return out


def by_design(rows) -> dict:
    """{reason: [cell ids]} of the cells not applicable by design."""
    return by_reason(rows, V.Status.NOT_APPLICABLE_BY_DESIGN)


def rows_word(n: int) -> str:
    """'1 row', '2 rows'."""
    return counted(n, "row")


def counted(n: int, noun: str) -> str:
    """'1 cell', '2 cells', '0 reasons': a count with its noun in the right number."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def claimed_line(summ: dict) -> str:
    """'153 of 156 claimed rows established (0 proved); 2 undecided, 1 not run': what the run showed of its claims.

    Said first because the counts of outcomes alone hide it: PASS over claimed rows that nothing
    established is what the result (``document.standing``) refuses.
    """
    c = summ.get("claimed")
    if c is None:                       # a report written before the claimed tally: nothing to add
        return ""
    text = f"{c['established']} of {rows_word(c['rows']).replace('row', 'claimed row')} established ({c['proved']} proved)"
    rest = [f"{n} {what}" for n, what in ((c["undecided"], "undecided (unknown, vacuous or trace differs)"),
                                          (c["not_run"], "not run"), (c["failing"], "failing")) if n]
    if c["rows"] and not c["established"] and not c["failing"]:
        rest.append("nothing established, so the run is undecided")
    return text + ("; " + ", ".join(rest) if rest else "")


def headline(summ: dict) -> str:
    """'156 rows, 452 cells: 38 expected violation reproduced, 115 holds; 153 of 156 claimed rows established...'"""
    outcomes = ", ".join(f"{n} {k}" for k, n in summ["outcomes"].items())
    text = (f"{counted(summ['rows'], 'declared (operator, contract) row')}, "
            f"{counted(summ['cells'], 'cell')} judged" + (f"; {outcomes}" if outcomes else ""))
    claimed = claimed_line(summ)
    return text + (f"; {claimed}" if claimed else "")


ALWAYS_SHOWN = ("n", "batch", "d", "seed")
FIELD_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Case)
                  if not f.name.startswith("_") and f.default is not dataclasses.MISSING}


def _differs(value, default) -> bool:
    if isinstance(default, tuple):
        return list(value or ()) != list(default)
    return value != default


def example(ce: dict | None) -> str:
    """The drawn choices of a counterexample: its sizes and seed, then every field that differs from its default.

    'n=2, batch=1, d=4, seed=3, null=[0], bias_scale=10000.0, mask_kind=padding, tau=0.5': the
    fields that decided the failure are never left out.
    """
    ce = tree.map(lambda v: v, dict(ce or {}), sequence=list)     # as the report's JSON reads back (a tuple as a list)
    keys = [k for k in ALWAYS_SHOWN if k in ce]
    keys += [k for k, d in FIELD_DEFAULTS.items() if k in ce and k not in ALWAYS_SHOWN and _differs(ce[k], d)]
    return ", ".join(f"{k}={ce[k]}" for k in keys)


SHORT = {V.Outcome.HOLDS: "holds", V.Outcome.PROVED: "proved", V.Outcome.EXPECTED: "violated (expected)",
         V.Outcome.UNEXPECTED: "**UNEXPECTED**", V.Outcome.NOT_REPRODUCED: "**NOT reproduced**",
         V.Outcome.UNKNOWN: "unknown", V.Outcome.NOT_RUNNABLE: "not runnable", V.Outcome.NOT_APPLICABLE_BY_DESIGN: "n/a",
         V.Outcome.UNDECLARED: "-", V.Outcome.SAMPLED: "holds (sampled weights)", V.Outcome.VACUOUS: "vacuous",
         V.Outcome.NOT_TRACEABLE: "not traceable", V.Outcome.TRACE_DIFFERS: "**trace differs**",
         V.Outcome.DOMAIN_MISMATCH: "**domain mismatch**", V.Outcome.RAISED: "**RAISED**"}

HOW_TO_READ = (
    "Each row is an operator and a contract it declares: **claims** (the law must hold in every dtype) "
    "or **violates** (the suite must reproduce the violation). Outcomes: `holds` / `proved`, "
    "`expected violation reproduced`, `UNEXPECTED violation`, `operator raised` (the operator threw an "
    "exception on an input of its domain: its type, message, file:line and the input are given; failing), "
    "`expected violation NOT reproduced`, "
    "`unknown` (never counted as proved), `not runnable here` (this machine cannot run it: the reason is "
    "listed), `not applicable by design` (the contract itself excludes the cell, e.g. the eager float32 "
    "gradient_agreement cell whose float32 gradients are the error probe; counted apart, listed once); from the symbolic "
    "tier also `holds for sampled weights` (proved only with the weights fixed to one drawn sample: a pass, "
    "never `proved`), `vacuous` (no enumerated input met the premises; in the fuzz tier also: fewer than a "
    "tenth of the examples were judged, the rest inconclusive or set aside: nothing was checked, never green) "
    "and `not "
    "symbolically traceable` (the code does something z3/sympy cannot model soundly; file:line given). "
    "`proved` means z3 showed the law for every real input and parameter over the declared domain at the "
    "stated shapes (`tokenlaw docs symbolic`). Exact contracts compare bit-for-bit; the "
    "others use the derived bound of `tokenlaw.properties.tolerance` (each side's own error against "
    "float64, plus float64's estimated slack). `max disc/bound` is the worst ratio seen (<= 1 holds). "
    "The operators' formulas, the contracts' laws and the tolerance model are printed by "
    "`tokenlaw docs mathematics` and `tokenlaw docs laws`; a stored counterexample replays with "
    "`tokenlaw replay ID`.")


SHAPE_AXES = ("n", "d", "batch", "heads")


def _fuzz(cell) -> FuzzEvidence | None:
    """The fuzz tier's evidence of a cell's verdict (None for another tier's, or none recorded)."""
    e = cell.verdict.evidence if cell.verdict is not None else None
    return e if isinstance(e, FuzzEvidence) else None


def searched(row) -> str:
    """The shape ranges a row's fuzz cells searched (the union of the cells' ``evidence.searched``),
    ``n 1..130, d 1..128, batch 1..4, heads 1..64``; "" when no cell recorded any."""
    span = {}
    for c in row.cells:
        e = _fuzz(c)
        for axis, (lo, hi) in ((e.searched if e is not None and e.searched else {}).items()):
            old = span.get(axis, (lo, hi))
            span[axis] = (min(old[0], lo), max(old[1], hi))
    return ", ".join(f"{a} {span[a][0]}..{span[a][1]}" for a in SHAPE_AXES if a in span)


def _bounds(limit: dict) -> str:
    parts = [f"|scores| <= {limit['scores']:g}"] if limit.get("scores") is not None else []
    parts += [f"|h|^2 <= {limit['norm2']:g}"] if limit.get("norm2") is not None else []
    parts += [f"|score offset| <= {limit['offset']:g}"] if limit.get("offset") is not None else []
    parts += [f"{limit['predicate']}(x, params)"] if limit.get("predicate") else []
    return ", ".join(parts)


def limits(row) -> dict:
    """{dtype: "bounds (reason)"} of the declared limits a row's cells ran under."""
    out = {}
    for c in row.cells:
        lim = _fuzz(c).limit if _fuzz(c) is not None else None
        if lim:
            out[c.dtype] = f"{_bounds(lim)} ({lim['reason']})"
    return out


def limit_legend(rows) -> list[str]:
    """One line per distinct declared limit in the report: the bounds, the reason and the operators under it."""
    by = {}
    for r in rows:
        for dtype, text in limits(r).items():
            ops = by.setdefault(f"{dtype}: {text}", [])
            if r.operator not in ops:
                ops.append(r.operator)
    return [f"- {text}: " + ", ".join(f"`{o}`" for o in ops) for text, ops in by.items()]


def interrupted_line(meta: Meta) -> str | None:
    """What an interrupted check's or prove's report holds (``meta.interrupted``), or None for a run that finished."""
    cut = meta.interrupted
    if not cut:
        return None
    left, judged = cut.get("rows") or [], cut.get("judged") or {}
    # a proofs report's row is one cell (the reals): its rows were proved or not, no dtype is left half done
    done, whole = (("rows were proved", "the rows below are those the solver finished") if meta.tier is Tier.SYMBOLIC
                   else ("cells were judged", "the rows below are those judged in every dtype"))
    return (f"Interrupted (Ctrl-C) after {cut.get('judged_cells')} of {cut.get('planned_cells')} {done}: "
            f"{whole}, never a PASS. "
            + (f"Left out, {'not proved' if meta.tier is Tier.SYMBOLIC else 'not judged in every dtype'}: "
               f"{', '.join(f'`{r}`' for r in left)}"
               + (f" (their cells judged: {', '.join(f'`{c}` {o}' for c, o in judged.items())})" if judged else "")
               + "." if left else ""))


def run_line(meta: Meta) -> str:
    """One sentence naming how the run was made (no timings: see VOLATILE)."""
    run = meta.run
    s = run.settings if run is not None else None
    return (f"Tier: {meta.tier} (backend {meta.backend}), profile `{getattr(s, 'profile', None)}` "
            f"({getattr(s, 'examples', None)} examples per cell per dtype), seed {getattr(s, 'seed', None)}, "
            f"torch {run.environment.torch if run is not None else None}.")


def replay_command(replay_id: str, meta: Meta | None = None) -> str:
    """The command that replays ``replay_id`` when pasted in the directory the run (``meta.run``) ran in.

    The run's record holds what it needs: the user's ``--operators`` modules (``scope.operator_modules``,
    as typed), the replay directory as seen from there (``replays_from_run_dir``) and the backend's
    environment (``env``, e.g. ``TRITON_INTERPRET=1``).  A document without them (an old or merged
    report) gets the bare command.
    """
    run = meta.run if meta is not None else None
    if run is None:
        return replay(replay_id)
    return replay(replay_id, env=run.environment.env, modules=run.settings.operator_modules,
                  where=run.execution.replays_from_run_dir)


def replay(replay_id: str, *, env: dict | None = None, modules=(), where: str | None = None) -> str:
    """``tokenlaw replay ID`` with the environment ``env``, the user's ``--operators`` ``modules`` and the replay
    directory ``where`` (as seen from where it is pasted)."""
    env = [f"{k}={shlex.quote(str(v))}" for k, v in sorted((env or {}).items())]
    modules = [f"--operators {shlex.quote(m)}" for m in (modules or ())]
    tail = [f"--replays {shlex.quote(where)}"] if where else []
    return " ".join([*env, "tokenlaw", *modules, "replay", shlex.quote(replay_id), *tail])


def campaign_replay(replay_id: str, meta: dict) -> str:
    """The replay command of a campaign's finding (its meta: ``scope.operator_modules`` and ``replays``), as
    pasted in the directory the campaign ran in: the user's ``--operators`` modules included (issue 47)."""
    return replay(replay_id, modules=(meta.get("scope") or {}).get("operator_modules"), where=meta.get("replays"))


def first_counterexample(row, meta: Meta | None = None) -> str:
    """The first failing cell's counterexample, its detail and the command that replays it (``meta``: the run's)."""
    for c in row.cells:
        v = c.verdict
        if v is not None and v.status in (V.Status.VIOLATED, V.Status.REFUTED, V.Status.RAISED):
            ce = f"{c.dtype}: {example(v.counterexample)}; {v.written_detail}"
            return ce + (f" (replay: `{replay_command(v.replay, meta)}`)" if v.replay else "")
    return ""
