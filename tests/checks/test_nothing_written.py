"""A failing MLI call writes nothing: neither the output buffer nor any output struct field.

Each case builds a call that fails after (or inside) its checks and compares every output buffer and
struct field before and after.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from pymli import ElType, MliError, Status, Tensor, capi
from pymli.capi.move import MovCfg, reset_dma_pool
from pymli.capi.types import ArgmaxCfg, Conv2dCfg, PermuteCfg, SubTensorCfg
from pymli.tensor import Lut


def _snapshot(t):
    return {k: (np.array(v, copy=True) if isinstance(v, np.ndarray) else copy.deepcopy(v)) for k, v in vars(t).items()}


def _same(a, b) -> bool:
    if a.keys() != b.keys():
        return False
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and np.array_equal(x, y)):
                return False
        elif x != y:
            return False
    return True


def _expect_unchanged(call, outs, status: Status) -> None:
    before = [_snapshot(o) for o in outs]
    with pytest.raises(MliError) as e:
        call()
    assert e.value.status is status
    assert all(_same(b, _snapshot(o)) for b, o in zip(before, outs))


def _sa8(shape, **q) -> Tensor:
    return Tensor.from_numpy(np.arange(int(np.prod(shape)), dtype=np.int8).reshape(shape), "SA_8", **q)


def test_permute_sa8_short_input_arrays() -> None:
    x = _sa8((2, 3), zero_point=[0, 0, 0], scale=[1, 1, 1], scale_frac_bits=[0, 0, 0], dim=1)
    x.zero_point = np.array([0, 0], np.int16)  # C would read past this array
    out = Tensor.from_numpy(np.full((3, 2), 9, np.int8), "SA_8", zero_point=[5, 5, 5], scale=[2, 2, 2],
                            scale_frac_bits=[1, 1, 1], dim=0)
    _expect_unchanged(lambda: capi.mli_krn_permute_sa8(x, PermuteCfg([1, 0]), out), [out], Status.BAD_TENSOR)


def test_permute_sa8_dim_beyond_rank() -> None:
    x = _sa8((2, 3), zero_point=[0, 0, 0], scale=[1, 1, 1], scale_frac_bits=[0, 0, 0], dim=1)
    x.dim = 3
    out = Tensor.from_numpy(np.full((3, 2), 9, np.int8), "SA_8")
    _expect_unchanged(lambda: capi.mli_krn_permute_sa8(x, PermuteCfg([1, 0]), out), [out], Status.BAD_TENSOR)


def test_permute_short_output_buffer() -> None:
    x = Tensor.from_numpy(np.arange(6, dtype=np.int16).reshape(2, 3), "FX_16", frac_bits=3)
    out = Tensor.from_numpy(np.zeros((3, 2), np.int16), "FX_16", frac_bits=1)
    out.data = out.data[:4].copy()  # capacity says 12 bytes, the buffer holds 8
    _expect_unchanged(lambda: capi.mli_krn_permute_fx16(x, PermuteCfg([1, 0]), out), [out], Status.NOT_ENGH_MEM)


def test_conv_short_output_buffer_keeps_el_type() -> None:
    x = Tensor.from_numpy(np.ones((3, 3, 1), np.int16), "FX_16")
    w = Tensor.from_numpy(np.ones((1, 1, 1, 1), np.int16), "FX_16")
    b = Tensor.from_numpy(np.zeros((1,), np.int16), "FX_16")
    out = Tensor.from_numpy(np.zeros((3, 3, 1), np.int16), "FX_16")
    out.data = out.data[:5].copy()
    _expect_unchanged(lambda: capi.mli_krn_conv2d_hwcn_fx16(x, w, b, Conv2dCfg(), out), [out], Status.NOT_ENGH_MEM)


def test_argmax_short_output_buffer() -> None:
    x = Tensor.from_numpy(np.array([[1, 9, 3], [9, 2, 8]], np.int16), "FX_16")
    out = Tensor.from_numpy(np.full((1, 3), -1, np.int32), "SA_32", zero_point=4, scale=9, scale_frac_bits=2)
    out.data = out.data[:2].copy()
    _expect_unchanged(lambda: capi.mli_krn_argmax_fx16(x, ArgmaxCfg(-1, 3), out), [out], Status.NOT_ENGH_MEM)


def test_create_lut_too_small() -> None:
    lut = Lut(data=np.zeros(4, np.int16), capacity=8, type=ElType.FX_8)
    _expect_unchanged(lambda: capi.mli_krn_sigm_create_lut(lut), [lut], Status.NOT_ENGH_MEM)


def test_create_subtensor_unsupported_type() -> None:
    x = Tensor.from_numpy(np.zeros((2, 3), np.float32), "FP_32")
    out = Tensor()
    _expect_unchanged(lambda: capi.mli_hlp_create_subtensor(x, SubTensorCfg([0, 0], [1, 3], 2), out), [out],
                      Status.NOT_SUPPORTED)


def test_move_fails_after_struct_fill() -> None:
    reset_dma_pool()
    src = Tensor.from_numpy(np.arange(6, dtype=np.int16).reshape(2, 3), "FX_16", frac_bits=4)
    dst = Tensor(data=np.full(3, 7, np.int16), capacity=6, el_type=ElType.FX_8)
    # capacity too small for the destination struct the move fills in: C fills, then fails.
    _expect_unchanged(lambda: capi.mli_mov_tensor_sync(src, MovCfg(), dst), [dst], Status.NOT_ENGH_MEM)


def test_move_per_axis_destination_arrays_untouched() -> None:
    reset_dma_pool()
    src = _sa8((2, 3), zero_point=[1, 2, 3], scale=[4, 5, 6], scale_frac_bits=[7, 8, 9], dim=1)
    dst = Tensor(data=np.full(4, 7, np.int8), capacity=4, el_type=src.el_type,
                 zero_point=np.zeros(3, np.int16), scale=np.ones(3, np.int16), scale_frac_bits=np.zeros(3, np.int8))
    _expect_unchanged(lambda: capi.mli_mov_tensor_sync(src, MovCfg(), dst), [dst], Status.NOT_ENGH_MEM)
