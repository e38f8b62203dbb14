"""The MLI 1.x C API: one callable per C function of ``Release_1.0`` (all 320), same names and argument order.

Every callable takes :class:`pymli.v1.Tensor` structs and cfg dataclasses like the C function takes
pointers, writes the output buffers and struct fields as the C library does, and returns
``Status.OK``. Under a checked preset (``MLI1_CONV_CHK``, ``MLI1_UP_CHK``) the checks of MLI 1.0's
checked build run first and a failing one raises :class:`pymli.v1.MliError` with its status,
nothing written. Specialisations (``_k3x3_str1_krnpad`` ...) are the generic kernel plus the check
of their constraint (``SPEC_PARAM_MISMATCH`` where the C function would silently compute something
else); the dispatchers compute what the specialisation they pick computes.

Example:
    >>> import numpy as np, pymli
    >>> from pymli.v1 import MLI1_CONV, ReluCfg, ReluType, Tensor, capi
    >>> x = Tensor.from_numpy(np.array([-3, 5], np.int16), "FX_16", frac_bits=2)
    >>> out = Tensor.empty(2, "FX_16")
    >>> with pymli.use_platform(MLI1_CONV):
    ...     status = capi.mli_krn_relu_fx16(x, ReluCfg(ReluType.GEN), out)
    >>> out.to_numpy().tolist()
    [0, 5]
"""

from __future__ import annotations

from typing import Callable

from ._functions import FUNCTIONS, SPECIALISATIONS

__all__ = sorted(FUNCTIONS) + ["FUNCTIONS", "SPECIALISATIONS"]

globals().update(FUNCTIONS)


def __dir__() -> list[str]:
    return __all__


def get(name: str) -> Callable:
    """The callable of a 1.x C function by name (KeyError if there is none)."""
    return FUNCTIONS[name]
