"""The standing adversary: predicate-conditional mutants of every operator, and the kill matrix.

For each operator of a registry, :func:`mutants` builds
:mod:`~tokenlaw.fuzz.mutants.conditional` mutants (the operator wrong only where a
predicate on its input holds), and :func:`run` judges each one with the
operator's rows of the default check (``tokenlaw check``'s plan, the same
profile, seed and cells, via :func:`~tokenlaw.fuzz.rows.run_rows`):

1. *Baseline.*  The rows run once with every operator wrapped in a recorder
   (identity output) that notes, per (operator, contract), which predicates
   held on some call.  Rows failing here cannot count as kills.
2. *Mutants.*  A mutant runs only the cells of rows where its predicate held
   in the baseline: in every other cell its operator returns, on every call
   the seeded search makes, exactly the baseline's outputs, so the cell's
   verdict is the baseline's (the search is deterministic for a seed and no
   database is used) -- running it could not kill.  The rows whose contracts
   are meant to see the wrongness run first, one cell at a time, and the
   mutant stops at its first kill; a claimed row's cell stops at its search's
   first violation (the row fails either way).  With ``workers`` > 1 the
   baseline's cells run on the Dask pool, and then the mutants, one task per
   mutant, the dearest first (:func:`expected_cost`).  A mutant whose output
   is the operator's own by construction (:func:`unchanged`) runs nothing.
   The identity control re-runs the cheapest cell of each row and compares
   status and draws with the baseline: the evidence of the determinism the
   skips rest on.
3. *Verdict.*  ``killed`` (some row no longer matches its declaration),
   ``inert`` (inert where drawn: the predicate held on k calls of the
   judged cells and the mutant's output equalled the operator's own, bit
   for bit, on every one of them -- standardising one token gives 0 whatever
   the scale; a softmax host's output is NaN on every row wherever a row is
   fully masked -- so no law could see it on what the check draws; not a gap
   of the search and not equivalent by construction, reported with k and never
   counted as killed),
   ``equivalent`` (no claimed law can see it, for a reason decided
   mechanically: the identity control; a predicate outside the operator's
   declared dtypes or widths; a change that is nothing by construction, such
   as a position-dependent change at n = 1 or 1 + 1e-6 in float16; a uniform
   scale seen only by laws that compare the operator with itself,
   ``AdversaryOptions.scale_blind``) or ``gap`` (the predicate was
   never drawn; or the wrong output was produced on a drawn input, and no row
   failed).

Mutants: every predicate with the generic wrongness ``scale`` (the *axis*
matrix), and each other wrongness the operator's claimed laws target with the
:data:`FOCUS` predicates (the *law family* matrix); the identity control with
``always``.
"""
from __future__ import annotations

import dataclasses
import json
import math
import random
import sys
import tempfile
import time
from pathlib import Path

import cloudpickle
import torch

from tokenlaw.properties import verdict as V
from tokenlaw.properties.plan import Cell, Row, contracts_of, plan
from tokenlaw.process.cpu_paths import one_thread

from . import conditional as C
from tokenlaw.operators.dtypes import DTYPES

from ..rows import CellRunner, shipped
from ..cluster import Pool
from ..engine import run_cell

# The predicates each wrongness other than ``scale`` is paired with: the control and one per axis.
FOCUS = ("always", "n_9_32", "n_65_128", "d_odd", "batch_3", "heads_ge_2", "float16", "float32", "mask_none",
         "magnitude_gt_10", "near_null_row", "odd_call")
_ONE_TOKEN = {"position", "leak_future", "drop_key"}      # nothing to move, leak or drop at n = 1


@dataclasses.dataclass(frozen=True)
class Mutant:
    operator: str
    predicate: C.Predicate
    wrongness: C.Wrongness

    @property
    def id(self) -> str:
        return f"{self.operator}:{self.predicate.name}:{self.wrongness.name}"


