"""MLI 1.x concat / padding2d, from the examples and conditions of the MLI 1.1 documentation."""

from __future__ import annotations

import numpy as np
import pytest

from pymli import MliError, Status, Tensor
from pymli import capi
from pymli.capi.types import ConcatCfg, Padding2dCfg


def _out(nbytes: int, dtype=np.int8) -> Tensor:
    data = np.full(nbytes // np.dtype(dtype).itemsize, 55, dtype=dtype)
    return Tensor(data=data, capacity=data.nbytes, shape=[0, 0, 0], mem_stride=[0, 0, 0], rank=3)


def _fx(arr, el="FX_8", fb=4) -> Tensor:
    return Tensor.from_numpy(np.asarray(arr), el, frac_bits=fb)


# ------------------------------------------------------------------ concat
def test_doc_example_concat_axis1():
    # [2, 4, 8] with [2, 6, 8] along axis 1 gives [2, 10, 8]
    a = _fx(np.arange(64).reshape(2, 4, 8) - 32)
    b = _fx(np.arange(96).reshape(2, 6, 8) % 100 - 50)
    out = _out(2 * 10 * 8)
    assert capi.mli_krn_concat_fx8([a, b], ConcatCfg(tensors_num=2, axis=1), out) is Status.OK
    assert out.shape == [2, 10, 8] and out.rank == 3 and out.frac_bits == 4 and out.el_type == a.el_type
    assert np.array_equal(out.numpy(), np.concatenate([a.numpy(), b.numpy()], axis=1))


@pytest.mark.parametrize("axis", [0, 2])
def test_doc_example_concat_other_axes_mismatch(axis):
    a = _fx(np.zeros((2, 4, 8)))
    b = _fx(np.zeros((2, 6, 8)))
    with pytest.raises(MliError) as e:
        capi.mli_krn_concat_fx8([a, b], ConcatCfg(tensors_num=2, axis=axis), _out(1000))
    assert e.value.status is Status.SHAPE_MISMATCH


def test_concat_hand_computed_fx16_axis0():
    a = _fx([[1, 2], [3, 4]], "FX_16", 10)
    b = _fx([[5, 6]], "FX_16", 10)
    out = _out(12, np.int16)
    capi.mli_krn_concat_fx16([a, b], ConcatCfg(tensors_num=2, axis=0), out)
    assert out.numpy().tolist() == [[1, 2], [3, 4], [5, 6]]
    assert out.data.tolist() == [1, 2, 3, 4, 5, 6]


def test_concat_eight_inputs_and_no_more():
    ts = [_fx([[i]]) for i in range(9)]
    out = _out(16)
    capi.mli_krn_concat_fx8(ts, ConcatCfg(tensors_num=8, axis=1), out)
    assert out.numpy().tolist() == [list(range(8))]
    with pytest.raises(MliError) as e:
        capi.mli_krn_concat_fx8(ts, ConcatCfg(tensors_num=9, axis=1), _out(16))
    assert e.value.status is Status.BAD_FUNC_CFG


@pytest.mark.parametrize("make, status", [
    (lambda: ([_fx([1]), _fx([2], fb=3)], ConcatCfg(2, 0)), Status.INCOMPATEBLE_TENSORS),
    (lambda: ([_fx([1]), _fx([2], "FX_16")], ConcatCfg(2, 0)), Status.INCOMPATEBLE_TENSORS),
    (lambda: ([_fx([1]), _fx([[2]])], ConcatCfg(2, 0)), Status.INCOMPATEBLE_TENSORS),
    (lambda: ([_fx([1]), _fx([2])], ConcatCfg(2, 1)), Status.BAD_FUNC_CFG),
    (lambda: ([_fx([1]), _fx([2])], ConcatCfg(0, 0)), Status.BAD_FUNC_CFG),
    (lambda: ([_fx([1]), _fx([2])], None), Status.BAD_FUNC_CFG),
    (lambda: ([_fx(np.zeros(20)), _fx([2])], ConcatCfg(2, 0)), Status.NOT_ENGH_MEM),
    (lambda: ([_fx([1], "FX_16"), _fx([2], "FX_16")], ConcatCfg(2, 0)), Status.TYPE_MISMATCH),
])
def test_concat_error_cases(make, status):
    inputs, cfg = make()
    out = _out(16)
    before = out.data.copy()
    with pytest.raises(MliError) as e:
        capi.mli_krn_concat_fx8(inputs, cfg, out)
    assert e.value.status is status
    assert np.array_equal(out.data, before)


def test_concat_strided_input_is_refused():
    buf = np.arange(8, dtype=np.int8)
    strided = Tensor(data=buf, capacity=8, shape=[2, 2], mem_stride=[4, 1], rank=2, frac_bits=0,
                     el_type=_fx([0]).el_type)
    with pytest.raises(MliError) as e:
        capi.mli_krn_concat_fx8([_fx([[0, 0]], fb=0), strided], ConcatCfg(2, 0), _out(16))
    assert e.value.status is Status.INCOMPATEBLE_TENSORS


def test_concat_sa8_extension():
    q = dict(zero_point=-2, scale=300, scale_frac_bits=12)
    a = Tensor.from_numpy([[1, 2, 3]], "SA_8", **q)
    b = Tensor.from_numpy([[4, 5, 6], [7, 8, 9]], "SA_8", **q)
    out = _out(9)
    capi.mli_krn_concat_sa8([a, b], ConcatCfg(2, 0), out)
    assert out.numpy().tolist() == [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert (out.zero_point, out.scale, out.scale_frac_bits, out.dim) == (-2, 300, 12, -1)
    c = Tensor.from_numpy([[4, 5, 6]], "SA_8", zero_point=0, scale=300, scale_frac_bits=12)
    with pytest.raises(MliError) as e:
        capi.mli_krn_concat_sa8([a, c], ConcatCfg(2, 0), _out(9))
    assert e.value.status is Status.INCOMPATEBLE_TENSORS


# ------------------------------------------------------------------ padding2d
def test_doc_example_padding_chw():
    # [2, 4, 8] CHW, padding_top=2 and padding_right=1 gives [2, 6, 9]: two zero rows on top,
    # and the last value of each row zero.
    x = np.arange(1, 65).reshape(2, 4, 8)
    t = _fx(x, fb=2)
    out = _out(2 * 6 * 9)
    cfg = Padding2dCfg(padding_left=0, padding_right=1, padding_top=2, padding_bottom=0)
    assert capi.mli_krn_padding2d_chw_fx8(t, cfg, out) is Status.OK
    got = out.numpy()
    assert out.shape == [2, 6, 9] and out.frac_bits == 2
    assert (got[:, :2, :] == 0).all() and (got[:, :, 8] == 0).all()
    assert np.array_equal(got[:, 2:, :8], x)


def test_padding_hwc_hand_computed():
    t = _fx([[[1, 2], [3, 4]]], "FX_16", 7)  # H=1, W=2, C=2
    out = _out(2 * 1 * 4 * 2 * 2, np.int16)
    capi.mli_krn_padding2d_hwc_fx16(t, Padding2dCfg(padding_left=1, padding_right=1, padding_top=0, padding_bottom=1),
                                    out)
    assert out.shape == [2, 4, 2]
    assert out.numpy().tolist() == [[[0, 0], [1, 2], [3, 4], [0, 0]], [[0, 0]] * 4]


def test_padding_sa8_pads_with_zero_point():
    t = Tensor.from_numpy([[[5], [6]]], "SA_8", zero_point=-7, scale=1, scale_frac_bits=0)
    out = _out(8)
    capi.mli_krn_padding2d_hwc_sa8(t, Padding2dCfg(1, 1, 0, 0), out)
    assert out.numpy().reshape(-1).tolist() == [-7, 5, 6, -7]
    per_c = Tensor.from_numpy([[[5, 6]]], "SA_8", zero_point=[1, 2], scale=[1, 1], scale_frac_bits=[0, 0], dim=2)
    out2 = _out(8)
    capi.mli_krn_padding2d_hwc_sa8(per_c, Padding2dCfg(0, 1, 0, 0), out2)
    assert out2.numpy().tolist() == [[[5, 6], [1, 2]]]


@pytest.mark.parametrize("fn, make, status", [
    ("mli_krn_padding2d_chw_fx8", lambda: _fx(np.zeros((2, 2))), Status.SHAPE_MISMATCH),
    ("mli_krn_padding2d_chw_fx8", lambda: _fx(np.zeros((2, 4, 4))), Status.NOT_ENGH_MEM),
    ("mli_krn_padding2d_hwc_fx8", lambda: _fx(np.zeros((1, 1, 1)), "FX_16"), Status.TYPE_MISMATCH),
    ("mli_krn_padding2d_hwc_fx16", lambda: _fx(np.zeros((1, 1, 1))), Status.TYPE_MISMATCH),
    ("mli_krn_padding2d_hwc_fx8", lambda: None, Status.BAD_TENSOR),
])
def test_padding_error_cases(fn, make, status):
    out = _out(32)
    with pytest.raises(MliError) as e:
        getattr(capi, fn)(make(), Padding2dCfg(1, 1, 1, 1), out)
    assert e.value.status is status
    assert (out.data == 55).all()


def test_padding_null_cfg():
    with pytest.raises(MliError) as e:
        capi.mli_krn_padding2d_hwc_fx8(_fx(np.zeros((1, 1, 1))), None, _out(16))
    assert e.value.status is Status.BAD_FUNC_CFG
