"""Facade behaviour of the ReLU family, permute and argmax: checks, struct updates, strided memory, ops."""

from __future__ import annotations

import numpy as np
import pytest

from pymli import MliError, Status, Tensor, capi, ops
from pymli.capi.types import ArgmaxCfg, PermuteCfg, PreluCfg, ReluCfg, ReluType
from pymli.kernels import diverse as KD


def _strided(vals: np.ndarray, el: str, pad: int = 2, fill: int = 77, **q) -> Tensor:
    """A 2-D tensor whose rows are ``pad`` elements apart beyond their length (junk in the gaps)."""
    h, w = vals.shape
    dt = np.dtype(np.int8 if el in ("FX_8", "SA_8") else np.int16 if el == "FX_16" else np.int32)
    buf = np.full(h * (w + pad), fill, dt)
    t = Tensor.from_numpy(vals.astype(dt), el, **q)
    t.data, t.capacity, t.mem_stride = buf, buf.nbytes, [w + pad, 1]
    t.view()[...] = vals
    return t


def test_relu_sa8_strided_out_and_params() -> None:
    x = Tensor.from_numpy(np.array([[-100, -10, 0], [5, 50, 127]], np.int8), "SA_8", zero_point=-10, scale=19500,
                          scale_frac_bits=20)
    out = _strided(np.zeros((2, 3), np.int8), "SA_8", zero_point=3, scale=7, scale_frac_bits=1)
    assert capi.mli_krn_relu_sa8(x, ReluCfg(ReluType.RELU_1), out) is Status.OK
    assert out.numpy().tolist() == [[-63, -10, 0], [5, 43, 43]]
    assert out.data[3:5].tolist() == [77, 77]  # gaps untouched
    assert (out.zero_point, out.scale, out.scale_frac_bits, out.dim) == (-10, 19500, 20, -1)


def test_relu_failure_writes_nothing() -> None:
    x = Tensor.from_numpy(np.arange(6, dtype=np.int16).reshape(2, 3), "FX_16", frac_bits=3)
    out = Tensor.from_numpy(np.full((3, 2), 9, np.int16), "FX_16", frac_bits=5)
    with pytest.raises(MliError) as e:
        capi.mli_krn_relu_fx16(x, ReluCfg(ReluType.GEN), out)
    assert e.value.status is Status.SHAPE_MISMATCH
    assert np.all(out.data == 9) and out.frac_bits == 5
    with pytest.raises(MliError) as e:
        capi.mli_krn_relu_fx8(x, ReluCfg(ReluType.GEN), Tensor.zeros((2, 3), "FX_16"))
    assert e.value.status is Status.TYPE_MISMATCH
    with pytest.raises(MliError) as e:
        capi.mli_krn_relu_fx16(x, None, Tensor.zeros((2, 3), "FX_16"))
    assert e.value.status is Status.BAD_FUNC_CFG


def test_leaky_relu_checks() -> None:
    x = Tensor.from_numpy(np.array([-8, 8], np.int8), "FX_8", frac_bits=2)
    slope = Tensor.from_numpy(np.array([64, 64], np.int8), "FX_8", frac_bits=7)
    with pytest.raises(MliError) as e:  # two elements: not a scalar
        capi.mli_krn_leaky_relu_fx8(x, slope, Tensor.zeros((2,), "FX_8", frac_bits=2))
    assert e.value.status is Status.SHAPE_MISMATCH
    one = Tensor.from_numpy(np.array(64, np.int8), "FX_8", frac_bits=7)
    with pytest.raises(MliError) as e:
        capi.mli_krn_leaky_relu_fx8(x, one, Tensor.zeros((2,), "FX_8", frac_bits=3))
    assert e.value.status is Status.SPEC_PARAM_MISMATCH
    out = Tensor.zeros((2,), "FX_8", frac_bits=2)
    capi.mli_krn_leaky_relu_fx8(x, one, out)
    assert out.numpy().tolist() == [-4, 8]


