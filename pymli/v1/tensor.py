"""The MLI 1.x ``mli_tensor`` struct, its element types, statuses and error.

MLI 1.x (``Release_1.0``) has its own tensor: ``void *data``, ``capacity`` in bytes, ``shape[4]``,
``rank``, ``el_type`` (``MLI_EL_FX_8 = 0``, ``MLI_EL_FX_16 = 1``) and ``el_params.fx.frac_bits``
(``uint8_t``). Memory is always dense and row-major. A rank-0 tensor given to an eltwise kernel or
as a leaky-ReLU slope carries its value in the ``data`` field itself (here: ``data`` is a Python
``int``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import errors as _v2_errors
from ..formats import ElType as _V2ElType
from ..tensor import Tensor as _V2Tensor

__all__ = ["ElType", "Status", "MliError", "Tensor", "MLI_MAX_RANK", "element_size", "container_dtype"]

MLI_MAX_RANK = 4


class ElType(_v2_errors.CEnum):
    """``mli_element_type`` of MLI 1.x, with its C values (not those of the 2.0 enum)."""

    FX_8 = 0
    FX_16 = 1

    @classmethod
    def _c_prefix(cls) -> str:
        return _V2ElType._c_prefix()  # the 2.0 names: ``"MLI_EL_" + name``

    @property
    def dtype(self) -> np.dtype:
        """The container dtype (int8 / int16)."""
        return np.dtype(np.int8) if self is ElType.FX_8 else np.dtype(np.int16)


class _StatusBase(_v2_errors.CEnum):
    """The C names of the 2.0 ``Status`` (``c_name``, ``from_c_name``), for the 1.x enum."""

    @classmethod
    def _c_prefix(cls) -> str:
        return _v2_errors.Status._c_prefix()


# MLI 1.x's ``mli_status`` (``mli_types.h`` of Release_1.0) is the 2.0 enum up to TYPE_MISMATCH = 12,
# without 2.0's MEM_BANK_MISMATCH (13) and MISALIGNMENT_ERROR (14): built from the 2.0 members.
Status = _StatusBase(
    "Status",
    [(m.name, m.value) for m in _v2_errors.Status if m <= _v2_errors.Status.TYPE_MISMATCH],
    module=__name__,
    qualname="Status",
)
Status.__doc__ = """``mli_status`` of MLI 1.x (``mli_types.h`` of Release_1.0), with its C values.