@dataclasses.dataclass
class Outcome:
    mutant: Mutant
    status: str               # killed | equivalent | inert | gap | crashed (the check raised instead of judging)
    reason: str
    killers: list
    cells: int                # cells run
    seconds: float
    cpu: float = 0.0          # CPU seconds of the process that ran it (its cells run there, in order)

    def to_json(self) -> dict:
        m = self.mutant
        return dict(id=m.id, operator=m.operator, predicate=m.predicate.name, axis=m.predicate.axis,
                    predicate_text=m.predicate.text, wrongness=m.wrongness.name, family=m.wrongness.family,
                    status=self.status, reason=self.reason, killers=self.killers, cells=self.cells,
                    seconds=round(self.seconds, 3), cpu_seconds=round(self.cpu, 3))


def mutants(registry, operators=None) -> list[Mutant]:
    """Every conditional mutant of the operators (all when None), in registry order."""
    contracts = contracts_of(registry)
    out = []
    for op in registry:
        if operators and op.name not in operators:
            continue
        preds = [p for p in C.PREDICATES if C.takes(op, p.needs)]
        for w in C.WRONGNESSES:
            if not set(w.needs) <= set(op.traits):
                continue
            if w.name == "identity":
                out.append(Mutant(op.name, C.predicate("always"), w))
                continue
            if not C.targets(w, op, contracts):
                continue
            for p in preds:
                if w.name == "scale" or p.name in FOCUS:
                    out.append(Mutant(op.name, p, w))
    return out


def sample(items: list, k: int | None, seed: int) -> list:
    """A fixed, seeded sample of ``k`` items, in their original order (all when k is None or too large)."""
    if k is None or k >= len(items):
        return list(items)
    keep = set(random.Random(seed).sample(range(len(items)), k))
    return [m for i, m in enumerate(items) if i in keep]


@dataclasses.dataclass
class Baseline:
    rows: dict                # operator -> its planned rows (with cells)
    failing: set              # row ids failing unmutated (through the recorder)
    drawn: dict               # (operator, contract) -> {predicate names that held on some call}
    seconds: float
    cpu: float = 0.0
    cells: dict = dataclasses.field(default_factory=dict)   # (operator, contract, cell key) -> {predicates}

    def held(self, row: Row, cell: Cell, p: C.Predicate) -> bool:
        """Whether ``p`` held on some call of ``cell`` in the baseline (a call-parity predicate: whether the
        cell called the operator at all -- the mutant's call count need not start where the recorder's did)."""
        seen = self.cells.get((row.operator, row.contract, _key(cell)), ())
        return (C.CALLED if p.axis == "call_parity" else p.name) in seen


def _key(cell) -> str:
    return f"{cell.backend}/{cell.dtype}"


class _InCellRunner(CellRunner):
    """A :class:`~tokenlaw.fuzz.rows.CellRunner` whose cells run inside :class:`conditional.in_cell`, so the
    recorder notes per cell which predicates held."""

    def run(self, task, replay_dir=dataclasses.MISSING):
        with C.in_cell(f"{task[3]}\t{task[5]}/{task[4]}"):
            return super().run(task, replay_dir)

    def __reduce__(self):
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if not f.name.startswith("_")}
        return _unship_cells, (shipped(fields, self.by_value),)


def _unship_cells(data: bytes) -> _InCellRunner:
    return _InCellRunner(**cloudpickle.loads(data))


def baseline(registry, operators, *, examples, seed, pool, folder, by_value=()) -> Baseline:
    """Run the operators' default rows through the recorder (see the module doc, step 1), one run for
    all of them (on the pool: every cell in flight at once), each cell recording what held in it."""
    start, cpu = time.perf_counter(), time.process_time()
    rows = [r for r in plan(registry, operators=sorted(operators)) if r.cells]
    rec = C.recording_registry(registry, {r.operator for r in rows}, None, folder)
    runner = _InCellRunner(rec, examples, seed, None, None, None, tuple(by_value))
    tasks = [(ri, ci, row.operator, row.contract, cell.dtype, cell.backend)
             for ri, row in enumerate(rows) for ci, cell in enumerate(row.cells)]
    if pool is None:
        with one_thread():
            done = [runner.run(t) for t in tasks]
    else:
        done = pool.run(runner, tasks)
    for ri, ci, v in done:
        rows[ri].cells[ci].verdict = v
    cells, drawn = {}, {}
    for line in C.read_log(folder):     # operator, contract, cell key, predicate (see _InCellRunner)
        op, contract, key, pred = line.split("\t")
        cells.setdefault((op, contract, key), set()).add(pred)
        if pred != C.CALLED:
            drawn.setdefault((op, contract), set()).add(pred)
    by_op = {}
    for r in rows:
        by_op.setdefault(r.operator, []).append(r)
    return Baseline(by_op, {r.id for r in rows if r.failing}, drawn, time.perf_counter() - start,
                    time.process_time() - cpu, cells)


