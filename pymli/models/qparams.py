"""Quantisation of one tensor of a network (its MLI element type and element parameters).

:class:`QParams` is the part of an ``mli_tensor`` that a network description must fix ahead of
time: element type, FX ``frac_bits`` or SA ``zero_point`` / ``scale`` / ``scale_frac_bits`` (per
tensor, or per slice along ``dim``). :class:`Const` is a constant tensor of a layer (weights, bias,
slope) with its quantised values and, for networks quantised here, the float values it came from.

The float <-> integer conversions in this module are the *offline* tool side (what a model
converter does once, before deployment), not an MLI operation: inference-time requantisation is
done by the MLI kernels only.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..errors import MliError, Status
from ..formats import ElType
from ..graph import args
from ..quant import fx_frac_for_range, quantize_values, sa_scale_repr  # noqa: F401  (the last two: old import path)
from ..tensor import MLI_MAX_RANK, Tensor

__all__ = ["Const", "QParams"]

EDITS = [0]
"""Count of public attribute assignments on networks, layers and constants (``EDITS[0]``): a prepared
plan whose count is unchanged since it was checked needs no re-check (see ``Network._plan``)."""


def counted_setattr(obj: object, name: str, value: Any) -> None:
    """``__setattr__`` of the objects a prepared plan depends on (networks, layers, constants): the
    assignment, counted in :data:`EDITS` when the name is public.

    Args:
        obj: the object assigned to.
        name: the attribute.
        value: its new value.
    """
    if name[:1] != "_":
        EDITS[0] += 1
    object.__setattr__(obj, name, value)


def _broadcast(v: np.ndarray, dim: int, ndim: int) -> np.ndarray:
    """Per-axis vector ``v`` shaped to broadcast along axis ``dim`` of an ``ndim``-array."""
    if dim < 0 or v.size == 1:
        return v.reshape(())
    shape = [1] * ndim
    shape[dim] = v.size
    return v.reshape(shape)


@dataclasses.dataclass
class QParams:
    """Element type and element parameters of one tensor.

    Attributes:
        el_type: MLI element type (``FX_16``, ``FX_8``, ``SA_8``, ``SA_32``).
        frac_bits: FX fractional bits.
        zero_point, scale, scale_frac_bits: SA parameters; ints for ``dim = -1``, sequences of
            ``shape[dim]`` values for per-axis quantisation.
        dim: per-axis dimension or -1.
    """

    el_type: ElType
    frac_bits: int = 0
    zero_point: Any = 0
    scale: Any = 1
    scale_frac_bits: Any = 0
    dim: int = -1

    # ------------------------------------------------------------------ constructors
    @classmethod
    def fx(cls, bits: int, frac_bits: int) -> QParams:
        """FX8 or FX16 with ``frac_bits`` fractional bits."""
        return cls(ElType.FX_16 if bits == 16 else ElType.FX_8, frac_bits=int(frac_bits))

    @classmethod
    def sa(cls, zero_point: Any, scale: Any, scale_frac_bits: Any, dim: int = -1,
           el_type: ElType = ElType.SA_8) -> QParams:
        """SA8 (or SA32) parameters; arrays when ``dim >= 0``."""
        if dim >= 0:
            return cls(el_type, zero_point=np.asarray(zero_point, np.int64).reshape(-1),
                       scale=np.asarray(scale, np.int64).reshape(-1),
                       scale_frac_bits=np.asarray(scale_frac_bits, np.int64).reshape(-1), dim=dim)
        return cls(el_type, zero_point=int(zero_point), scale=int(scale), scale_frac_bits=int(scale_frac_bits))

    @classmethod
    def of(cls, t: Tensor) -> QParams:
        """The element parameters a tensor struct holds."""
        if t.el_type.is_sa:
            if t.dim >= 0:
                return cls.sa(t.quant_vector("zero_point"), t.quant_vector("scale"),
                              t.quant_vector("scale_frac_bits"), t.dim, t.el_type)
            return cls.sa(t.zero_point, t.scale, t.scale_frac_bits, -1, t.el_type)
        return cls(t.el_type, frac_bits=int(t.frac_bits))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> QParams:
        """Parameters from :meth:`to_dict`'s form (``el_type`` by C name; ``sa`` / ``fx`` sub-dicts accepted)."""
        el = ElType.from_c_name(d["el_type"]) if isinstance(d["el_type"], str) else ElType(d["el_type"])
        if "sa" in d or el.is_sa:
            sa = d.get("sa", d)
            return cls.sa(sa["zero_point"], sa["scale"], sa["scale_frac_bits"], sa.get("dim", -1), el)
        return cls(el, frac_bits=int(d.get("fx", d).get("frac_bits", 0)))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: ``el_type`` (C name) and the element parameters."""
        if self.el_type.is_sa:
            conv = (lambda v: np.asarray(v).tolist())
            return {"el_type": self.el_type.c_name, "dim": self.dim, "zero_point": conv(self.zero_point),
                    "scale": conv(self.scale), "scale_frac_bits": conv(self.scale_frac_bits)}
        return {"el_type": self.el_type.c_name, "frac_bits": self.frac_bits}

    # ------------------------------------------------------------------ values
    @property
    def bits(self) -> int:
        """Container bits of the element type."""
        return self.el_type.bits

    @property
    def qmin(self) -> int:
        """Smallest container value."""
        return -(1 << (self.bits - 1))

    @property
    def qmax(self) -> int:
        """Largest container value."""
        return (1 << (self.bits - 1)) - 1

    def step(self) -> np.ndarray:
        """Real value of one LSB (per slice for per-axis parameters)."""
        if self.el_type.is_sa:
            return np.asarray(self.scale, np.float64) * np.exp2(-np.asarray(self.scale_frac_bits, np.float64))
        return np.asarray(2.0 ** -self.frac_bits)

    def zp(self) -> np.ndarray:
        """Zero point(s) as float64 (0 for FX)."""
        return np.asarray(self.zero_point if self.el_type.is_sa else 0, np.float64)

    def dequantize(self, q: np.ndarray, *, batch: bool = False) -> np.ndarray:
        """Float64 values of quantised data ``q`` (``batch``: axis 0 is a batch axis)."""
        q = np.asarray(q, np.float64)
        dim = self.dim + (1 if batch and self.dim >= 0 else 0)
        return (q - _broadcast(self.zp(), dim, q.ndim)) * _broadcast(self.step(), dim, q.ndim)

    def quantize(self, x: np.ndarray, *, batch: bool = False) -> np.ndarray:
        """Offline quantisation of float data (:func:`pymli.quant.quantize_values`: nearest, ties away
        from zero, saturated to the container)."""
        x = np.asarray(x, np.float64)
        dim = self.dim + (1 if batch and self.dim >= 0 else 0)
        return quantize_values(x, _broadcast(self.step(), dim, x.ndim), _broadcast(self.zp(), dim, x.ndim),
                               self.el_type)

    def tensor(self, q: np.ndarray) -> Tensor:
        """A dense :class:`Tensor` holding quantised values ``q`` with these parameters."""
        return Tensor.from_numpy(np.asarray(q), self.el_type, **self._tensor_kwargs())

    def empty(self, shape: tuple[int, ...] | list[int]) -> Tensor:
        """A zero-filled output tensor of ``shape`` with these parameters."""
        return Tensor.zeros(tuple(shape), self.el_type, **self._tensor_kwargs())

    def _tensor_kwargs(self) -> dict[str, Any]:
        if self.el_type.is_sa:
            return {"zero_point": self.zero_point, "scale": self.scale, "scale_frac_bits": self.scale_frac_bits,
                    "dim": self.dim}
        return {"frac_bits": self.frac_bits}

    def describe(self) -> str:
        """A short readable form (``sa8 zp 3, scale 16384, sfb 20``, ``fx16 frac 12``)."""
        if self.el_type.is_sa:
            if self.dim >= 0:
                return f"{self.el_type.name.lower()} per-axis dim {self.dim}"
            return (f"{self.el_type.name.lower()} zp {self.zero_point}, scale {self.scale}, "
                    f"sfb {self.scale_frac_bits}")
        return f"{self.el_type.name.lower()} frac {self.frac_bits}"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, QParams):
            return NotImplemented
        return self.to_dict() == other.to_dict()


@dataclasses.dataclass
class Const:
    """A constant tensor of a layer: quantised values + parameters, and/or float values.

    Attributes:
        q: quantised values (container dtype), or None while the network is float only.
        qp: their :class:`QParams`.
        float_value: float values the constant was quantised from (None for imported networks).
    """

    q: np.ndarray | None = None
    qp: QParams | None = None
    float_value: np.ndarray | None = None
    _tensor: Tensor | None = dataclasses.field(default=None, repr=False, compare=False)

    __setattr__ = counted_setattr

    @classmethod
    def from_float(cls, x: Any) -> Const:
        """A float-only constant (quantised later by the network quantiser).

        Args:
            x: real values, rank 0 to 4, not empty, all finite.

        Raises:
            MliError: BAD_TENSOR for anything else (None, strings, objects, NaN / inf, empty arrays).
        """
        a = args.array_like(x, "constant", "an array of real numbers")
        if a.dtype.kind not in "biuf" or a.size == 0 or a.ndim > MLI_MAX_RANK:
            raise MliError(Status.BAD_TENSOR, f"constant of dtype {a.dtype}, shape {a.shape}: a non-empty array of "
                                              f"real numbers of rank 0..{MLI_MAX_RANK} expected")
        v = a.astype(np.float64)
        if not np.all(np.isfinite(v)):
            raise MliError(Status.BAD_TENSOR, "constant: NaN or infinite values")
        return cls(float_value=v)

    @classmethod
    def quantized(cls, q: np.ndarray, qp: QParams, float_value: np.ndarray | None = None) -> Const:
        """A constant of quantised values ``q`` with parameters ``qp`` (and optionally its float origin)."""
        return cls(q=np.asarray(q), qp=qp, float_value=float_value)

    @property
    def is_quantized(self) -> bool:
        """Whether quantised values are set."""
        return self.q is not None

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the constant."""
        return tuple((self.q if self.q is not None else self.float_value).shape)  # type: ignore[union-attr]

    def value(self, original: bool = False) -> np.ndarray:
        """Float64 values: dequantised (default), or the original float values if asked and known."""
        if self.q is None or (original and self.float_value is not None):
            return np.asarray(self.float_value, np.float64)
        return self.qp.dequantize(self.q)  # type: ignore[union-attr]

    def tensor(self) -> Tensor:
        """The constant as an MLI tensor (built once)."""
        if self.q is None or self.qp is None:
            raise MliError(Status.BAD_FUNC_CFG, "constant is not quantised")
        if self._tensor is None:
            self._tensor = self.qp.tensor(self.q)
        return self._tensor

    def set_quantized(self, q: np.ndarray, qp: QParams) -> None:
        """Replace the quantised values and parameters (drops the cached tensor)."""
        self.q, self.qp, self._tensor = np.asarray(q), qp, None
