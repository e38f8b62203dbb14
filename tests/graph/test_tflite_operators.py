"""The TFLite operator table: every registered handler is exercised; unknown operators are refused."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite", reason="pymli.tflite needs the 'tflite' package (pip install 'tflite>=2.18')")
pytest.importorskip("flatbuffers", reason="pymli.tflite needs 'flatbuffers>=23'")

from pymli.tflite import SUPPORTED_OPS, TfliteUnsupported, load  # noqa: E402
from pymli.tflite.builder import ModelWriter  # noqa: E402
from pymli.tflite.examples import OP_CASES  # noqa: E402
from pymli.tflite.mapping import MLI, GraphBuilder, OperatorTable  # noqa: E402
from pymli.tflite.reader import OpInfo  # noqa: E402


def _requant_model() -> bytes:
    """int8 -> QUANTIZE (another scale) -> int8."""
    w = ModelWriter()
    x = w.tensor("x", (1, 3, 4), scale=0.1, zero_point=2)
    y = w.tensor("y", (1, 3, 4), scale=0.05, zero_point=-3)
    w.op("QUANTIZE", [x], [y])
    return w.finish([x], [y])


def _dequantize_inside() -> bytes:
    w = ModelWriter()
    x = w.tensor("x", (1, 4), scale=0.1, zero_point=0)
    y = w.tensor("y", (1, 4), scale=0.1, zero_point=0)
    w.op("DEQUANTIZE", [x], [y])
    return w.finish([x], [y])


# operator -> (model using it, the MLI function its handler must call; None: the handler refuses)
HANDLER_CASES = {
    "CONV_2D": (OP_CASES["conv_same_s1_pc"][0], "mli_krn_conv2d_hwcn_sa8_sa8_sa32"),
    "DEPTHWISE_CONV_2D": (OP_CASES["dwconv_same_pc"][0], "mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32"),
    "TRANSPOSE_CONV": (OP_CASES["tconv_same_s2"][0], "mli_krn_transpose_conv2d_hwcn_sa8_sa8_sa32"),
    "FULLY_CONNECTED": (OP_CASES["fc_pt"][0], "mli_krn_fully_connected_sa8_sa8_sa32"),
    "MAX_POOL_2D": (OP_CASES["maxpool_valid"][0], "mli_krn_maxpool_hwc_sa8"),
    "AVERAGE_POOL_2D": (OP_CASES["avgpool_valid"][0], "mli_krn_avepool_hwc_sa8"),
    "ADD": (OP_CASES["add"][0], "mli_krn_eltwise_add_sa8"),
    "SUB": (OP_CASES["sub"][0], "mli_krn_eltwise_sub_sa8"),
    "MUL": (OP_CASES["mul"][0], "mli_krn_eltwise_mul_sa8"),
    "MINIMUM": (OP_CASES["minimum"][0], "mli_krn_eltwise_min_sa8"),
    "MAXIMUM": (OP_CASES["maximum"][0], "mli_krn_eltwise_max_sa8"),
    "RELU": (OP_CASES["relu"][0], "mli_krn_relu_sa8"),
    "RELU6": (OP_CASES["relu6"][0], "mli_krn_relu_sa8"),
    "RELU_N1_TO_1": (OP_CASES["relu_n1_to_1"][0], "mli_krn_relu_sa8"),
    "LEAKY_RELU": (OP_CASES["leaky_relu"][0], "mli_krn_leaky_relu_sa8"),
    "PRELU": (OP_CASES["prelu"][0], "mli_krn_prelu_sa8"),
    "LOGISTIC": (OP_CASES["logistic"][0], "mli_krn_sigm_sa8"),
    "TANH": (OP_CASES["tanh"][0], "mli_krn_tanh_sa8"),
    "SOFTMAX": (OP_CASES["softmax"][0], "mli_krn_softmax_sa8"),
    "L2_NORMALIZATION": (OP_CASES["l2norm"][0], "mli_krn_l2_normalize_sa8"),
    "RESHAPE": (OP_CASES["reshape"][0], "mli_mov_tensor_sync"),
    "SQUEEZE": (OP_CASES["squeeze"][0], "mli_mov_tensor_sync"),
    "TRANSPOSE": (OP_CASES["transpose"][0], "mli_krn_permute_sa8"),
    "CONCATENATION": (OP_CASES["concat_equal"][0], "mli_krn_concat_sa8"),
    "PAD": (OP_CASES["pad"][0], "mli_krn_padding2d_hwc_sa8"),
    "PADV2": (OP_CASES["padv2"][0], "mli_krn_padding2d_hwc_sa8"),
    "ARG_MAX": (OP_CASES["argmax"][0], "mli_krn_argmax_sa8"),
    "QUANTIZE": (lambda seed: _requant_model(), "mli_hlp_convert_tensor"),
    "DEQUANTIZE": (lambda seed: _dequantize_inside(), None),
}


def test_every_registered_handler_has_a_case() -> None:
    assert set(HANDLER_CASES) == set(MLI.names()) == set(SUPPORTED_OPS)


@pytest.mark.parametrize("name", sorted(HANDLER_CASES))
def test_handler_maps_its_operator_on_the_mli_function(name: str) -> None:
    build, fn = HANDLER_CASES[name]
    data = build(0)
    if fn is None:
        with pytest.raises(TfliteUnsupported, match=name):
            load(data, mapping="mli")
        return
    m = load(data, mapping="mli")
    idx = [op.index for op in m.info.ops if op.name == name]
    assert idx, f"the case of {name} has no {name} operator"
    calls = m.functions()
    assert all(fn in calls[i] for i in idx)
    x = np.random.default_rng(1).integers(-128, 128, (2, *m.input_shape[1:])).astype(np.int8)
    if m.float_input:
        x = x.astype(np.float32) / 64
    y = m.run(x)
    assert y.shape[0] == 2


@pytest.mark.parametrize("op", ["HARD_SWISH", "EXP", "FLOOR"])
def test_unknown_operator_is_refused_by_name(op: str) -> None:
    w = ModelWriter()
    x = w.tensor("x", (1, 4), scale=0.1, zero_point=0)
    y = w.tensor("y", (1, 4), scale=0.1, zero_point=0)
    w.op(op, [x], [y])
    with pytest.raises(TfliteUnsupported, match=f"operator 0 \\({op}\\): operator not supported by pymli's MLI"):
        load(w.finish([x], [y]), mapping="mli")


def _noop(imp: GraphBuilder, op: OpInfo) -> None:
    raise imp.fail("test handler")


def test_a_second_mapping_overrides_and_falls_back() -> None:
    tflm = OperatorTable("tflm", fallback=MLI)
    tflm.register("SOFTMAX", "HARD_SWISH")(_noop)
    assert tflm.get("SOFTMAX") is _noop and tflm.get("HARD_SWISH") is _noop
    assert tflm.get("CONV_2D") is MLI.get("CONV_2D") and "CONV_2D" in tflm
    assert MLI.get("HARD_SWISH") is None and "HARD_SWISH" not in MLI
    assert set(tflm.names()) == set(MLI.names()) | {"HARD_SWISH"}
    with pytest.raises(ValueError, match="registered twice"):
        tflm.register("SOFTMAX")(_noop)