def _run(registry, row: Row, *, examples, seed, contracts):
    """Judge ``row``'s cells here, in order, as ``tokenlaw check`` would (its seed, no database, no replay
    artifact), except that a *claimed* row's cell stops at its search's first violation
    (``run_cell(first_violation=True)``): the full search would end in a violation too, unshrunk or not,
    and the row fails either way.  An expected violation's cells run the full search (module doc)."""
    op, contract = registry[row.operator], contracts[row.contract]
    with one_thread():
        for c in row.cells:
            c.verdict = run_cell(op, contract, DTYPES[c.dtype], examples=examples, seed=seed, backend=c.backend,
                                 database=None, replay_dir=None, first_violation=row.declared == "claims")


# Which rows to try first (a mutant stops at its first kill, so the order is what a killed mutant costs; the
# verdict does not depend on it): the laws that declare they see the wrongness (AdversaryOptions.sees), then
# the laws by their declared rank (AdversaryOptions.rank: the comparisons with a reference first, they see
# any change of value, a 1 + 1e-6 scale in float64 included), then the other laws meant to see it, then the
# rest; a law declared ``last`` (gradcheck: slow, and blind to a change that is smooth in x) after all.
# (Measured: ``scale_tiny`` tried the exact laws first, ``finite`` among them, which no scale can fail:
# layernorm's killed ``scale_tiny`` mutants ran four ``finite`` cells, 1.3 s, before their 0.03 s kill.)
def _priority(contract, wrong, meant, contracts) -> tuple:
    opts = contracts[contract].adversary if contract in contracts else None
    named = contract in meant and opts is not None and wrong.name in opts.sees
    rank = opts.rank if opts is not None and opts.rank is not None else float("inf")
    return (not named, bool(opts and opts.last), rank, contract not in meant)


def _units(rows, base: Baseline, p: C.Predicate, *, every_row=False, dtype=None, one_per_row=False):
    """What one mutant runs, one unit at a time, as (row, its cells to run): only the cells where ``p`` held in
    the baseline (``every_row``: all); a claimed row's cells one by one (a claimed law must hold in every
    dtype, so one cell can kill; the predicate's own dtype first, a dtype predicate is wrong there only, then
    the cheapest as the baseline measured them); an expected violation's cells together (it is reproduced in
    some dtype); ``one_per_row``: only the cheapest cell of each row (the identity control's sample).  A row's
    other cells keep their baseline verdicts."""
    def cost(c):
        return (c.dtype != dtype, c.verdict.seconds if c.verdict is not None else math.inf)

    for r in rows:
        run = sorted((c for c in r.cells if every_row or base.held(r, c, p)), key=cost)
        if one_per_row:
            run = run[:1]
        if not run:
            continue
        if r.declared == "violates":
            yield r, run
        else:
            yield from ((r, [c]) for c in run)


def _fresh(row: Row, cells) -> Row:
    return Row(row.operator, row.contract, row.declared, row.reason,
               [Cell(c.operator, c.contract, c.backend, c.dtype) for c in cells])


