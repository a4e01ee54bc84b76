"""Solver budgets in z3's own resource units, so a verdict does not depend on the machine's load.

A wall-clock timeout ends a query after so many seconds: the same query is
then proved on an idle machine and ``unknown`` on a loaded one.  It also ends
the query from z3's timer thread, which cancels the search asynchronously,
wherever it is: z3's nlsat has a history of crashes on cancellation.

z3's resource limit (``rlimit``) counts the solver's own steps and stops the
search synchronously when they run out: the same query stops at the same step
on every machine and under every load.  Budgets are still stated in seconds
(``tokenlaw prove --timeout``); :data:`RATES` converts them with the steps per
CPU second each tactic showed on this project's queries, set above the measured
rates, and :data:`MIN_UNITS` is the floor of a tiny slice.  A slower-stepping
query may take longer than its nominal seconds to spend its steps.  A
wall-clock backstop of :data:`BACKSTOP` times the budget remains for the rare
query whose work z3 does not count in steps (some preprocessing); a query it
ends is reported as ended by the wall clock, so a reader knows that verdict
alone is load-dependent.  The calibration (which queries, which rates, what an
earlier one lost): ``docs/symbolic.md``, "Solver budgets in z3 steps".

z3 keeps one step counter per context, read after each check
(:func:`observe`), so a cell's budget (several queries) is also counted in
steps: :class:`Budget`.
"""
from __future__ import annotations

import z3

RATES = {"qfnra-nlsat": 12_000_000, "smt": 10_000_000}   # z3 resource units per CPU second (see above)
MIN_UNITS = 300_000                                # the fewest steps any slice gets
DEFAULT_RATE = min(RATES.values())                 # a plain z3.Solver() and any other tactic
BACKSTOP = 6.0                                     # wall-clock limit, as a multiple of the budget,
BACKSTOP_FLOOR = 1.0                               # and never below this many seconds (tiny slices)

_count = 0          # z3's step counter after the last check this process observed


def units(seconds: float, tactic: str | None = None) -> int:
    """The step budget equivalent to ``seconds`` of ``tactic`` (at least MIN_UNITS steps)."""
    return max(MIN_UNITS, int(seconds * RATES.get(tactic, DEFAULT_RATE)))


def limit(solver, seconds: float, tactic: str | None = None):
    """Give ``solver`` a budget of ``seconds``: in steps, and a wall-clock backstop (BACKSTOP x, >= BACKSTOP_FLOOR)."""
    solver.set("rlimit", units(seconds, tactic))
    solver.set("timeout", int(max(BACKSTOP * seconds, BACKSTOP_FLOOR) * 1000))
    solver.__dict__["_tokenlaw_units"] = units(seconds, tactic)
    return solver


def observe(solver) -> int:
    """The steps ``solver``'s last check used (z3's counter is per context: the change since the last check)."""
    global _count
    stats = solver.statistics()
    now = next((stats.get_key_value(k) for k in stats.keys() if k == "rlimit count"), _count)
    used, _count = max(0, now - _count), max(now, _count)
    return used


def check(solver, *assumptions):
    """``solver.check(*assumptions)`` with its steps observed."""
    result = solver.check(*assumptions)
    observe(solver)
    return result


def reason(solver) -> str:
    """Why ``solver`` said unknown, in words that say which limit ended it."""
    why = solver.reason_unknown()
    budget = solver.__dict__.get("_tokenlaw_units")
    if budget is not None and why in ("canceled", "max. resource limit exceeded"):
        return f"step budget of {budget} z3 resource units spent"
    if why == "timeout":
        return "wall-clock backstop reached (load-dependent)"
    return why


class Budget:
    """A budget of ``seconds`` over several checks, counted in z3 steps (``left()`` in seconds)."""

    def __init__(self, seconds: float, tactic: str | None = "qfnra-nlsat"):
        self.seconds = seconds
        self.rate = RATES.get(tactic, DEFAULT_RATE)
        self.start = _count

    def left(self) -> float:
        return self.seconds - (_count - self.start) / self.rate
