"""One module of pymli.checks per kernel family: each check raises the right status."""

from __future__ import annotations

import numpy as np
import pytest

from pymli import MliError, Status, Tensor
from pymli.arith.eltwise import EltOp
from pymli.capi.move import MovCfg
from pymli.capi.types import (ArgmaxCfg, Conv2dCfg, FullyConnectedCfg, PermuteCfg, PoolCfg, PreluCfg, ReluCfg,
                              SoftmaxCfg)
from pymli.checks import activation, conv, diverse, eltwise, fc, lut, move, pooling
from pymli.formats import ElType


def _fx16(shape, **kw) -> Tensor:
    return Tensor.from_numpy(np.zeros(shape, np.int16), "FX_16", **kw)


def _status(fn, *args) -> Status:
    with pytest.raises(MliError) as e:
        fn(*args)
    return e.value.status


def test_conv2d() -> None:
    x, w, b, out = _fx16((5, 5, 2)), _fx16((3, 3, 2, 4)), _fx16((4,)), _fx16((3, 3, 4))
    conv.check_conv2d(x, w, b, Conv2dCfg(), out)
    assert _status(conv.check_conv2d, x, w, b, None, out) is Status.BAD_FUNC_CFG
    assert _status(conv.check_conv2d, x, w, b, Conv2dCfg(stride_width=0), out) is Status.BAD_FUNC_CFG
    assert _status(conv.check_conv2d, x, w, _fx16((3,)), Conv2dCfg(), out) is Status.SHAPE_MISMATCH
    assert _status(conv.check_conv2d, x, w, b, Conv2dCfg(), out, 5) is Status.SHAPE_MISMATCH
    assert _status(conv.check_conv2d, x, w, b, Conv2dCfg(), x) is Status.SHAPE_MISMATCH
    w8 = Tensor.from_numpy(np.zeros((3, 3, 2, 4), np.int8), "FX_8")
    assert _status(conv.check_conv_types, x, w8, b, out, "fx16") is Status.TYPE_MISMATCH


def test_sa8_params_and_bias_scale() -> None:
    def sa(shape, el="SA_8", **q):
        return Tensor.from_numpy(np.zeros(shape, ElType[el].dtype), el, **q)
    x = sa((4,), zero_point=0, scale=16384, scale_frac_bits=14)
    w = sa((4, 2), zero_point=0, scale=16384, scale_frac_bits=14)
    b = sa((2,), "SA_32", zero_point=0, scale=16384, scale_frac_bits=14)
    out = sa((2,), zero_point=0, scale=1, scale_frac_bits=0)
    conv.check_sa8_params(x, w, b, out, 1)
    bad = sa((2,), "SA_32", zero_point=0, scale=9999, scale_frac_bits=14)
    assert _status(conv.check_sa8_params, x, w, bad, out, 1) is Status.INCOMPATEBLE_TENSORS
    wz = sa((4, 2), zero_point=3, scale=16384, scale_frac_bits=14)
    assert _status(conv.check_sa8_params, x, wz, b, out, 1) is Status.INCOMPATEBLE_TENSORS


def test_fully_connected() -> None:
    x, w, b, out = _fx16((4,)), _fx16((4, 3)), _fx16((3,)), _fx16((3,))
    fc.check_fully_connected(x, w, b, FullyConnectedCfg(), out)
    assert _status(fc.check_fully_connected, x, w, b, None, out) is Status.BAD_FUNC_CFG
    assert _status(fc.check_fully_connected, _fx16((5,)), w, b, FullyConnectedCfg(), out) is Status.SHAPE_MISMATCH
    assert _status(fc.check_fully_connected, x, w, b, FullyConnectedCfg(), x) is Status.SHAPE_MISMATCH


def test_pooling() -> None:
    x, out = _fx16((4, 4, 2)), _fx16((2, 2, 2))
    c = pooling.check_pool_hwc("f", x, PoolCfg(2, 2, 2, 2), out, ElType.FX_16)
    assert c["kernel_width"] == 2
    assert _status(pooling.check_pool_hwc, "f", x, None, out, ElType.FX_16) is Status.BAD_FUNC_CFG
    assert _status(pooling.check_pool_hwc, "f", x, PoolCfg(2, 2, 2, 2), out, ElType.FX_16, 3) is Status.SHAPE_MISMATCH
    assert _status(pooling.check_pool_hwc, "f", x, PoolCfg(2, 2, 2, 2), _fx16((3, 3, 2)), ElType.FX_16) \
        is Status.BAD_FUNC_CFG
    assert _status(pooling.check_pool_hwc, "f", x, PoolCfg(2, 2, 2, 2), out, ElType.FX_8) is Status.TYPE_MISMATCH