def judge(registry, m: Mutant, base: Baseline, *, examples, seed, folder, by_value=(), every_row=False) -> Outcome:
    """Run one mutant (module doc, steps 2 and 3); ``every_row``: run the cells where its predicate never held
    too (they cannot kill: the check that the skip loses nothing)."""
    start, cpu = time.perf_counter(), time.process_time()
    same = unchanged(m)
    if same:        # its output is the operator's own on every call: every cell would give the baseline's verdict
        return Outcome(m, "equivalent", same + " (not run: every cell would repeat the identity control's)", [],
                       0, time.perf_counter() - start, time.process_time() - cpu)
    op = registry[m.operator]
    contracts = contracts_of(registry)
    meant = C.targets(m.wrongness, op, contracts)
    # a row that is not applicable by design skips before drawing: it can neither kill nor judge
    rows = [r for r in base.rows.get(m.operator, []) if r.declared and r.id not in base.failing
            and r.outcome != V.Outcome.NOT_APPLICABLE_BY_DESIGN]
    drawn = [r for r in rows if any(base.held(r, c, m.predicate) for c in r.cells)]
    claimed = {r.contract for r in rows}
    blind = _scale_blind(m, claimed, contracts)
    if blind and not every_row:
        # decided from the baseline alone: every row its predicate reaches is blind to a uniform scale there,
        # so running them could at most move a self-comparison's ratio by the factor (classify says the same)
        return Outcome(m, "equivalent", blind + " (not run)", [], 0, time.perf_counter() - start,
                       time.process_time() - cpu)
    units = list(drawn) + ([r for r in rows if r not in drawn] if every_row else [])
    units.sort(key=lambda r: _priority(r.contract, m.wrongness, meant, contracts))
    sub = Path(folder) / m.id.replace(":", "_")
    sub.mkdir(parents=True, exist_ok=True)
    bad = C.mutant_registry(registry, m.operator, m.predicate, m.wrongness, folder=str(sub), tag=m.id)
    ran, closest = 0, {}
    control = m.wrongness.name == "identity"
    for row, cells in _units(units, base, m.predicate, every_row=every_row,
                             dtype=m.predicate.name if m.predicate.axis == "dtype" else None,
                             one_per_row=control and not every_row):
        wave = _fresh(row, cells)
        try:
            _run(bad, wave, examples=examples, seed=seed, contracts=contracts)
        except Exception as err:  # noqa: BLE001 -- the check itself crashed on the mutant: say so, go on
            text = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:300]
            return Outcome(m, "crashed", f"the check crashed on row {wave.id} instead of judging it "
                           f"(`tokenlaw check` would exit 70): {text}", [], ran, time.perf_counter() - start,
                           time.process_time() - cpu)
        ran += len(cells)
        if control:
            other = _differs(row, wave)
            if other:
                return Outcome(m, "gap", f"not deterministic: the identity control re-ran {other}; every cell "
                               "a mutant of this operator skipped rests on the seeded check repeating itself",
                               [], ran, time.perf_counter() - start, time.process_time() - cpu)
        for c in wave.cells:        # how near each tolerance law came to failing (a survivor's evidence)
            if c.verdict is not None and c.verdict.bound > 0:
                closest[row.contract] = max(closest.get(row.contract, 0.0), c.verdict.ratio)
        fresh = {c.id: c for c in wave.cells}       # the row as the check would judge it: the rest as in the baseline
        whole = Row(row.operator, row.contract, row.declared, row.reason, [fresh.get(c.id, c) for c in row.cells])
        if whole.failing:
            return Outcome(m, "killed", f"row {whole.id} no longer matches its declaration", [whole.id], ran,
                           time.perf_counter() - start, time.process_time() - cpu)
    changed = f"{m.id}\tchanged" in C.read_log(sub)
    status, reason = classify(m, op, drawn=bool(drawn), changed=changed, meant=meant,
                              meant_drawn=any(r.contract in meant for r in drawn),
                              judged_by={r.contract for r in drawn}, contracts=contracts, closest=closest,
                              claimed=claimed, held=bad[m.operator].fn.held)
    if control and status == "equivalent":
        reason += (f"; its re-run of {ran} cell(s), {'every cell' if every_row else 'the cheapest of each row'} "
                   "where the operator was called, repeated the baseline's status and draws in each")
    return Outcome(m, status, reason, [], ran, time.perf_counter() - start, time.process_time() - cpu)


def _differs(row: Row, wave: Row) -> str | None:
    """How the identity control's re-run of ``row``'s cells (``wave``) differs from the baseline's, or None:
    another status, or other inputs drawn (the engine's digest of every example a search drew,
    ``evidence.draws``).  The control's outputs are the operator's own on every call, so a deterministic
    seeded check gives each cell the baseline's verdict on the same draws: the evidence every skip rests on."""
    before = {c.id: c.verdict for c in row.cells}
    for c in wave.cells:
        a, b = before.get(c.id), c.verdict
        if a is None or b is None:
            continue
        if a.status != b.status:
            return f"cell {c.id} to {b.status} (the baseline: {a.status})"
        da, db = (v.evidence.draws if v.evidence is not None else None for v in (a, b))
        if da and db and da != db:
            return f"cell {c.id} on other draws (digest {db}, the baseline's {da})"
    return None


