"""Generated single-operator TFLite models for every TFLM integer operator and type.

A seeded generator draws, for one ``(operator, variant)`` key (``"ADD/int8"``, ``"CONV_2D/16x8"``,
``"QUANTIZE/int16->int32"``, ...), random shapes (with broadcasting where the operator has it),
builtin options, quantisation parameters, constant tensors and input data, and writes a ``.tflite``
with that one operator (flatbuffers + the ``tflite`` schema package). :func:`run_tflm` runs it through
the TFLite Micro Python interpreter (reference kernels), :func:`run_pymli` through
:mod:`pymli.tflm` handlers (:func:`pymli.testing.tflm_golden.run_graph`); both return the outputs of
each Invoke, and variable tensors (SVDF / LSTM state) carry over successive Invokes in both.

    python -m pymli.testing.tflm_models [--seeds N] [KEY ...]   # a longer run, prints mismatches
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import flatbuffers
import numpy as np
import tflite
from flatbuffers import flexbuffers

from ..tflite.builder import finish_model
from . import tflm_golden

__all__ = ["TensorSpec", "OpModel", "VARIANTS", "KNOWN", "NOT_GENERATED", "single_op", "generate",
           "run_tflm", "run_pymli", "compare"]

I8, I16, I32, I64, F32, BOOL = (np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32),
                                np.dtype(np.int64), np.dtype(np.float32), np.dtype(np.bool_))
_TYPES = {I8: tflite.TensorType.INT8, I16: tflite.TensorType.INT16, I32: tflite.TensorType.INT32,
          I64: tflite.TensorType.INT64, F32: tflite.TensorType.FLOAT32, BOOL: tflite.TensorType.BOOL,
          np.dtype(np.uint32): tflite.TensorType.UINT32, np.dtype(np.uint64): tflite.TensorType.UINT64}
# builtin name -> options table, where it is not the CamelCase of the name + "Options"
_OPT = {"CONV_2D": "Conv2DOptions", "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions",
        "AVERAGE_POOL_2D": "Pool2DOptions", "MAX_POOL_2D": "Pool2DOptions",
        "MEAN": "ReducerOptions", "SUM": "ReducerOptions", "REDUCE_MAX": "ReducerOptions",
        "REDUCE_MIN": "ReducerOptions", "MAXIMUM": "MaximumMinimumOptions",
        "MINIMUM": "MaximumMinimumOptions", "SVDF": "SVDFOptions", "GATHER_ND": "GatherNdOptions",
        "SPACE_TO_BATCH_ND": "SpaceToBatchNDOptions", "BATCH_TO_SPACE_ND": "BatchToSpaceNDOptions",
        "UNIDIRECTIONAL_SEQUENCE_LSTM": "UnidirectionalSequenceLSTMOptions",
        "L2_NORMALIZATION": "L2NormOptions", "ADD_N": "AddNOptions", "BATCH_MATMUL": "BatchMatMulOptions",
        "RESIZE_NEAREST_NEIGHBOR": "ResizeNearestNeighborOptions", "SELECT_V2": "SelectV2Options",
        "REVERSE_V2": "ReverseV2Options", "SPLIT_V": "SplitVOptions", "PADV2": "PadV2Options"}


@dataclass(frozen=True, eq=False)
class TensorSpec:
    """One tensor of a generated model.

    Attributes:
        shape: the tensor's shape.
        dtype: NumPy dtype (int8, int16, int32, int64, float32 or bool).
        scale: float32 scale (scalar or one per channel), None when not quantised.
        zp: zero point (scalar or per channel), None for 0.
        data: constant data (stored in the model), None for a graph input or an output.
        qdim: quantised dimension of a per-channel scale.
        variable: a variable (state) tensor.
        lo: smallest value drawn for a graph input (None: the dtype's minimum, -8.0 for float32).
        hi: largest value drawn (None: the dtype's maximum, 8.0 for float32).
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    scale: Any = None
    zp: Any = None
    data: np.ndarray | None = None
    qdim: int = 0
    variable: bool = False
    lo: Any = None
    hi: Any = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", np.dtype(self.dtype))


@dataclass(frozen=True, eq=False)
class OpModel:
    """A generated single-operator model and the graph inputs of each Invoke.

    Attributes:
        key: ``"OP/variant"``.
        seed: the generator's seed.
        op: builtin operator name.
        inputs: the operator's inputs (None for an omitted optional input).
        outputs: the operator's outputs.
        options: builtin options (``{"FieldName": value}``; lists become int32 vectors).
        feeds: per Invoke, one array per graph input (the non-constant, non-variable inputs).
        model: the ``.tflite`` bytes.
    """

    key: str
    seed: int
    op: str
    inputs: tuple[TensorSpec | None, ...]
    outputs: tuple[TensorSpec, ...]
    options: dict = field(default_factory=dict)
    feeds: tuple[tuple[np.ndarray, ...], ...] = ()
    model: bytes = b""


def single_op(op: str, inputs: list[TensorSpec | None], outputs: list[TensorSpec],
              options: dict[str, Any] | None = None, custom_code: str | None = None) -> bytes:
    """The ``.tflite`` bytes of a model with one operator.

    Args:
        op: builtin operator name (``tflite.BuiltinOperator``); ``"CUSTOM"`` with ``custom_code``.
        inputs: the operator's inputs in order; None writes index -1 (omitted optional input).
        outputs: the operator's outputs.
        options: builtin option fields (``{"StrideH": 2, "Squeeze": [1, 2]}``); for a CUSTOM operator
            the custom options, written as a flexbuffer map.
        custom_code: the custom operator's name (``"SignalFft"``), with ``op="CUSTOM"`` only.

    Returns:
        the model; graph inputs are the non-constant, non-variable inputs, graph outputs the outputs.

    Raises:
        ValueError: options for an operator without an options table, or ``custom_code`` given
            exactly when ``op`` is not ``"CUSTOM"``.
    """
    if (op == "CUSTOM") != (custom_code is not None):
        raise ValueError(f"custom_code {custom_code!r} with operator {op}: CUSTOM needs a code, others none")
    b = flatbuffers.Builder(1024)
    tensors: list[TensorSpec] = []
    for t in list(inputs) + list(outputs):
        if t is not None and all(t is not u for u in tensors):
            tensors.append(t)
    index = {id(t): i for i, t in enumerate(tensors)}

    def ivec(start: Callable, vals: list[int]) -> int:
        start(b, len(vals))
        for v in reversed(vals):
            b.PrependInt32(int(v))
        return b.EndVector()

    def ovec(start: Callable, offs: list[int]) -> int:
        start(b, len(offs))
        for o in reversed(offs):
            b.PrependUOffsetTRelative(o)
        return b.EndVector()

    tflite.BufferStart(b)
    bufs = [tflite.BufferEnd(b)]
    buf_of = {}
    for t in tensors:
        if t.data is not None:
            raw = np.ascontiguousarray(np.asarray(t.data).astype(np.dtype(t.dtype).newbyteorder("<")))
            d = b.CreateNumpyVector(np.frombuffer(raw.tobytes(), np.uint8))
            tflite.BufferStart(b)
            tflite.BufferAddData(b, d)
            buf_of[id(t)] = len(bufs)
            bufs.append(tflite.BufferEnd(b))
    toffs = []
    for i, t in enumerate(tensors):
        name = b.CreateString(f"t{i}")
        shape = ivec(tflite.TensorStartShapeVector, list(t.shape))
        q = None
        if t.scale is not None:
            sc = np.atleast_1d(np.asarray(t.scale, np.float32))
            zp = np.atleast_1d(np.asarray(0 if t.zp is None else t.zp, np.int64))
            if zp.size == 1 and sc.size > 1:
                zp = np.repeat(zp, sc.size)
            so = b.CreateNumpyVector(sc.astype("<f4"))
            zo = b.CreateNumpyVector(zp.astype("<i8"))
            tflite.QuantizationParametersStart(b)
            tflite.QuantizationParametersAddScale(b, so)
            tflite.QuantizationParametersAddZeroPoint(b, zo)
            tflite.QuantizationParametersAddQuantizedDimension(b, t.qdim)
            q = tflite.QuantizationParametersEnd(b)
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape)
        tflite.TensorAddType(b, _TYPES[np.dtype(t.dtype)])
        tflite.TensorAddBuffer(b, buf_of.get(id(t), 0))
        tflite.TensorAddName(b, name)
        tflite.TensorAddIsVariable(b, t.variable)
        if q is not None:
            tflite.TensorAddQuantization(b, q)
        toffs.append(tflite.TensorEnd(b))
    opt_off, opt_type, custom_off = None, 0, None
    cls = _OPT.get(op, "".join(w.capitalize() for w in op.split("_")) + "Options")
    if custom_code is not None:
        custom_off = b.CreateNumpyVector(np.frombuffer(flexbuffers.Dumps(options or {}), np.uint8))
    elif hasattr(tflite.BuiltinOptions, cls):
        vecs = {k: ivec(getattr(tflite, f"{cls}Start{k}Vector"), list(v))
                for k, v in (options or {}).items() if isinstance(v, (list, tuple))}
        getattr(tflite, f"{cls}Start")(b)
        for k, v in (options or {}).items():
            getattr(tflite, f"{cls}Add{k}")(b, vecs.get(k, v))
        opt_off = getattr(tflite, f"{cls}End")(b)
        opt_type = getattr(tflite.BuiltinOptions, cls)
    elif options:
        raise ValueError(f"{op} has no options table {cls}")
    code = getattr(tflite.BuiltinOperator, op)
    io = ivec(tflite.OperatorStartInputsVector, [index[id(t)] if t is not None else -1 for t in inputs])
    oo = ivec(tflite.OperatorStartOutputsVector, [index[id(t)] for t in outputs])
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, 0)
    tflite.OperatorAddInputs(b, io)
    tflite.OperatorAddOutputs(b, oo)
    if opt_off is not None:
        tflite.OperatorAddBuiltinOptionsType(b, opt_type)
        tflite.OperatorAddBuiltinOptions(b, opt_off)
    if custom_off is not None:
        tflite.OperatorAddCustomOptions(b, custom_off)
    opo = tflite.OperatorEnd(b)
    g_in = []
    for t in inputs:
        if t is not None and t.data is None and not t.variable and index[id(t)] not in g_in:
            g_in.append(index[id(t)])
    sgi = ivec(tflite.SubGraphStartInputsVector, g_in)
    sgo = ivec(tflite.SubGraphStartOutputsVector, [index[id(t)] for t in outputs])
    sgt = ovec(tflite.SubGraphStartTensorsVector, toffs)
    sgops = ovec(tflite.SubGraphStartOperatorsVector, [opo])
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, sgt)
    tflite.SubGraphAddInputs(b, sgi)
    tflite.SubGraphAddOutputs(b, sgo)
    tflite.SubGraphAddOperators(b, sgops)
    sg = tflite.SubGraphEnd(b)
    cc = None if custom_code is None else b.CreateString(custom_code)
    tflite.OperatorCodeStart(b)
    tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
    tflite.OperatorCodeAddBuiltinCode(b, code)
    if cc is not None:
        tflite.OperatorCodeAddCustomCode(b, cc)
    tflite.OperatorCodeAddVersion(b, 1)
    oc = tflite.OperatorCodeEnd(b)
    return finish_model(b, [oc], [sg], bufs, "pymli.testing.tflm_models")


