"""Triton kernels (forward passes) registered as torch custom ops ``torch.ops.tokenlaw.*``.

* ``oattention_fwd`` -- presence-weighted online softmax (``oattention_fwd.py``);
* ``sm_fir_fwd``     -- softmax over in-register FIR keys (``sm_fir_fwd.py``);
* ``pn_fir_tau_fwd`` -- calibrated power normalisation, no exp/log (``pn_fir_tau_fwd.py``).

Without a GPU set ``TRITON_INTERPRET=1`` to run them on Triton's CPU interpreter.
"""
from .layers import fir_attention_layer, implementation, oattention_layer

__all__ = ["fir_attention_layer", "implementation", "oattention_layer"]