def test_prelu_checks_slope_shape_and_axis() -> None:
    x = Tensor.from_numpy(np.zeros((2, 3), np.int16), "FX_16", frac_bits=2)
    slopes = Tensor.from_numpy(np.ones((1, 2), np.int16), "FX_16", frac_bits=2)
    out = Tensor.zeros((2, 3), "FX_16", frac_bits=2)
    with pytest.raises(MliError) as e:
        capi.mli_krn_prelu_fx16(x, slopes, PreluCfg(1), out)
    assert e.value.status is Status.INCOMPATEBLE_TENSORS
    with pytest.raises(MliError) as e:
        capi.mli_krn_prelu_fx16(x, slopes, PreluCfg(2), out)
    assert e.value.status is Status.BAD_FUNC_CFG


def test_prelu_sa8_matches_per_slice_leaky() -> None:
    rng = np.random.default_rng(3)
    vals = rng.integers(-128, 128, (4, 3)).astype(np.int8)
    q = dict(zero_point=5, scale=20000, scale_frac_bits=20)
    x = Tensor.from_numpy(vals, "SA_8", **q)
    sl = Tensor.from_numpy(np.array([[40, -20, 100]], np.int8), "SA_8", zero_point=0, scale=16384, scale_frac_bits=21)
    y = ops.prelu(x, sl, 1, zero_point=-3, scale=25000, scale_frac_bits=20)
    for j in range(3):
        col = Tensor.from_numpy(vals[:, j].copy(), "SA_8", **q)
        s = Tensor.from_numpy(np.array(sl.data[j]), "SA_8", zero_point=0, scale=16384, scale_frac_bits=21)
        want = ops.leaky_relu(col, s, zero_point=-3, scale=25000, scale_frac_bits=20)
        assert np.array_equal(y.numpy()[:, j], want.numpy())
    # a 1-D slope vector is accepted by the Pythonic API
    sl1 = Tensor.from_numpy(np.array([40, -20, 100], np.int8), "SA_8", zero_point=0, scale=16384, scale_frac_bits=21)
    assert np.array_equal(ops.prelu(x, sl1, 1, zero_point=-3, scale=25000, scale_frac_bits=20).numpy(), y.numpy())


def test_permute_strided_fx_and_frac_bits() -> None:
    vals = np.arange(12, dtype=np.int16).reshape(3, 4)
    x = _strided(vals, "FX_16", frac_bits=6)
    out = Tensor.zeros((4, 3), "FX_16", frac_bits=1)
    capi.mli_krn_permute_fx16(x, PermuteCfg([1, 0, 2, 3]), out)
    assert np.array_equal(out.numpy(), vals.T) and out.frac_bits == 6
    with pytest.raises(MliError) as e:
        capi.mli_krn_permute_fx16(x, PermuteCfg([1, 1, 2, 3]), Tensor.zeros((4, 3), "FX_16"))
    assert e.value.status is Status.BAD_FUNC_CFG
    with pytest.raises(MliError) as e:
        capi.mli_krn_permute_fx16(x, PermuteCfg([0, 1, 2, 3]), Tensor.zeros((4, 3), "FX_16"))
    assert e.value.status is Status.SHAPE_MISMATCH
    with pytest.raises(MliError) as e:  # in place: buffers overlap
        capi.mli_krn_permute_fx16(x, PermuteCfg([0, 1, 2, 3]), x)
    assert e.value.status is Status.INCOMPATEBLE_TENSORS


