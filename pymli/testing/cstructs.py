"""ctypes mirrors of the MLI 2.0.2 C structs, for calling the real ``libmli.so`` beside pymli.

Used by the differential tests and the side-by-side benchmarks (never by the library itself): the
structs lay out ``mli_tensor``, ``mli_lut`` and the kernel cfgs exactly as the C headers do on a
64-bit host, and :func:`fill_tensor` fills an :class:`MliTensor` from plain values so each caller
only says where its data and parameters come from.
"""

from __future__ import annotations

import ctypes as C
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["MliMem", "MliContainer", "MliFx", "MliSa", "MliElParams", "MliTensor", "MliLut", "MliRelu",
           "MliConv2dCfg", "MliPoolCfg", "MliFcCfg", "MliAxisCfg", "MliArgmaxCfg", "MliPermuteCfg",
           "MliRnnDenseCfg", "MliRnnCellCfg", "MliMovCfg", "container", "fill_tensor"]


class MliMem(C.Union):
    """The ``mem`` union of ``mli_data_container``: a pointer or one scalar."""

    _fields_ = [("p", C.c_void_p), ("i32", C.c_int32), ("i16", C.c_int16), ("i8", C.c_int8), ("f32", C.c_float)]


class MliContainer(C.Structure):
    """``mli_data_container``: capacity in bytes and the memory union."""

    _fields_ = [("capacity", C.c_uint32), ("mem", MliMem)]


class MliFx(C.Structure):
    """The fx member of ``mli_element_params``."""

    _fields_ = [("frac_bits", C.c_int8)]


class MliSa(C.Structure):
    """The sa member of ``mli_element_params`` (zero points, scales and their fraction bits)."""

    _fields_ = [("type", C.c_int), ("zero_point", MliContainer), ("scale", MliContainer), ("dim", C.c_int32),
                ("scale_frac_bits", MliContainer)]


class MliElParams(C.Union):
    """``mli_element_params``."""

    _fields_ = [("fx", MliFx), ("sa", MliSa)]


class MliTensor(C.Structure):
    """``mli_tensor``."""

    _fields_ = [("data", MliContainer), ("mem_stride", C.c_int32 * 4), ("shape", C.c_uint32 * 4),
                ("rank", C.c_uint32), ("el_type", C.c_int), ("el_params", MliElParams)]


class MliLut(C.Structure):
    """``mli_lut``."""

    _fields_ = [("data", MliContainer), ("type", C.c_int), ("length", C.c_int32), ("in_frac_bits", C.c_int32),
                ("out_frac_bits", C.c_int32), ("input_offset", C.c_int32), ("output_offset", C.c_int32)]


class MliRelu(C.Structure):
    """``mli_relu_cfg``."""

    _fields_ = [("type", C.c_int)]


class MliConv2dCfg(C.Structure):
    """``mli_conv2d_cfg``."""

    _fields_ = [("relu", MliRelu)] + [(n, C.c_uint8) for n in (
        "stride_width", "stride_height", "padding_left", "padding_right", "padding_top", "padding_bottom",
        "dilation_width", "dilation_height")]


class MliPoolCfg(C.Structure):
    """``mli_pool_cfg``."""

    _fields_ = [(n, C.c_uint8) for n in ("kernel_width", "kernel_height", "stride_width", "stride_height",
                                         "padding_left", "padding_right", "padding_top", "padding_bottom")]


class MliFcCfg(C.Structure):
    """``mli_fully_connected_cfg``."""

    _fields_ = [("relu", MliRelu)]


class MliAxisCfg(C.Structure):
    """A cfg holding one axis (``mli_softmax_cfg``, ``mli_l2_normalize_cfg``, ``mli_prelu_cfg``)."""

    _fields_ = [("axis", C.c_int32)]


class MliArgmaxCfg(C.Structure):
    """``mli_argmax_cfg``."""

    _fields_ = [("axis", C.c_int32), ("topk", C.c_int32)]


class MliPermuteCfg(C.Structure):
    """``mli_permute_cfg``."""

    _fields_ = [("perm_dim", C.c_uint8 * 4)]


class MliRnnDenseCfg(C.Structure):
    """``mli_rnn_dense_cfg``."""

    _fields_ = [("inputs_num", C.c_uint8)]


class MliRnnCellCfg(C.Structure):
    """``mli_rnn_cell_cfg``."""

    _fields_ = [("direction", C.c_int), ("results", C.c_int), ("act", C.c_int), ("scratch_data", MliContainer)]


class MliMovCfg(C.Structure):
    """``mli_mov_cfg``."""

    _fields_ = [("offset", C.c_uint32 * 4), ("size", C.c_uint32 * 4), ("sub_sample_step", C.c_uint32 * 4),
                ("dst_offset", C.c_uint32 * 4), ("dst_mem_stride", C.c_int32 * 4), ("perm_dim", C.c_uint8 * 4),
                ("padding_pre", C.c_uint8 * 4), ("padding_post", C.c_uint8 * 4)]


def container(v: Any, dt: type, keep: list) -> MliContainer:
    """A data container holding ``v``: a pointer to a copy of an array, or a scalar in the union.

    Args:
        v: an array, list or tuple (stored as a contiguous ``dt`` array, kept alive in ``keep``) or a scalar.
        dt: the element dtype, ``np.int8`` or ``np.int16`` (scalars of any other type go in ``i16``).
        keep: a list that must outlive the C call.

    Returns:
        The filled container.
    """
    c = MliContainer()
    if isinstance(v, (np.ndarray, list, tuple)):
        arr = np.ascontiguousarray(v, dt)
        keep.append(arr)
        c.capacity, c.mem.p = arr.nbytes, arr.ctypes.data
    elif dt == np.int8:
        c.mem.i8 = int(v)
    else:
        c.mem.i16 = int(v)
    return c


def fill_tensor(s: MliTensor, rank: int, shape: Sequence[int], mem_stride: Sequence[int], el_type: int,
                is_sa: bool, params: Any, keep: list) -> MliTensor:
    """Fill the layout and element parameters of ``s`` (its data container is the caller's).

    Args:
        s: the struct to fill.
        rank: the number of dimensions (at most 4).
        shape: the tensor's shape (at least ``rank`` entries).
        mem_stride: the strides in elements (at least ``rank`` entries).
        el_type: the ``mli_element_type`` value.
        is_sa: whether the type is signed asymmetric (else fixed point).
        params: a mapping or an object with ``zero_point``, ``scale``, ``scale_frac_bits`` and ``dim`` for sa
            types, ``frac_bits`` for fx.
        keep: a list that must outlive the C call.

    Returns:
        ``s``.
    """
    get = params.__getitem__ if isinstance(params, dict) else lambda k: getattr(params, k)
    for i in range(rank):
        s.shape[i], s.mem_stride[i] = int(shape[i]), int(mem_stride[i])
    s.rank, s.el_type = int(rank), int(el_type)
    if is_sa:
        sa = s.el_params.sa
        sa.type, sa.dim = 0, int(get("dim"))
        sa.zero_point = container(get("zero_point"), np.int16, keep)
        sa.scale = container(get("scale"), np.int16, keep)
        sa.scale_frac_bits = container(get("scale_frac_bits"), np.int8, keep)
    else:
        s.el_params.fx.frac_bits = int(get("frac_bits"))
    return s
