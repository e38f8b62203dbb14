"""MLI element types and their containers (``mli_element_type`` of ``mli_types.h``)."""

from __future__ import annotations

import enum
from typing import Any, Callable

import numpy as np

from .errors import CEnum

__all__ = ["ElType", "RoundMode", "MAC_TYPES", "enum_lookup", "mac_suffix"]


class ElType(CEnum):
    """MLI element types with their C enum values."""

    FX_4 = 0x004
    FX_8 = 0x008
    FX_16 = 0x010
    SA_8 = 0x108
    SA_32 = 0x120
    FP_16 = 0x210
    FP_32 = 0x220

    @classmethod
    def _c_prefix(cls) -> str:
        return "MLI_EL_"

    @property
    def is_fx(self) -> bool:
        """FX_4, FX_8 or FX_16: fixed point with ``frac_bits``."""
        return self in (ElType.FX_4, ElType.FX_8, ElType.FX_16)

    @property
    def is_sa(self) -> bool:
        """SA_8 or SA_32: asymmetric, with zero point, scale and scale_frac_bits."""
        return self in (ElType.SA_8, ElType.SA_32)

    @property
    def is_fp(self) -> bool:
        """FP_16 or FP_32: floating point."""
        return self in (ElType.FP_16, ElType.FP_32)

    @property
    def supported(self) -> bool:
        """Types the C library computes with (FX_4 and FP_16 are declared only)."""
        return self in _DTYPES

    @property
    def dtype(self) -> np.dtype:
        """NumPy dtype of the container (int8 for FX_8/SA_8, int16, int32, float32)."""
        try:
            return _DTYPES[self]
        except KeyError:
            raise ValueError(f"{self.c_name} has no container in MLI 2.0") from None

    @property
    def size(self) -> int:
        """``mli_hlp_tensor_element_size``: container bytes (0 for unsupported types)."""
        dt = _DTYPES.get(self)
        return 0 if dt is None else dt.itemsize

    @property
    def suffix(self) -> str:
        """The element-type part of MLI function names: ``fx8``, ``fx16``, ``sa8``, ``sa32``, ``fp32``.

        The one mapping from element type to C-name suffix (``mli_krn_relu_<suffix>``).
        """
        return self.name.replace("_", "").lower()

    @property
    def bits(self) -> int:
        """Bit depth of the value (8, 16, 32)."""
        return self.size * 8


_DTYPES: dict[ElType, np.dtype] = {
    ElType.FX_8: np.dtype(np.int8),
    ElType.FX_16: np.dtype(np.int16),
    ElType.SA_8: np.dtype(np.int8),
    ElType.SA_32: np.dtype(np.int32),
    ElType.FP_32: np.dtype(np.float32),
}


MAC_TYPES: dict[str, tuple[ElType, ElType, ElType]] = {
    "fx16": (ElType.FX_16, ElType.FX_16, ElType.FX_16),
    "fx16_fx8_fx8": (ElType.FX_16, ElType.FX_8, ElType.FX_8),
    "fx8": (ElType.FX_8, ElType.FX_8, ElType.FX_8),
    "sa8_sa8_sa32": (ElType.SA_8, ElType.SA_8, ElType.SA_32),
}
"""(data, weights, bias) element types of each MAC kernel suffix (conv, FC, RNN: ``..._<suffix>``)."""


def mac_suffix(data: ElType, weights: ElType) -> str:
    """The C-name suffix of a MAC kernel (conv2d, fully connected, RNN) for its data and weights types.

    Args:
        data: element type of the input and output; weights: element type of the weights.

    Returns:
        ``"fx16"``, ``"fx16_fx8_fx8"``, ``"fx8"`` or ``"sa8_sa8_sa32"``.

    Raises:
        KeyError: a combination MLI has no kernel for.
    """
    for suffix, (d, w, _) in MAC_TYPES.items():
        if (d, w) == (ElType(data), ElType(weights)):
            return suffix
    raise KeyError(f"no MLI MAC kernel for {ElType(data).c_name} data with {ElType(weights).c_name} weights")


class RoundMode(enum.Enum):
    """Rounding of MLI's shifts: ROUND_UP (VPX) or ROUND_CONVERGENT (EM/HS)."""

    UP = "up"
    CONVERGENT = "convergent"


def enum_lookup(cls: type[enum.Enum], v: Any, norm: Callable[[str], str] | None = None) -> enum.Enum | None:
    """The member of ``cls`` that ``v`` names, or None.

    Args:
        cls: an enum (its members may carry a ``c_name``, the C enumerator).
        v: a member, a member name or C enumerator name (``str``), or an integer value (not a bool).
        norm: applied to ``v`` and to every member's names before comparing strings (e.g. to ignore
            case and underscores); None compares them as they are.

    Returns:
        The member, or None where ``v`` names none.
    """
    if isinstance(v, cls):
        return v
    if isinstance(v, str):
        key = v if norm is None else norm(v)
        for m in cls:
            names = (m.name, getattr(m, "c_name", None))
            if key in (names if norm is None else tuple(norm(n) for n in names if n is not None)):
                return m
    elif isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        try:
            return cls(int(v))
        except ValueError:
            pass
    return None
