"""pymli.v1: the tensor struct, conversions, presets, tables and the error contract."""

from __future__ import annotations

import json

import numpy as np
import pytest

import pymli
from pymli.v1 import (MLI1_CONV, MLI1_CONV_CHK, MLI1_UP, MLI1_UP_CHK, Conv2dCfg, ElType, MliError, PoolCfg, ReluCfg,
                      RnnCellCfg, Status, Tensor, capi)
from pymli.v1.cfg import cfg_from_json
from pymli.v1.tables import EXPNEG_LUT, SIGMOID_LUT, TANH_LUT, avepool_mul_shift

from ..conftest import shared_dir


def test_enum_values_are_the_1x_ones() -> None:
    assert (ElType.FX_8, ElType.FX_16) == (0, 1)
    assert [s.value for s in Status] == list(range(13))
    assert Status.TYPE_MISMATCH.c_name == "MLI_STATUS_TYPE_MISMATCH"
    e = MliError(Status.NOT_ENGH_MEM, "x")
    assert isinstance(e, pymli.MliError) and e.status is Status.NOT_ENGH_MEM


def test_from_numpy_round_trip_and_capacity() -> None:
    x = np.arange(-6, 6, dtype=np.int16).reshape(3, 4)
    t = Tensor.from_numpy(x, ElType.FX_16, frac_bits=3, capacity=40)
    assert (t.rank, t.dims, t.capacity, t.el_type, t.frac_bits) == (2, (3, 4), 40, ElType.FX_16, 3)
    assert t.data.size == 20 and np.array_equal(t.to_numpy(), x)
    assert np.array_equal(t.to_float(), x / 8.0)
    with pytest.raises(MliError):
        Tensor.from_numpy(np.array([200]), ElType.FX_8)
    with pytest.raises(MliError):
        Tensor.from_numpy(np.zeros((1, 1, 1, 1, 1), np.int8), ElType.FX_8)
    with pytest.raises(MliError):
        Tensor.from_numpy(x, ElType.FX_16, capacity=8)


def test_frac_bits_is_uint8() -> None:
    assert Tensor.from_numpy(np.array([1], np.int16), ElType.FX_16, frac_bits=255).frac_bits == 255
    for bad in (-1, 256):
        with pytest.raises(MliError):
            Tensor.from_numpy(np.array([1], np.int16), ElType.FX_16, frac_bits=bad)


def test_from_float_rounds_half_away_and_saturates() -> None:
    t = Tensor.from_float([0.25, -0.25, 0.124, 300.0, -300.0], ElType.FX_8, frac_bits=2)
    assert t.to_numpy().tolist() == [1, -1, 0, 127, -128]


def test_scalar_in_the_data_field() -> None:
    s = Tensor.scalar(-5, ElType.FX_8, frac_bits=1)
    assert s.rank == 0 and s.data == -5 and s.to_numpy() == -5


def test_to_v2_and_back() -> None:
    x = np.array([[1, -2, 3], [4, 5, -6]], np.int8)
    t = Tensor.from_numpy(x, ElType.FX_8, frac_bits=4)
    v2 = t.to_v2()
    assert v2.el_type == pymli.ElType.FX_8 and v2.frac_bits == 4 and np.array_equal(v2.numpy(), x)
    back = Tensor.from_v2(v2)
    assert back.el_type == ElType.FX_8 and back.frac_bits == 4 and np.array_equal(back.to_numpy(), x)
    sa = pymli.Tensor.from_numpy(x, "SA_8", zero_point=0, scale=1, scale_frac_bits=0)
    with pytest.raises(MliError) as e:
        Tensor.from_v2(sa)
    assert e.value.status == Status.NOT_SUPPORTED
    neg = pymli.Tensor.from_numpy(x, "FX_8", frac_bits=-2)
    with pytest.raises(MliError):
        Tensor.from_v2(neg)


def test_presets() -> None:
    assert MLI1_CONV.round_mode is pymli.RoundMode.CONVERGENT and MLI1_UP.round_mode is pymli.RoundMode.UP
    assert MLI1_CONV.debug_mode == MLI1_UP.debug_mode == "DBG_MODE_RELEASE"
    assert MLI1_CONV_CHK.debug_mode == MLI1_UP_CHK.debug_mode == "DBG_MODE_RET_CODES"


def test_tables_match_the_recorded_luts() -> None:
    p = shared_dir() / "golden_v1" / "_luts.npz"
    if not p.exists():
        pytest.skip(f"{p} is absent")
    with np.load(p) as z:
        meta = json.loads(str(z["meta"]))
        for lut in (SIGMOID_LUT, TANH_LUT, EXPNEG_LUT):
            assert np.array_equal(lut.data, z[lut.name])
            assert (lut.length, lut.frac_bits, lut.offset) == (meta[lut.name]["length"], meta[lut.name]["frac_bits"],
                                                                 meta[lut.name]["offset"])