def test_permute_sa8_per_axis_params() -> None:
    vals = np.arange(24, dtype=np.int8).reshape(2, 3, 4)
    q = dict(zero_point=np.array([1, 2, 3]), scale=np.array([10, 20, 30]), scale_frac_bits=np.array([4, 5, 6]), dim=1)
    x = Tensor.from_numpy(vals, "SA_8", **q)
    # out with its own arrays: values copied in, dim follows the permutation
    out = Tensor.from_numpy(np.zeros((4, 2, 3), np.int8), "SA_8", zero_point=[0, 0, 0], scale=[1, 1, 1],
                            scale_frac_bits=[0, 0, 0], dim=0)
    own = out.scale
    capi.mli_krn_permute_sa8(x, PermuteCfg([2, 0, 1, 3]), out)
    assert np.array_equal(out.numpy(), vals.transpose(2, 0, 1))
    assert out.dim == 2 and out.scale is own and out.scale.tolist() == [10, 20, 30]
    # out with NULL arrays: it takes the input's
    out2 = Tensor.zeros((4, 2, 3), "SA_8")
    out2.zero_point = out2.scale = out2.scale_frac_bits = None
    capi.mli_krn_permute_sa8(x, PermuteCfg([2, 0, 1, 3]), out2)
    assert out2.dim == 2 and out2.scale is x.scale
    # mixed: some arrays shared with the input, some not
    out3 = Tensor.from_numpy(np.zeros((4, 2, 3), np.int8), "SA_8", zero_point=[0, 0, 0], scale=[1, 1, 1],
                             scale_frac_bits=[0, 0, 0], dim=0)
    out3.zero_point = x.zero_point
    with pytest.raises(MliError) as e:
        capi.mli_krn_permute_sa8(x, PermuteCfg([2, 0, 1, 3]), out3)
    assert e.value.status is Status.SPEC_PARAM_MISMATCH
    p = ops.permute(x, [2, 0, 1])
    assert p.dim == 2 and p.zero_point.tolist() == [1, 2, 3] and p.zero_point is not x.zero_point


def test_argmax_strided_offsets_and_out_params() -> None:
    vals = np.array([[1, 9, 3], [9, 2, 8]], np.int16)
    x = _strided(vals, "FX_16", pad=3, fill=32767, frac_bits=0)
    out = Tensor.from_numpy(np.full((1, 3), -1, np.int32), "SA_32", zero_point=4, scale=9, scale_frac_bits=2)
    capi.mli_krn_argmax_fx16(x, ArgmaxCfg(-1, 3), out)
    # offsets in memory (row stride 6); the two 9s in the order MLI's heap sort leaves them
    assert out.numpy().tolist() == [[1, 6, 8]]
    assert out.numpy().tolist() == KD.argmax_reference(vals, -1, 3, [6, 1]).tolist()
    assert (out.zero_point, out.scale, out.scale_frac_bits, out.dim) == (0, 1, 0, -1)
    with pytest.raises(MliError) as e:
        capi.mli_krn_argmax_fx16(x, ArgmaxCfg(-1, 7), Tensor.zeros((1, 7), "SA_32"))
    assert e.value.status is Status.BAD_FUNC_CFG
    with pytest.raises(MliError) as e:
        capi.mli_krn_argmax_fx16(x, ArgmaxCfg(1, 2), Tensor.zeros((2, 2), "SA_32"))
    assert e.value.status is Status.SHAPE_MISMATCH
    with pytest.raises(MliError) as e:
        capi.mli_krn_argmax_sa8(x, ArgmaxCfg(1, 2), Tensor.zeros((3, 2), "SA_32"))
    assert e.value.status is Status.TYPE_MISMATCH


def test_ops_argmax_rows() -> None:
    x = Tensor.from_numpy(np.array([[0, 5, 5], [7, 1, 7]], np.int8), "SA_8", zero_point=0, scale=1, scale_frac_bits=0)
    assert ops.argmax(x, axis=0, topk=1).numpy().tolist() == [[2], [5]]
    assert ops.argmax(x, axis=-1, topk=2).numpy().tolist() == [[3, 5]]  # traced by hand through the heap


def test_ops_relu_kinds() -> None:
    x = Tensor.from_numpy(np.array([-100, -3, 0, 5, 120], np.int8), "FX_8", frac_bits=4)
    assert ops.relu(x, "relu6").numpy().tolist() == [0, 0, 0, 5, 96]
    assert ops.relu(x, "relu1").numpy().tolist() == [-16, -3, 0, 5, 16]
    assert ops.relu(x).numpy().tolist() == [0, 0, 0, 5, 120]
    assert ops.relu(x, "none").numpy().tolist() == x.numpy().tolist()
    with pytest.raises(ValueError):
        ops.relu(x, "relu7")
