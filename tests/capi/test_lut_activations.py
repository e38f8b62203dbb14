"""The LUT facade: checks and their statuses, output struct updates, strided outputs, create_lut."""

from __future__ import annotations

import numpy as np
import pytest

from pymli import capi
from pymli.arith import lut as L
from pymli.capi.types import L2NormalizeCfg, SoftmaxCfg
from pymli.errors import MliError, Status
from pymli.formats import ElType
from pymli.tensor import Lut, Tensor

KERNELS = ["mli_krn_sigm_fx8", "mli_krn_sigm_fx16", "mli_krn_sigm_sa8", "mli_krn_tanh_fx8", "mli_krn_tanh_fx16",
           "mli_krn_tanh_sa8", "mli_krn_softmax_fx8", "mli_krn_softmax_fx16", "mli_krn_softmax_sa8",
           "mli_krn_l2_normalize_fx16", "mli_krn_l2_normalize_sa8"]
_TYPE = {"fx8": ElType.FX_8, "fx16": ElType.FX_16, "sa8": ElType.SA_8}


def _kind(name: str) -> str:
    return name.split("_")[2] if "l2" not in name else "l2_normalize"


def _call(name: str, inp: Tensor, out: Tensor, axis: int = -1, lut: Lut | None = None):
    fn = capi.FUNCTIONS[name]
    lut = lut or L.create_lut(_kind(name))
    if "softmax" in name:
        return fn(inp, lut, SoftmaxCfg(axis), out)
    if "l2_normalize" in name:
        return fn(inp, None, lut, L2NormalizeCfg(axis), out)
    return fn(inp, lut, out)


def _tensor(el: ElType, shape=(2, 3), **kw) -> Tensor:
    rng = np.random.default_rng(0)
    info = np.iinfo(el.dtype)
    vals = rng.integers(info.min, info.max + 1, shape)
    if el is ElType.SA_8:
        kw = {"zero_point": 3, "scale": 20000, "scale_frac_bits": 20, **kw}
    else:
        kw = {"frac_bits": 6, **kw}
    return Tensor.from_numpy(vals, el, **kw)


@pytest.mark.parametrize("name", KERNELS)
def test_all_registered(name: str) -> None:
    assert name in capi.FUNCTIONS


@pytest.mark.parametrize("name", KERNELS)
def test_type_mismatch(name: str) -> None:
    el = _TYPE[name.rsplit("_", 1)[1]]
    other = ElType.FX_16 if el is not ElType.FX_16 else ElType.FX_8
    inp, out = _tensor(other), _tensor(other)
    out_before = out.data.copy()
    with pytest.raises(MliError) as e:
        _call(name, inp, out)
    assert e.value.status is Status.TYPE_MISMATCH
    assert np.array_equal(out.data, out_before)
    with pytest.raises(MliError) as e:
        _call(name, _tensor(el), _tensor(other))
    assert e.value.status is Status.TYPE_MISMATCH


@pytest.mark.parametrize("name", KERNELS)
def test_shape_and_memory_checks(name: str) -> None:
    el = _TYPE[name.rsplit("_", 1)[1]]
    with pytest.raises(MliError) as e:
        _call(name, _tensor(el, (2, 3)), _tensor(el, (3, 2)))
    assert e.value.status is Status.SHAPE_MISMATCH
    out = _tensor(el)
    out.capacity = 2
    with pytest.raises(MliError) as e:
        _call(name, _tensor(el), out)
    assert e.value.status is Status.NOT_ENGH_MEM
    inp = _tensor(el, (2, 6))
    inp.shape, inp.mem_stride = [2, 3], [6, 2]
    with pytest.raises(MliError) as e:
        _call(name, inp, _tensor(el))
    assert e.value.status is Status.INCOMPATEBLE_TENSORS


@pytest.mark.parametrize("name", [n for n in KERNELS if "softmax" in n or "l2" in n])
def test_axis_check(name: str) -> None:
    el = _TYPE[name.rsplit("_", 1)[1]]
    with pytest.raises(MliError) as e:
        _call(name, _tensor(el), _tensor(el), axis=2)
    assert e.value.status is Status.BAD_FUNC_CFG
    fn = capi.FUNCTIONS[name]
    args = (_tensor(el), L.create_lut(_kind(name)), None, _tensor(el))
    with pytest.raises(MliError) as e:
        fn(*args) if "softmax" in name else fn(args[0], None, args[1], None, args[3])
    assert e.value.status is Status.BAD_FUNC_CFG


