"""Pythonic layers (shapes, padding, quantisation choices) and facade behaviour (strides, checks)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymli import MliError, Status, Tensor, ops
from pymli.capi import (
    UNSUPPORTED,
    Conv2dCfg,
    FullyConnectedCfg,
    ReluCfg,
    ReluType,
    mli_krn_conv2d_hwcn_fx16_fx8_fx8,
    mli_krn_conv2d_hwcn_sa8_sa8_sa32,
    mli_krn_conv2d_hwcn_sa8_sa8_sa32_k3x3,
    mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32,
    mli_krn_fully_connected_sa8_sa8_sa32,
    mli_krn_transpose_conv2d_hwcn_fx16_k2x2_str2,
)

rng = np.random.default_rng(0)


def sa8(shape, zp=0, scale=16384, frac=20, dim=-1):
    data = rng.integers(-128, 128, shape)
    if dim >= 0:
        n = shape[dim]
        return Tensor.from_numpy(data, "SA_8", zero_point=np.zeros(n), scale=np.full(n, scale),
                                 scale_frac_bits=np.full(n, frac), dim=dim)
    return Tensor.from_numpy(data, "SA_8", zero_point=zp, scale=scale, scale_frac_bits=frac)


def fx(shape, frac, el="FX_16"):
    hi = 32767 if el == "FX_16" else 127
    return Tensor.from_numpy(rng.integers(-hi - 1, hi + 1, shape), el, frac_bits=frac)


@settings(max_examples=30, deadline=None)
@given(h=st.integers(1, 9), w=st.integers(1, 9), k=st.integers(1, 4), s=st.integers(1, 3), d=st.integers(1, 2),
       pad=st.sampled_from(["same", "valid", 0, 1]))
def test_conv2d_output_shape_follows_padding_formula(h, w, k, s, d, pad):
    x = fx((h, w, 2), 10)
    wt = fx((k, k, 2, 3), 6, "FX_8")
    eff = (k - 1) * d + 1
    if pad == "same":
        want = (-(-h // s), -(-w // s))
        p = ((max((want[0] - 1) * s + eff - h, 0)), (max((want[1] - 1) * s + eff - w, 0)))
        if max(p) // 2 + max(p) % 2 >= eff:  # MLI requires every pad < effective kernel
            return
    else:
        pp = 0 if pad == "valid" else pad
        if pp >= eff:
            return
        want = ((h + 2 * pp - eff) // s + 1, (w + 2 * pp - eff) // s + 1)
    if min(want) < 1:
        with pytest.raises(MliError):
            ops.conv2d(x, wt, stride=s, dilation=d, padding=pad)
        return
    y = ops.conv2d(x, wt, stride=s, dilation=d, padding=pad)
    assert tuple(y.shape) == (*want, 3)
    assert y.el_type.name == "FX_16"


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), k=st.integers(1, 3), depthwise=st.booleans())
def test_per_axis_equals_per_tensor_when_channels_share_params(seed, k, depthwise):
    r = np.random.default_rng(seed)
    c, n = 3, 3 if depthwise else 4
    wshape = (k, k, 1, c) if depthwise else (k, k, c, n)
    x = Tensor.from_numpy(r.integers(-128, 128, (5, 5, c)), "SA_8", zero_point=int(r.integers(-128, 128)),
                          scale=int(r.integers(8192, 32768)), scale_frac_bits=18)
    wv = r.integers(-127, 128, wshape)
    ws, wf = int(r.integers(8192, 32768)), int(r.integers(14, 22))
    w_t = Tensor.from_numpy(wv, "SA_8", scale=ws, scale_frac_bits=wf)
    w_a = Tensor.from_numpy(wv, "SA_8", zero_point=np.zeros(n), scale=np.full(n, ws), scale_frac_bits=np.full(n, wf),
                            dim=3)
    prod = int(x.scale) * ws
    sh = max(prod.bit_length() - 15, 0)
    bv = r.integers(-20000, 20000, n)
    b_t = Tensor.from_numpy(bv, "SA_32", scale=prod >> sh, scale_frac_bits=18 + wf - sh)
    b_a = Tensor.from_numpy(bv, "SA_32", zero_point=np.zeros(n), scale=np.full(n, prod >> sh),
                            scale_frac_bits=np.full(n, 18 + wf - sh), dim=0)
    q = {"zero_point": 3, "scale": 20000, "scale_frac_bits": 12}
    f = ops.depthwise_conv2d if depthwise else ops.conv2d
    y_t = f(x, w_t, b_t, padding="same", relu="relu6", out_quant=q)
    y_a = f(x, w_a, b_a, padding="same", relu="relu6", out_quant=q)
    assert np.array_equal(y_t.numpy(), y_a.numpy())


def test_auto_quantisation_uses_the_output_range():
    x = fx((6, 6, 3), 12)
    w = fx((3, 3, 3, 4), 14)
    y = ops.conv2d(x, w, padding=1)
    v = np.abs(y.numpy())
    assert v.max() > 8192  # the chosen frac_bits use the container
    y8 = ops.conv2d(sa8((6, 6, 3), zp=5), sa8((3, 3, 3, 4)), padding=1)
    assert y8.numpy().max() > 64 and y8.numpy().min() < -64
    cal = ops.conv2d(x, w, padding=1, out_quant=np.array([-4.0, 4.0]))
    assert cal.frac_bits == 12  # largest frac_bits holding +-4 in int16


def test_transpose_same_and_fully_connected_shapes():
    x = fx((5, 4, 2), 10)
    y = ops.transpose_conv2d(x, fx((4, 4, 2, 3), 6, "FX_8"), stride=2, padding="same")
    assert tuple(y.shape) == (10, 8, 3)
    f = ops.fully_connected(sa8((2, 3, 4)), sa8((24, 5)), relu="gen")
    assert tuple(f.shape) == (5,) and f.numpy().min() >= int(f.zero_point)


def _conv_setup(out_stride=None):
    global rng
    rng = np.random.default_rng(42)
    x = sa8((6, 6, 3), zp=-2)
    w = sa8((3, 3, 3, 4), dim=3)
    prod = 16384 * 16384
    b = Tensor.from_numpy(rng.integers(-999, 999, 4), "SA_32", zero_point=np.zeros(4), scale=np.full(4, prod >> 14),
                          scale_frac_bits=np.full(4, 40 - 14), dim=0)
    if out_stride is None:
        out = Tensor.zeros((6, 6, 4), "SA_8", zero_point=0, scale=20000, scale_frac_bits=22)
    else:
        buf = np.full(6 * out_stride, 77, np.int8)
        out = Tensor(data=buf, capacity=buf.nbytes, shape=[6, 6, 4], mem_stride=[out_stride, 4, 1], rank=3,
                     el_type=Tensor.zeros((1,), "SA_8").el_type, zero_point=0, scale=20000, scale_frac_bits=22)
    cfg = Conv2dCfg(relu=ReluCfg(ReluType.NONE), padding_top=1, padding_bottom=1, padding_left=1, padding_right=1)
    return x, w, b, cfg, out


def test_strided_output_leaves_gaps_untouched():
    x, w, b, cfg, dense = _conv_setup()
    mli_krn_conv2d_hwcn_sa8_sa8_sa32(x, w, b, cfg, dense)
    x, w, b, cfg, out = _conv_setup(out_stride=30)
    mli_krn_conv2d_hwcn_sa8_sa8_sa32(x, w, b, cfg, out)
    assert np.array_equal(out.numpy(), dense.numpy())
    assert np.abs(dense.numpy()).max() > 20
    gaps = out.data.reshape(6, 30)[:, 24:]
    assert (gaps == 77).all()


def test_invalid_calls_raise_c_status_and_write_nothing():
    x, w, b, cfg, out = _conv_setup()
    before = out.data.copy()
    with pytest.raises(MliError) as e:  # 3x3 specialisation given 3x3: fine; 5x5 weights: shape mismatch
        mli_krn_conv2d_hwcn_sa8_sa8_sa32_k3x3(x, sa8((5, 5, 3, 4), dim=3), b, cfg, out)
    assert e.value.status is Status.SHAPE_MISMATCH
    bad_cfg = Conv2dCfg(padding_top=3, padding_bottom=3, padding_left=3, padding_right=3)
    with pytest.raises(MliError) as e:
        mli_krn_conv2d_hwcn_sa8_sa8_sa32(x, w, b, bad_cfg, out)
    assert e.value.status is Status.BAD_FUNC_CFG
    with pytest.raises(MliError) as e:  # fx16 input with fx16 weights into the fx16_fx8_fx8 kernel
        mli_krn_conv2d_hwcn_fx16_fx8_fx8(fx((4, 4, 2), 8), fx((3, 3, 2, 2), 8), fx((2,), 8, "FX_8"), cfg,
                                         Tensor.zeros((4, 4, 2), "FX_16", frac_bits=4))
    assert e.value.status is Status.TYPE_MISMATCH
    wrong_bias = Tensor.from_numpy(rng.integers(-9, 9, 4), "SA_32", zero_point=np.zeros(4), scale=np.full(4, 1000),
                                   scale_frac_bits=np.full(4, 20), dim=0)
    with pytest.raises(MliError) as e:
        mli_krn_conv2d_hwcn_sa8_sa8_sa32(x, w, wrong_bias, cfg, out)
    assert e.value.status is Status.INCOMPATEBLE_TENSORS
    nonzero_wzp = Tensor.from_numpy(w.numpy(), "SA_8", zero_point=np.ones(4), scale=np.full(4, 16384),
                                    scale_frac_bits=np.full(4, 20), dim=3)
    with pytest.raises(MliError) as e:
        mli_krn_conv2d_hwcn_sa8_sa8_sa32(x, nonzero_wzp, b, cfg, out)
    assert e.value.status is Status.INCOMPATEBLE_TENSORS
    with pytest.raises(MliError) as e:  # k2x2_str2 with stride 1
        mli_krn_transpose_conv2d_hwcn_fx16_k2x2_str2(fx((3, 3, 2), 8), fx((2, 2, 2, 2), 8), fx((2,), 8), Conv2dCfg(),
                                                     Tensor.zeros((4, 4, 2), "FX_16", frac_bits=4))
    assert e.value.status is Status.BAD_FUNC_CFG
    with pytest.raises(MliError) as e:  # depthwise weights must be HW1N
        mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32(x, w, b, cfg, out)
    assert e.value.status is Status.SHAPE_MISMATCH
    assert np.array_equal(out.data, before)


def test_fully_connected_checks_and_unsupported():
    x = sa8((8,))
    w = sa8((8, 3))
    b = Tensor.from_numpy(np.zeros(3), "SA_32", scale=16384, scale_frac_bits=26)
    out = Tensor.zeros((4,), "SA_8", scale=20000, scale_frac_bits=10)
    with pytest.raises(MliError) as e:
        mli_krn_fully_connected_sa8_sa8_sa32(x, w, b, FullyConnectedCfg(), out)
    assert e.value.status is Status.SHAPE_MISMATCH
    assert "mli_krn_fully_connected_fx8w16d" in UNSUPPORTED
