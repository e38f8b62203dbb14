"""``pymli.tflite.load`` on models built here: mappings, input validation, platforms, the ARC weights
layout (recognised, ambiguous, forced), load-time refusals of both mappings, offloaded ADD."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pymli
from pymli import MliError
from pymli.tflite import (
    TfliteError,
    TfliteInputError,
    TfliteLayoutError,
    TfliteModel,
    TfliteUnsupported,
    TflmModel,
    load,
)
from pymli.tflite.builder import ModelWriter
from pymli.tflite.examples import cnn10
from pymli.tflm import handlers
from pymli.tflite.tgraph import read_graph

RNG = np.random.default_rng(7)


def _conv(adapted: bool, *, dilation: int = 1, cin: int = 3, cout: int = 4, typ: str = "INT8") -> bytes:
    """CONV_2D 3x3 SAME, per-channel weights, in TFLite's (OHWI, qdim 0) or the ARC layout (HWCN, qdim 3)."""
    w = RNG.integers(-127, 128, (cout, 3, 3, cin))
    ws = (RNG.uniform(0.002, 0.02, cout)).astype(np.float32)
    mw = ModelWriter()
    x = mw.tensor("x", [1, 6, 6, cin], typ, scale=0.05, zero_point=0 if typ == "INT16" else 3)
    if adapted:
        k = mw.tensor("k", [3, 3, cin, cout], data=w.transpose(1, 2, 3, 0), scale=ws, zero_point=[0] * cout, qdim=3)
    else:
        k = mw.tensor("k", [cout, 3, 3, cin], data=w, scale=ws, zero_point=[0] * cout, qdim=0)
    btype = "INT64" if typ == "INT16" else "INT32"
    b = mw.tensor("b", [cout], btype, data=RNG.integers(-500, 500, cout), scale=ws * 0.05, zero_point=[0] * cout)
    y = mw.tensor("y", [1, 6, 6, cout], typ, scale=0.1, zero_point=0 if typ == "INT16" else -2)
    mw.op("CONV_2D", [x, k, b], [y], Padding="SAME", StrideW=1, StrideH=1, DilationWFactor=dilation,
          DilationHFactor=dilation)
    return mw.finish([x], [y])


def _fc(adapted: bool, n: int = 8) -> bytes:
    """FULLY_CONNECTED n -> n (square: only the quantised dimension tells the layouts apart)."""
    w = RNG.integers(-127, 128, (n, n))
    mw = ModelWriter()
    x = mw.tensor("x", [1, n], scale=0.05, zero_point=1)
    k = mw.tensor("k", [n, n], data=w.T if adapted else w, scale=0.01, zero_point=0, qdim=1 if adapted else 0)
    b = mw.tensor("b", [n], "INT32", data=RNG.integers(-300, 300, n), scale=0.0005, zero_point=0)
    y = mw.tensor("y", [1, n], scale=0.08, zero_point=-3)
    mw.op("FULLY_CONNECTED", [x, k, b], [y])
    return mw.finish([x], [y])


def _dw(shape: tuple[int, ...]) -> bytes:
    """DEPTHWISE_CONV_2D with weights of ``shape`` (2 channels)."""
    mw = ModelWriter()
    x = mw.tensor("x", [1, 5, 5, 2], scale=0.05, zero_point=0)
    k = mw.tensor("k", list(shape), data=np.arange(np.prod(shape)).reshape(shape) - 2, scale=[0.01, 0.02],
                  zero_point=[0, 0], qdim=3)
    b = mw.tensor("b", [2], "INT32", data=[10, -10], scale=[0.0005, 0.001], zero_point=[0, 0])
    y = mw.tensor("y", [1, 5, 5, 2], scale=0.05, zero_point=0)
    mw.op("DEPTHWISE_CONV_2D", [x, k, b], [y], Padding="SAME", StrideW=1, StrideH=1, DepthMultiplier=1)
    return mw.finish([x], [y])


def _two_inputs() -> bytes:
    """ADD of an int8 [1,4,4,2] and a same-shape input (offloaded), SUB of an int16 [2] graph input."""
    mw = ModelWriter()
    a = mw.tensor("a", [1, 4, 4, 2], scale=0.05, zero_point=2)
    b = mw.tensor("b", [1, 4, 4, 2], scale=0.07, zero_point=-4)
    s = mw.tensor("s", [1, 4, 4, 2], scale=0.1, zero_point=1)
    c = mw.tensor("c", [2], "INT16", scale=0.001, zero_point=0)
    d = mw.tensor("d", [2], "INT16", scale=0.002, zero_point=0)
    mw.op("ADD", [a, b], [s])
    mw.op("SUB", [c, c], [d])
    return mw.finish([a, b, c], [s, d])


# ----------------------------------------------------------------------------------------- mapping

def test_default_mapping_is_tflm_and_mli_is_the_network() -> None:
    assert isinstance(load(cnn10()), TflmModel)
    assert isinstance(load(cnn10(), mapping="tflm"), TflmModel)
    assert isinstance(load(cnn10(), mapping="mli"), TfliteModel)
    assert isinstance(load(cnn10(), mapping="MLI"), TfliteModel)