def test_avepool_reciprocal_table() -> None:
    # the 1.0 table (mli_krn_reduce_sum2d_chw.h) for a few divisors, and calc_mul beyond 31
    assert avepool_mul_shift(3, 9) == (0x5555, 16)
    assert avepool_mul_shift(7, 9) == (0x4924, 17)
    assert avepool_mul_shift(16, 16) == (1, 4)
    assert avepool_mul_shift(31, 49) == (0x4210, 19)
    assert avepool_mul_shift(32, 49) == (16384, 19)
    for d in range(1, 200):
        mul, sh = avepool_mul_shift(d, max(d, 40))
        assert abs(mul / 2 ** sh - 1 / d) < 2 ** -14 / d * 4


def _conv_operands(h: int = 5):
    x = Tensor.from_numpy(np.ones((2, h, 5), np.int16), ElType.FX_16, frac_bits=8)
    w = Tensor.from_numpy(np.ones((3, 2, 3, 3), np.int16), ElType.FX_16, frac_bits=8)
    b = Tensor.from_numpy(np.zeros(3, np.int16), ElType.FX_16, frac_bits=8)
    return x, w, b


def test_checked_build_rejects_and_writes_nothing() -> None:
    x, w, b = _conv_operands()
    out = Tensor.empty(10, ElType.FX_16, frac_bits=8)  # needs 3*3*3 elements
    before = out.data.copy()
    with pymli.use_platform(MLI1_CONV_CHK):
        with pytest.raises(MliError) as e:
            capi.mli_krn_conv2d_chw_fx16(x, w, b, Conv2dCfg(), out)
    assert e.value.status == Status.NOT_ENGH_MEM
    assert np.array_equal(out.data, before) and out.rank == 0
    # the release build does no check, but pymli still refuses to write past the buffer
    with pymli.use_platform(MLI1_CONV):
        with pytest.raises(MliError):
            capi.mli_krn_conv2d_chw_fx16(x, w, b, Conv2dCfg(), out)
    assert np.array_equal(out.data, before)


def test_specialisation_constraint_and_memory_bug_refused() -> None:
    x, w, b = _conv_operands()
    out = Tensor.empty(100, ElType.FX_16, frac_bits=8)
    with pymli.use_platform(MLI1_CONV):
        with pytest.raises(MliError) as e:
            capi.mli_krn_conv2d_chw_fx16_k3x3_str1_krnpad(x, w, b, Conv2dCfg(), out)  # no padding given
        assert e.value.status == Status.SPEC_PARAM_MISMATCH
        assert capi.mli_krn_conv2d_chw_fx16_k3x3_str1_krnpad(
            x, w, b, Conv2dCfg(ReluCfg(), 1, 1, 1, 1, 1, 1), out) == Status.OK
        assert out.dims == (3, 5, 5)
        small = Tensor.from_numpy(np.ones((2, 2, 5), np.int16), ElType.FX_16, frac_bits=8)  # H 2 < kernel 3
        with pytest.raises(MliError):
            capi.mli_krn_conv2d_chw_fx16(small, w, b, Conv2dCfg(), out)
        with pytest.raises(MliError):
            capi.mli_krn_maxpool_chw_fx16(small, PoolCfg(3, 3), out)


def test_dispatcher_equals_every_matching_specialisation() -> None:
    rng = np.random.default_rng(1)
    x = Tensor.from_numpy(rng.integers(-2000, 2000, (1, 7, 6)), ElType.FX_16, frac_bits=10)
    w = Tensor.from_numpy(rng.integers(-2000, 2000, (2, 1, 3, 3)), ElType.FX_16, frac_bits=12)
    b = Tensor.from_numpy(rng.integers(-2000, 2000, (2,)), ElType.FX_16, frac_bits=12)
    cfg = Conv2dCfg(ReluCfg(), 1, 1, 1, 1, 1, 1)
    ref = Tensor.empty(200, ElType.FX_16, frac_bits=9)
    with pymli.use_platform(MLI1_CONV):
        capi.mli_krn_conv2d_chw_fx16(x, w, b, cfg, ref)
        n = 0
        for name in capi.SPECIALISATIONS:
            if not name.startswith("mli_krn_conv2d_chw_fx16_"):
                continue
            out = Tensor.empty(200, ElType.FX_16, frac_bits=9)
            try:
                getattr(capi, name)(x, w, b, cfg, out)
            except MliError as e:
                assert e.status == Status.SPEC_PARAM_MISMATCH
                continue
            n += 1
            assert np.array_equal(out.data, ref.data), name
    assert n >= 3  # generic, str1, ch1_str1, k3x3_str1_krnpad, k3x3_ch1_str1_krnpad ...


def test_cfg_from_json() -> None:
    c = cfg_from_json("mli_conv2d_cfg", {"relu": {"type": "MLI_RELU_6"}, "stride_width": 2, "stride_height": 1,
                                         "padding_left": 0, "padding_right": 1, "padding_top": 0, "padding_bottom": 0})
    assert c == Conv2dCfg(ReluCfg(3), 2, 1, 0, 1, 0, 0)
    ir = Tensor.empty(8)
    r = cfg_from_json("mli_rnn_cell_cfg", {"mode": "RNN_BATCH_TO_LAST", "act": "RNN_ACT_SIGM", "ir_tsr": {"tensor": "x"}}, ir)
    assert r == RnnCellCfg(2, 2, ir) and r.ir_tsr is ir
