"""``mli_helpers_api.h``: helper functions (``mli_hlp_*``).

Each function follows the C library's checked build (``DBG_MODE_RET_CODES``): the argument checks of
``private/src/mli_check.cc`` run first; a function returning ``mli_status`` raises
:class:`~pymli.errors.MliError` with the C status, a function returning a value returns what the
checked C build returns for a bad argument (0 for ``mli_hlp_count_elem_num``).

C quirks kept on purpose (the recorded C calls show them):

* ``mli_hlp_point_to_subtensor`` / ``mli_hlp_create_subtensor`` re-point ``out.data`` into the input
  buffer (a NumPy view), rewrite shape, rank, capacity and element parameters, and leave the rest of
  the output struct alone (point_to_subtensor keeps ``out.mem_stride``);
* ``mli_hlp_set_tensor_mem_strides`` writes ``mem_stride[rank-1]`` even past the array: for a rank
  of 5 to 8 the writes land in ``shape`` and read ``rank`` as C's struct layout makes them do.

Deliberate differences (C behaviour that cannot be reproduced): a conversion between FP_32 and an
element type without a container (FX_4, FP_16) raises NOT_SUPPORTED where C writes garbage; an SA
scale of 0 in a conversion raises BAD_TENSOR where C divides by zero; ``coord_num == 0`` in
``mli_hlp_point_to_subtensor`` gives BAD_FUNC_CFG where C reads before the cfg struct.
"""

from __future__ import annotations

import numpy as np

from ..arith.rounding import wrap_int
from ..checks.helpers import c_array as _pad
from ..checks.helpers import check_convert, check_create_subtensor, check_point_to_subtensor
from ..checks.tensor import fail, same_data_pointer, shape_at, stride_at
from ..config import get_platform
from ..errors import MliError, Status
from ..formats import ElType
from ..kernels import convert as kconv
from ..tensor import MLI_MAX_RANK, Tensor
from ._registry import mli_function
from .types import PointToSubtsrCfg, SubTensorCfg

__all__ = [
    "mli_hlp_compile_options_string",
    "mli_hlp_count_elem_num",
    "mli_hlp_tensor_element_size",
    "mli_hlp_tensor_scale",
    "mli_hlp_tensor_scale_shift",
    "mli_hlp_tensor_zero_offset",
    "mli_hlp_tensor_data_ptr_cmp",
    "mli_hlp_point_to_subtensor",
    "mli_hlp_create_subtensor",
    "mli_hlp_convert_tensor_safx",
    "mli_hlp_convert_tensor",
    "mli_hlp_set_tensor_mem_strides",
    "mli_hlp_accu_guard_bits_sa8_sa8",
    "mli_hlp_accu_guard_bits_fx16_fx16",
    "mli_hlp_accu_guard_bits_fx16_fx8",
]

_U32 = 0xFFFFFFFF


# ---------------------------------------------------------------------------------------- queries
@mli_function()
def mli_hlp_compile_options_string() -> str:
    """The build options string of the C library for the current platform setting."""
    return get_platform().options_string()


@mli_function()
def mli_hlp_count_elem_num(in_: Tensor, start_dim: int) -> int:
    """Number of elements from dimension ``start_dim`` on (uint32).

    A rank above 4 gives 0. A ``start_dim >= rank`` gives 0 in a checked build (the platform's
    ``debug_mode`` is not ``DBG_MODE_RELEASE``) and 1 (an empty product) in a release build: the
    recorded C calls show both.
    """
    start_dim = int(start_dim) & _U32
    if in_.rank > MLI_MAX_RANK:
        return 0
    if in_.rank != 0 and start_dim >= in_.rank:
        return 0 if get_platform().debug_mode != "DBG_MODE_RELEASE" else 1
    n = 1
    for i in range(start_dim, in_.rank):
        n = (n * shape_at(in_, i)) & _U32
    return n


@mli_function()
def mli_hlp_tensor_element_size(in_: Tensor) -> int:
    """Container size in bytes of the element type (0 for FX_4 / FP_16)."""
    return ElType(in_.el_type).size


def _per_axis_value(t: Tensor, name: str, idx: int) -> int:
    arr = np.asarray(getattr(t, name)).reshape(-1)
    if not 0 <= idx < arr.size:
        raise MliError(Status.BAD_TENSOR, f"{name}[{idx}] read past the {arr.size} per-axis values")
    return int(arr[idx])


