"""Generated single-operator models (pymli.testing.tflm_models): every TFLM integer operator and
type, random shapes / broadcasting / options / quantisation, run through the TFLite Micro Python
interpreter and through pymli.tflm handlers, compared whole-buffer with np.array_equal.

CI runs ``PYMLI_TFLM_SEEDS`` seeds per key (default 2); a longer run:
``python -m pymli.testing.tflm_models --seeds 200`` (prints every difference).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from pymli.errors import MliError
from pymli.testing import tflm_models as tm
from pymli.tflm import handlers

pytest.importorskip("tflite_micro.python.tflite_micro.runtime",
                    reason="the tflite_micro interpreter is an optional test dependency")

SEEDS = range(int(os.environ.get("PYMLI_TFLM_SEEDS", "2")))
CASES = [(k, s) for k in sorted(tm.VARIANTS) for s in SEEDS]


@pytest.mark.parametrize("key,seed", CASES, ids=[f"{k}-{s}" for k, s in CASES])
def test_generated_model_equals_tflm(key: str, seed: int) -> None:
    m = tm.generate(key, seed)
    why = tm.compare(m)
    if why and key in tm.KNOWN:
        assert tm.compare(m, tolerance=1) == "", f"{key} seed {seed}: more than the known 1 LSB"
        pytest.xfail(tm.KNOWN[key])
    assert why == "", f"{key} seed {seed}: {why}"


def test_generation_is_seeded() -> None:
    a, b = tm.generate("CONV_2D/int8", 5), tm.generate("CONV_2D/int8", 5)
    assert a.model == b.model
    assert all(np.array_equal(x, y) for fa, fb in zip(a.feeds, b.feeds) for x, y in zip(fa, fb))
    assert tm.generate("CONV_2D/int8", 6).model != a.model


def test_every_generated_operator_has_a_handler() -> None:
    ops = {k.split("/")[0] for k in tm.VARIANTS}
    assert not ops - set(handlers.HANDLERS)
    assert not ops & set(tm.NOT_GENERATED)


# the builtins the tflite_micro Python op resolver registers (Register_* symbols of its _runtime.so),
# signal-library and CUSTOM registrations aside
RESOLVER = """ABS ADD ADD_N ARG_MAX ARG_MIN ASSIGN_VARIABLE AVERAGE_POOL_2D BATCH_MATMUL BATCH_TO_SPACE_ND
BROADCAST_ARGS BROADCAST_TO CALL_ONCE CAST CEIL CONCATENATION CONV_2D COS CUMSUM DECODE
DEPTHWISE_CONV_2D DEPTH_TO_SPACE DEQUANTIZE DETECTION_POSTPROCESS DIV DYNAMIC_UPDATE_SLICE ELU
EMBEDDING_LOOKUP EQUAL EXP EXPAND_DIMS FILL FLOOR FLOOR_DIV FLOOR_MOD FULLY_CONNECTED GATHER GATHER_ND
GREATER GREATER_EQUAL HARD_SWISH IF L2_NORMALIZATION L2_POOL_2D LEAKY_RELU LESS LESS_EQUAL LOG
LOGICAL_AND LOGICAL_NOT LOGICAL_OR LOGISTIC LOG_SOFTMAX MAXIMUM MAX_POOL_2D MEAN MINIMUM MIRROR_PAD MUL
NEG NOT_EQUAL PACK PAD PADV2 PRELU QUANTIZE READ_VARIABLE REDUCE_ALL REDUCE_MAX REDUCE_MIN RELU RELU6
RESHAPE RESIZE_BILINEAR RESIZE_NEAREST_NEIGHBOR REVERSE_V2 ROUND RSQRT SELECT_V2 SHAPE SIN SLICE
SOFTMAX SPACE_TO_BATCH_ND SPACE_TO_DEPTH SPLIT SPLIT_V SQRT SQUARE SQUARED_DIFFERENCE SQUEEZE
STRIDED_SLICE SUB SUM SVDF TANH TRANSPOSE TRANSPOSE_CONV UNIDIRECTIONAL_SEQUENCE_LSTM UNPACK VAR_HANDLE
WHILE ZEROS_LIKE""".split()


def test_every_resolver_operator_is_generated_or_explained() -> None:
    ops = {k.split("/")[0] for k in tm.VARIANTS}
    missing = [op for op in RESOLVER if op not in ops and op not in tm.NOT_GENERATED]
    assert missing == []


def _refused(key: str, bias_dtype: np.dtype) -> None:
    m = tm.generate(key, 0)
    ins = list(m.inputs)
    bi = 2 if m.op == "DEPTHWISE_CONV_2D" else 3
    b = ins[bi]
    nb = np.zeros(m.outputs[0].shape[-1], bias_dtype)
    ins[bi] = tm.TensorSpec(nb.shape, nb.dtype, b.scale if b is not None else 0.001, 0, data=nb)
    bad = tm.OpModel(key, 0, m.op, tuple(ins), m.outputs, m.options, m.feeds,
                     tm.single_op(m.op, ins, list(m.outputs), m.options))
    with pytest.raises(MliError, match="int64"):
        tm.run_pymli(bad)


@pytest.mark.parametrize("key", ["DEPTHWISE_CONV_2D/16x8", "TRANSPOSE_CONV/16x8"])
def test_16x8_int32_bias_is_refused(key: str) -> None:
    """TFLM reads these operators' 16x8 bias buffer as int64 whatever its type (an int32 bias is
    read past its end): pymli refuses rather than guess."""
    _refused(key, np.dtype(np.int32))


def test_int8_concatenation_with_other_scales_is_refused() -> None:
    """TFLM micro refuses an int8 CONCATENATION whose inputs do not share the output's scale and
    zero point; pymli too (int16 inputs of any scale are generated and equal)."""
    a = tm.TensorSpec((2, 3), np.dtype(np.int8), 0.05, 1)
    b = tm.TensorSpec((2, 2), np.dtype(np.int8), 0.07, 1)
    o = tm.TensorSpec((2, 5), np.dtype(np.int8), 0.05, 1)
    opts = {"Axis": 1, "FusedActivationFunction": 0}
    feeds = ((np.zeros((2, 3), np.int8), np.zeros((2, 2), np.int8)),)
    m = tm.OpModel("CONCATENATION/int8", 0, "CONCATENATION", (a, b), (o,), opts, feeds,
                   tm.single_op("CONCATENATION", [a, b], [o], opts))
    with pytest.raises(MliError, match="CONCATENATION"):
        tm.run_pymli(m)
    with pytest.raises(RuntimeError):
        tm.run_tflm(m)


def test_hard_swish_with_a_too_small_output_scale_is_refused() -> None:
    """TFLM's HARD_SWISH Prepare refuses an output scale below input scale / 128; pymli too."""
    x = tm.TensorSpec((2, 5), np.dtype(np.int8), 0.2, 0)
    o = tm.TensorSpec((2, 5), np.dtype(np.int8), 0.001, 0)
    m = tm.OpModel("HARD_SWISH/int8", 0, "HARD_SWISH", (x,), (o,), {}, ((np.zeros((2, 5), np.int8),),),
                   tm.single_op("HARD_SWISH", [x], [o], {}))
    with pytest.raises(MliError, match="HARD_SWISH"):
        tm.run_pymli(m)
    with pytest.raises(RuntimeError):
        tm.run_tflm(m)
