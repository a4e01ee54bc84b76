"""The mutant room: seeded bugs of the operators that ship, and the runs that must kill them.

Two kinds of mutant, each with the module that makes it and the command that judges it:

* *seeded* -- an edit of the shipping source, wrong everywhere it runs:
  :mod:`.source_edit` loads a copy of an operator module with exact snippets replaced,
  :mod:`.seeded` is the catalogue of those edits (``EAGER_MUTANTS``, ``SUBTLE_MUTANTS``), and
  :mod:`.mutate` runs each mutant's declared rows and names the contracts that kill it
  (``tokenlaw mutate``);
* *conditional* -- the operator wrong only where a predicate on its input holds:
  :mod:`.conditional` builds the wrapper from a predicate and a wrongness, and :mod:`.adversary`
  judges every operator's conditional mutants with the default check's rows (``tokenlaw adversary``).

Two pieces live elsewhere because of the layers, not by accident: the one type of a mutant,
:class:`~tokenlaw.properties.mutants.Mutant`, sits beside the ``Backend`` protocol whose ``mutants()``
returns it, and a backend plug-in's own mutants are the plug-in's (the Triton backend's in
``kernels/mutants.py``, a stranger's in its own package): this room never imports a plug-in.
"""