@pytest.mark.parametrize("mapping", ["tflite", "", None, 3])
def test_unknown_mapping_lists_choices(mapping: object) -> None:
    with pytest.raises(TfliteError, match="tflm, mli") as e:
        load(cnn10(), mapping=mapping)  # type: ignore[arg-type]
    assert isinstance(e.value, ValueError)


# ----------------------------------------------------------------------------------------- refusals

@pytest.mark.parametrize("mapping", ["tflm", "mli"])
@pytest.mark.parametrize("src", [None, 3, [1, 2, 3], np.zeros(8, np.uint8), 2.5])
def test_load_refuses_non_source(src: object, mapping: str) -> None:
    with pytest.raises(TfliteError, match="expected a path"):
        load(src, mapping=mapping)


@pytest.mark.parametrize("mapping", ["tflm", "mli"])
def test_zero_point_outside_int8_refused_at_load(mapping: str) -> None:
    mw = ModelWriter()
    x = mw.tensor("x", [1, 4], scale=0.1, zero_point=1000)
    y = mw.tensor("y", [1, 4], scale=0.1, zero_point=0)
    mw.op("RELU", [x], [y])
    with pytest.raises(TfliteUnsupported, match="zero point 1000"):
        load(mw.finish([x], [y]), mapping=mapping)


@pytest.mark.parametrize("mapping", ["tflm", "mli"])
def test_huge_dilation_refused_at_load(mapping: str) -> None:
    with pytest.raises(TfliteUnsupported, match="budget"):
        load(_conv(False, dilation=2**31 - 1), mapping=mapping)


def test_operator_without_handler_refused_with_its_name() -> None:
    mw = ModelWriter()
    x = mw.tensor("x", [1, 4], scale=0.1, zero_point=0)
    y = mw.tensor("y", [1, 4], scale=0.1, zero_point=0)
    mw.op("RELU", [x], [y])
    data = mw.finish([x], [y])
    g = read_graph(data)
    assert g.ops[0].name == "RELU"
    from pymli.tflite import tflm_model

    saved = handlers.HANDLERS.pop("RELU")
    try:
        with pytest.raises(TfliteUnsupported, match=r"operator 0 \(RELU\)"):
            tflm_model.load_tflm(data)
    finally:
        handlers.HANDLERS["RELU"] = saved


# ----------------------------------------------------------------------------------------- inputs

def test_several_inputs_and_outputs() -> None:
    m = load(_two_inputs())
    assert [s.function for s in m.steps] == ["mli_krn_eltwise_add_sa8", None]
    a = RNG.integers(-128, 128, (1, 4, 4, 2)).astype(np.int8)
    b = RNG.integers(-128, 128, (1, 4, 4, 2)).astype(np.int8)
    c = np.array([1000, -2000], np.int16)
    s, d = m.run(a, b, c, platform="vpx")
    assert s.dtype == np.int8 and s.shape == (1, 4, 4, 2) and d.dtype == np.int16 and d.shape == (2,)
    assert np.array_equal(d, np.zeros(2, np.int16))
    # offloaded ADD (MLI 16-bit scales) within 1 LSB of TFLM's reference ADD
    ref = handlers.HANDLERS["ADD"](m.graph, m.graph.ops[0], [a, b])[0]
    assert np.max(np.abs(ref.astype(int) - s.astype(int))) <= 1


def test_input_count_shape_dtype_refused() -> None:
    m = load(_two_inputs())
    a = np.zeros((1, 4, 4, 2), np.int8)
    c = np.zeros(2, np.int16)
    with pytest.raises(TfliteInputError, match="takes 3 input"):
        m.run(a, a)
    with pytest.raises(TfliteInputError, match=r"expected \(1, 4, 4, 2\)"):
        m.run(a, np.zeros((1, 4, 2), np.int8), c)
    with pytest.raises(TfliteInputError, match="does not start with QUANTIZE"):
        m.run(a.astype(np.float32), a, c)
    with pytest.raises(TfliteInputError, match=r"outside int8"):
        m.run(np.full((1, 4, 4, 2), 300), a, c)
    with pytest.raises(TfliteInputError, match="batch of 3"):
        m.run(np.zeros((2, 4, 4, 2), np.int8), np.zeros((3, 4, 4, 2), np.int8), c)
    with pytest.raises(TfliteInputError):
        m.run(a, a, object())
    # integer arrays of another dtype whose values fit are taken
    s, _ = m.run(a.astype(np.int64), a, c.astype(np.int32))
    assert s.dtype == np.int8


def test_batch_broadcasts_unbatched_inputs() -> None:
    m = load(_two_inputs())
    a = RNG.integers(-128, 128, (3, 4, 4, 2)).astype(np.int8)
    b = RNG.integers(-128, 128, (1, 4, 4, 2)).astype(np.int8)
    c = np.array([5, 6], np.int16)
    s, d = m.run(a, b, c)
    assert s.shape == (3, 4, 4, 2) and d.shape == (3, 2)
    for k in range(3):
        assert np.array_equal(s[k], m.run(a[k:k + 1], b, c)[0][0])


