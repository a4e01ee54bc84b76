"""The four floating dtypes tokenlaw judges, named once, with the facts the tiers share about them.

float64 is the reference every other dtype is compared with; float32,
float16 and bfloat16 are the reduced precisions an implementation is judged
in.  The order is the reports' order.  A declaration that takes fewer
dtypes (a contract judged only below float64, a backend's kernels) names
them from here, so a typo is a missing key, not a silently empty cell.

>>> NAMES
('float64', 'float32', 'float16', 'bfloat16')
>>> of("bfloat16"), name(torch.float16), OTHER_HALF[torch.float16]
(torch.bfloat16, 'float16', torch.bfloat16)
"""
from __future__ import annotations

from types import MappingProxyType

import torch

from tokenlaw.process import dtype_names

from .errors import InvalidArgument

DTYPES = MappingProxyType({name: getattr(torch, name) for name in dtype_names.NAMES})
NAMES: tuple = tuple(DTYPES)                 # every judged dtype, by name, in report order
FLOATS: tuple = tuple(DTYPES.values())       # the same as torch dtypes
REFERENCE = "float64"                        # the dtype every other is measured against
LOW: tuple = tuple(n for n in NAMES if n != REFERENCE)   # the reduced precisions an implementation is judged in

# u = 2^-p, half the spacing of the numbers just above 1 (p: the significand's bits,
# the implicit one included): 2^-53, 2^-24, 2^-11, 2^-8.  The tolerance model's unit.
UNIT_ROUNDOFF = MappingProxyType({dt: torch.finfo(dt).eps / 2 for dt in FLOATS})

# The other 16-bit format: float16 has the narrower range, bfloat16 the coarser
# mantissa, so a probe in one misses what the other exposes.
OTHER_HALF = MappingProxyType({torch.float16: torch.bfloat16, torch.bfloat16: torch.float16})


def name(dtype: torch.dtype) -> str:
    """A torch dtype's short name, as cells and reports write it: ``torch.float16`` -> ``"float16"``."""
    return str(dtype).replace("torch.", "")


def of(dtype_name: str, argument: str = "dtype") -> torch.dtype:
    """The torch dtype named ``dtype_name``; an :class:`InvalidArgument` naming ``argument`` if it is none of ours."""
    try:
        return DTYPES[dtype_name]
    except (KeyError, TypeError):
        raise InvalidArgument(f"{argument}: expected one of {list(NAMES)}, got {dtype_name!r}") from None