@pytest.mark.parametrize("name", [n for n in KERNELS if n.endswith("sa8")])
def test_sa8_input_quant_checks(name: str) -> None:
    with pytest.raises(MliError) as e:
        _call(name, _tensor(ElType.SA_8, zero_point=200), _tensor(ElType.SA_8))
    assert e.value.status is Status.INCOMPATEBLE_TENSORS
    with pytest.raises(MliError) as e:
        _call(name, _tensor(ElType.SA_8, scale=0), _tensor(ElType.SA_8))
    assert e.value.status is Status.BAD_TENSOR
    per_axis = _tensor(ElType.SA_8, zero_point=[0, 0, 0], scale=[1, 1, 1], scale_frac_bits=[0, 0, 0], dim=1)
    with pytest.raises(MliError) as e:
        _call(name, per_axis, _tensor(ElType.SA_8))
    assert e.value.status is Status.INCOMPATEBLE_TENSORS


@pytest.mark.parametrize("name", KERNELS)
def test_output_quantisation_set(name: str) -> None:
    el = _TYPE[name.rsplit("_", 1)[1]]
    out = _tensor(el, frac_bits=2) if el.is_fx else _tensor(el, zero_point=9, scale=5, scale_frac_bits=3)
    assert _call(name, _tensor(el), out) is Status.OK
    if el.is_fx:
        assert out.frac_bits == el.bits - 1
    else:
        want = {"sigm": (-128, 8), "tanh": (0, 7), "softmax": (-128, 8), "l2_normalize": (0, 7)}[_kind(name)]
        assert (out.zero_point, out.scale, out.scale_frac_bits, out.dim) == (want[0], 1, want[1], -1)


@pytest.mark.parametrize("name", KERNELS)
def test_strided_output_keeps_gaps(name: str) -> None:
    el = _TYPE[name.rsplit("_", 1)[1]]
    inp = _tensor(el, (3, 4))
    buf = np.full(3 * 6, 55, dtype=el.dtype)
    out = Tensor(data=buf, capacity=buf.nbytes, shape=[3, 4], mem_stride=[6, 1], rank=2, el_type=el)
    dense = _tensor(el, (3, 4))
    _call(name, inp, out, axis=1 if ("softmax" in name or "l2" in name) else -1)
    _call(name, inp, dense, axis=1 if ("softmax" in name or "l2" in name) else -1)
    assert np.all(buf.reshape(3, 6)[:, 4:] == 55)
    assert np.array_equal(buf.reshape(3, 6)[:, :4], dense.numpy())


@pytest.mark.parametrize("name", KERNELS)
def test_in_place(name: str) -> None:
    el = _TYPE[name.rsplit("_", 1)[1]]
    t = _tensor(el, (4, 5))
    ref = _tensor(el, (4, 5))
    _call(name, t.copy(), ref)
    _call(name, t, t)
    assert np.array_equal(t.numpy(), ref.numpy())


@pytest.mark.parametrize("kind", L.LUT_KINDS)
def test_create_lut_and_size(kind: str) -> None:
    size = capi.FUNCTIONS[f"mli_krn_{kind}_get_lut_size"]()
    assert size == L.LUT_SPECS[kind].length * 2
    lut = Lut(data=np.zeros(size // 2, np.int16), capacity=size)
    assert capi.FUNCTIONS[f"mli_krn_{kind}_create_lut"](lut) is Status.OK
    assert np.array_equal(lut.data, L.lut_table(kind)) and lut.type is ElType.FX_16
    small = Lut(data=np.zeros(size // 2, np.int16), capacity=size - 2)
    with pytest.raises(MliError) as e:
        capi.FUNCTIONS[f"mli_krn_{kind}_create_lut"](small)
    assert e.value.status is Status.NOT_ENGH_MEM
    assert not small.data.any()
