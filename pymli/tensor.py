"""The MLI tensor (``mli_tensor`` of MLI 2.0) and the LUT descriptor (``mli_lut``).

A :class:`Tensor` mirrors the C struct field for field: a data container (a 1-D NumPy array of the
element container type, starting at the tensor's first element, plus a capacity in bytes), shape,
mem_stride, rank, element type and element parameters. As in C, a tensor may view part of a larger
buffer: ``data`` is then a NumPy view into that buffer and ``mem_stride`` skips the gaps. Building a
struct does not validate it (C does not either, and invalid tensors must be representable); every
MLI function validates its tensors on entry, and :meth:`Tensor.validate` runs the same checks.

The Pythonic constructors (:meth:`Tensor.from_numpy`, :meth:`Tensor.from_float`,
:meth:`Tensor.zeros`) build dense, valid tensors.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import numpy as np
import numpy.typing as npt

from .config import get_memory_budget
from .errors import MliError, Status
from .formats import ElType

__all__ = ["Tensor", "Lut", "MLI_MAX_RANK", "dense_strides"]

MLI_MAX_RANK = 4

_next_version = itertools.count(1).__next__
_set = object.__setattr__
_MISSING = object()


def touch(t: "Tensor") -> None:
    """Give ``t`` a new change counter (``Tensor._version``) after its fields were written around
    ``__setattr__`` (``vars(t).update(...)``, ``object.__setattr__``).

    Args:
        t: the tensor.
    """
    _set(t, "_version", _next_version())


def dense_strides(shape: list[int] | tuple[int, ...]) -> list[int]:
    """Row-major strides in elements: ``[W*C, C, 1]`` for ``[H, W, C]``.

    Args:
        shape: the dimensions, outermost first.

    Returns:
        Strides in elements.
    """
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * int(shape[i + 1])
    return strides


def address(arr: np.ndarray | None) -> int:
    """Memory address of the first element of ``arr`` (0 for ``None``): MLI's data pointer.

    Args:
        arr: a NumPy array or None.

    Returns:
        The address as an int.
    """
    if arr is None:
        return 0
    return int(arr.__array_interface__["data"][0])


class _Factory:
    """The default of a list field of :meth:`Tensor.__init__`: a new empty list per tensor."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY: Any = _Factory()