def _el_param(t: Tensor, name: str, idx: int, bits: int, other: int) -> int:
    """An SA parameter as its C type holds it (entry ``idx`` if per-axis), ``other`` for other types."""
    if t.el_type not in (ElType.SA_8, ElType.SA_32):
        return other
    v = _per_axis_value(t, name, int(idx)) if t.dim >= 0 else int(getattr(t, name))
    return wrap_int(v, bits)


@mli_function()
def mli_hlp_tensor_scale_shift(in_: Tensor, scale_idx: int) -> int:
    """Fractional bits: FX ``frac_bits``, SA ``scale_frac_bits`` (entry ``scale_idx`` if per-axis), 0 else."""
    fx = wrap_int(int(in_.frac_bits), 8) if in_.el_type in (ElType.FX_8, ElType.FX_16) else 0
    return _el_param(in_, "scale_frac_bits", scale_idx, 8, fx)


@mli_function()
def mli_hlp_tensor_scale(in_: Tensor, scale_idx: int) -> int:
    """Scale: 1 for FX/FP_32, the SA scale (entry ``scale_idx`` if per-axis), 0 for other types."""
    fx = 1 if in_.el_type in (ElType.FX_8, ElType.FX_16, ElType.FP_32) else 0
    return _el_param(in_, "scale", scale_idx, 16, fx)


@mli_function()
def mli_hlp_tensor_zero_offset(in_: Tensor, zero_idx: int) -> int:
    """Zero point: 0 for FX/FP_32 (and other types), the SA zero point (entry ``zero_idx`` if per-axis)."""
    return _el_param(in_, "zero_point", zero_idx, 16, 0)


@mli_function()
def mli_hlp_tensor_data_ptr_cmp(in1: Tensor, in2: Tensor) -> bool:
    """True when both tensors have the same element type, a rank > 0 and the same data pointer."""
    return same_data_pointer(in1, in2)


@mli_function()
def mli_hlp_accu_guard_bits_sa8_sa8() -> int:
    """Guard bits of the sa8 x sa8 MAC: a 32-bit accumulator over 16-bit products."""
    return 32 - 2 * 8


@mli_function()
def mli_hlp_accu_guard_bits_fx16_fx16() -> int:
    """Guard bits of the fx16 x fx16 MAC: the reference build's ``mli_acc40_t`` is an int64."""
    return 64 - 2 * 16


@mli_function()
def mli_hlp_accu_guard_bits_fx16_fx8() -> int:
    """Guard bits of the fx16 x fx8 MAC: a 32-bit accumulator over 24-bit products."""
    return 32 - (8 + 16)


@mli_function()
def mli_hlp_set_tensor_mem_strides(in_: Tensor) -> None:
    """Set dense ``mem_stride`` from ``shape`` and ``rank``.

    C writes ``mem_stride[rank-1]`` and below without checking ``rank``: in the struct, ``mem_stride[4..7]``
    are ``shape[0..3]`` and ``mem_stride[8]`` is ``rank``; this is reproduced for ranks up to 8 (writes
    further out, or before the array for rank 0, are dropped).
    """
    rank = int(in_.rank)
    words = _pad(in_.mem_stride[:MLI_MAX_RANK]) + [int(s) & _U32 for s in _pad(in_.shape[:MLI_MAX_RANK])] + [rank]

    def read(i: int) -> int:
        return words[i] if 0 <= i < len(words) else 0

    def write(i: int, v: int) -> None:
        if 0 <= i < len(words):
            words[i] = wrap_int(v, 32) if i < MLI_MAX_RANK else v & _U32

    write(rank - 1, 1)
    for i in range(rank - 2, -1, -1):
        # int32 mem_stride times uint32 shape, stored back into an int32.
        write(i, read(i + 1) * (read(MLI_MAX_RANK + i + 1) & _U32))
    in_.mem_stride = words[:MLI_MAX_RANK]
    if rank > MLI_MAX_RANK:
        in_.shape = words[MLI_MAX_RANK:2 * MLI_MAX_RANK]
        in_.rank = words[2 * MLI_MAX_RANK]


# ---------------------------------------------------------------------------------------- subtensors
def _copy_el_params(dst: Tensor, src: Tensor) -> None:
    dst.el_type = src.el_type
    dst.frac_bits = src.frac_bits
    dst.zero_point, dst.scale, dst.scale_frac_bits, dst.dim = src.zero_point, src.scale, src.scale_frac_bits, src.dim