def expected_cost(m: Mutant, base: Baseline) -> float:
    """What ``m`` can cost at most: the baseline's seconds of the cells it would run (0 when it runs none).
    A killed mutant stops sooner; a survivor and the identity control pay it all."""
    if unchanged(m):
        return 0.0
    rows = [r for r in base.rows.get(m.operator, []) if r.declared and r.id not in base.failing]
    costs = [[c.verdict.seconds for c in r.cells if c.verdict is not None and base.held(r, c, m.predicate)]
             for r in rows]
    if m.wrongness.name == "identity":      # the cheapest cell of each row (judge)
        return sum(min(c) for c in costs if c)
    return sum(sum(c) for c in costs)


def classify(m: Mutant, op, *, drawn: bool, changed: bool, meant, meant_drawn: bool,
             judged_by=frozenset(), contracts=None, closest=None, claimed=None, held=None) -> tuple[str, str]:
    """(equivalent | inert | gap, why) for a surviving mutant; ``held``: the calls on which its predicate held
    in the cells it ran (None: not counted); ``judged_by``: the contracts of the rows where its
    predicate held; ``contracts``: those they are declared in (none: the catalogue); ``closest``: per
    tolerance law, the largest discrepancy / bound its cells reached on the mutant (named in a gap's reason);
    ``claimed``: the contracts of every row of the operator the adversary runs (None: ``judged_by``) -- a
    uniform scale is equivalent only when each of them is blind to it, wherever the predicate was drawn."""
    contracts = contracts_of(None) if contracts is None else contracts
    p, w = m.predicate, m.wrongness
    if w.name == "identity":
        return "equivalent", "control: the output is the operator's own, unchanged by construction"
    same = unchanged(m)
    if same:
        return "equivalent", same
    if not drawn:
        why = unreachable(p, op)
        if why:
            return "equivalent", why
        return "gap", f"predicate never drawn: no call of the default check had {p.text}"
    blind = _scale_blind(m, judged_by if claimed is None else claimed, contracts)
    if blind:
        return "equivalent", blind
    if not changed:
        # drawn, and on every call where the predicate held the wrong output was the operator's own: the
        # mutant is inert on what the check draws (a fact about the operator there, e.g. its output at n = 1
        # is 0, or NaN on every row), not a region the search missed
        k = "" if held is None else f"{held} times "
        return "inert", (f"inert where drawn: the predicate ({p.text}) held {k}in the cells run, and the "
                         f"mutant's output equalled the operator's own every time ({w.text} changes nothing there)")
    if not meant_drawn:
        return "gap", (f"the predicate held only in rows of laws not meant to see {w.name} "
                       f"(meant: {', '.join(sorted(meant))}); no row failed")
    near = "; ".join(f"{c} at {r:.2g} of its bound" for c, r in sorted(closest.items()) if c in meant) if closest else ""
    factor = {"scale": C.SCALE, "scale_tiny": C.TINY_SCALE}.get(w.name)
    if near and factor is not None and p.axis == "dtype":
        # a uniform change in one dtype, measured in that dtype's unit roundoff: inside the bound of a computation
        # of a few roundings when it is a few units (bfloat16: 1e-2 is 2.6 units of 2^-8)
        u = torch.finfo(getattr(torch, p.name)).eps / 2
        near += f"; the change {factor:g} is {factor / u:.2g} units of {p.name}'s roundoff {u:.2g}"
    return "gap", (f"wrong outputs reached the rows meant to see them ({', '.join(sorted(judged_by))}); no row failed"
                   + (f" (largest discrepancy / bound: {near})" if near else ""))