The values 0..12 of the 2.0 :class:`pymli.errors.Status`, by the same names; ``c_name`` gives
``MLI_STATUS_<name>`` and ``from_c_name`` parses it (or the bare name).
"""


class MliError(_v2_errors.MliError):
    """A 1.x call that the checked C build rejects (or that pymli refuses as unsafe).

    A subclass of :class:`pymli.MliError`, so one ``except`` catches both generations; the
    ``status`` attribute is a 1.x :class:`Status` (same numbers as the 2.0 enum for 0..12).
    """

    def __init__(self, status: Status | int, message: str = "") -> None:
        super().__init__(int(status), message)
        self.status = Status(int(status))  # type: ignore[assignment]


def element_size(el_type: int) -> int:
    """``mli_hlp_tensor_element_size`` for a raw ``el_type`` value (0 for an unknown type)."""
    return {0: 1, 1: 2}.get(int(el_type), 0)


def container_dtype(el_type: int) -> np.dtype:
    """int8 for ``MLI_EL_FX_8``, int16 for ``MLI_EL_FX_16``.

    Raises:
        MliError: BAD_TENSOR for any other value.
    """
    if int(el_type) not in (0, 1):
        raise MliError(Status.BAD_TENSOR, f"el_type {el_type} is not an MLI 1.x element type")
    return ElType(int(el_type)).dtype


@dataclasses.dataclass(eq=False)
class Tensor:
    """An MLI 1.x ``mli_tensor``.

    Attributes:
        data: 1-D NumPy array (int8 / int16) whose element 0 is where ``data`` points (a view into
            another tensor's buffer after ``mli_hlp_point_to_subtensor``); an ``int`` for a rank-0
            scalar stored in the data field itself; ``None`` for a NULL pointer.
        capacity: ``capacity`` in bytes.
        shape: ``shape[4]`` (``uint32_t``); entries at and beyond ``rank`` are not read.
        rank: number of used dimensions (``<= 4`` for a valid tensor).
        el_type: ``el_type`` as an int (an :class:`ElType` for valid tensors).
        frac_bits: ``el_params.fx.frac_bits`` (``uint8_t``, 0..255).
    """

    data: np.ndarray | int | None = None
    capacity: int = 0
    shape: list[int] = dataclasses.field(default_factory=lambda: [0, 0, 0, 0])
    rank: int = 0
    el_type: int = ElType.FX_16
    frac_bits: int = 0

    def __post_init__(self) -> None:
        shape = [int(s) for s in self.shape]
        self.shape = shape + [0] * (MLI_MAX_RANK - len(shape))
        if not 0 <= int(self.frac_bits) <= 255:
            raise MliError(Status.BAD_TENSOR, f"frac_bits {self.frac_bits} is not a uint8_t")
        self.frac_bits = int(self.frac_bits)
        if int(self.el_type) in (0, 1):
            self.el_type = ElType(int(self.el_type))

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_numpy(cls, array: npt.ArrayLike, el_type: ElType | int | str = ElType.FX_16, *,
                   frac_bits: int = 0, capacity: int | None = None) -> "Tensor":
        """A dense tensor holding already-quantised values.

        Args:
            array: integer values, any shape of rank 0..4 (rank 0 gives a one-element buffer; use
                :meth:`scalar` for a value in the data field).
            el_type: ``ElType.FX_8`` / ``FX_16`` (or ``"MLI_EL_FX_8"`` ...).
            frac_bits: fractional bits (0..255).
            capacity: buffer size in bytes (default: exactly the elements); the tail is zeroed.

        Returns:
            Tensor: a new tensor owning a copy of the data.

        Raises:
            MliError: BAD_TENSOR for a rank above 4, values outside the container, or a capacity
                smaller than the data.
        """
        el = _parse_el(el_type)
        arr = np.asarray(array)
        if arr.ndim > MLI_MAX_RANK:
            raise MliError(Status.BAD_TENSOR, f"rank {arr.ndim} > MLI_MAX_RANK")
        info = np.iinfo(el.dtype)
        if arr.size and (arr.dtype.kind not in "iub" or arr.min() < info.min or arr.max() > info.max):
            raise MliError(Status.BAD_TENSOR, f"values are not {el.dtype} integers")
        nbytes = arr.size * el.dtype.itemsize
        cap = nbytes if capacity is None else int(capacity)
        if cap < nbytes:
            raise MliError(Status.BAD_TENSOR, f"capacity {cap} < {nbytes} bytes of data")
        buf = np.zeros(cap // el.dtype.itemsize, dtype=el.dtype)
        buf[: arr.size] = arr.reshape(-1)
        return cls(data=buf, capacity=cap, shape=list(arr.shape), rank=arr.ndim, el_type=el,
                   frac_bits=frac_bits)

    @classmethod
    def scalar(cls, value: int, el_type: ElType | int | str = ElType.FX_16, *, frac_bits: int = 0) -> "Tensor":
        """A rank-0 tensor with ``value`` in the data field (eltwise operands, leaky-ReLU slope)."""
        el = _parse_el(el_type)
        info = np.iinfo(el.dtype)
        if not info.min <= int(value) <= info.max:
            raise MliError(Status.BAD_TENSOR, f"{value} does not fit {el.dtype}")
        return cls(data=int(value), capacity=0, shape=[], rank=0, el_type=el, frac_bits=frac_bits)

    @classmethod
    def empty(cls, capacity_elems: int, el_type: ElType | int | str = ElType.FX_16, *,
              frac_bits: int = 0) -> "Tensor":
        """An output tensor: a zeroed buffer of ``capacity_elems`` elements, rank 0 (set by kernels)."""
        el = _parse_el(el_type)
        buf = np.zeros(int(capacity_elems), dtype=el.dtype)
        return cls(data=buf, capacity=buf.nbytes, shape=[], rank=0, el_type=el, frac_bits=frac_bits)

    @classmethod
    def from_float(cls, array: npt.ArrayLike, el_type: ElType | int | str = ElType.FX_16, *,
                   frac_bits: int) -> "Tensor":
        """Quantise floats as MLI 1.0's examples do: ``round(x * 2^frac)`` (half away), saturated.

        Args:
            array: float values of any shape of rank 0..4.
            el_type: container type.
            frac_bits: fractional bits (0..255).

        Returns:
            Tensor: the quantised tensor.
        """
        el = _parse_el(el_type)
        x = np.asarray(array, dtype=np.float64) * (2.0 ** int(frac_bits))
        q = np.where(x >= 0, np.floor(x + 0.5), np.ceil(x - 0.5))
        info = np.iinfo(el.dtype)
        q = np.clip(q, info.min, info.max).astype(np.int64)
        return cls.from_numpy(q, el, frac_bits=frac_bits)

    # ------------------------------------------------------------------ views
    @property
    def dims(self) -> tuple[int, ...]:
        """``shape[:rank]`` (the C struct's rank field stands in for a fifth entry)."""
        full = self.shape + [int(self.rank)]
        return tuple(full[: int(self.rank)])

    @property
    def element_size(self) -> int:
        """``mli_hlp_tensor_element_size``: 1, 2, or 0 for an unknown el_type."""
        return element_size(self.el_type)

    def count(self, start_dim: int = 0) -> int:
        """``mli_prv_count_elem_num_part``: product of ``shape[start_dim:rank]``."""
        n = 1
        for d in self.dims[start_dim:]:
            n *= d
        return n

    def to_numpy(self) -> np.ndarray:
        """A copy of the tensor's values shaped ``shape[:rank]`` (container dtype).

        Raises:
            MliError: BAD_TENSOR for a NULL pointer or a buffer smaller than the shape.
        """
        dt = container_dtype(self.el_type)
        if isinstance(self.data, (int, np.integer)) and not isinstance(self.data, np.ndarray):
            return np.asarray(int(self.data), dtype=np.int64).astype(dt)
        if self.data is None:
            raise MliError(Status.BAD_TENSOR, "NULL data pointer")
        buf = self.data if self.data.dtype == dt else self.data.view(dt)
        n = self.count()
        if buf.size < n:
            raise MliError(Status.BAD_TENSOR, f"buffer of {buf.size} elements < shape {self.dims}")
        return buf[:n].reshape(self.dims).copy()

    def to_float(self) -> np.ndarray:
        """Values as float64: ``q / 2^frac_bits`` (exact)."""
        return self.to_numpy().astype(np.float64) / (2.0 ** self.frac_bits)

    # ------------------------------------------------------------------ migration
    def to_v2(self) -> _V2Tensor:
        """The same data as an MLI 2.0 :class:`pymli.Tensor` (FX_8 / FX_16, dense strides).

        Returns:
            pymli.Tensor: a new 2.0 tensor holding a copy of the values.
        """
        el = _V2ElType.FX_8 if self.el_type == ElType.FX_8 else _V2ElType.FX_16
        if self.rank == 0 and not isinstance(self.data, np.ndarray):
            return _V2Tensor.from_numpy(np.asarray(int(self.data or 0)), el, frac_bits=self.frac_bits)
        return _V2Tensor.from_numpy(self.to_numpy(), el, frac_bits=self.frac_bits)

    @classmethod
    def from_v2(cls, t: _V2Tensor) -> "Tensor":
        """An MLI 1.x tensor from a 2.0 FX_8 / FX_16 :class:`pymli.Tensor`.

        Raises:
            MliError: NOT_SUPPORTED for element types 1.x does not have (SA, FP, FX_4) or negative
                ``frac_bits`` (1.x stores them as ``uint8_t``).
        """
        if t.el_type not in (_V2ElType.FX_8, _V2ElType.FX_16):
            raise MliError(Status.NOT_SUPPORTED, f"{t.el_type.name} does not exist in MLI 1.x")
        if not 0 <= int(t.frac_bits) <= 255:
            raise MliError(Status.NOT_SUPPORTED, f"frac_bits {t.frac_bits} is not a uint8_t")
        el = ElType.FX_8 if t.el_type == _V2ElType.FX_8 else ElType.FX_16
        if t.rank == 0:
            return cls.scalar(int(t.value), el, frac_bits=int(t.frac_bits))
        return cls.from_numpy(t.numpy(), el, frac_bits=int(t.frac_bits))


def _parse_el(el_type: Any) -> ElType:
    if isinstance(el_type, str):
        return ElType[el_type.removeprefix("MLI_EL_")]
    return ElType(int(el_type))