# ---------------------------------------------------------------------------------------------
# drawing helpers

Draft = tuple  # (inputs, outputs, options)
VARIANTS: dict[str, Callable[[np.random.Generator], Draft]] = {}
#: keys whose TFLM interpreter (the pip build, newer than the 90b983c2 reference pymli follows)
#: is known to differ, with the reason; a test expects the difference rather than skipping.
KNOWN: dict[str, str] = {}


def _variant(op: str, *names: str) -> Callable:
    def deco(f: Callable) -> Callable:
        for n in names:
            VARIANTS[f"{op}/{n}"] = (lambda r, _n=n: f(r, _n))
        return f
    return deco


def _dt(name: str) -> np.dtype:
    return {"int8": I8, "int16": I16, "int32": I32, "int64": I64, "float32": F32, "bool": BOOL}[name]


def _scale(r: np.random.Generator, dt: np.dtype, lo: float = -3.0, hi: float = -0.5) -> float:
    """A log-uniform scale; int16 scales are 2**-8 smaller (the same real range)."""
    s = 10.0 ** r.uniform(lo, hi)
    return float(np.float32(s / 256.0 if dt == I16 else s))


def _zp(r: np.random.Generator, dt: np.dtype) -> int:
    return int(r.integers(-128, 128)) if dt == I8 else 0


def _q(r: np.random.Generator, shape: tuple, dt: np.dtype, **kw: Any) -> TensorSpec:
    """A quantised activation tensor with random scale and (int8) zero point."""
    return TensorSpec(tuple(shape), dt, _scale(r, dt), _zp(r, dt), **kw)


def _plain(shape: tuple, dt: np.dtype, **kw: Any) -> TensorSpec:
    return TensorSpec(tuple(shape), np.dtype(dt), **kw)


def _const(data: Any, dt: np.dtype = I32, scale: Any = None, zp: Any = None, qdim: int = 0
           ) -> TensorSpec:
    d = np.asarray(data).astype(dt)
    return TensorSpec(d.shape, np.dtype(dt), scale, zp, data=d, qdim=qdim)


def _like(t: TensorSpec, shape: tuple | None = None, dtype: Any = None) -> TensorSpec:
    """A tensor with ``t``'s quantisation (and dtype unless given)."""
    return TensorSpec(tuple(t.shape if shape is None else shape), np.dtype(dtype or t.dtype),
                      t.scale, t.zp)


def _shape(r: np.random.Generator, rank: int, lo: int = 1, hi: int = 6) -> tuple[int, ...]:
    return tuple(int(v) for v in r.integers(lo, hi + 1, rank))