@dataclasses.dataclass(eq=False, init=False)
class Tensor:
    """An ``mli_tensor``.

    What the MLI functions (:mod:`pymli.capi`) accept in ``data`` (checked on entry by
    :mod:`pymli.checks.entry`, before anything is computed or written):

    * ``None`` (a NULL pointer; refused with ``BAD_TENSOR`` where C needs data) or a 1-D
      ``numpy.ndarray``. Lists, bytes, 0-d, 2-D and object arrays are refused with ``BAD_TENSOR``.
    * The C container is the sequence ``data[0], data[1], ...``: element ``i`` of the C buffer is
      ``data[i]``, whatever the array's own stride. Views with positive, non-unit, negative or zero
      strides and non-contiguous arrays are read as those elements (an input is copied to a
      contiguous array for the call); an output that is not contiguous is computed into a
      contiguous copy and assigned back through the view after a successful call, so bytes outside
      the view are never touched. No view is ever built beyond the array's elements.
    * An output array must be writeable (a read-only output: ``BAD_TENSOR``, nothing written).
    * An input whose dtype differs from the element type's container is read as its bytes (C casts
      the pointer); an output keeps its array (functions such as the moves set ``el_type``).
    * A non-contiguous view that shares memory with another argument's array (other than the same
      array object) is refused with ``BAD_TENSOR``.

    Attributes:
        data: 1-D NumPy array of the container dtype (int8, int16, int32, float32) whose element 0 is
            the tensor's first element (``data.mem.pi8`` ...); ``None`` is a NULL pointer. Unused for
            rank-0 tensors, whose value is ``value``. Any 1-D view: see above.
        capacity: ``data.capacity`` in bytes.
        shape: ``shape[rank]``, outermost dimension first.
        mem_stride: ``mem_stride[rank]`` in elements; all zeros means dense (helpers only).
        rank: number of dimensions (``<= MLI_MAX_RANK``); may disagree with ``len(shape)`` only in
            deliberately invalid structs.
        el_type: element type.
        frac_bits: ``el_params.fx.frac_bits`` (FX types).
        zero_point, scale, scale_frac_bits: ``el_params.sa`` (SA types). Python ints when
            ``dim < 0``; int16 / int16 / int8 arrays of length ``shape[dim]`` when ``dim >= 0``.
        dim: ``el_params.sa.dim``: the per-axis dimension, or -1 for per-tensor parameters.
        value: the scalar held in the data container of a rank-0 tensor.

    Change counter: every assignment of a field that replaces its object (``t.shape = [...]``,
    ``t.data = other``; not one that stores the identical object again) gives the tensor a new
    ``_version``, a number drawn from one process-wide counter, so that no two tensor states share
    one (copies and unpickled tensors draw their own). The capi call memo
    (:mod:`pymli.checks.entry`) reads it instead of comparing every field; what an assignment
    cannot show (in-place edits of the lists, of per-axis arrays and of the data array's metadata)
    it still compares. Writes that bypass ``__setattr__`` (``object.__setattr__``, ``vars(t)``)
    must call :func:`touch`.
    """

    __slots__ = ("__dict__", "__weakref__", "_version")

    data: np.ndarray | None = None
    capacity: int = 0
    shape: list[int] = dataclasses.field(default_factory=list)
    mem_stride: list[int] = dataclasses.field(default_factory=list)
    rank: int = 0
    el_type: ElType = ElType.FX_16
    frac_bits: int = 0
    zero_point: Any = 0
    scale: Any = 1
    scale_frac_bits: Any = 0
    dim: int = -1
    value: Any = 0

    def __init__(self, data: np.ndarray | None = None, capacity: int = 0, shape: list[int] = _FACTORY,
                 mem_stride: list[int] = _FACTORY, rank: int = 0, el_type: ElType = ElType.FX_16, frac_bits: int = 0,
                 zero_point: Any = 0, scale: Any = 1, scale_frac_bits: Any = 0, dim: int = -1, value: Any = 0) -> None:
        # The dataclass fields, stored at once (the dataclass __init__ would run __setattr__ per field).
        _set(self, "__dict__", {
            "data": data, "capacity": capacity, "shape": [] if shape is _FACTORY else shape,
            "mem_stride": [] if mem_stride is _FACTORY else mem_stride, "rank": rank, "el_type": el_type,
            "frac_bits": frac_bits, "zero_point": zero_point, "scale": scale, "scale_frac_bits": scale_frac_bits,
            "dim": dim, "value": value})
        _set(self, "_version", _next_version())

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get(name, _MISSING) is not value:
            _set(self, name, value)
            _set(self, "_version", _next_version())

    def __delattr__(self, name: str) -> None:
        object.__delattr__(self, name)
        _set(self, "_version", _next_version())

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_numpy(cls, array: npt.ArrayLike, el_type: ElType | str, *, frac_bits: int = 0,
                   zero_point: Any = 0, scale: Any = 1, scale_frac_bits: Any = 0,
                   dim: int = -1) -> "Tensor":
        """A dense tensor holding ``array`` (already quantised values of the container type).

        Args:
            array: values; cast to the container dtype after a range check.
            el_type: element type (an :class:`ElType` or its name, e.g. ``"SA_8"``).
            frac_bits: FX fractional bits.
            zero_point, scale, scale_frac_bits, dim: SA parameters (arrays when ``dim >= 0``).

        Raises:
            MliError: BAD_TENSOR if the values do not fit the container or the rank exceeds 4.
        """
        el = ElType[el_type.removeprefix("MLI_EL_")] if isinstance(el_type, str) else ElType(el_type)
        arr = np.asarray(array)
        dt = el.dtype
        if arr.ndim > MLI_MAX_RANK:
            raise MliError(Status.BAD_TENSOR, f"rank {arr.ndim} > MLI_MAX_RANK ({MLI_MAX_RANK})")
        if dt.kind == "i" and arr.size:
            info = np.iinfo(dt)
            if arr.dtype.kind == "f" and not np.all(arr == np.round(arr)):
                raise MliError(Status.BAD_TENSOR, "from_numpy takes quantised integers; use from_float")
            if arr.min() < info.min or arr.max() > info.max:
                raise MliError(Status.BAD_TENSOR, f"values outside the {dt} container of {el.c_name}")
        params = _sa_params(el, zero_point, scale, scale_frac_bits, dim)
        if arr.ndim == 0:
            return cls(data=None, capacity=0, shape=[], mem_stride=[], rank=0, el_type=el,
                       frac_bits=frac_bits, value=arr.astype(dt).item(), **params)
        flat = np.ascontiguousarray(arr, dtype=dt).reshape(-1).copy()
        return cls(data=flat, capacity=flat.nbytes, shape=list(arr.shape),
                   mem_stride=dense_strides(arr.shape), rank=arr.ndim, el_type=el,
                   frac_bits=frac_bits, **params)

    @classmethod
    def zeros(cls, shape: tuple[int, ...] | list[int], el_type: ElType | str, **params: Any) -> "Tensor":
        """A dense tensor of zeros (e.g. an output buffer) with the given parameters.

        Args:
            shape: dimensions (rank 0 to 4); el_type: element type (or its name);
            **params: element parameters, as :meth:`from_numpy` takes them.

        Returns:
            A new dense tensor.

        Raises:
            MliError: BAD_TENSOR for a rank above 4 or a negative / non-integer dimension;
                NOT_ENGH_MEM when the buffer exceeds the memory budget (:func:`pymli.config.set_memory_budget`).
        """
        el = ElType[el_type.removeprefix("MLI_EL_")] if isinstance(el_type, str) else ElType(el_type)
        dims = tuple(shape)
        if len(dims) > MLI_MAX_RANK:
            raise MliError(Status.BAD_TENSOR, f"rank {len(dims)} > MLI_MAX_RANK ({MLI_MAX_RANK})")
        if any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0 for d in dims):
            raise MliError(Status.BAD_TENSOR, f"shape {dims!r}: dimensions must be non-negative integers")
        nbytes = el.dtype.itemsize
        for d in dims:
            nbytes *= int(d)
        # Budget check before numpy allocates (checks.entry.check_budget is a floor above this module).
        if nbytes > get_memory_budget():
            raise MliError(Status.NOT_ENGH_MEM, f"{nbytes} bytes over the memory budget of {get_memory_budget()}")
        return cls.from_numpy(np.zeros(dims, dtype=el.dtype), el, **params)

    @classmethod
    def from_float(cls, array: npt.ArrayLike, el_type: ElType | str, **kwargs: Any) -> "Tensor":
        """Quantise float data into a new tensor; see :func:`pymli.quant.quantize`.

        Args:
            array: float data, rank 0 to 4.
            el_type: FX_8, FX_16, SA_8, SA_32 or FP_32.
            **kwargs: the parameters of :func:`pymli.quant.quantize`.

        Returns:
            A new dense tensor.
        """
        # Upward by design: quant.py (a higher floor) builds Tensors; this convenience reaches it lazily.
        from .quant import quantize

        return quantize(array, el_type, **kwargs)

    def to_float(self) -> np.ndarray:
        """Dequantised values as float32 (MLI's conversion to ``MLI_EL_FP_32``).

        Returns:
            float32 array of shape ``shape`` (0-d for rank 0).
        """
        # Upward by design: quant.py (a higher floor) imports Tensor; this convenience reaches it lazily.
        from .quant import dequantize

        return dequantize(self)

    # ------------------------------------------------------------------ properties
    @property
    def element_size(self) -> int:
        """``mli_hlp_tensor_element_size``."""
        return self.el_type.size

    @property
    def is_per_axis(self) -> bool:
        """An SA tensor with per-axis parameters (``dim >= 0``)."""
        return self.el_type.is_sa and self.dim >= 0

    @property
    def num_elements(self) -> int:
        """Product of the first ``rank`` shape entries (1 for a scalar)."""
        n = 1
        for s in self.shape[: self.rank]:
            n *= int(s)
        return n

    def strides(self) -> list[int]:
        """``mem_stride``, or the dense strides when all of them are zero."""
        ms = [int(s) for s in self.mem_stride[: self.rank]]
        if all(s == 0 for s in ms):
            return dense_strides(self.shape[: self.rank])
        return ms

    def quant_vector(self, name: str, length: int | None = None) -> np.ndarray:
        """Per-axis ``zero_point`` / ``scale`` / ``scale_frac_bits`` as int64, or a 1-element array.

        Args:
            name: ``"zero_point"``, ``"scale"`` or ``"scale_frac_bits"``;
            length: entries wanted (default ``shape[dim]``).

        Returns:
            int64 array.
        """
        v = getattr(self, name)
        if self.dim >= 0:
            n = int(self.shape[self.dim]) if length is None else length
            return np.asarray(v, dtype=np.int64).reshape(-1)[:n]
        return np.asarray([int(v)], dtype=np.int64)

    # ------------------------------------------------------------------ memory access
    def _span(self) -> int:
        """Number of container elements the tensor touches (last offset + 1)."""
        return 1 + sum((int(s) - 1) * int(m) for s, m in zip(self.shape[: self.rank], self.strides()))

    def view(self) -> np.ndarray:
        """A NumPy view (shape ``shape``, MLI strides) on the data; writes go to the buffer.

        Raises:
            MliError: BAD_TENSOR for a NULL data pointer, a negative stride or shape, or a view
                that would reach past the end of the NumPy buffer (a C out-of-bounds access).
        """
        rank = self.rank
        if rank == 0:
            raise MliError(Status.BAD_TENSOR, "a rank-0 tensor holds its value in the struct")
        data = self.data
        if data is None:
            raise MliError(Status.BAD_TENSOR, "NULL data pointer")
        if not isinstance(data, np.ndarray) or data.ndim != 1:
            raise MliError(Status.BAD_TENSOR, "data must be a 1-D NumPy array")
        shape = [int(s) for s in self.shape[:rank]]
        ms = [int(m) for m in self.mem_stride[:rank]]
        if not any(ms):
            ms = dense_strides(shape)
        if min(shape, default=1) <= 0 or min(ms, default=0) < 0:
            raise MliError(Status.BAD_TENSOR, f"bad shape {shape} or mem_stride {ms}")
        span = 1
        for s, m in zip(shape, ms):
            span += (s - 1) * m
        if span > data.shape[0]:
            raise MliError(Status.NOT_ENGH_MEM, f"tensor spans {span} elements, buffer holds {data.shape[0]}")
        # Element i of the container is data[i] whatever the array's own stride (negative, zero, > 1):
        # the view steps by multiples of it and stays inside the elements of ``data`` (span checked above).
        step = data.strides[0]
        strides = [m * step for m in ms]
        if data.flags.c_contiguous and step == data.itemsize:
            # The ndarray constructor over the contiguous buffer: the same view as as_strided, built
            # without its Python-level set-up (bounds already checked above).
            return np.ndarray(shape, dtype=data.dtype, buffer=data, strides=strides)
        return np.lib.stride_tricks.as_strided(data, shape=shape, strides=strides)

    def numpy(self) -> np.ndarray:
        """A dense copy of the tensor's values (container dtype); 0-d for a scalar tensor."""
        if self.rank == 0:
            return np.asarray(self.value, dtype=self.el_type.dtype)
        return np.array(self.view())

    def write(self, values: npt.ArrayLike) -> None:
        """Store ``values`` (broadcast to ``shape``) into the tensor's memory, leaving gaps alone.

        Values must already be in the container range: casting here would wrap silently.

        Args:
            values: array-like broadcastable to ``shape``, in the container range.

        Raises:
            ValueError: values outside the container.
            MliError: an invalid view (see :meth:`view`).
        """
        values = np.asarray(values)
        if self.rank == 0:
            self.value = values.astype(self.el_type.dtype).item()
            return
        dt = self.el_type.dtype
        if dt.kind == "i" and values.dtype.kind in "iu" and values.size:
            info = np.iinfo(dt)
            if values.min() < info.min or values.max() > info.max:
                raise ValueError(f"write: values outside the {dt} container (saturate first)")
        self.view()[...] = values

    def copy(self) -> "Tensor":
        """A deep copy: own buffer (dense), same parameters."""
        q = {k: (np.array(getattr(self, k)) if isinstance(getattr(self, k), np.ndarray) else getattr(self, k))
             for k in ("zero_point", "scale", "scale_frac_bits")}
        if self.rank == 0:
            return dataclasses.replace(self, **q)
        arr = self.numpy().reshape(-1)
        return dataclasses.replace(self, data=arr, capacity=arr.nbytes, shape=list(self.shape[: self.rank]),
                                   mem_stride=dense_strides(self.shape[: self.rank]), **q)

    def validate(self) -> "Tensor":
        """Run MLI's tensor check (``mli_chk_tensor`` with quantisation parameters).

        Delegates to :func:`pymli.checks.validate_tensor`, where the check lives.

        Returns:
            ``self``.

        Raises:
            MliError: BAD_TENSOR, NOT_ENGH_MEM or INCOMPATEBLE_TENSORS as the checked C build.
        """
        # Upward by design: checks/ (a higher floor) imports Tensor; this convenience reaches it lazily.
        from .checks.tensor import validate_tensor

        return validate_tensor(self)

    # ------------------------------------------------------------------ display
    def __repr__(self) -> str:
        shape = "x".join(str(s) for s in self.shape[: self.rank]) or "scalar"
        if self.el_type.is_fx:
            q = f"frac_bits={self.frac_bits}"
        elif self.el_type.is_sa:
            if self.dim >= 0:
                n = int(self.shape[self.dim]) if self.dim < len(self.shape) else None
                zp, sc, sfb = (np.asarray(getattr(self, k)).reshape(-1)[:n].tolist()
                               for k in ("zero_point", "scale", "scale_frac_bits"))
                q = f"dim={self.dim}, zero_point={zp}, scale={sc}, scale_frac_bits={sfb}"
            else:
                q = f"zero_point={self.zero_point}, scale={self.scale}, scale_frac_bits={self.scale_frac_bits}"
        else:
            q = ""
        dense = self.rank == 0 or self.strides() == dense_strides(self.shape[: self.rank])
        mem = "" if dense else f", mem_stride={self.strides()}"
        try:
            vals = np.array2string(self.numpy(), threshold=8, edgeitems=2, separator=", ").replace("\n", "")
        except (MliError, ValueError):
            vals = "<invalid>"
        q = f", {q}" if q else ""
        return f"Tensor({self.el_type.name} {shape}{mem}{q}, capacity={self.capacity}: {vals})"