def _scale_blind(m: Mutant, claimed, contracts) -> str | None:
    """Why no claimed row of ``m``'s operator (``claimed``: their contracts) can see its uniform scale, or None:
    each such law is blind to a uniform scale on the predicate's axis (``AdversaryOptions.scale_blind``: it
    compares the operator with itself, the predicate alike on both sides, or, as ``finite``, no scale turns its
    finite values infinite).  One law that could see it (a reference comparison), drawn there or not, and the
    mutant is run: a predicate drawn only in blind rows is a gap of the draws, never an equivalent."""
    p, w = m.predicate, m.wrongness
    if w.name in ("scale", "scale_tiny") and claimed and all(
            c in contracts and C.scale_blind(contracts[c], p.axis) for c in claimed):
        return (f"every law {m.operator} claims ({', '.join(sorted(claimed))}) compares it with itself, "
                f"{p.text} alike on both sides, or asks only for finite values: a uniform scale is invisible to "
                "each of them")
    return None


def unchanged(m: Mutant) -> str | None:
    """Why ``m`` returns, on every call, exactly the operator's own output (bit for bit), or None: a
    position, leak or drop at n = 1 (no other token; the wrongness returns ``out`` itself or ``out`` x 1.0),
    ``scale_tiny`` in a dtype where 1 + 1e-6 rounds to 1 (a float16 x times a float16 1 is x).  Such a mutant
    is the identity control again: :func:`judge` classifies it without running it."""
    p, w = m.predicate, m.wrongness
    if p.name == "n_1" and w.name in _ONE_TOKEN:
        return f"{w.name} at n = 1 changes nothing by construction (no other token)"
    if w.name == "scale_tiny" and p.axis == "dtype" and _rounds_to_one(C.TINY_SCALE, p.name):
        return f"1 + {C.TINY_SCALE:g} rounds to 1 in {p.name}: the output is unchanged by construction"
    return None


def _rounds_to_one(factor: float, dtype: str) -> bool:
    return bool(torch.tensor(1.0 + factor, dtype=getattr(torch, dtype)) == 1)


def unreachable(p: C.Predicate, op) -> str | None:
    """Why ``p`` can never hold under ``op``'s declared domain, or None."""
    dom = op.domain
    if p.axis == "dtype" and p.name not in dom.dtypes:
        return f"outside the declared dtypes ({', '.join(dom.dtypes)}): the operator claims nothing there"
    if p.axis == "width":
        widths = dom.d_model if dom.fixed_width else None
        if widths is not None:
            probe = [torch.zeros(1, 1, d) for d in widths]
            if not any(C.holds(p, x, {}, 0) for x in probe):
                return f"outside the declared widths {tuple(widths)} (fixed_width)"
        if dom.d_max is not None and p.name == "d_ge_17" and dom.d_max < 17:
            return f"outside the declared widths (d_max = {dom.d_max})"
    return None


def run(registry, *, operators=None, sample_k=None, seed=0, examples=100, workers=1, mutant_ids=None,
        by_value=(), every_row=False, stream=sys.stderr, log=None) -> dict:
    """Build, sample, run and classify the mutants; returns the report's JSON view (:func:`report`; the app
    writes it as a :class:`~tokenlaw.reports.kill_matrix.KillMatrix`).

    operators: only these operators' mutants (None: all); sample_k: a seeded sample of K of them; mutant_ids:
    only these ids; by_value: a user's ``.py`` modules, shipped to Dask workers by value (as ``check`` does);
    every_row: skip no row (see :func:`judge`); log: a file to which each outcome is appended as one JSON line
    as it finishes (a run stopped early still leaves what it judged).
    """
    start = time.perf_counter()
    every = mutants(registry, operators)
    chosen = sample(every, sample_k, seed)
    if mutant_ids:
        chosen = [m for m in chosen if m.id in mutant_ids]
    names = {m.operator for m in chosen}
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="tokenlaw-adversary-") as tmp, \
            (Pool(workers) if workers > 1 else _NoPool()) as pool:
        pool = pool if workers > 1 else None
        rec = Path(tmp) / "baseline"
        rec.mkdir()
        base = baseline(registry, names, examples=examples, seed=seed, pool=pool, folder=str(rec),
                        by_value=by_value) if names else \
            Baseline({}, set(), {}, 0.0)
        if stream:
            stream.write(f"adversary: baseline of {len(names)} operators in {base.seconds:.1f}s ({base.cpu:.1f}s CPU here), "
                         f"{len(base.failing)} rows failing unmutated; {len(chosen)} of {len(every)} mutants\n")
        if pool is None:
            done = (judge(registry, m, base, examples=examples, seed=seed, folder=tmp, by_value=by_value,
                          every_row=every_row) for m in chosen)
        else:
            done = _on_pool(pool, registry, chosen, base, examples=examples, seed=seed, folder=tmp,
                            by_value=by_value, every_row=every_row)
        for k, o in enumerate(done, 1):
            outcomes.append(o)
            if log is not None:
                with open(log, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(o.to_json()) + "\n")
            if stream:
                stream.write(f"  [{k}/{len(chosen)}] {o.seconds:6.1f}s ({o.cpu:5.1f}s CPU) {o.mutant.id:<44} "
                             f"{o.status:<10} {o.reason}\n")
                stream.flush()
        order = {m.id: i for i, m in enumerate(chosen)}
        outcomes.sort(key=lambda o: order[o.mutant.id])
    return report(outcomes, every=len(every), baseline=base, seconds=time.perf_counter() - start,
                  meta=dict(seed=seed, examples=examples, workers=workers, sample=sample_k,
                            operators=sorted(names), mutant_ids=sorted(mutant_ids or ())))


