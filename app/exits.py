"""The exit codes of every ``tokenlaw`` command, defined once.

Lower layers return results (a report, a verdict, a bool); the commands in
``tokenlaw.app`` map them to these codes.

* 0 ``EXIT_OK``: every row matches its declaration / no regression / the replay reproduced / every
  mutant killed / the experiment's acceptance checks hold;
* 1 ``EXIT_FAIL``: a row fails (a claimed law violated, an expected violation not reproduced), a
  regression, a replay that differs, a surviving mutant, a failed experiment check;
* 2 ``EXIT_USAGE``: bad arguments or input files;
* 3 ``EXIT_CANNOT_RUN``: this machine cannot run what was asked (no GPU for a benchmark);
* 4 ``EXIT_UNDECIDED``: ``check`` / ``prove`` / ``verify`` / ``report merge``: nothing fails, but the run did
  not establish what it claims: a claimed row is unknown, vacuous or its trace differs from eager, or
  there are claimed rows and none was established (``prove``: none proved).  Never a pass;
* 70 ``EXIT_INTERNAL``: an internal error, a tokenlaw bug (EX_SOFTWARE of sysexits.h);
* 130 ``EXIT_INTERRUPTED``: Ctrl-C (128 + SIGINT); ``campaign``, ``check``, ``prove``, ``verify`` and ``gate``
  first write the report of what was judged, marked interrupted;
* 141 ``EXIT_PIPE``: the reader closed stdout early (``tokenlaw docs closure | head``): the command stops
  quietly, with the code a shell gives a process that SIGPIPE ended (128 + 13).
"""
from __future__ import annotations

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2
EXIT_CANNOT_RUN = 3
EXIT_UNDECIDED = 4
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130
EXIT_PIPE = 141

# A report's ``summary.result`` (``reports.document.standing``) -> its exit code.
_OF_RESULT = {"PASS": EXIT_OK, "FAIL": EXIT_FAIL, "UNDECIDED": EXIT_UNDECIDED}


def passed(ok: bool) -> int:
    """``EXIT_OK`` when ``ok``, else ``EXIT_FAIL``."""
    return EXIT_OK if ok else EXIT_FAIL


def of_result(result: str) -> int:
    """The exit code of a report's ``summary["result"]``: PASS 0, FAIL 1, UNDECIDED 4."""
    return _OF_RESULT[result]
