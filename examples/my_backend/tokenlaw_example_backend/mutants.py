"""This backend's own seeded bugs: ``tokenlaw mutate --backend example`` must kill every one.

A mutant here is an edit of the code this package ships: one exact snippet of
a module's source is replaced (it must occur exactly once, so a refactor that
removes it fails loudly instead of testing nothing), the edited source is
loaded as a fresh module, and while the mutant's ``patch()`` is active the
backend runs the edited layer.  The shipped files and modules are never
changed.  tokenlaw gets them through ``Backend.mutants()``: nothing in
tokenlaw names them.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import itertools
from pathlib import Path
from unittest import mock

from tokenlaw import Mutant

from . import oattention

_counter = itertools.count()


def _load_edited(module, old: str, new: str):
    """A fresh copy of ``module`` with ``old`` replaced by ``new`` in its source (exactly one occurrence)."""
    source = Path(module.__file__).read_text()
    if source.count(old) != 1:
        raise RuntimeError(f"mutant snippet occurs {source.count(old)} times in {module.__file__}: {old!r}")
    name = f"{module.__name__}_mutant_{next(_counter)}"
    copy = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader=None))
    copy.__package__ = module.__package__          # its relative imports (.common) resolve as the original's
    exec(compile(source.replace(old, new), module.__file__, "exec"), copy.__dict__)
    return copy


def _edit(backend_cls, operator: str, module, layer: str, old: str, new: str):
    """``patch()`` of a mutant: while active, ``backend_cls`` runs ``operator`` with the edited ``layer``."""

    @contextlib.contextmanager
    def patch():
        edited = getattr(_load_edited(module, old, new), layer)
        shipped = backend_cls.layers

        def layers(self):
            return {**shipped(self), operator: functools.partial(edited, block=self.block)}

        with mock.patch.object(backend_cls, "layers", layers):
            yield

    return patch


def catalogue(backend_cls, backend_name: str) -> tuple:
    """The seeded bugs of ``backend_cls`` (the ``example`` backend), as tokenlaw mutants of ``backend_name``."""
    return (
        Mutant("example_numerator_not_rescaled", ("oattention",),
               "when a key block raises the running maximum M, the running numerator is not rescaled by "
               "exp(M_old - M_new) (the denominator is): earlier blocks' values are over-weighted",
               backend=backend_name,
               patch=_edit(backend_cls, "oattention", oattention, "oattention_layer",
                           "        out = out * rescale + num @ v[:, :, lo:hi]",
                           "        out = out + num @ v[:, :, lo:hi]")),
    )
