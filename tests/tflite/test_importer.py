"""The importer on its own (no TFLite Micro): mapping, re-layout, quantisation, refusals."""

import numpy as np
import pytest

from pymli.errors import MliError, Status
from pymli.tflite import TfliteFormatError, TfliteUnsupported, load
from pymli.tflite.builder import ModelWriter
from pymli.tflite.examples import OP_CASES, cnn10
from pymli.tflite.reader import read_model

#: operator -> the MLI function (prefix) it must map to
EXPECTED_FN = {
    "CONV_2D": "mli_krn_conv2d_hwcn_sa8_sa8_sa32", "DEPTHWISE_CONV_2D": "mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32",
    "FULLY_CONNECTED": "mli_krn_fully_connected_sa8_sa8_sa32", "MAX_POOL_2D": "mli_krn_maxpool_hwc_sa8",
    "AVERAGE_POOL_2D": "mli_krn_avepool_hwc_sa8", "ADD": "mli_krn_eltwise_add_sa8", "SUB": "mli_krn_eltwise_sub_sa8",
    "MUL": "mli_krn_eltwise_mul_sa8", "MINIMUM": "mli_krn_eltwise_min_sa8", "MAXIMUM": "mli_krn_eltwise_max_sa8",
    "RELU": "mli_krn_relu_sa8", "RELU6": "mli_krn_relu_sa8", "RELU_N1_TO_1": "mli_krn_relu_sa8",
    "LEAKY_RELU": "mli_krn_leaky_relu_sa8", "PRELU": "mli_krn_prelu_sa8", "LOGISTIC": "mli_krn_sigm_sa8",
    "TANH": "mli_krn_tanh_sa8", "SOFTMAX": "mli_krn_softmax_sa8", "L2_NORMALIZATION": "mli_krn_l2_normalize_sa8",
    "RESHAPE": "mli_mov_tensor_sync", "SQUEEZE": "mli_mov_tensor_sync", "TRANSPOSE": "mli_krn_permute_sa8",
    "CONCATENATION": "mli_krn_concat_sa8", "PAD": "mli_krn_padding2d_hwc_sa8", "PADV2": "mli_krn_padding2d_hwc_sa8",
    "ARG_MAX": "mli_krn_argmax_sa8", "TRANSPOSE_CONV": "mli_krn_transpose_conv2d_hwcn_sa8_sa8_sa32",
    "QUANTIZE": "mli_hlp_convert_tensor",
}


@pytest.mark.parametrize("case", sorted(OP_CASES))
def test_case_maps_and_runs_close_to_float(case):
    m = load(OP_CASES[case][0](0), mapping="mli")
    fns = m.functions()
    for op in m.info.ops:
        if not fns.get(op.index):
            assert op.name in ("QUANTIZE", "DEQUANTIZE")      # graph boundary, offline
            continue
        assert any(f.startswith(EXPECTED_FN[op.name]) for f in fns[op.index]), (op.name, fns[op.index])
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (4,) + m.network.input_shape).astype(np.int8)
    res = m.network.run(x)
    flt = m.network.run_float(x)
    out = m.network.output_name
    q = res.qparams[out]
    if q.el_type.name == "SA_32":      # arg-max: indices, MLI keeps the last of equal maxima
        last = x.shape[-1] - 1 - np.argmax(x[..., ::-1], axis=-1)
        assert np.array_equal(res[out], last)
        return
    step = float(np.max(q.step()))
    lo, hi = (-128 - float(q.zero_point)) * step, (127 - float(q.zero_point)) * step
    err = np.abs(res.dequantized(out) - np.clip(flt[out], lo, hi)) / step
    # MAC, eltwise and rescaling layers: within a rounding step plus the 16-bit scale error
    assert err.max() <= 2.0, (case, err.max())


def _ref_conv(x, w_ohwi, b, zp_in, s_in, s_w, s_out, zp_out, stride, pad, depthwise=False):
    """TFLite int8 convolution semantics computed naively from the TFLite layouts (float64 exact here)."""
    n, h, wd, _ = x.shape
    if depthwise:
        _, kh, kw, co = w_ohwi.shape
    else:
        co, kh, kw, _ = w_ohwi.shape
    t, bt, l, r = pad
    xp = np.pad(x.astype(np.int64) - zp_in, ((0, 0), (t, bt), (l, r), (0, 0)))
    oh, ow = (h + t + bt - kh) // stride + 1, (wd + l + r - kw) // stride + 1
    acc = np.zeros((n, oh, ow, co), np.int64)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, i:i + (oh - 1) * stride + 1:stride, j:j + (ow - 1) * stride + 1:stride, :]
            if depthwise:
                acc += patch * w_ohwi[0, i, j].astype(np.int64)
            else:
                acc += patch @ w_ohwi[:, i, j, :].astype(np.int64).T
    acc += b
    y = acc * (s_in * np.asarray(s_w) / s_out) + zp_out
    return np.clip(np.floor(y + 0.5), -128, 127)