def _on_pool(pool, registry, chosen, base, *, examples, seed, folder, by_value, every_row):
    """Outcomes of ``chosen`` as the pool's workers finish them: one task per mutant, each running its cells in
    its worker, in order, up to its first kill (a task per cell would pay the pool's hand-over on every wave)."""
    from distributed import as_completed  # optional: only a --workers N > 1 run needs it (as fuzz.cluster)
    key = f"tokenlaw-adversary-{id(registry):x}-{time.time_ns():x}"
    data = pool.client.scatter(shipped(registry, by_value), broadcast=True)
    basef = pool.client.scatter(base, broadcast=True)
    # the dearest first (identity controls, survivors-to-be): a long task started last would leave the other
    # workers idle at the end
    order = sorted(chosen, key=lambda m: -expected_cost(m, base))
    futures = [pool.client.submit(_judge_task, key, data, basef, m, examples, seed, folder, every_row,
                                  key=f"{key}-{k}", pure=False, priority=-k) for k, m in enumerate(order)]
    for future in as_completed(futures, loop=pool.client.loop):
        yield future.result()


_SHIPPED: dict = {}     # key -> the registry this worker unpickled for that run


def _judge_task(key, data, base, m, examples, seed, folder, every_row):
    if key not in _SHIPPED:
        _SHIPPED.clear()
        _SHIPPED[key] = cloudpickle.loads(data)
    return judge(_SHIPPED[key], m, base, examples=examples, seed=seed, folder=folder, every_row=every_row)


class _NoPool:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _tally(mutants, key) -> dict:
    """Per ``key`` (a field of a mutant's JSON: axis, family, operator), how many of each status."""
    out = {}
    for m in mutants:
        t = out.setdefault(m[key], dict(total=0, killed=0, equivalent=0, inert=0, gap=0, crashed=0))
        t["total"] += 1
        t[m["status"]] += 1
    return out


def _matrix(mutants: list) -> dict:
    """The figure and the kill matrices of a list of mutants' JSON (:meth:`Outcome.to_json`)."""
    count = lambda status: sum(m["status"] == status for m in mutants)   # noqa: E731
    equivalent = count("equivalent")
    return dict(figure=dict(killed=count("killed"), non_equivalent=len(mutants) - equivalent, equivalent=equivalent,
                            gaps=count("gap"), inert=count("inert"), crashed=count("crashed")),
                axes=_tally(mutants, "axis"), families=_tally(mutants, "family"),
                operators=_tally(mutants, "operator"))


