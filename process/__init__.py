"""The process's plumbing, below the operators: what a run needs from its process and file system, not maths.

* :mod:`.cpu_paths`: pin the CPU code paths that decide float rounding (``tokenlaw.operators`` pins them
  on import, before any tensor arithmetic) and record them in a report;
* :mod:`.files`: the one atomic writer every tier and report writes through;
* :mod:`.user_modules`: import a user's module (``--operators``, closure targets) with a clear error;
* :mod:`.unshadow`: keep a checkout's folders from shadowing unrelated top-level packages;
* :mod:`.command_line`: an unknown name's closest names, a writable ``--out``.

Nothing here is imported by ``tokenlaw.errors`` or ``import tokenlaw``: naming an error class pins nothing.
"""