def _sa_params(el: ElType, zero_point: Any, scale: Any, scale_frac_bits: Any, dim: int) -> dict[str, Any]:
    if not el.is_sa:
        return {}
    if dim >= 0:
        return dict(dim=dim, zero_point=np.asarray(zero_point, np.int16).reshape(-1),
                    scale=np.asarray(scale, np.int16).reshape(-1),
                    scale_frac_bits=np.asarray(scale_frac_bits, np.int8).reshape(-1))
    return dict(dim=-1, zero_point=int(zero_point), scale=int(scale), scale_frac_bits=int(scale_frac_bits))


@dataclasses.dataclass(eq=False)
class Lut:
    """An ``mli_lut``: a look-up table for an activation, as built by ``mli_krn_*_create_lut``.

    Attributes:
        data: 1-D NumPy array of the table (``None`` = NULL).
        capacity: bytes available in ``data``.
        type: element type of the table entries (normally ``FX_16``).
        length: number of entries.
        in_frac_bits, out_frac_bits: fixed-point formats of the table's input and output.
        input_offset, output_offset: offsets of the zero input / output within the table.
    """

    data: np.ndarray | None = None
    capacity: int = 0
    type: ElType = ElType.FX_16
    length: int = 0
    in_frac_bits: int = 0
    out_frac_bits: int = 0
    input_offset: int = 0
    output_offset: int = 0
