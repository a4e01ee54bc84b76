"""Triton kernels (forward and fused backward) registered as torch custom ops ``torch.ops.tokenlaw.*``.

* ``oattention_fwd`` -- presence-weighted online softmax (``oattention_fwd.py``, ``oattention_bwd.py``);
* ``sm_fir_fwd``     -- softmax over in-register FIR keys (``sm_fir_fwd.py``, ``sm_fir_bwd.py``);
* ``pn_fir_tau_fwd`` -- calibrated power normalisation, no exp/log (``pn_fir_tau_fwd.py``, ``pn_fir_tau_bwd.py``);

the FIR kernels' dK goes through the FIR's transpose (``fir_key_grad.py``).

Without a GPU set ``TRITON_INTERPRET=1`` (before the first import of a
kernel: Triton decides interpreter vs compiler when it decorates the
kernel) to run them on Triton's CPU interpreter.  The suite runs them as the
``triton`` backend plug-in (``kernels/backend.py``).  The layer functions are
imported lazily (Triton is an optional dependency), so loading the backend
plug-in, e.g. to list ``--backend`` choices, does not import Triton.
"""
import importlib

_LAZY = {"implementation": "backend", "oattention_layer": "layers", "fir_attention_layer": "layers"}

__all__ = sorted(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'tokenlaw.kernels' has no attribute {name!r}")