def report(outcomes, *, every, baseline, seconds, meta) -> dict:
    """The kill matrix (per axis, per law family, per operator), every survivor and its reason."""
    mutants = [o.to_json() for o in outcomes]
    return dict(
        meta=dict(meta, mutants_built=every, mutants_run=len(outcomes), seconds=round(seconds, 1),
                  baseline_seconds=round(baseline.seconds, 1), baseline_cpu_seconds=round(baseline.cpu, 1),
                  mutants_cpu_seconds=round(sum(o.cpu for o in outcomes), 1)),
        **_matrix(mutants),
        baseline_failing=sorted(baseline.failing),
        not_implemented=dict(C.NOT_IMPLEMENTED),
        mutants=mutants,
    )


def splice(recorded: dict, fresh: dict) -> dict:
    """``recorded`` with every mutant of ``fresh``'s operators replaced by ``fresh``'s (a re-run of all their
    mutants at the recorded seed and examples), the figure and the matrices recomputed over the whole, and the
    re-run stated in ``meta.spliced`` (its operators, when, its own timings); the recorded run's timings stay
    what they were, for the operators they were measured on.  Raises InvalidArgument when ``fresh`` is not a
    whole re-run of its operators at the recorded settings."""
    rm, fm = recorded["meta"], fresh["meta"]
    for key, flag in (("seed", "--seed"), ("examples", "--examples")):
        if rm.get(key) != fm.get(key):
            raise C.InvalidArgument(f"{flag}: the recorded report ran {key} {rm.get(key)}, this run "
                                    f"{fm.get(key)}: a splice keeps one setting")
    if fm.get("sample") is not None:
        raise C.InvalidArgument("--splice: a splice replaces whole operators or named mutants (no --sample)")
    ids = fm.get("mutant_ids")
    if ids:     # named mutants only: each replaces the recorded mutant of that id, the rest kept
        known = {m["id"] for m in recorded["mutants"]}
        if set(ids) - known:
            raise C.InvalidArgument(f"--mutant: not in the recorded report: {sorted(set(ids) - known)}")
        fresh_by = {m["id"]: m for m in fresh["mutants"]}
        mutants = [fresh_by.get(m["id"], m) for m in recorded["mutants"]]
        runs = list(rm.get("spliced", ())) + [dict(mutants=sorted(ids), seconds=fm["seconds"],
                                                   baseline_seconds=fm["baseline_seconds"],
                                                   mutants_cpu_seconds=fm["mutants_cpu_seconds"],
                                                   workers=fm["workers"], mutants_run=fm["mutants_run"],
                                                   **{k: fm[k] for k in ("commit", "date") if k in fm})]
        ops = set(fm["operators"])
        failing = sorted({r for r in recorded["baseline_failing"] if r.split("-")[0] not in ops}
                         | set(fresh["baseline_failing"]))
        return dict(recorded, meta=dict(rm, spliced=runs), **_matrix(mutants), baseline_failing=failing,
                    mutants=mutants)
    if fm["mutants_run"] != fm["mutants_built"]:
        raise C.InvalidArgument("--splice: a splice of whole operators re-runs every mutant of each")
    ops = set(fm["operators"])
    unknown = ops - set(rm["operators"])
    kept = [m for m in recorded["mutants"] if m["operator"] not in ops]
    mutants = kept + list(fresh["mutants"])
    order = {name: i for i, name in enumerate(rm["operators"] + sorted(unknown))}
    mutants.sort(key=lambda m: order[m["operator"]])       # stable: each operator's mutants in run order
    runs = list(rm.get("spliced", ())) + [dict(operators=sorted(ops), seconds=fm["seconds"],
                                               baseline_seconds=fm["baseline_seconds"],
                                               mutants_cpu_seconds=fm["mutants_cpu_seconds"],
                                               workers=fm["workers"], mutants_run=fm["mutants_run"],
                                               **{k: fm[k] for k in ("commit", "date") if k in fm})]
    meta = dict(rm, operators=sorted(set(rm["operators"]) | ops), spliced=runs,
                mutants_run=len(mutants), mutants_built=rm["mutants_built"] - sum(
                    1 for m in recorded["mutants"] if m["operator"] in ops) + fm["mutants_built"])
    failing = sorted({r for r in recorded["baseline_failing"] if r.split("-")[0] not in ops}
                     | set(fresh["baseline_failing"]))
    return dict(recorded, meta=meta, **_matrix(mutants), baseline_failing=failing, mutants=mutants)