def test_eltwise() -> None:
    a, b, out = _fx16((3,)), _fx16((3,)), _fx16((3,))
    eltwise.check_eltwise("f", a, b, out, EltOp.ADD, ElType.FX_16)
    assert _status(eltwise.check_eltwise, "f", a, _fx16((4,)), out, EltOp.ADD, ElType.FX_16) is Status.SHAPE_MISMATCH
    s0, s1 = Tensor.from_numpy(np.int16(1), "FX_16"), Tensor.from_numpy(np.int16(2), "FX_16")
    assert _status(eltwise.check_eltwise, "f", s0, s1, out, EltOp.ADD, ElType.FX_16) is Status.NOT_SUPPORTED
    assert _status(eltwise.check_eltwise, "f", a, b, out, EltOp.ADD, ElType.FX_8) is Status.TYPE_MISMATCH
    c = _fx16((3,), frac_bits=3)
    assert _status(eltwise.check_eltwise, "f", a, c, out, EltOp.MAX, ElType.FX_16) is Status.INCOMPATEBLE_TENSORS


def test_activation() -> None:
    x, out = _fx16((2, 3)), _fx16((2, 3))
    activation.check_relu("f", ElType.FX_16, x, ReluCfg(), out)
    assert _status(activation.check_relu, "f", ElType.FX_16, x, None, out) is Status.BAD_FUNC_CFG
    assert _status(activation.check_relu, "f", ElType.FX_16, x, ReluCfg(), _fx16((3, 2))) is Status.SHAPE_MISMATCH
    slope = Tensor.from_numpy(np.int16(3), "FX_16")
    activation.check_leaky_relu("f", ElType.FX_16, x, slope, out)
    assert _status(activation.check_leaky_relu, "f", ElType.FX_16, x, slope, _fx16((2, 3), frac_bits=2)) \
        is Status.SPEC_PARAM_MISMATCH
    assert _status(activation.check_prelu, "f", ElType.FX_16, x, _fx16((1, 3)), PreluCfg(2), out) is Status.BAD_FUNC_CFG
    activation.check_prelu("f", ElType.FX_16, x, _fx16((1, 3)), PreluCfg(1), out)


def test_lut_activations() -> None:
    x, out = _fx16((2, 3)), _fx16((2, 3))
    lut.check_basic_activation(x, out, ElType.FX_16, "f")
    assert _status(lut.check_basic_activation, x, out, ElType.FX_8, "f") is Status.TYPE_MISMATCH
    assert _status(lut.check_axis_cfg, x, SoftmaxCfg(2), "f") is Status.BAD_FUNC_CFG
    assert _status(lut.check_axis_cfg, x, None, "f") is Status.BAD_FUNC_CFG


def test_permute_and_argmax() -> None:
    x, out = _fx16((2, 3)), _fx16((3, 2))
    diverse.check_permute("f", ElType.FX_16, x, PermuteCfg([1, 0]), out)
    assert _status(diverse.check_permute, "f", ElType.FX_16, x, PermuteCfg([1, 1]), out) is Status.BAD_FUNC_CFG
    assert _status(diverse.check_permute, "f", ElType.FX_16, x, PermuteCfg([0, 1]), out) is Status.SHAPE_MISMATCH
    sa = Tensor.from_numpy(np.zeros((2, 3), np.int8), "SA_8", zero_point=[0, 0, 0], scale=[1, 1, 1],
                           scale_frac_bits=[0, 0, 0], dim=1)
    sa.scale = np.array([1, 1], np.int16)  # fewer per-axis values than shape[dim]
    sa_out = Tensor.from_numpy(np.zeros((3, 2), np.int8), "SA_8")
    assert _status(diverse.check_permute, "f", ElType.SA_8, sa, PermuteCfg([1, 0]), sa_out) is Status.BAD_TENSOR
    idx = Tensor.from_numpy(np.zeros((1, 2), np.int32), "SA_32")
    diverse.check_argmax("f", ElType.FX_16, x, ArgmaxCfg(-1, 2), idx)
    assert _status(diverse.check_argmax, "f", ElType.FX_16, x, ArgmaxCfg(-1, 7), idx) is Status.BAD_FUNC_CFG


def test_data_movement() -> None:
    src, dst = _fx16((2, 3)), _fx16((2, 3))
    cfg = move.check_data_movement(src, MovCfg(), dst)
    assert cfg.perm_dim == [0, 1, 2, 3] and cfg.size == [0, 0, 0, 0]
    assert _status(move.check_data_movement, src, None, dst) is Status.BAD_FUNC_CFG
    assert _status(move.check_data_movement, src, MovCfg(), None) is Status.BAD_TENSOR
    assert _status(move.check_data_movement, src, MovCfg(), src) is Status.INCOMPATEBLE_TENSORS
    assert move.as_u32(-1) == 2**32 - 1 and move.as_i32(2**31) == -2**31 and move.as_u8(257) == 1