def _bcast(r: np.random.Generator, max_rank: int = 6) -> tuple[tuple, tuple, tuple]:
    """Two broadcast-compatible shapes (dimensions of 1, possibly a lower rank) and the result."""
    rank = int(r.integers(1, max_rank + 1))
    out = _shape(r, rank, 1, 6 if rank <= 4 else 3)
    a = tuple(1 if r.random() < 0.3 else d for d in out)
    b = tuple(1 if r.random() < 0.3 else d for d in out)
    if r.random() < 0.3:
        b = b[int(r.integers(0, rank)):]
    if r.random() < 0.5:
        a, b = b, a
    full = tuple(max(x, y) for x, y in zip((1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b))
    return a or (1,), b or (1,), full


def _weights(r: np.random.Generator, shape: tuple, nch: int, qdim: int) -> TensorSpec:
    ws = (10.0 ** r.uniform(-3, -1.5, nch)).astype(np.float32)
    return _const(r.integers(-127, 128, shape), I8, ws, 0, qdim=qdim)


def _bias(r: np.random.Generator, n: int, dt: np.dtype, in_s: float, w_s: Any) -> TensorSpec:
    bs = (np.float32(in_s) * np.asarray(w_s, np.float32)).astype(np.float32)
    lim = 1 << {I64: 20, I32: 14, I16: 10}[np.dtype(dt)]
    return _const(r.integers(-lim, lim, n), dt, bs, 0)


def _act_fn(r: np.random.Generator) -> int:
    """NONE, RELU, RELU_N1_TO_1, RELU6."""
    return int(r.choice([0, 0, 1, 2, 3]))


# ---------------------------------------------------------------------------------------------
# elementwise binary operators (broadcasting)

def _binary_maker(op: str, fused: bool) -> Callable:
    def make(r: np.random.Generator, v: str) -> Draft:
        dt = _dt(v)
        sa, sb, so = _bcast(r)
        if dt == I32:
            a, b, o = _plain(sa, dt), _plain(sb, dt), _plain(so, dt)
            if op in ("MUL", "SQUARED_DIFFERENCE"):  # keep products inside int32 (C overflow is UB)
                a = _plain(sa, dt, lo=-40000, hi=40000)
                b = _plain(sb, dt, lo=-40000, hi=40000)
            elif op in ("ADD", "SUB"):
                a = _plain(sa, dt, lo=-(1 << 30), hi=1 << 30)
                b = _plain(sb, dt, lo=-(1 << 30), hi=1 << 30)
            elif op == "DIV":
                b = _plain(sb, dt, lo=1, hi=1000)
        elif op in ("MINIMUM", "MAXIMUM"):
            a = _q(r, sa, dt)
            b, o = _like(a, sb), _like(a, so)
        else:
            a, b, o = _q(r, sa, dt), _q(r, sb, dt), _q(r, so, dt)
            if op == "DIV":
                b = TensorSpec(sb, dt, b.scale, b.zp, lo=b.zp + 1)  # a positive divisor
        opts = {"FusedActivationFunction": _act_fn(r)} if fused else {}
        return [a, b], [o], opts
    return make


for _op, _types, _fused in [("ADD", ("int8", "int16", "int32"), True),
                            ("SUB", ("int8", "int16", "int32"), True),
                            ("MUL", ("int8", "int16", "int32"), True),
                            ("MINIMUM", ("int8", "int16", "int32", "int64"), False),
                            ("MAXIMUM", ("int8", "int16", "int32", "int64"), False),
                            ("SQUARED_DIFFERENCE", ("int8", "int16", "int32"), False),
                            ("DIV", ("int8", "int32"), True)]:
    _variant(_op, *_types)(_binary_maker(_op, _fused))


def _cmp_maker(op: str) -> Callable:
    def make(r: np.random.Generator, v: str) -> Draft:
        dt = _dt(v)
        sa, sb, so = _bcast(r)
        if dt == I8:
            a, b = _q(r, sa, dt), _q(r, sb, dt)
        else:
            a, b = _plain(sa, dt, lo=-20, hi=20), _plain(sb, dt, lo=-20, hi=20)
        return [a, b], [_plain(so, BOOL)], {}
    return make


for _op in ("EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL"):
    _variant(_op, "int8", "int32", *(("bool",) if _op in ("EQUAL", "NOT_EQUAL") else ()))(
        _cmp_maker(_op))


@_variant("LOGICAL_AND", "bool")
@_variant("LOGICAL_OR", "bool")
def _logical(r: np.random.Generator, v: str) -> Draft:
    sa, sb, so = _bcast(r)
    return [_plain(sa, BOOL), _plain(sb, BOOL)], [_plain(so, BOOL)], {}


@_variant("LOGICAL_NOT", "bool")
def _logical_not(r: np.random.Generator, v: str) -> Draft:
    s = _shape(r, int(r.integers(1, 5)))
    return [_plain(s, BOOL)], [_plain(s, BOOL)], {}


# ---------------------------------------------------------------------------------------------
# unary operators and activations

def _unary_shape(r: np.random.Generator) -> tuple:
    return _shape(r, int(r.integers(1, 5)), 1, 9)


def _unary_maker(op: str) -> Callable:
    def make(r: np.random.Generator, v: str) -> Draft:
        dt = _dt(v)
        s = _unary_shape(r)
        x = _q(r, s, dt)
        o = _q(r, s, dt)
        opts: dict = {}
        if op == "RSQRT":
            x = TensorSpec(s, dt, x.scale, x.zp, lo=x.zp)  # non-negative reals
        elif op in ("NEG", "RELU6"):
            o = _like(x)  # TFLM NEG negates raw values; RELU6 clamps them (one quantisation)
        elif op == "HARD_SWISH" and o.scale < x.scale / 128:
            o = TensorSpec(s, dt, float(np.float32(x.scale / 64)), o.zp)  # TFLM: out >= in / 128
        elif op == "LEAKY_RELU":
            opts = {"Alpha": float(np.float32(r.uniform(0.01, 0.9)))}
        elif op == "L2_NORMALIZATION":
            o = TensorSpec(s, dt, 1 / 128, 0)
            opts = {"FusedActivationFunction": 0}
        return [x], [o], opts
    return make


for _op, _types in [("ABS", ("int8", "int16")), ("RSQRT", ("int8", "int16")),
                    ("ELU", ("int8",)), ("HARD_SWISH", ("int8",)), ("RELU", ("int8", "int16")),
                    ("RELU6", ("int8", "int16")), ("LEAKY_RELU", ("int8", "int16")),
                    ("L2_NORMALIZATION", ("int8",))]:
    _variant(_op, *_types)(_unary_maker(_op))


def _sig_maker(op: str) -> Callable:
    def make(r: np.random.Generator, v: str) -> Draft:
        dt = _dt(v)
        s = _unary_shape(r)
        if dt == I8:
            x = _q(r, s, dt, )
            o = TensorSpec(s, dt, 1 / 256, -128) if op == "LOGISTIC" else TensorSpec(s, dt, 1 / 128, 0)
        else:
            # int16: a power-of-two input scale (the common case) or any scale
            xs = 2.0 ** -int(r.integers(9, 14)) if r.random() < 0.5 else _scale(r, dt, -2.5, -0.5)
            x = TensorSpec(s, dt, xs, 0)
            o = TensorSpec(s, dt, 2.0 ** -15, 0)
        return [x], [o], {}
    return make


for _op in ("LOGISTIC", "TANH"):
    _variant(_op, "int8", "int16")(_sig_maker(_op))


@_variant("SOFTMAX", "int8", "int8->int16", "int16")
def _softmax(r: np.random.Generator, v: str) -> Draft:
    s = _shape(r, int(r.integers(1, 5)), 1, 12)
    beta = float(np.float32(r.choice([1.0, r.uniform(0.2, 2.0)])))
    if v == "int16":
        x = TensorSpec(s, I16, _scale(r, I16, -1.5, 0.5), 0)
        o = TensorSpec(s, I16, 1 / 32768, 0)
    else:
        x = _q(r, s, I8, )
        o = TensorSpec(s, I8, 1 / 256, -128) if v == "int8" else TensorSpec(s, I16, 1 / 65536, -32768)
    return [x], [o], {"Beta": beta}


@_variant("LOG_SOFTMAX", "int8")
def _log_softmax(r: np.random.Generator, v: str) -> Draft:
    s = _shape(r, int(r.integers(1, 5)), 1, 12)
    return [_q(r, s, I8)], [TensorSpec(s, I8, 16 / 256, 127)], {}


@_variant("PRELU", "int8", "int16")
def _prelu(r: np.random.Generator, v: str) -> Draft:
    dt = _dt(v)
    s = _shape(r, int(r.integers(2, 5)))
    ashape = tuple(1 if r.random() < 0.4 else d for d in s[1:])
    alpha = _const(r.integers(-128, 128, ashape), I8, _scale(r, I8), int(r.integers(-20, 20)))
    return [_q(r, s, dt), alpha], [_q(r, s, dt)], {}


# ---------------------------------------------------------------------------------------------
# quantisation

_QPAIRS = ["float32->int8", "float32->int16", "int8->int8", "int8->int16", "int8->int32",
           "int16->int8", "int16->int16", "int16->int32", "int32->int8", "int32->int16"]


@_variant("QUANTIZE", *_QPAIRS)
def _quantize(r: np.random.Generator, v: str) -> Draft:
    a, b = (_dt(p) for p in v.split("->"))
    s = _unary_shape(r)
    if a == F32:
        x = _plain(s, F32, lo=-300.0, hi=300.0)
    elif a == I32:
        x = TensorSpec(s, a, _scale(r, I16, -3, -1), 0, lo=-(1 << 20), hi=1 << 20)
    else:
        x = _q(r, s, a)
    o = _q(r, s, b) if b != I32 else TensorSpec(s, b, _scale(r, I16, -4, -2), 0)
    return [x], [o], {}


@_variant("DEQUANTIZE", "int8", "int16")
def _dequantize(r: np.random.Generator, v: str) -> Draft:
    s = _unary_shape(r)
    x = _q(r, s, _dt(v))
    return [x], [_plain(s, F32)], {}


@_variant("CAST", "int8->int16", "int8->int32", "int16->int8", "int16->int32", "int32->int8",
          "int32->int16", "float32->int8", "float32->int32", "int8->float32", "int32->float32",
          "bool->int32", "int32->bool")
def _cast(r: np.random.Generator, v: str) -> Draft:
    a, b = (_dt(p) for p in v.split("->"))
    s = _unary_shape(r)
    x = _plain(s, a, lo=-100000, hi=100000) if a == I32 else _plain(s, a)
    if a == F32:
        x = _plain(s, a, lo=-120.0, hi=120.0)
    return [x], [_plain(s, b)], {}


# ---------------------------------------------------------------------------------------------
# convolutions, fully connected, pooling, batch matmul

def _conv_geom(r: np.random.Generator) -> tuple:
    k = (int(r.integers(1, 4)), int(r.integers(1, 4)))
    stride = (int(r.integers(1, 3)), int(r.integers(1, 3)))
    dil = (1, 1) if r.random() < 0.6 else (int(r.integers(1, 3)), int(r.integers(1, 3)))
    same = bool(r.random() < 0.5)
    eff = ((k[0] - 1) * dil[0] + 1, (k[1] - 1) * dil[1] + 1)
    hw = (int(r.integers(eff[0], 10)), int(r.integers(eff[1], 10)))
    if same:
        ohw = (-(-hw[0] // stride[0]), -(-hw[1] // stride[1]))
    else:
        ohw = ((hw[0] - eff[0]) // stride[0] + 1, (hw[1] - eff[1]) // stride[1] + 1)
    return k, stride, dil, same, hw, ohw


def _act_io(r: np.random.Generator, v: str) -> tuple[np.dtype, np.dtype]:
    """(activation dtype, bias dtype) of ``int8`` / ``16x8`` (int64 bias) / ``16x8_b32`` / ``_b16``."""
    if v == "int8":
        return I8, I32
    return I16, {"16x8_b32": I32, "16x8_b16": I16}.get(v, I64)


@_variant("CONV_2D", "int8", "16x8", "16x8_b32")  # DEPTHWISE 16x8 reads any bias as int64
def _conv2d(r: np.random.Generator, v: str) -> Draft:
    dt, bdt = _act_io(r, v)
    k, stride, dil, same, hw, ohw = _conv_geom(r)
    n, cin, cout = int(r.integers(1, 3)), int(r.integers(1, 5)), int(r.integers(1, 6))
    groups = 1
    x = _q(r, (n, *hw, cin * groups), dt)
    w = _weights(r, (cout, *k, cin), cout if r.random() < 0.8 else 1, 0)
    b = _bias(r, cout, bdt, x.scale, w.scale) if r.random() < 0.85 else None
    o = _q(r, (n, *ohw, cout), dt)
    return [x, w, b], [o], dict(Padding=0 if same else 1, StrideH=stride[0], StrideW=stride[1],
                                DilationHFactor=dil[0], DilationWFactor=dil[1],
                                FusedActivationFunction=_act_fn(r))


@_variant("DEPTHWISE_CONV_2D", "int8", "16x8")
def _dwconv(r: np.random.Generator, v: str) -> Draft:
    dt, bdt = _act_io(r, v)
    k, stride, dil, same, hw, ohw = _conv_geom(r)
    cin, dm = int(r.integers(1, 5)), int(r.integers(1, 3))
    cout = cin * dm
    x = _q(r, (1, *hw, cin), dt)
    w = _weights(r, (1, *k, cout), cout if r.random() < 0.8 else 1, 3)
    b = _bias(r, cout, bdt, x.scale, w.scale)  # the pip interpreter crashes without a bias
    o = _q(r, (1, *ohw, cout), dt)
    return [x, w, b], [o], dict(Padding=0 if same else 1, StrideH=stride[0], StrideW=stride[1],
                                DilationHFactor=dil[0], DilationWFactor=dil[1], DepthMultiplier=dm,
                                FusedActivationFunction=_act_fn(r))


@_variant("TRANSPOSE_CONV", "int8", "16x8", "16x8_b16")
def _tconv(r: np.random.Generator, v: str) -> Draft:
    dt, bdt = _act_io(r, v)
    k = (int(r.integers(1, 4)), int(r.integers(1, 4)))
    stride = (int(r.integers(1, 3)), int(r.integers(1, 3)))
    same = bool(r.random() < 0.5)
    hw = (int(r.integers(1, 6)), int(r.integers(1, 6)))
    if same:
        ohw = (hw[0] * stride[0], hw[1] * stride[1])
    else:
        ohw = ((hw[0] - 1) * stride[0] + k[0], (hw[1] - 1) * stride[1] + k[1])
    cin, cout = int(r.integers(1, 5)), int(r.integers(1, 5))
    x = _q(r, (1, *hw, cin), dt)
    w = _weights(r, (cout, *k, cin), cout, 0)
    b = _bias(r, cout, bdt, x.scale, w.scale) if r.random() < 0.85 else None
    o = _q(r, (1, *ohw, cout), dt)
    return [_const([1, *ohw, cout]), w, x, b], [o], dict(
        Padding=0 if same else 1, StrideH=stride[0], StrideW=stride[1],
        FusedActivationFunction=0)


@_variant("FULLY_CONNECTED", "int8", "16x8", "16x8_b32")
def _fc(r: np.random.Generator, v: str) -> Draft:
    dt, bdt = _act_io(r, v)
    lead = _shape(r, int(r.integers(1, 3)), 1, 4)
    nin, nout = int(r.integers(1, 20)), int(r.integers(1, 9))
    keep = bool(r.random() < 0.5)
    x = _q(r, (*lead, nin), dt)
    per_channel = dt == I8 and r.random() < 0.3
    w = _weights(r, (nout, nin), nout if per_channel else 1, 0)
    b = _bias(r, nout, bdt, x.scale, w.scale if per_channel else w.scale[0]) \
        if r.random() < 0.85 else None
    batch = int(np.prod(lead))
    o = _q(r, (*lead, nout) if keep else (batch, nout), dt)
    return [x, w, b], [o], dict(FusedActivationFunction=_act_fn(r), KeepNumDims=keep)


def _pool_maker(op: str) -> Callable:
    def make(r: np.random.Generator, v: str) -> Draft:
        dt = _dt(v)
        k = (int(r.integers(1, 4)), int(r.integers(1, 4)))
        stride = (int(r.integers(1, 3)), int(r.integers(1, 3)))
        same = bool(r.random() < 0.5)
        hw = (int(r.integers(k[0], 10)), int(r.integers(k[1], 10)))
        ohw = ((-(-hw[0] // stride[0]), -(-hw[1] // stride[1])) if same else
               ((hw[0] - k[0]) // stride[0] + 1, (hw[1] - k[1]) // stride[1] + 1))
        c = int(r.integers(1, 5))
        x = _q(r, (int(r.integers(1, 3)), *hw, c), dt)
        return [x], [_like(x, (x.shape[0], *ohw, c))], dict(
            Padding=0 if same else 1, StrideH=stride[0], StrideW=stride[1], FilterHeight=k[0],
            FilterWidth=k[1], FusedActivationFunction=_act_fn(r))
    return make


for _op in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
    _variant(_op, "int8", "int16")(_pool_maker(_op))


@_variant("BATCH_MATMUL", "int8", "int16")
def _batch_matmul(r: np.random.Generator, v: str) -> Draft:
    dt = _dt(v)
    m, kk, n = (int(x) for x in r.integers(1, 7, 3))
    ba, bb, bo = _bcast(r, 2)
    adj_x, adj_y = bool(r.random() < 0.5), bool(r.random() < 0.5)
    a = _q(r, (*ba, *((kk, m) if adj_x else (m, kk))), dt)
    b = _q(r, (*bb, *((n, kk) if adj_y else (kk, n))), dt)
    o = _q(r, (*bo, m, n), dt)
    if dt == I16:
        o = TensorSpec(o.shape, dt, float(np.float32(a.scale * b.scale * 2000)), 0)
    return [a, b], [o], dict(AdjX=adj_x, AdjY=adj_y)


# ---------------------------------------------------------------------------------------------
# reductions

def _axes(r: np.random.Generator, rank: int) -> list[int]:
    n = int(r.integers(1, rank + 1))
    axes = sorted(int(a) for a in r.choice(rank, n, replace=False))
    return [a - rank if r.random() < 0.3 else a for a in axes]


def _reduce_maker(op: str) -> Callable:
    def make(r: np.random.Generator, v: str) -> Draft:
        dt = _dt(v)
        rank = int(r.integers(1, 5))
        s = _shape(r, rank)
        axes = _axes(r, rank)
        keep = bool(r.random() < 0.5)
        red = {a % rank for a in axes}
        os_ = tuple(1 if i in red else d for i, d in enumerate(s)) if keep else \
            tuple(d for i, d in enumerate(s) if i not in red)
        x = _q(r, s, dt)
        o = _like(x, os_ or (1,)) if op in ("REDUCE_MAX", "REDUCE_MIN") else _q(r, os_ or (1,), dt)
        if not os_:
            o = TensorSpec((), o.dtype, o.scale, o.zp)
        return [x, _const(axes)], [o], {"KeepDims": keep}
    return make


for _op, _types in [("MEAN", ("int8", "int16")), ("SUM", ("int8", "int16")),
                    ("REDUCE_MAX", ("int8",)), ("REDUCE_MIN", ("int8",))]:
    _variant(_op, *_types)(_reduce_maker(_op))


def _one_axis(r: np.random.Generator, v: str) -> tuple[np.dtype, int, tuple[int, ...], int]:
    """dtype, rank, shape and one axis (negative allowed) of an operator along an axis."""
    dt = _dt(v)
    rank = int(r.integers(1, 5))
    return dt, rank, _shape(r, rank), int(r.integers(-rank, rank))


@_variant("ARG_MAX", "int8")
@_variant("ARG_MIN", "int8")
def _argminmax(r: np.random.Generator, v: str) -> Draft:
    dt, rank, s, ax = _one_axis(r, v)
    x = _q(r, s, dt) if dt == I8 else _plain(s, dt, lo=-50, hi=50)
    os_ = tuple(d for i, d in enumerate(s) if i != ax % rank)
    return [x, _const([ax])], [_plain(os_ or (1,), I32)], {"OutputType": tflite.TensorType.INT32}


@_variant("CUMSUM", "int8")
def _cumsum(r: np.random.Generator, v: str) -> Draft:
    dt, rank, s, ax = _one_axis(r, v)
    if dt == I8:
        x = _q(r, s, dt)
        o = TensorSpec(s, dt, float(np.float32(x.scale * r.uniform(1, 6))), _zp(r, dt))
    else:
        x, o = _plain(s, dt, lo=-(1 << 20), hi=1 << 20), _plain(s, dt)
    return [x, _const([ax])], [o], dict(Exclusive=bool(r.random() < 0.5), Reverse=bool(r.random() < 0.5))


@_variant("ADD_N", "int8")
def _add_n(r: np.random.Generator, v: str) -> Draft:
    s = _unary_shape(r)
    x = _q(r, s, I8)
    n = int(r.integers(2, 5))
    return [_like(x) for _ in range(n)], [_q(r, s, I8)], {}


# ---------------------------------------------------------------------------------------------
# shape and data movement

_MOVE = ("int8", "int16", "int32")


def _data(r: np.random.Generator, s: tuple, dt: np.dtype) -> TensorSpec:
    return _q(r, s, dt) if dt in (I8, I16) else _plain(s, dt)


def _reshape_maker(op: str) -> Callable:
    def make(r: np.random.Generator, v: str) -> Draft:
        dt = _dt(v)
        s = tuple(1 if r.random() < 0.3 else d for d in _shape(r, int(r.integers(1, 5))))
        x = _data(r, s, dt)
        if op == "RESHAPE":
            os_ = tuple(int(d) for d in r.permutation(s))
            return [x, _const(list(os_))], [_like(x, os_)], {}
        if op == "SQUEEZE":
            ones = [i for i, d in enumerate(s) if d == 1]
            sq = [i for i in ones if r.random() < 0.7] if ones else []
            os_ = tuple(d for i, d in enumerate(s) if (i not in sq if sq else d != 1))
            return [x], [_like(x, os_)], {"SqueezeDims": sq}
        ax = int(r.integers(-len(s) - 1, len(s) + 1))
        os_ = list(s)
        os_.insert(ax % (len(s) + 1), 1)
        return [x, _const([ax])], [_like(x, tuple(os_))], {}
    return make


for _op in ("RESHAPE", "SQUEEZE"):
    _variant(_op, *_MOVE, "int64", "bool")(_reshape_maker(_op))
_variant("EXPAND_DIMS", "int8", "int16")(_reshape_maker("EXPAND_DIMS"))


@_variant("SHAPE", *_MOVE, "int64")
def _shape_op(r: np.random.Generator, v: str) -> Draft:
    s = _unary_shape(r)
    return [_data(r, s, _dt(v))], [_plain((len(s),), I32)], {"OutType": tflite.TensorType.INT32}


@_variant("TRANSPOSE", "int8", "int16")
def _transpose(r: np.random.Generator, v: str) -> Draft:
    s = _shape(r, int(r.integers(1, 6)))
    p = [int(i) for i in r.permutation(len(s))]
    x = _data(r, s, _dt(v))
    return [x, _const(p)], [_like(x, tuple(s[i] for i in p))], {}


@_variant("PACK", *_MOVE, "int64")
def _pack(r: np.random.Generator, v: str) -> Draft:
    s = _shape(r, int(r.integers(1, 4)))
    n = int(r.integers(1, 4))
    x = _data(r, s, _dt(v))
    ax = int(r.integers(-len(s) - 1, len(s) + 1))
    os_ = list(s)
    os_.insert(ax % (len(s) + 1), n)
    return [_like(x) for _ in range(n)], [_like(x, tuple(os_))], dict(ValuesCount=n, Axis=ax)


@_variant("UNPACK", *_MOVE)
def _unpack(r: np.random.Generator, v: str) -> Draft:
    s = _shape(r, int(r.integers(1, 5)))
    x = _data(r, s, _dt(v))
    ax = int(r.integers(-len(s), len(s)))
    os_ = tuple(d for i, d in enumerate(s) if i != ax % len(s))
    n = s[ax]
    return [x], [_like(x, os_) for _ in range(n)], dict(Num=n, Axis=ax)


def _split_maker(op: str) -> Callable:
    def make(r: np.random.Generator, v: str) -> Draft:
        rank = int(r.integers(1, 5))
        ax = int(r.integers(-rank, rank))
        n = int(r.integers(1, 4))
        s = list(_shape(r, rank))
        if op == "SPLIT":
            s[ax] = n * int(r.integers(1, 4))
            sizes = [s[ax] // n] * n
        else:
            sizes = [int(v) for v in r.integers(1, 4, n)]  # TFLM: an empty part is a dynamic tensor
            s[ax] = sum(sizes)
        x = _data(r, tuple(s), _dt(v))
        outs = []
        for k in sizes:
            os_ = list(s)
            os_[ax] = k
            outs.append(_like(x, tuple(os_)))
        if op == "SPLIT":
            return [_const([ax]), x], outs, {"NumSplits": n}
        given = list(sizes)
        if r.random() < 0.4:
            given[int(r.integers(0, n))] = -1
        return [x, _const(given), _const([ax])], outs, {"NumSplits": n}
    return make


for _op in ("SPLIT", "SPLIT_V"):
    _variant(_op, *_MOVE)(_split_maker(_op))


@_variant("CONCATENATION", "int8", "int16", "int32", "int64", "bool")
def _concat(r: np.random.Generator, v: str) -> Draft:
    dt = _dt(v)
    rank = int(r.integers(1, 5))
    ax = int(r.integers(-rank, rank))
    n = int(r.integers(1, 4))
    base = list(_shape(r, rank))
    first = _data(r, tuple(base), dt) if dt != I64 else _plain(tuple(base), dt, lo=-1 << 40, hi=1 << 40)
    ins = []
    total = 0
    for _ in range(n):
        s = list(base)
        s[ax] = int(r.integers(1, 4))
        total += s[ax]
        if dt == I64:
            ins.append(_plain(tuple(s), dt, lo=-1 << 40, hi=1 << 40))
        elif dt == I16:  # TFLM copies int16 raw values whatever the scales (zero points 0)
            ins.append(_q(r, tuple(s), dt))
        else:  # int8: TFLM requires the output's scale and zero point on every input
            ins.append(_like(first, tuple(s)))
    base[ax] = total
    return ins, [_like(first, tuple(base)) if dt != I64 else _plain(tuple(base), dt)], {
        "Axis": ax, "FusedActivationFunction": 0}


def _pad_maker(op: str) -> Callable:
    def make(r: np.random.Generator, v: str) -> Draft:
        dt = _dt(v)
        s = _shape(r, int(r.integers(1, 5)))
        pads = r.integers(0, 3, (len(s), 2))
        x = _data(r, s, dt)
        os_ = tuple(int(d + p.sum()) for d, p in zip(s, pads))
        ins = [x, _const(pads)]
        if op == "PADV2":
            info = np.iinfo(dt)
            ins.append(_const([int(r.integers(max(info.min, -1000), min(info.max, 1000)))], dt,
                              x.scale, x.zp))
        return ins, [_like(x, os_)], {}
    return make


for _op in ("PAD", "PADV2"):
    _variant(_op, "int8", "int16", "int32")(_pad_maker(_op))


@_variant("MIRROR_PAD", "int8")
def _mirror_pad(r: np.random.Generator, v: str) -> Draft:
    dt = _dt(v)
    s = _shape(r, int(r.integers(1, 5)), 2, 6)
    mode = int(r.integers(0, 2))  # REFLECT, SYMMETRIC
    lim = np.asarray(s) - (1 if mode == 0 else 0)
    pads = np.stack([r.integers(0, lim + 1), r.integers(0, lim + 1)], axis=1)
    x = _data(r, s, dt)
    return [x, _const(pads)], [_like(x, tuple(int(d + p.sum()) for d, p in zip(s, pads)))], {"Mode": mode}


@_variant("SLICE", *_MOVE, "bool")
def _slice(r: np.random.Generator, v: str) -> Draft:
    s = _shape(r, int(r.integers(1, 5)))
    begin = [int(r.integers(0, d)) for d in s]
    size = [int(r.integers(1, d - b + 1)) if r.random() < 0.8 else -1 for d, b in zip(s, begin)]
    os_ = tuple(d - b if k == -1 else k for d, b, k in zip(s, begin, size))
    x = _data(r, s, _dt(v))
    return [x, _const(begin), _const(size)], [_like(x, os_)], {}


@_variant("STRIDED_SLICE", *_MOVE, "bool")
def _strided_slice(r: np.random.Generator, v: str) -> Draft:
    rank = int(r.integers(1, 5))
    s = _shape(r, rank, 1, 8)
    begin, end, strides = [], [], []
    bm = em = sm = 0
    for i, d in enumerate(s):
        st = int(r.choice([1, 1, 2, 3, -1, -2]))
        b = int(r.integers(-d, d))
        e = int(r.integers(-d - 1, d + 1))
        begin.append(b)
        end.append(e)
        strides.append(st)
        if r.random() < 0.25:
            bm |= 1 << i
        if r.random() < 0.25:
            em |= 1 << i
        if r.random() < 0.15 and not (bm >> i) & 1:
            sm |= 1 << i
            strides[-1] = 1
    x = np.zeros(s)
    idx = []
    for i in range(rank):
        if (sm >> i) & 1:
            idx.append(begin[i])
        else:
            idx.append(slice(None if (bm >> i) & 1 else begin[i],
                             None if (em >> i) & 1 else end[i], strides[i]))
    os_ = x[tuple(idx)].shape
    if 0 in os_:
        return _strided_slice(r, v)
    xs = _data(r, s, _dt(v))
    return [xs, _const(begin), _const(end), _const(strides)], [_like(xs, os_)], dict(
        BeginMask=bm, EndMask=em, ShrinkAxisMask=sm)


@_variant("GATHER", "int8")
def _gather(r: np.random.Generator, v: str) -> Draft:
    s = _shape(r, int(r.integers(1, 4)))
    ax = int(r.integers(-len(s), len(s)))
    ishape = _shape(r, int(r.integers(1, 3)), 1, 4)
    idx = r.integers(0, s[ax], ishape)
    x = _data(r, s, _dt(v))
    a = ax % len(s)
    return [x, _const(idx)], [_like(x, s[:a] + ishape + s[a + 1:])], dict(Axis=ax, BatchDims=0)


@_variant("GATHER_ND", "int8")
def _gather_nd(r: np.random.Generator, v: str) -> Draft:
    s = _shape(r, int(r.integers(1, 4)))
    k = int(r.integers(1, len(s) + 1))
    n = int(r.integers(1, 5))
    idx = np.stack([r.integers(0, d, n) for d in s[:k]], axis=1)
    x = _data(r, s, _dt(v))
    return [x, _const(idx)], [_like(x, (n,) + s[k:])], {}


@_variant("REVERSE_V2", *_MOVE)
def _reverse(r: np.random.Generator, v: str) -> Draft:
    s = _shape(r, int(r.integers(1, 5)))
    first = int(r.integers(0, len(s)))
    axes = list(range(first, int(r.integers(first + 1, len(s) + 1))))  # TFLM: contiguous axes only
    x = _data(r, s, _dt(v))
    return [x, _const(axes)], [_like(x)], {}


@_variant("DEPTH_TO_SPACE", "int8")
def _d2s(r: np.random.Generator, v: str) -> Draft:
    bs = int(r.integers(1, 4))
    n, h, w, c = int(r.integers(1, 3)), int(r.integers(1, 4)), int(r.integers(1, 4)), int(r.integers(1, 3))
    x = _q(r, (n, h, w, c * bs * bs), I8)
    return [x], [_like(x, (n, h * bs, w * bs, c))], {"BlockSize": bs}


@_variant("SPACE_TO_DEPTH", "int8")
def _s2d(r: np.random.Generator, v: str) -> Draft:
    bs = int(r.integers(1, 4))
    n, h, w, c = int(r.integers(1, 3)), int(r.integers(1, 4)), int(r.integers(1, 4)), int(r.integers(1, 3))
    x = _q(r, (n, h * bs, w * bs, c), I8)
    return [x], [_like(x, (n, h, w, c * bs * bs))], {"BlockSize": bs}


@_variant("SPACE_TO_BATCH_ND", "int8")
def _s2b(r: np.random.Generator, v: str) -> Draft:
    bs = [int(r.integers(1, 4)), int(r.integers(1, 4))]
    n, c = int(r.integers(1, 3)), int(r.integers(1, 3))
    hw = [bs[0] * int(r.integers(1, 4)), bs[1] * int(r.integers(1, 4))]
    x = _q(r, (n, *hw, c), I8)
    # no padding: TFLM micro pads with an uninitialised value (see docs/tflm_ops.md)
    return [x, _const(bs), _const(np.zeros((2, 2)))], [
        _like(x, (n * bs[0] * bs[1], hw[0] // bs[0], hw[1] // bs[1], c))], {}


@_variant("BATCH_TO_SPACE_ND", "int8")
def _b2s(r: np.random.Generator, v: str) -> Draft:
    bs = [int(r.integers(1, 4)), int(r.integers(1, 4))]
    n, c, h, w = int(r.integers(1, 3)), int(r.integers(1, 3)), int(r.integers(1, 4)), int(r.integers(1, 4))
    crops = np.array([[int(r.integers(0, bs[0])) if h * bs[0] > bs[0] else 0, 0],
                      [0, int(r.integers(0, bs[1])) if w * bs[1] > bs[1] else 0]])
    x = _q(r, (n * bs[0] * bs[1], h, w, c), I8)
    oh, ow = h * bs[0] - crops[0].sum(), w * bs[1] - crops[1].sum()
    return [x, _const(bs), _const(crops)], [_like(x, (n, int(oh), int(ow), c))], {}


def _resize_maker(op: str) -> Callable:
    def make(r: np.random.Generator, v: str) -> Draft:
        n, h, w, c = int(r.integers(1, 3)), int(r.integers(1, 6)), int(r.integers(1, 6)), int(r.integers(1, 3))
        size = [int(r.integers(1, 12)), int(r.integers(1, 12))]
        x = _data(r, (n, h, w, c), _dt(v))
        mode = int(r.integers(0, 3))  # plain, align corners, half pixel centres
        return [x, _const(size)], [_like(x, (n, *size, c))], dict(
            AlignCorners=mode == 1, HalfPixelCenters=mode == 2)
    return make


_variant("RESIZE_NEAREST_NEIGHBOR", "int8", "int16")(_resize_maker("RESIZE_NEAREST_NEIGHBOR"))
_variant("RESIZE_BILINEAR", "int8")(_resize_maker("RESIZE_BILINEAR"))


@_variant("SELECT_V2", "int8", "int16")
def _select(r: np.random.Generator, v: str) -> Draft:
    dt = _dt(v)
    sa, sb, so = _bcast(r)
    sc = tuple(1 if r.random() < 0.3 else d for d in so)
    x = _data(r, sa, dt)
    return [_plain(sc, BOOL), x, _like(x, sb)], [_like(x, so)], {}


@_variant("ZEROS_LIKE", "int8", "int32", "int64")
def _zeros_like(r: np.random.Generator, v: str) -> Draft:
    s = _unary_shape(r)
    dt = _dt(v)
    x = _plain(s, dt) if dt != I8 else _q(r, s, dt)
    return [x], [_like(x)], {}


@_variant("FILL", "int8", "int32")
def _fill(r: np.random.Generator, v: str) -> Draft:
    dt = _dt(v)
    s = _unary_shape(r)
    val = _const(np.array(int(r.integers(-100, 100))), dt)  # a scalar
    return [_const(list(s)), val], [_plain(s, dt)], {}


@_variant("BROADCAST_TO", "int8", "int16", "int32", "int64")
def _broadcast_to(r: np.random.Generator, v: str) -> Draft:
    sa, _, so = _bcast(r, 4)  # TFLM refuses 5-D and 6-D
    x = _data(r, sa, _dt(v))
    return [x, _const(list(so))], [_like(x, so)], {}


@_variant("BROADCAST_ARGS", "int32")
def _broadcast_args(r: np.random.Generator, v: str) -> Draft:
    sa, sb, so = _bcast(r)
    return [_const(list(sa)), _const(list(sb))], [_plain((len(so),), I32)], {}


@_variant("DYNAMIC_UPDATE_SLICE", "int8", "int16", "int32")
def _dus(r: np.random.Generator, v: str) -> Draft:
    dt = _dt(v)
    s = _shape(r, int(r.integers(1, 5)))
    us = tuple(int(r.integers(1, d + 1)) for d in s)
    x = _data(r, s, dt)
    start = _plain((len(s),), I32, lo=-2, hi=max(s) + 1)  # clamped into range by the kernel
    return [x, _like(x, us), start], [_like(x)], {}


@_variant("EMBEDDING_LOOKUP", "int8", "int8->float32")
def _embedding(r: np.random.Generator, v: str) -> Draft:
    rows = int(r.integers(1, 8))
    s = (rows,) + _shape(r, int(r.integers(1, 3)), 1, 5)
    n = int(r.integers(1, 6))
    ids = _plain((n,), I32, lo=0, hi=rows - 1)
    if v == "int8":
        x = _q(r, s, I8)
        return [ids, x], [_like(x, (n,) + s[1:])], {}
    w = _const(r.integers(-127, 128, s), I8, (10.0 ** r.uniform(-3, -1, rows)).astype(np.float32), 0)
    return [ids, w], [_plain((n,) + s[1:], F32)], {}


# ---------------------------------------------------------------------------------------------
# stateful operators

@_variant("SVDF", "int8", "int8_state16")
def _svdf(r: np.random.Generator, v: str) -> Draft:
    sdt = I16 if v.endswith("16") else I8
    n_in, rank, nu, nm, nb = (int(r.integers(1, 7)), int(r.integers(1, 3)), int(r.integers(1, 4)),
                              int(r.integers(1, 6)), int(r.integers(1, 3)))
    nf = rank * nu
    s_state, s_wt = _scale(r, I8, -2.5, -1), _scale(r, I8, -3, -1.5)
    x = _q(r, (nb, n_in), I8)
    wf = _const(r.integers(-127, 128, (nf, n_in)), I8, _scale(r, I8, -3, -1.5), 0)
    lim = 128 if sdt == I8 else 32767
    wt = _const(r.integers(-lim + 1, lim, (nf, nm)), sdt, s_wt, 0)
    b = _const(r.integers(-300, 300, nu), I32, np.float32(s_state) * np.float32(s_wt), 0)
    st = TensorSpec((nb, nf * nm), sdt, s_state, _zp(r, sdt), variable=True)
    return [x, wf, wt, b, st], [_q(r, (nb, nu), I8)], dict(Rank=rank, FusedActivationFunction=int(
        r.choice([0, 1])))


@_variant("UNIDIRECTIONAL_SEQUENCE_LSTM", "int8", "16x8")
def _lstm(r: np.random.Generator, v: str) -> Draft:
    wide = v == "16x8"
    dt, bdt = (I16, I64) if wide else (I8, I32)
    nb, nt, ni, ns = (int(x) for x in r.integers(1, 5, 4))
    time_major = bool(r.random() < 0.5)
    x = _q(r, (nt, nb, ni) if time_major else (nb, nt, ni), dt)
    w_in = [_const(r.integers(-127, 128, (ns, ni)), I8, _scale(r, I8, -2.5, -1.5), 0) for _ in range(4)]
    w_rec = [_const(r.integers(-127, 128, (ns, ns)), I8, _scale(r, I8, -2.5, -1.5), 0) for _ in range(4)]
    bias = [_const(r.integers(-3000, 3000, ns), bdt, 0.0001, 0) for _ in range(4)]
    h = _q(r, (nb, ns), dt, variable=True)
    c = TensorSpec((nb, ns), I16, 2.0 ** -int(r.integers(10, 13)), 0, variable=True)
    o = _like(h, x.shape[:2] + (ns,))
    ins = [x, *w_in, *w_rec, None, None, None, *bias, None, None, h, c, None, None, None, None]
    clip = float(r.choice([0.0, 2.0, 3.0]))
    return ins, [o], dict(FusedActivationFunction=4, CellClip=clip, ProjClip=0.0, TimeMajor=time_major)


#: builtin operators the TFLM Python op resolver registers that have no generated integer model,
#: with the reason (every other registered builtin has at least one key in VARIANTS)
NOT_GENERATED: dict[str, str] = {
    **{op: "float32 only in TFLM" for op in (
        "CEIL", "COS", "EXP", "FLOOR", "FLOOR_DIV", "FLOOR_MOD", "L2_POOL_2D", "LOG", "NEG", "ROUND",
        "SIN", "SQRT", "SQUARE")},
    **{op: "resource variables / control flow, no arithmetic" for op in (
        "ASSIGN_VARIABLE", "READ_VARIABLE", "VAR_HANDLE", "CALL_ONCE", "IF", "WHILE")},
    "DETECTION_POSTPROCESS": "CUSTOM operator (flexbuffer options), float32 output: not ported",
    "DECODE": "TFLM's weight decompression operator: not ported",
    "REDUCE_ALL": "not registered by the 90b983c2 reference build pymli follows",
    "SELECT": "the pip resolver registers SELECT_V2 only (pymli handles both the same way)",
}

KNOWN.update({
    "LEAKY_RELU/int16": "the pip interpreter's int16 LEAKY_RELU rounds differently from 90b983c2 "
                        "(shared/tflite_golden README)",
    **{f"{op}/{t}": f"the pip interpreter computes {op}'s rescale factor in double, 90b983c2 (which "
                    "pymli follows) in float32: 1 LSB on a few values"
       for op in ("ABS", "RELU", "RSQRT") for t in ("int8", "int16")},
    "SUB/int16": "the pip interpreter's int16 SUB rounds differently from 90b983c2 "
                 "(shared/tflite_golden README)",
})


# ---------------------------------------------------------------------------------------------
# generation and running

def _draw(t: TensorSpec, r: np.random.Generator) -> np.ndarray:
    if t.dtype == BOOL:
        return r.random(t.shape) < 0.5
    if t.dtype == F32:
        lo = -8.0 if t.lo is None else t.lo
        hi = 8.0 if t.hi is None else t.hi
        return r.uniform(lo, hi, t.shape).astype(np.float32)
    info = np.iinfo(t.dtype)
    lo = int(info.min) if t.lo is None else max(int(t.lo), int(info.min))
    hi = int(info.max) if t.hi is None else min(int(t.hi), int(info.max))
    return r.integers(lo, hi + 1, t.shape, dtype=np.int64).astype(t.dtype)


def generate(key: str, seed: int, invokes: int = 3) -> OpModel:
    """Draw one model of ``key`` and the graph inputs of ``invokes`` Invokes.

    Args:
        key: ``"OP/variant"``, a key of :data:`VARIANTS`.
        seed: seed of the NumPy generator (the same seed gives the same model and data).
        invokes: number of Invokes to draw inputs for.

    Returns:
        the :class:`OpModel`.

    Raises:
        KeyError: unknown key.
    """
    r = np.random.default_rng([seed, sum(key.encode())])
    ins, outs, opts = VARIANTS[key](r)
    op = key.split("/")[0]
    live = []
    for t in ins:
        if t is not None and t.data is None and not t.variable and all(t is not u for u in live):
            live.append(t)
    feeds = tuple(tuple(_draw(t, r) for t in live) for _ in range(invokes))
    return OpModel(key, seed, op, tuple(ins), tuple(outs), dict(opts), feeds,
                   single_op(op, ins, outs, opts))


def run_tflm(m: OpModel) -> list[list[np.ndarray]]:
    """Run ``m`` through the TFLite Micro Python interpreter (reference kernels).

    Args:
        m: the generated model.

    Returns:
        per Invoke, the outputs (variable tensors carry over successive Invokes).

    Raises:
        ImportError: the ``tflite_micro`` package is not installed.
        RuntimeError: the interpreter refused the model.
    """
    # optional test dependency: imported only when the oracle is asked for
    from tflite_micro.python.tflite_micro import runtime

    ip = runtime.Interpreter.from_bytes(m.model, arena_size=1 << 21)
    res = []
    for feed in m.feeds:
        for i, x in enumerate(feed):
            ip.set_input(x, i)
        ip.invoke()
        res.append([np.array(ip.get_output(j)) for j in range(len(m.outputs))])
    return res


def run_pymli(m: OpModel) -> list[list[np.ndarray]]:
    """Run ``m`` through :mod:`pymli.tflm` handlers (state carried as TFLM's Invokes do).

    Args:
        m: the generated model.

    Returns:
        per Invoke, the outputs in their own dtype and shape.

    Raises:
        MliError: the handler refuses the operator or its types.
    """
    g = tflm_golden.read_graph(m.model)
    state: dict[int, np.ndarray] = {}
    res = []
    for feed in m.feeds:
        vals = tflm_golden.run_graph(g, list(feed), state=state)
        res.append([vals[i] for i in g.outputs])
    return res


def compare(m: OpModel, tolerance: int = 0) -> str:
    """Both runs of ``m``; the empty string when equal (whole buffers, dtype and shape), else why.

    Args:
        m: the generated model.
        tolerance: largest absolute difference accepted (0: bit-exact; 1 checks that a known
            difference of the pip interpreter stays within one LSB).

    Returns:
        ``""`` or a description of the first difference.
    """
    want, got = run_tflm(m), run_pymli(m)
    for k, (w_outs, g_outs) in enumerate(zip(want, got)):
        for j, (w, g) in enumerate(zip(w_outs, g_outs)):
            g = np.asarray(g)
            if g.dtype != w.dtype:
                return f"invoke {k} output {j}: dtype {g.dtype} != {w.dtype}"
            if g.size != w.size:
                return f"invoke {k} output {j}: shape {g.shape} != {w.shape}"
            g = g.reshape(w.shape)
            if w.dtype == BOOL or w.dtype == F32:
                bad = ~((g == w) | (np.isnan(g) & np.isnan(w))) if w.dtype == F32 else g != w
                d = bad.astype(np.float64)
            else:
                d = np.abs(g.astype(np.int64) - w.astype(np.int64)).astype(np.float64)
                bad = d > tolerance
            if bad.any():
                return (f"invoke {k} output {j}: {int((d > 0).sum())}/{w.size} differ, max diff "
                        f"{float(d.max())}")
    return ""


def _check_keys(keys: list[str], seeds: range) -> int:
    bad = 0
    for key in keys:
        for seed in seeds:
            m = generate(key, seed)
            try:
                why = compare(m)
            except Exception as e:  # noqa: BLE001 - a longer run reports every failure
                why = f"{type(e).__name__}: {e}"
            if why:
                bad += 1
                print(f"{key} seed {seed}: {why}" + (f" [known: {KNOWN[key]}]" if key in KNOWN else ""),
                      flush=True)
    return bad


def main(argv: list[str] | None = None) -> int:
    """Longer run: ``python -m pymli.testing.tflm_models [--seeds N] [--start S] [KEY ...]``.

    Each key runs in a child process (a model that crashes the interpreter is reported, the run
    goes on); prints every difference and a summary; exit status 1 if any.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    seeds, start, child = 20, 0, "--child" in args
    if child:
        args.remove("--child")
    if "--seeds" in args:
        i = args.index("--seeds")
        seeds = int(args[i + 1])
        del args[i:i + 2]
    if "--start" in args:
        i = args.index("--start")
        start = int(args[i + 1])
        del args[i:i + 2]
    keys = args or sorted(VARIANTS)
    if child:
        return 1 if _check_keys(keys, range(start, start + seeds)) else 0
    # a child process per key: the interpreter may crash on a model (optional tool, stdlib only)
    import subprocess

    bad_keys = []
    for key in keys:
        p = subprocess.run([sys.executable, "-m", "pymli.testing.tflm_models", "--child", "--seeds",
                            str(seeds), "--start", str(start), key], capture_output=True, text=True)
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith(key + " ")]
        if lines:
            print("\n".join(lines), flush=True)
        if p.returncode not in (0, 1):
            print(f"{key}: the run ended with status {p.returncode} (a crash of the interpreter)",
                  flush=True)
        if p.returncode:
            bad_keys.append(key)
    print(f"{len(keys) - len(bad_keys)} of {len(keys)} keys equal on seeds {start}..{start + seeds - 1}"
          + (f"; differ: {' '.join(bad_keys)}" if bad_keys else ""))
    return 1 if bad_keys else 0


if __name__ == "__main__":
    raise SystemExit(main())