@mli_function()
def mli_hlp_point_to_subtensor(in_: Tensor, cfg: PointToSubtsrCfg, out: Tensor) -> Status:
    """Point ``out`` at the sub-tensor of ``in_`` starting at ``cfg.start_coord`` (deprecated in MLI 2.0).

    ``out.data`` becomes a view into ``in_.data``; shape, rank, capacity and element parameters are set,
    ``out.mem_stride`` is left as it is.
    """
    check_point_to_subtensor(in_, cfg, out)
    coord_num = int(cfg.coord_num) & 0xFF
    start_axis = coord_num - 1
    elem_size = mli_hlp_tensor_element_size(in_)
    out_rank = in_.rank - start_axis
    sizes = [0] * in_.rank
    size = 1
    for i in range(in_.rank - 1, -1, -1):
        sizes[i] = size
        size = (size * shape_at(in_, i)) & _U32
    start = _pad(cfg.start_coord)
    offset = (start[0] * sizes[0]) & _U32
    for i in range(1, coord_num):
        offset = (offset + start[i] * sizes[i]) & _U32
    if in_.el_type not in (ElType.FX_8, ElType.SA_8, ElType.FX_16, ElType.FP_32, ElType.SA_32):
        fail(Status.NOT_SUPPORTED, f"point_to_subtensor: element type {in_.el_type.c_name}")
    out.data = in_.data[offset:]
    shape = _pad(out.shape)
    size = shape[0] = int(cfg.first_out_dim_size) & 0xFF
    for i in range(1, out_rank):
        shape[i] = shape_at(in_, start_axis + i)
        size = (size * shape[i]) & _U32
    out.shape = shape
    out.rank = out_rank
    out.capacity = (size * elem_size) & _U32
    _copy_el_params(out, in_)
    return Status.OK


@mli_function()
def mli_hlp_create_subtensor(in_: Tensor, cfg: SubTensorCfg, out: Tensor) -> Status:
    """Make ``out`` a (possibly strided) window ``cfg.offset`` / ``cfg.size`` of ``in_``, sharing its data.

    Dimensions of size 1 are dropped from the front until ``cfg.sub_tensor_rank`` is reached; the
    per-axis parameter arrays of an SA tensor are advanced to the window's first index.
    """
    check_create_subtensor(in_, cfg, out)
    in_rank = in_.rank
    out_rank = int(cfg.sub_tensor_rank)
    is_sa = in_.el_type in (ElType.SA_8, ElType.SA_32)
    strides = [0] * in_rank
    strides[in_rank - 1] = stride_at(in_, in_rank - 1) or 1
    for i in range(in_rank - 2, -1, -1):
        strides[i] = stride_at(in_, i) or wrap_int(strides[i + 1] * shape_at(in_, i + 1), 32)
    off, sz = _pad(cfg.offset), _pad(cfg.size)
    buf_offset = 0
    for i in range(in_rank):
        buf_offset = wrap_int(buf_offset + off[i] * strides[i], 32)
    # C copies the data container, then fails for an unsupported container: pymli fails first, so
    # that nothing is written on failure.
    if in_.el_type not in (ElType.FX_8, ElType.SA_8, ElType.FX_16, ElType.SA_32):
        fail(Status.NOT_SUPPORTED, f"create_subtensor: element type {in_.el_type.c_name}")
    out.el_type = in_.el_type
    out.data = None if in_.data is None else in_.data[buf_offset:]
    out.capacity = (int(in_.capacity) - buf_offset * in_.el_type.size) & _U32
    shape, mem_stride = _pad(out.shape), _pad(out.mem_stride)
    out_idx, skip = 0, in_rank - out_rank
    asym_dim, asym_off = -1, 0
    for i in range(in_rank):
        if skip > 0 and sz[i] == 1:
            skip -= 1
            continue
        shape[out_idx] = sz[i]
        mem_stride[out_idx] = strides[i]
        if is_sa and in_.dim == i:
            asym_dim, asym_off = out_idx, off[i]
        out_idx += 1
    out.shape, out.mem_stride, out.rank = shape, mem_stride, out_rank
    _copy_el_params(out, in_)
    if is_sa and in_.dim >= 0:
        arrays = [np.asarray(v).reshape(-1) for v in (in_.zero_point, in_.scale, in_.scale_frac_bits)]
        if asym_dim >= 0:
            out.zero_point, out.scale, out.scale_frac_bits = (a[asym_off:] for a in arrays)
        else:
            # The quantised axis was dropped: C leaves dim = -1 with the array pointers in the
            # per-tensor fields (garbage); we keep the values of the selected index instead.
            k = off[in_.dim] if in_.dim < in_rank else 0
            out.zero_point, out.scale, out.scale_frac_bits = (int(a[k]) for a in arrays)
        out.dim = asym_dim
    return Status.OK