def test_float_input_only_for_quantize_models() -> None:
    m = load(cnn10())
    x = np.zeros(m.input_shape, np.float32)
    if m.float_input:
        m.run(x)
        with pytest.raises(TfliteInputError):
            m.run(x.astype(np.int8))
    else:
        with pytest.raises(TfliteInputError, match="QUANTIZE"):
            m.run(x)


def test_platform_names_and_objects() -> None:
    m = load(_conv(False))
    x = RNG.integers(-128, 128, (1, 6, 6, 3)).astype(np.int8)
    up = m.run(x, platform="vpx")
    assert np.array_equal(up, m.run(x, platform="VPX"))
    assert np.array_equal(up, m.run(x, platform=pymli.VPX))
    assert np.array_equal(m.run(x, platform="Em"), m.run(x, platform=pymli.EM))
    with pymli.use_platform("em"):
        assert np.array_equal(m.run(x), m.run(x, platform="em"))
    with pytest.raises(TfliteError, match="unknown platform"):
        m.run(x, platform="arm")


def test_mli_error_of_a_run_is_an_mli_error() -> None:
    m = load(_conv(False))
    with pytest.raises(MliError):
        m.run(np.zeros((1, 6, 6, 4), np.int8))


# ----------------------------------------------------------------------------------------- layout

@pytest.mark.parametrize("platform", ["vpx", "em"])
@pytest.mark.parametrize("make", [_conv, _fc], ids=["conv", "fc"])
def test_adapted_layout_recognised(make, platform: str) -> None:  # noqa: ANN001
    state = RNG.bit_generator.state
    std = load(make(False))
    RNG.bit_generator.state = state
    ad = load(make(True))
    assert not std.adapted and ad.adapted
    assert std.steps[0].function is not None and ad.steps[0].function == std.steps[0].function
    x = RNG.integers(-128, 128, std.input_shape).astype(np.int8)
    assert np.array_equal(std.run(x, platform=platform), ad.run(x, platform=platform))


def test_adapted_layout_on_reference_path() -> None:
    """int16 and dilated convolutions are not offloaded: the reference kernel gets TFLite's layout back."""
    for kw in ({"typ": "INT16"}, {"dilation": 2}):
        state = RNG.bit_generator.state
        std = load(_conv(False, **kw))
        RNG.bit_generator.state = state
        ad = load(_conv(True, **kw))
        assert ad.adapted and ad.steps[0].function is None
        x = RNG.integers(-100, 100, std.input_shape).astype(std.inputs[0].dtype)
        assert np.array_equal(std.run(x), ad.run(x))


def test_wrong_forced_layout_refused() -> None:
    with pytest.raises(TfliteLayoutError, match="adapted=True"):
        load(_conv(False), adapted=True)
    with pytest.raises(TfliteLayoutError, match="adapted=False"):
        load(_conv(True), adapted=False)


def test_ambiguous_layout_needs_adapted() -> None:
    data = _dw((1, 3, 1, 2))  # kernel 3x1 (TFLite 1HWC) or 1x3 (ARC HW1C)?
    with pytest.raises(TfliteLayoutError, match=r"adapted=True\) or load\(\.\.\., adapted=False"):
        load(data)
    std = load(data, adapted=False)
    ad = load(data, adapted=True)
    assert std.graph.tensors[1].shape == (1, 3, 1, 2) and ad.graph.tensors[1].shape == (1, 1, 3, 2)
    x = RNG.integers(-128, 128, (1, 5, 5, 2)).astype(np.int8)
    assert np.array_equal(ad.run(x), load(_dw((1, 1, 3, 2))).run(x))
    assert not np.array_equal(std.run(x), ad.run(x))


# ----------------------------------------------------------------------------------------- fuzz

_JUNK = [None, "x", [1, 2], (), True, object(), {"a": 1}, b"\x01", 3, 2.5]


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(data=st.data())
def test_run_wrong_inputs_raise_mli_error_only(data) -> None:  # noqa: ANN001
    """Inputs of the wrong dtype, range, shape or Python type raise MliError (TfliteInputError), nothing else."""
    m = _FUZZ_MODEL
    shape = (1, 4, 4, 2)
    arr = st.one_of(
        st.sampled_from([np.int8, np.int16, np.int32, np.float32, np.float64, np.uint8, bool]).map(
            lambda d: np.ones(shape, d)),
        st.just(np.full(shape, 300)), st.just(np.full(shape, np.nan)), st.just(np.zeros(shape[1:])),
        st.just(np.zeros((0,) + shape[1:], np.int8)), st.just(np.zeros(shape, np.int8)[..., ::-1]),
        st.just(np.zeros(shape, np.int8).tolist()), st.sampled_from(_JUNK))
    xs = [data.draw(arr, label=f"x{j}") for j in range(data.draw(st.integers(0, 4), label="n"))]
    try:
        m.run(*xs)
    except MliError:
        pass


_FUZZ_MODEL = load(_two_inputs())
