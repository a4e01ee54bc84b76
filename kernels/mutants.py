"""Kernel mutants: deliberate kernel bugs the suite must catch (``tokenlaw mutate`` gathers :func:`catalogue`).

They are :class:`~tokenlaw.properties.mutants.Mutant` s of the ``triton``
backend, the type of the eager mutants.  A mutant never touches the files of
the real kernels.  Its ``patch()`` is a context
manager that, while active, makes the wrapper launch a *mutated copy*:

* a source mutant copies the kernel's module source, replaces one exact
  snippet (it must occur exactly once, so a refactor that removes it fails
  loudly instead of silently testing nothing), writes the copy to a
  temporary file, imports it as a sibling module and points the wrapper's
  kernel name at the mutated kernel;
* a launch mutant changes a constant the wrapper passes to the kernel
  (e.g. the FIR halo width).

A backward mutant patches the backward wrapper (``oattention_bwd``,
``sm_fir_bwd``, ``pn_fir_tau_bwd``, which ``ops`` looks up at call time) or
the FIR-transpose kernel, so the mutated copy's kernels run in the
backward while the forward stays clean.

Each mutant lists the operators it affects; ``tests/kernels/test_kernels_mutants.py``
shows every one is killed by some contract on the interpreter backend.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import itertools
import sys
import tempfile
from pathlib import Path
from unittest import mock

from tokenlaw.properties.mutants import Mutant

from . import fir_launch

_counter = itertools.count()


def _triton(name: str, operators: tuple, description: str, patch) -> Mutant:
    """A mutant of the Triton backend: ``patch()`` swaps a mutated kernel copy in while it is active."""
    return Mutant(name, operators, description, backend="triton", patch=patch)


@contextlib.contextmanager
def _source_mutant(module_name: str, kernel_name: str, old: str, new: str):
    module = importlib.import_module(f"tokenlaw.kernels.{module_name}")
    source = Path(module.__file__).read_text()
    if source.count(old) != 1:
        raise RuntimeError(f"mutant snippet occurs {source.count(old)} times in {module.__file__}: {old!r}")
    with tempfile.TemporaryDirectory(prefix="tokenlaw-mutant-") as tmp:
        name = f"tokenlaw.kernels._mutant_{module_name}_{next(_counter)}"
        path = Path(tmp) / f"{name.rsplit('.', 1)[1]}.py"
        path.write_text(source.replace(old, new))   # kept on disk while active: Triton reads the source
        spec = importlib.util.spec_from_file_location(name, path)
        mutated = importlib.util.module_from_spec(spec)
        sys.modules[name] = mutated
        try:
            spec.loader.exec_module(mutated)
            with mock.patch.object(module, kernel_name, getattr(mutated, kernel_name)):
                yield
        finally:
            sys.modules.pop(name, None)


def _source(module_name, kernel_name, old, new):
    return lambda: _source_mutant(module_name, kernel_name, old, new)


@contextlib.contextmanager
def _halo_short_by_one():

    with mock.patch.object(fir_launch, "HALO", fir_launch.N_TAPS - 2):
        yield


KERNEL_MUTANTS = [
    _triton(
        "running_max_over_nulls", ("oattention",),
        "the running maximum is taken over every in-range key, null and masked ones included, "
        "so a null token's huge key underflows the active tokens' weights",
        _source("oattention_fwd", "oattention_fwd_kernel",
                "tl.max(tl.where(active, a, float(\"-inf\")), axis=1)",
                "tl.max(tl.where(row_ok[:, None] & col_ok[None, :], s, float(\"-inf\")), axis=1)")),
    _triton(
        "eps_den_not_rescaled", ("oattention",),
        "eps_den is added to the max-shifted denominator without the exp(-M) factor",
        _source("oattention_fwd", "oattention_fwd_kernel",
                "den = tl.exp(log_eps - m_i) + l_i", "den = tl.exp(log_eps) + l_i")),
    _triton(
        "receiver_gate_missing", ("oattention",),
        "the output is not multiplied by the receiver's presence p_i",
        _source("oattention_fwd", "oattention_fwd_kernel",
                "out = p_rcv[:, None] * (acc / den[:, None])", "out = acc / den[:, None]")),
    _triton(
        "fir_halo_off_by_one", ("sm_fir", "pn_fir_tau"),
        "the wrapper launches the FIR kernels with a 5-row halo: the 7th tap of a key tile's first row "
        "misses the row 6 tokens back in the previous tile",
        _halo_short_by_one),
    _triton(
        "gate_missing", ("pn_fir_tau",),
        "the peak silence gate g = m / (1 + m) is dropped (a live row's mass becomes 1)",
        _source("pn_fir_tau_fwd", "pn_fir_tau_fwd_kernel",
                "out = gate[:, None] * (acc / tl.where(l_i > 0.0, l_i, 1.0)[:, None])",
                "out = acc / tl.where(l_i > 0.0, l_i, 1.0)[:, None]")),
    _triton(
        "tile_skip_drops_live_tile", ("pn_fir_tau",),
        "a key tile is skipped unless it raises the tile's running peak, dropping live tiles "
        "that carry mass below the peak",
        _source("pn_fir_tau_fwd", "pn_fir_tau_fwd_kernel",
                "live = tl.max(tl.max(r, axis=1), axis=0) > 0.0",
                "live = tl.max(tl.max(r, axis=1), axis=0) > tl.max(m_i, axis=0)")),
    # -- backward mutants ------------------------------------------------------------
    _triton(
        "delta_dropped", ("sm_fir",),
        "the backward drops delta = sum_j P_tj (dP_tj - dP_ta) (rowsum(dO . O) centred on the top key a): "
        "ds = P (dP - dP_a) instead of P (dP - dP_a - delta) away from each row's top key, the softmax "
        "Jacobian without its rank-one correction",
        _source("sm_fir_bwd", "sm_fir_bwd",
                "delta += tl.sum(p * (dp - dp_top[:, None]), axis=1)",
                "delta += 0.0 * tl.sum(p * (dp - dp_top[:, None]), axis=1)")),
    _triton(
        "gate_derivative_dropped", ("pn_fir_tau",),
        "the backward forgets the silence gate's derivative g'(m) dO . y at the peak key "
        "(only the power normaliser's Jacobian is kept, in dq, dk and tau's gradient)",
        _source("pn_fir_tau_bwd", "pn_fir_tau_bwd",
                "d_gate = tl.where(peak > 0.0, delta / (tl.where(peak > 0.0, peak, 1.0) * (1.0 + peak)), 0.0)",
                "d_gate = 0.0 * delta")),
    _triton(
        "dk_fir_halo_dropped", ("sm_fir", "pn_fir_tau"),
        "the FIR transpose of dK reads no halo past its own key tile: a tile's last keys miss the "
        "smoothed-key gradients of the next tile they fed",
        _source("fir_key_grad", "fir_key_grad_kernel",
                "hi = tl.minimum(start_n + BLOCK_N + HALO, n_ctx)",
                "hi = tl.minimum(start_n + BLOCK_N, n_ctx)")),
    _triton(
        "presence_gradient_leaks", ("oattention",),
        "the sources' presence gradient takes its weight p_j exp(s - M) / den from the scores alone, not "
        "zeroed on inactive entries: a masked source's presence picks up gradient from receivers that "
        "cannot see it",
        _source("oattention_bwd", "oattention_bwd",
                "dp_src += tl.sum(prob * g, axis=0)",
                "dp_src += tl.sum(p_src[None, :] * tl.exp(s - row_max[:, None]) * inv_den[:, None] * g, axis=0)")),
    _triton(
        "null_receiver_gradient_leaks", ("oattention",),
        "the backward forgets the receiver gate in dP (dy = dO instead of p dO): a null receiver's "
        "query gets gradient",
        _source("oattention_bwd", "oattention_bwd",
                'dp = tl.dot(do, tl.trans(v), input_precision="ieee") * p_rcv[:, None]',
                'dp = tl.dot(do, tl.trans(v), input_precision="ieee")')),
    _triton(
        "dk_scale_missing", ("oattention",),
        "dK is not multiplied by the score scale 1/sqrt(dh)",
        _source("oattention_bwd", "oattention_bwd", "dk = dk * sm_scale", "dk = dk")),
]


def catalogue() -> tuple:
    """The Triton backend's mutants (what ``tokenlaw mutate --backend triton`` runs)."""
    return tuple(KERNEL_MUTANTS)