# ---------------------------------------------------------------------------------------- conversion
_SAFX = {ElType.FX_8, ElType.SA_8, ElType.FX_16, ElType.SA_32}


def _params(t: Tensor, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(scale, frac_bits, zero_point) vectors of ``n`` entries (1 for per-tensor parameters)."""
    if t.el_type in (ElType.SA_8, ElType.SA_32) and t.dim >= 0:
        out = []
        for name in ("scale", "scale_frac_bits", "zero_point"):
            v = np.asarray(getattr(t, name), dtype=np.int64).reshape(-1)
            if v.size < n:
                fail(Status.BAD_TENSOR, f"{name} holds {v.size} per-axis values, shape[{t.dim}] = {n}")
            out.append(v[:n])
        return out[0], out[1], out[2]
    one = np.ones(1, np.int64)
    return (one * mli_hlp_tensor_scale(t, 0), one * mli_hlp_tensor_scale_shift(t, 0), one * mli_hlp_tensor_zero_offset(t, 0))


def _axis(t: Tensor) -> tuple[int | None, int]:
    if t.el_type in (ElType.SA_8, ElType.SA_32) and t.dim >= 0:
        return t.dim, shape_at(t, t.dim)
    return None, 1


def _values(t: Tensor) -> np.ndarray:
    return np.asarray(t.value, dtype=t.el_type.dtype) if t.rank == 0 else t.view()


def _store(t: Tensor, values: np.ndarray) -> None:
    if t.rank == 0:
        t.value = values.item()
    else:
        t.view()[...] = values


def _convert_quantized(src: Tensor, dst: Tensor) -> None:
    axis, n = _axis(src)
    if dst.el_type in (ElType.SA_8, ElType.SA_32) and dst.dim >= 0:
        axis, n = _axis(dst)
    s_scale, s_frac, s_zp = _params(src, n)
    d_scale, d_frac, d_zp = _params(dst, n)
    if np.any(d_scale == 0):
        fail(Status.BAD_TENSOR, "convert: output scale 0 (C divides by it)")
    x = _values(src)
    wide = ElType.SA_32 in (src.el_type, dst.el_type)
    res = kconv.convert_quantized(x, dst.el_type.dtype, wide=wide, in_scale=s_scale, in_frac=s_frac, in_zp=s_zp,
                                  out_scale=d_scale, out_frac=d_frac, out_zp=d_zp, axis=axis)
    _store(dst, res)


@mli_function()
def mli_hlp_convert_tensor_safx(src: Tensor, dst: Tensor) -> Status:
    """Convert between FX and SA formats (any containers; no FP_32), per-tensor or per-axis.

    Raises:
        MliError: the statuses of ``mli_chk_convert_tensor``; TYPE_MISMATCH for FP_32 or types
            without a container.
    """
    check_convert(src, dst)
    if src.el_type not in _SAFX or dst.el_type not in _SAFX:
        fail(Status.TYPE_MISMATCH, f"convert_tensor_safx: {src.el_type.c_name} -> {dst.el_type.c_name}")
    _convert_quantized(src, dst)
    return Status.OK


@mli_function()
def mli_hlp_convert_tensor(src: Tensor, dst: Tensor) -> Status:
    """Convert ``src`` into the format of ``dst`` (FX, SA, FP_32; per-tensor or per-axis); shapes must match.

    Raises:
        MliError: the statuses of ``mli_chk_convert_tensor``.
    """
    check_convert(src, dst)
    if src.el_type != ElType.FP_32 and dst.el_type != ElType.FP_32:
        # C ignores a TYPE_MISMATCH of this path's safx call only in the float branch.
        return mli_hlp_convert_tensor_safx(src, dst)
    quant = src.el_type == ElType.FP_32
    t = dst if quant else src
    if t.el_type not in _SAFX and t.el_type != ElType.FP_32:
        fail(Status.NOT_SUPPORTED, f"convert_tensor: {src.el_type.c_name} -> {dst.el_type.c_name}")
    axis, n = _axis(t)
    scale, frac, zp = _params(t, n)
    x = _values(src)
    if t.el_type == ElType.FP_32:
        res = np.asarray(x, dtype=np.float32)
    elif quant:
        res = kconv.quantize(x, dst.el_type.dtype, scale=scale, frac_bits=frac, zero_point=zp, axis=axis)
    else:
        res = kconv.dequantize(x, scale=scale, frac_bits=frac, zero_point=zp, axis=axis)
    _store(dst, res)
    return Status.OK
