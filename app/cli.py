"""``tokenlaw``: a thin command line over the registry, the tiers and the report writers.

Exit codes (the same for every command):

* 0 every row matches its declaration / no regression / the replay reproduced;
* 1 a row does not match its declaration (an UNEXPECTED violation or an
  expected violation NOT reproduced), a regression, a surviving mutant, a
  closure break, a replay that differs: a finding about the code under test;
* 2 bad arguments, declarations or input files (a one-line message naming the
  argument, checked before any long run);
* 3 the command cannot run on this machine (``bench`` without a GPU);
* 4 undecided (``check``, ``prove``, ``verify``, ``report merge``): nothing fails, but a claimed row is
  unknown, vacuous or its trace differs from eager, or no claimed row was established at all
  (``prove``: none proved); never a pass;
* 70 an internal error of tokenlaw (or of a module it imported): a bug to
  report, never a finding (``TOKENLAW_DEBUG=1`` shows the traceback);
* 130 interrupted (Ctrl-C); ``campaign``, ``check``, ``prove``, ``verify`` and ``gate`` write the report of
  what was judged first, marked interrupted;
* 141 stdout was closed early (``| head``): a quiet stop, as for SIGPIPE.

The parser is light: it is built from ``argtypes`` and the ``*_args`` modules,
which import argparse and no torch (nor anything of tokenlaw's lower layers), so
``tokenlaw --help`` and an argument error answer in a fraction of a second.  Each
subcommand names its work as a ``"tokenlaw.app.X_cmd:cmd_x"`` string;
:func:`command` imports it once the arguments parsed (the one lazy loader).  A subcommand may also name a
light ``precheck`` (in its ``*_args`` module), run first: a bad docs topic or replay id is refused there.
"""
from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys
import traceback
from pathlib import Path

from tokenlaw.errors import InvalidArgument  # imports nothing: --help stays light

from .exits import (EXIT_CANNOT_RUN, EXIT_FAIL, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK,  # noqa: F401
                    EXIT_PIPE, EXIT_UNDECIDED, EXIT_USAGE, of_result)                    # (re-exported)

EPILOG = ("exit codes: 0 every row matches its declaration, 1 a row fails / a regression, 2 bad arguments or "
          "input files, 3 cannot run on this machine, 4 undecided (a claimed row unknown / vacuous / trace "
          "differs, or nothing established), 70 internal error (a tokenlaw bug), 130 interrupted (Ctrl-C), 141 stdout closed early (| head)")

# The light modules that add subcommands: each has ``register(subparsers)``, which adds its parser (argparse
# only) and sets ``func`` to the "module:function" that does the work.
EXTENSIONS: tuple[str, ...] = (
    "tokenlaw.app.check_args",
    "tokenlaw.app.campaign_args",
    "tokenlaw.app.fuzz_args",
    "tokenlaw.app.gate_args",
    "tokenlaw.app.scaffold_args",
    "tokenlaw.app.closure_args",
    "tokenlaw.app.reproduce_args",
    "tokenlaw.app.prove_args",
    "tokenlaw.app.verify_args",
    "tokenlaw.app.bench_args",
    "tokenlaw.app.docs_args",
    "tokenlaw.app.adversary_args",
    "tokenlaw.app.hf_args",
    "tokenlaw.app.bugs_args",
)


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error (exit 2) instead of the usage block, and the closest names for a
    mistyped flag or command (issue 47: ``campaign --operators X`` said "unrecognized arguments", no hint)."""

    def parse_args(self, args=None, namespace=None):
        self._argv = list(sys.argv[1:] if args is None else args)
        return super().parse_args(args, namespace)

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}{self._hint(message)} (see `{self.prog} --help`)\n")

    def _hint(self, message) -> str:
        """'; did you mean ...' for an unknown flag or command, or where a global flag goes; '' otherwise."""
        subs = [a for a in self._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            return ""
        choices = subs[0].choices
        argv = getattr(self, "_argv", [])
        if "invalid choice: " in message:
            typed = message.split("invalid choice: ", 1)[1].split(" ", 1)[0].strip("'")
            close = difflib.get_close_matches(typed, list(choices), n=3)
            return f"; did you mean {' or '.join(close)}?" if close else ""
        if not message.startswith("unrecognized arguments: "):
            return ""
        cmd = next((a for a in argv if a in choices), None)
        own = [o for a in self._actions for o in a.option_strings]
        theirs = [o for a in choices[cmd]._actions for o in a.option_strings] if cmd else []
        hints = []
        for token in message.split(": ", 1)[1].split():
            flag = token.split("=", 1)[0]
            if not flag.startswith("--"):
                continue
            if flag in own:
                hints.append(f"{flag} is tokenlaw's own flag: put it before the command "
                             f"(tokenlaw {flag} ... {cmd or 'COMMAND'} ...)")
            else:
                close = difflib.get_close_matches(flag, theirs or own, n=3)
                if close:
                    hints.append(f"{flag}: did you mean {' or '.join(close)}?")
        return "; " + "; ".join(hints) if hints else ""


def build_parser() -> argparse.ArgumentParser:
    """Every subcommand, flag and help text; imports only the light ``*_args`` modules (no torch)."""
    p = Parser(prog="tokenlaw", description=__doc__.split("\n\n")[0], epilog=EPILOG)
    p.add_argument("--operators", dest="operators_module", action="append", metavar="MODULE",
                   help="collect the operators declared in this module (an importable name, searched from the "
                        "current directory, or a path to a .py file); check / prove / verify then run only "
                        "its operators (add --with-builtins, or name them with --operator, for built-ins)")
    sub = p.add_subparsers(dest="command", required=True)
    for name in EXTENSIONS:
        importlib.import_module(name).register(sub)
    return p


def command(spec: str):
    """The function ``spec`` = ``"package.module:function"`` names: the one place a command's work is imported.

    Parsing needs none of it, so it loads only here, after the arguments parsed: the cost of torch and the
    tiers is paid by a command that runs, never by ``--help`` or a usage error.  Looked up at call time, so
    a test that replaces ``check_cmd.cmd_list`` replaces what runs.
    """
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def main(argv=None) -> int:
    # Like `python script.py`, a user's own module next to them is importable (--operators mymod,
    # closure mymod:factory) without installing it.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:          # --help (0) or a one-line usage error (2)
        return done.code
    # run from a checkout (cwd first on sys.path), its root goes after every installed package: its kernels/
    # must not shadow HF's ``kernels`` (imported here, not above: ``--help`` loads no torch)
    importlib.import_module("tokenlaw.process.unshadow").unshadow()
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        # a light check of what parsing could not see (a docs topic, a replay id) before the work is imported:
        # a bad one answers in a fraction of a second, without torch (issue 47)
        if getattr(args, "precheck", None):
            command(args.precheck)(args)
        return command(args.func)(args)
    except InvalidArgument as err:          # a bad argument found by a command (exit 2)
        print(f"tokenlaw: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("tokenlaw: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`| head`): nothing more to say and nowhere to say it; point stdout at
        # /dev/null so the interpreter's final flush does not raise again.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_PIPE
    except Exception as err:  # noqa: BLE001 (the one place a crash becomes an exit code)
        if os.environ.get("TOKENLAW_DEBUG"):
            traceback.print_exc()
        where = traceback.extract_tb(err.__traceback__)[-1]
        print(f"tokenlaw: internal error: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''} "
              f"(at {Path(where.filename).name}:{where.lineno}); this is a bug, not a finding about your operators; "
              f"rerun with TOKENLAW_DEBUG=1 for the traceback", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