@pytest.mark.parametrize("case,depthwise,stride,padding", [
    ("conv_same_s1_pc", False, 1, "SAME"), ("conv_valid_s2_pt", False, 2, "VALID"),
    ("dwconv_same_pc", True, 1, "SAME"), ("dwconv_valid_s2_pt", True, 2, "VALID")])
def test_weight_relayout_against_tflite_semantics(case, depthwise, stride, padding):
    data = OP_CASES[case][0](3)
    info = read_model(data)
    op = info.ops[0]
    xt, wt, bt, yt = (info.tensors[i] for i in (*op.inputs, op.outputs[0]))
    m = load(data, mapping="mli")
    x = np.random.default_rng(2).integers(-128, 128, (3,) + xt.shape[1:]).astype(np.int8)
    k = wt.shape[1]
    if padding == "SAME":
        tot_h = max((-(-xt.shape[1] // stride) - 1) * stride + k - xt.shape[1], 0)
        tot_w = max((-(-xt.shape[2] // stride) - 1) * stride + k - xt.shape[2], 0)
        pad = (tot_h // 2, tot_h - tot_h // 2, tot_w // 2, tot_w - tot_w // 2)
    else:
        pad = (0, 0, 0, 0)
    ref = _ref_conv(x, wt.data, bt.data.astype(np.int64), int(xt.zero_point[0]), float(xt.scale[0]), wt.scale,
                    float(yt.scale[0]), int(yt.zero_point[0]), stride, pad, depthwise)
    got = m.run(x)
    assert np.abs(got.astype(np.int64) - ref).max() <= 1


def test_fc_relayout_against_tflite_semantics():
    data = OP_CASES["fc_pc_relu"][0](5)
    info = read_model(data)
    op = info.ops[0]
    xt, wt, bt, yt = (info.tensors[i] for i in (*op.inputs, op.outputs[0]))
    x = np.random.default_rng(3).integers(-128, 128, (5,) + xt.shape[1:]).astype(np.int8)
    acc = (x.reshape(5, -1).astype(np.int64) - int(xt.zero_point[0])) @ wt.data.astype(np.int64).T + bt.data
    y = np.floor(acc * (float(xt.scale[0]) * wt.scale / float(yt.scale[0])) + 0.5) + int(yt.zero_point[0])
    ref = np.clip(y, int(yt.zero_point[0]), 127)     # fused RELU
    got = load(data, mapping="mli").run(x)
    assert np.abs(got.astype(np.int64) - ref).max() <= 1


def test_load_from_path_and_bytes(tmp_path):
    data = cnn10()
    p = tmp_path / "m.tflite"
    p.write_bytes(data)
    a, b = load(p, mapping="mli"), load(bytearray(data), mapping="mli")
    x = np.random.default_rng(0).integers(-128, 128, (2, 16, 16, 3)).astype(np.int8)
    assert np.array_equal(a.run(x), b.run(x))
    assert len(a.network) >= 10
    single = a.run(x[0])
    assert np.array_equal(single, a.run(x[:1]))


def test_float_boundary_quantize_dequantize():
    m = load(OP_CASES["quant_dequant"][0](0), mapping="mli")
    assert m.float_input and m.float_output
    x = np.random.default_rng(0).uniform(-2, 2, (3, 4, 4, 3)).astype(np.float32)
    y = m.run(x)
    assert y.dtype == np.float32
    # integers are refused for a float-input model
    with pytest.raises(ValueError):
        m.run(np.zeros((1, 4, 4, 3), np.int8))


# ------------------------------------------------------------------ refusals
def _simple(op, opts=None, in_shape=(1, 4, 4, 2), out_shape=(1, 4, 4, 2), extra=(), in_type="INT8", **tk):
    w = ModelWriter()
    x = w.tensor("x", in_shape, in_type, scale=0.1 if in_type == "INT8" else None, zero_point=0)
    ins = [x] + [f(w) for f in extra]
    y = w.tensor("y", out_shape, scale=0.1, zero_point=0)
    w.op(op, ins, [y], **(opts or {}))
    return w.finish([x], [y])


def _conv_w(shape, per_channel_dim=None, **kw):
    def f(w):
        n = shape[per_channel_dim] if per_channel_dim is not None else 1
        return w.tensor("w", shape, "INT8", np.ones(shape), scale=[0.01] * n, zero_point=[0] * n,
                        qdim=per_channel_dim or 0, **kw)
    return f


@pytest.mark.parametrize("data,needle", [
    (_simple("HARD_SWISH"), "operator 0 (HARD_SWISH): operator not supported"),
    (_simple("SOFTMAX", {"Beta": 2.0}, (1, 8), (1, 8)), "beta 2.0"),
    (_simple("CONV_2D", {"Padding": "SAME", "StrideW": 1, "StrideH": 1, "FusedActivationFunction": "TANH"},
             extra=[_conv_w((2, 3, 3, 2), 0)]), "fused activation TANH"),
    (_simple("DEPTHWISE_CONV_2D", {"Padding": "SAME", "StrideW": 1, "StrideH": 1, "DepthMultiplier": 2},
             out_shape=(1, 4, 4, 4), extra=[_conv_w((1, 3, 3, 4), 3)]), "depth multiplier 2"),
    (_simple("CONV_2D", {"Padding": "SAME", "StrideW": 1, "StrideH": 1}, extra=[_conv_w((2, 3, 3, 2), 1)]),
     "quantised along dimension 1"),
    (_simple("MAX_POOL_2D", {"Padding": "VALID", "StrideW": 1, "StrideH": 1, "FilterWidth": 1, "FilterHeight": 1},
             in_type="UINT8"), "input tensor 0 (x): UINT8"),
    (_simple("RELU", in_type="FLOAT32"), "input tensor 0 (x): FLOAT32"),
    (_simple("ARG_MAX", in_shape=(1, 4, 4, 2), out_shape=(1, 4, 2),
             extra=[lambda w: w.const("axis", np.array([1], np.int32))]), "only the last"),
    (_simple("PAD", out_shape=(1, 4, 4, 4), extra=[lambda w: w.const("p", np.array([[0, 0], [0, 0], [0, 0], [1, 1]],
                                                                                    np.int32))]), "channel"),
    (_simple("TRANSPOSE", extra=[lambda w: w.const("perm", np.array([1, 0, 2, 3], np.int32))]), "batch axis"),
    (_simple("DEQUANTIZE", out_shape=(1, 4, 4, 2)), "DEQUANTIZE inside the graph"),
    (_simple("FULLY_CONNECTED", in_shape=(1, 4), out_shape=(1, 2),
             extra=[lambda w: w.tensor("w4", (2, 4), "INT8", None, scale=0.1, zero_point=0)]), "must be a constant"),
    (_simple("CONV_2D", {"Padding": "VALID", "StrideW": 1, "StrideH": 1}, out_shape=(1, 4, 4, 2),
             extra=[lambda w: w.tensor("w", (2, 1, 1, 2), "INT8", np.ones((2, 1, 1, 2)), scale=0.1, zero_point=3)]),
     "non-zero zero point"),
    (_simple("FULLY_CONNECTED", in_shape=(1, 4), out_shape=(1, 2),
             extra=[lambda w: w.tensor("w4", (2, 4), "INT4", np.zeros(4, np.uint8), scale=0.1, zero_point=0)]),
     "has type INT4, expected INT8"),
    (_simple("CONCATENATION", {"Axis": 0}, out_shape=(2, 4, 4, 2)), "batch 1 expected"),
], ids=lambda v: v if isinstance(v, str) else "model")
def test_refused_with_op_index_and_reason(data, needle):
    with pytest.raises(TfliteUnsupported) as ei:
        load(data, mapping="mli")
    assert needle in str(ei.value)
    assert isinstance(ei.value, MliError) and ei.value.status == Status.NOT_SUPPORTED


def test_two_inputs_refused():
    w = ModelWriter()
    a = w.tensor("a", (1, 4), scale=0.1, zero_point=0)
    b = w.tensor("b", (1, 4), scale=0.1, zero_point=0)
    y = w.tensor("y", (1, 4), scale=0.1, zero_point=0)
    w.op("ADD", [a, b], [y])
    with pytest.raises(TfliteUnsupported, match="2 inputs"):
        load(w.finish([a, b], [y]), mapping="mli")


@pytest.mark.parametrize("data", [b"", b"1234", b"\x00" * 4 + b"XXXX" + b"\x00" * 40, cnn10()[:100],
                                  b"\x10\x00\x00\x00TFL3" + b"\xff" * 64],
                         ids=["empty", "short", "identifier", "truncated", "garbage"])
def test_malformed_raises_format_error(data):
    with pytest.raises(TfliteFormatError) as ei:
        load(data, mapping="mli")
    assert "malformed TFLite model" in str(ei.value)


def test_lazy_package_import_and_errors_are_mli_errors():
    import pymli.tflite as t

    assert issubclass(t.TfliteFormatError, MliError) and issubclass(t.TfliteUnsupported, ValueError)
    assert "CONV_2D" in t.SUPPORTED_OPS
    with pytest.raises(AttributeError):
        t.nothing  # noqa: B018
