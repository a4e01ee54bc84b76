"""What a kernel calls: transcendental functions, traced at run time or read from its source.

Two independent witnesses for the zero-transcendental contract:

* :func:`trace_transcendentals` counts, while active, every exp/exp2/log/
  log2/sin/cos/erf the Triton *interpreter* evaluates (it wraps the
  interpreter builder's ``create_*`` methods): what the kernel actually ran
  on this input, including jit helpers it called.
* :func:`transcendental_names` reads the kernel's source (and the source of
  every ``@triton.jit`` helper it calls) and lists the ``tl.*``
  transcendental functions named there: what it *could* run on any input,
  on any backend, compiled or not.
"""
from __future__ import annotations

import ast
import collections
import contextlib
import inspect
import textwrap
from unittest import mock

TRANSCENDENTAL = ("exp", "exp2", "log", "log2", "sin", "cos", "erf")


@contextlib.contextmanager
def trace_transcendentals():
    """Yield a Counter of transcendental evaluations by the Triton interpreter while active."""

    from triton.runtime import interpreter  # optional: the interpreter, only when tracing under it

    calls: collections.Counter = collections.Counter()
    builder = interpreter.InterpreterBuilder
    patches = []
    for name in TRANSCENDENTAL:
        original = getattr(builder, f"create_{name}", None)
        if original is None:
            continue

        def counted(self, *args, _name=name, _orig=original):
            calls[_name] += 1
            return _orig(self, *args)

        patches.append(mock.patch.object(builder, f"create_{name}", counted))
    with contextlib.ExitStack() as stack:
        for p in patches:
            stack.enter_context(p)
        yield calls


def _python_fn(kernel):
    return getattr(kernel, "fn", kernel)


def transcendental_names(kernel, _seen=None) -> collections.Counter:
    """Counter of ``tl.<transcendental>`` names in ``kernel``'s source and its jit callees (recursively)."""
    seen = set() if _seen is None else _seen
    fn = _python_fn(kernel)
    if fn in seen:
        return collections.Counter()
    seen.add(fn)
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    names: collections.Counter = collections.Counter()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in TRANSCENDENTAL:
            names[f.attr] += 1
        elif isinstance(f, ast.Name):
            callee = fn.__globals__.get(f.id)
            if callee is not None and hasattr(callee, "fn") and callee is not kernel:
                names += transcendental_names(callee, seen)
    return names
