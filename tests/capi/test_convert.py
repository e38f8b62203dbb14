"""mli_hlp_convert_tensor(_safx), quantize/dequantize: round trips, saturation, ties, per-axis, statuses."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pymli import EM, VPX, ElType, MliError, Status, Tensor, use_platform
from pymli.capi.helpers import mli_hlp_convert_tensor, mli_hlp_convert_tensor_safx
from pymli.quant import choose_fx_frac_bits, choose_sa_params, dequantize, quantize

floats = st.floats(-1000, 1000, width=32)


def _arrays(max_side: int = 4) -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=4, max_side=max_side), elements=floats)


@pytest.mark.parametrize("el", [ElType.FX_8, ElType.FX_16])
@given(x=_arrays())
def test_fx_round_trip_within_half_lsb(el: ElType, x: np.ndarray) -> None:
    t = quantize(x, el)
    lsb = 2.0 ** -t.frac_bits
    err = np.abs(t.to_float().astype(np.float64) - x.astype(np.float64))
    assert np.all(err <= lsb / 2 * (1 + 1e-6)), (t.frac_bits, err.max(), lsb)
    # the chosen frac_bits is the largest without saturation (127 is the int8 field's largest value)
    if t.frac_bits == 127:
        return
    q1 = quantize(x, el, frac_bits=t.frac_bits + 1).numpy()
    info = np.iinfo(el.dtype)
    if np.any(x != 0):
        assert np.any((q1 == info.max) | (q1 == info.min))


@given(x=_arrays(), frac=st.integers(-4, 20))
def test_fx16_via_facade_equals_quantize(x: np.ndarray, frac: int) -> None:
    src = Tensor.from_numpy(x, ElType.FP_32)
    dst = Tensor.zeros(x.shape, ElType.FX_16, frac_bits=frac)
    assert mli_hlp_convert_tensor(src, dst) is Status.OK
    assert np.array_equal(dst.numpy(), quantize(x, ElType.FX_16, frac_bits=frac).numpy())
    back = Tensor.zeros(x.shape, ElType.FP_32)
    mli_hlp_convert_tensor(dst, back)
    assert np.array_equal(back.numpy(), dequantize(dst))


def test_fx_saturation_and_ties() -> None:
    x = np.array([1000.0, -1000.0, 0.5 / 128, 1.5 / 128, -0.5 / 128, -2.5 / 128, 0.996, -1.0], np.float32)
    q = quantize(x, ElType.FX_8, frac_bits=7).numpy()
    # float -> fx rounds half away from zero in both rounding modes (mli_math_float_scale)
    assert q.tolist() == [127, -128, 1, 2, -1, -3, 127, -128]
    with use_platform(EM):
        assert quantize(x, ElType.FX_8, frac_bits=7).numpy().tolist() == q.tolist()


@pytest.mark.parametrize("plat,want", [(VPX, [2, 3, -1, -2, 1, 0]), (EM, [2, 2, -2, -2, 0, 0])])
def test_requantisation_ties_follow_the_platform(plat, want) -> None:
    # FX_16 Q8 -> FX_8 Q0: 1.5, 2.5, -1.5, -2.5, 0.5, -0.5
    src = Tensor.from_numpy(np.array([384, 640, -384, -640, 128, -128], np.int16), ElType.FX_16, frac_bits=8)
    dst = Tensor.zeros((6,), ElType.FX_8, frac_bits=0)
    with use_platform(plat):
        mli_hlp_convert_tensor_safx(src, dst)
    assert dst.numpy().tolist() == want


def test_requantisation_saturates() -> None:
    src = Tensor.from_numpy(np.array([32767, -32768, 300, -300], np.int16), ElType.FX_16, frac_bits=0)
    dst = Tensor.zeros((4,), ElType.FX_8, frac_bits=0)
    mli_hlp_convert_tensor(src, dst)
    assert dst.numpy().tolist() == [127, -128, 127, -128]
    sa = Tensor.zeros((4,), ElType.SA_8, scale=16384, scale_frac_bits=14, zero_point=100)
    mli_hlp_convert_tensor(src, sa)
    assert sa.numpy().tolist() == [127, -128, 127, -128]


@given(x=_arrays(), dim=st.integers(-1, 3))
def test_sa8_round_trip(x: np.ndarray, dim: int) -> None:
    dim = dim if dim < x.ndim else -1
    t = quantize(x, ElType.SA_8, dim=dim)
    t.validate()
    back = t.to_float().astype(np.float64)
    sc = t.quant_vector("scale").astype(np.float64) * 2.0 ** -t.quant_vector("scale_frac_bits").astype(np.float64)
    if dim >= 0:
        shape = [1] * x.ndim
        shape[dim] = -1
        sc = sc.reshape(shape)
    # within half a step plus the error of the 16-bit scale (the data are inside the chosen range)
    assert np.all(np.abs(back - x) <= sc * 0.5 + np.abs(x) * 2.0**-13 + 1e-30)


@given(x=hnp.arrays(np.float32, st.tuples(st.integers(1, 4), st.integers(1, 5)), elements=floats))
def test_per_axis_equals_per_tensor_per_slice(x: np.ndarray) -> None:
    t = quantize(x, ElType.SA_8, dim=1)
    for j in range(x.shape[1]):
        tj = quantize(x[:, j], ElType.SA_8, zero_point=int(t.zero_point[j]), scale=int(t.scale[j]),
                      scale_frac_bits=int(t.scale_frac_bits[j]))
        assert np.array_equal(t.numpy()[:, j], tj.numpy())
        assert np.array_equal(t.to_float()[:, j], tj.to_float())


@given(x=hnp.arrays(np.float32, st.tuples(st.integers(1, 3), st.integers(1, 4)), elements=floats),
       to=st.sampled_from([ElType.SA_8, ElType.FX_16, ElType.SA_32]))
def test_sa_to_sa_requantisation_is_close_to_float(x: np.ndarray, to: ElType) -> None:
    src = quantize(x, ElType.SA_8, dim=1)
    ref = src.to_float().astype(np.float64)
    dst = quantize(ref.astype(np.float32), to)  # parameters chosen from the dequantised data
    out = Tensor.zeros(x.shape, to, **({"frac_bits": dst.frac_bits} if to.is_fx else dict(
        zero_point=dst.zero_point, scale=dst.scale, scale_frac_bits=dst.scale_frac_bits)))
    mli_hlp_convert_tensor(src, out)
    q = out.numpy().astype(np.int64)
    step = 2.0 ** -dst.frac_bits if to.is_fx else dst.scale * 2.0 ** -dst.scale_frac_bits
    got = (q if to.is_fx else q - dst.zero_point) * step
    assert np.all(np.abs(got - ref) <= step * 1.01 + np.abs(ref) * 2.0**-13)


def test_sa32_bias_with_product_scale() -> None:
    x = np.array([0.1, -2.0, 3.5], np.float32)
    # bias scale = in_scale * w_scale: (20000 * 2**-20) * (30000 * 2**-22), kept in 16 bits
    scale, sfb = 20000 * 30000 >> 15, 20 + 22 - 15
    t = quantize(x, ElType.SA_32, scale=scale, scale_frac_bits=sfb)
    assert t.zero_point == 0 and t.el_type is ElType.SA_32
    assert np.all(np.abs(t.to_float() - x) <= scale * 2.0**-sfb / 2 * 1.0001)


def test_choose_params() -> None:
    assert choose_fx_frac_bits([0.0, 0.0], ElType.FX_8) == 7
    assert choose_fx_frac_bits(None, ElType.FX_16, range=(-4.0, 3.9)) == 13
    assert choose_fx_frac_bits([1.0], ElType.FX_8) == 6  # 1.0 needs Q6 in 8 bits (Q7 tops at 0.992)
    zp, sc, sfb = choose_sa_params([-1.0, 3.0], ElType.SA_8)
    real = sc[0] * 2.0 ** -sfb[0]
    assert abs(real - 4.0 / 254) < 4.0 / 254 * 2**-14
    assert zp[0] == round(-1.0 / real)
    zp, sc, sfb = choose_sa_params(np.array([[1.0, -8.0], [2.0, 0.0]]), ElType.SA_32, dim=1)
    assert zp.tolist() == [0, 0] and len(sc) == 2


def test_fp32_copy_and_in_place() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
    a, b = Tensor.from_numpy(x, ElType.FP_32), Tensor.zeros((2, 3), ElType.FP_32)
    mli_hlp_convert_tensor(a, b)
    assert np.array_equal(b.numpy(), x)
    # in place, same container: FX_16 Q4 -> Q2 on the same buffer
    t = Tensor.from_numpy(np.array([16, 24, -40], np.int16), ElType.FX_16, frac_bits=4)
    u = dataclasses.replace(t, frac_bits=2)
    mli_hlp_convert_tensor(t, u)
    assert t.data.tolist() == [4, 6, -10]


def test_strided_output_gaps_untouched() -> None:
    buf = np.full(20, 77, np.int8)
    out = Tensor(data=buf, capacity=20, shape=[2, 3], mem_stride=[10, 1], rank=2, el_type=ElType.FX_8, frac_bits=0)
    src = Tensor.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3), ElType.FP_32)
    mli_hlp_convert_tensor(src, out)
    assert buf.tolist() == [0, 1, 2] + [77] * 7 + [3, 4, 5] + [77] * 7


def _raises(fn, *args) -> Status:
    with pytest.raises(MliError) as e:
        fn(*args)
    return e.value.status


def test_statuses() -> None:
    a = Tensor.from_numpy(np.zeros((2, 3), np.int16), ElType.FX_16)
    assert _raises(mli_hlp_convert_tensor, a, Tensor.zeros((3, 2), ElType.FX_8)) is Status.SHAPE_MISMATCH
    strided = Tensor(data=np.zeros(12, np.int8), capacity=12, shape=[2, 3], mem_stride=[6, 2], rank=2,
                     el_type=ElType.FX_8)
    assert _raises(mli_hlp_convert_tensor, a, strided) is Status.INCOMPATEBLE_TENSORS
    p0 = Tensor.from_numpy(np.zeros((2, 3), np.int8), ElType.SA_8, dim=0, zero_point=[0, 0], scale=[1, 1],
                           scale_frac_bits=[0, 0])
    p1 = Tensor.from_numpy(np.zeros((2, 3), np.int8), ElType.SA_8, dim=1, zero_point=[0] * 3, scale=[1] * 3,
                           scale_frac_bits=[0] * 3)
    assert _raises(mli_hlp_convert_tensor, p0, p1) is Status.SIZE_MISMATCH
    # in place with different containers
    b = Tensor(data=a.data.view(np.int8), capacity=12, shape=[2, 3], mem_stride=[3, 1], rank=2, el_type=ElType.FX_8)
    b2 = dataclasses.replace(b, el_type=ElType.FX_16)
    assert _raises(mli_hlp_convert_tensor, a, dataclasses.replace(b2, mem_stride=[4, 1], capacity=16)) \
        is Status.INCOMPATEBLE_TENSORS
    f = Tensor.zeros((2, 3), ElType.FP_32)
    assert _raises(mli_hlp_convert_tensor_safx, a, f) is Status.TYPE_MISMATCH
    assert mli_hlp_convert_tensor(a, f) is Status.OK
