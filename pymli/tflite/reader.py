"""Defensive reader of TFLite flatbuffers into plain Python objects (no TensorFlow).

Uses the generated schema classes of the ``tflite`` PyPI package and ``flatbuffers``. A flatbuffer
is trusted by those classes: a corrupted offset or length raises whatever Python error happens
(``IndexError``, ``struct.error``, ...) or asks for a gigantic vector. Here every vector length is
bounded by the size of the buffer before anything loops over it, and any error while decoding is
turned into :class:`~pymli.tflite.errors.TfliteFormatError`.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

import numpy as np

from .errors import TfliteFormatError

__all__ = ["TensorInfo", "OpInfo", "ModelInfo", "read_model", "OP_NAMES", "TYPE_NAMES"]


def _enum_names(cls: Any) -> dict[int, str]:
    return {v: k for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


def _tfl() -> Any:
    try:  # imported on first use: pymli.tflite.errors and the CLI load without the package
        import tflite
        from tflite import ActivationFunctionType, BuiltinOperator, Model, Padding, TensorType  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("pymli.tflite needs the 'tflite' and 'flatbuffers' packages: "
                          "pip install 'tflite>=2.18' 'flatbuffers>=23'") from e
    return tflite


tflite = _tfl()
from tflite.ActivationFunctionType import ActivationFunctionType
from tflite.BuiltinOperator import BuiltinOperator
from tflite.Model import Model
from tflite.Padding import Padding
from tflite.TensorType import TensorType

OP_NAMES = _enum_names(BuiltinOperator)
TYPE_NAMES = _enum_names(TensorType)
ACT_NAMES = _enum_names(ActivationFunctionType)
PAD_NAMES = _enum_names(Padding)

#: options table class and the scalar fields read from it, per builtin operator name
_OPTION_FIELDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "CONV_2D": ("Conv2DOptions", ("Padding", "StrideW", "StrideH", "FusedActivationFunction",
                                  "DilationWFactor", "DilationHFactor")),
    "DEPTHWISE_CONV_2D": ("DepthwiseConv2DOptions", ("Padding", "StrideW", "StrideH", "DepthMultiplier",
                                                     "FusedActivationFunction", "DilationWFactor",
                                                     "DilationHFactor")),
    "FULLY_CONNECTED": ("FullyConnectedOptions", ("FusedActivationFunction", "WeightsFormat", "KeepNumDims")),
    "AVERAGE_POOL_2D": ("Pool2DOptions", ("Padding", "StrideW", "StrideH", "FilterWidth", "FilterHeight",
                                          "FusedActivationFunction")),
    "MAX_POOL_2D": ("Pool2DOptions", ("Padding", "StrideW", "StrideH", "FilterWidth", "FilterHeight",
                                      "FusedActivationFunction")),
    "TRANSPOSE_CONV": ("TransposeConvOptions", ("Padding", "StrideW", "StrideH", "FusedActivationFunction")),
    "ADD": ("AddOptions", ("FusedActivationFunction",)),
    "SUB": ("SubOptions", ("FusedActivationFunction",)),
    "MUL": ("MulOptions", ("FusedActivationFunction",)),
    "SOFTMAX": ("SoftmaxOptions", ("Beta",)),
    "CONCATENATION": ("ConcatenationOptions", ("Axis", "FusedActivationFunction")),
    "LEAKY_RELU": ("LeakyReluOptions", ("Alpha",)),
    "ARG_MAX": ("ArgMaxOptions", ("OutputType",)),
    "L2_NORMALIZATION": ("L2NormOptions", ("FusedActivationFunction",)),
}
_OPTION_VECTORS = {"RESHAPE": ("ReshapeOptions", "NewShape"), "SQUEEZE": ("SqueezeOptions", "SqueezeDims")}
_DTYPES = {"INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64, "UINT8": np.uint8,
           "FLOAT32": np.float32, "FLOAT64": np.float64, "BOOL": np.bool_}


@dataclasses.dataclass
class TensorInfo:
    """One tensor of the subgraph.

    Attributes:
        index: tensor index; name; shape (TFLite order, batch first); type (``INT8``, ...).
        data: constant contents (from its buffer) shaped as ``shape``, or None for activations; raw
            bytes for packed types (INT4 ...) and sparse tensors.
        sparse: the tensor carries TFLite sparsity metadata.
        scale, zero_point: float / int arrays (empty when not quantised); qdim: quantised dimension.
    """

    index: int
    name: str
    shape: tuple[int, ...]
    type: str
    data: np.ndarray | None
    scale: np.ndarray
    zero_point: np.ndarray
    qdim: int
    sparse: bool = False

    @property
    def is_const(self) -> bool:
        """Whether the tensor has data in the model (a constant)."""
        return self.data is not None

    @property
    def quantized(self) -> bool:
        """Whether the tensor has quantisation scales."""
        return self.scale.size > 0

    @property
    def per_channel(self) -> bool:
        """Whether it has more than one scale."""
        return self.scale.size > 1

    def describe_q(self) -> str:
        """A short readable form of the quantisation."""
        if not self.quantized:
            return ""
        if self.per_channel:
            return f"per-channel dim {self.qdim} ({self.scale.size} scales)"
        return f"scale {float(self.scale[0]):.6g}, zp {int(self.zero_point[0]) if self.zero_point.size else 0}"


@dataclasses.dataclass
class OpInfo:
    """One operator: index, builtin name, tensor indices (-1 = absent optional input), options."""

    index: int
    name: str
    inputs: list[int]
    outputs: list[int]
    options: dict[str, Any]


@dataclasses.dataclass
class ModelInfo:
    """The first subgraph of a model: tensors, operators, graph inputs and outputs."""

    tensors: list[TensorInfo]
    ops: list[OpInfo]
    inputs: list[int]
    outputs: list[int]
    description: str
    version: int


class _Bounded:
    """Length checks against the buffer size (a vector of n elements needs at least n bytes)."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __call__(self, n: int, what: str, elsize: int = 1) -> int:
        if n < 0 or n * elsize > self.size:
            raise TfliteFormatError(f"{what}: vector of {n} elements does not fit a {self.size}-byte file")
        return int(n)


def _ivec(obj: Any, name: str, chk: _Bounded) -> list[int]:
    n = chk(getattr(obj, name + "Length")(), name, 4)
    if n == 0:
        return []
    return [int(v) for v in getattr(obj, name + "AsNumpy")()]


def read_model(data: bytes | bytearray | memoryview) -> ModelInfo:
    """Decode a TFLite model (bytes) into :class:`ModelInfo`; :class:`TfliteFormatError` if malformed."""
    buf = bytes(data)
    if len(buf) < 8:
        raise TfliteFormatError(f"{len(buf)} bytes, too short for a flatbuffer")
    if buf[4:8] != b"TFL3":
        raise TfliteFormatError(f"file identifier {buf[4:8]!r} is not b'TFL3'")
    try:
        with np.errstate(all="ignore"):
            return _read(buf)
    except TfliteFormatError:
        raise
    except RecursionError as e:  # pragma: no cover - defensive
        raise TfliteFormatError(f"recursive structure ({e})") from None
    except Exception as e:  # noqa: BLE001 - any decoding failure of untrusted bytes
        raise TfliteFormatError(f"{type(e).__name__} while decoding: {e}") from None


def _read(buf: bytes) -> ModelInfo:
    chk = _Bounded(len(buf))
    m = Model.GetRootAs(buf, 0)
    version = int(m.Version())
    n_codes = chk(m.OperatorCodesLength(), "operator_codes", 4)
    codes: list[str] = []
    for i in range(n_codes):
        c = m.OperatorCodes(i)
        code = max(int(c.BuiltinCode()), int(c.DeprecatedBuiltinCode()))
        codes.append(OP_NAMES.get(code, f"BUILTIN_{code}") if code != OP_NAMES_REV["CUSTOM"]
                     else "CUSTOM:" + (c.CustomCode() or b"").decode("utf-8", "replace"))
    n_sub = chk(m.SubgraphsLength(), "subgraphs", 4)
    if n_sub < 1:
        raise TfliteFormatError("no subgraph")
    n_buf = chk(m.BuffersLength(), "buffers", 4)
    sg = m.Subgraphs(0)
    n_t = chk(sg.TensorsLength(), "tensors", 4)
    tensors: list[TensorInfo] = []
    for i in range(n_t):
        t = sg.Tensors(i)
        shape = tuple(_ivec(t, "Shape", chk))
        if any(s < 0 for s in shape):
            raise TfliteFormatError(f"tensor {i}: negative dimension in {shape}")
        ttype = TYPE_NAMES.get(int(t.Type()), f"TYPE_{int(t.Type())}")
        name = (t.Name() or b"").decode("utf-8", "replace") or f"tensor{i}"
        data = None
        b = int(t.Buffer())
        if b < 0 or (b >= n_buf and b != 0):
            raise TfliteFormatError(f"tensor {i} ({name}): buffer index {b} of {n_buf}")
        sparse = t.Sparsity() is not None
        if 0 < b < n_buf:
            bo = m.Buffers(b)
            if int(bo.Offset()) > 1:
                raise TfliteFormatError(f"tensor {i}: external buffer data (offset {bo.Offset()}) not supported")
            nb = chk(bo.DataLength(), f"buffer {b}")
            if nb:
                raw = bo.DataAsNumpy().tobytes()
                if ttype not in _DTYPES or sparse:
                    # packed (INT4 ...) or sparse constants: kept as raw bytes, refused by the importer
                    data = np.frombuffer(raw, np.uint8).copy()
                else:
                    dt = np.dtype(_DTYPES[ttype]).newbyteorder("<")
                    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
                    if count * dt.itemsize != nb:
                        raise TfliteFormatError(f"tensor {i} ({name}): buffer of {nb} bytes for shape {shape} "
                                                f"{ttype}")
                    data = np.frombuffer(raw, dt).astype(dt.newbyteorder("="), copy=True).reshape(shape)
        q = t.Quantization()
        scale, zp, qdim = np.zeros(0), np.zeros(0, np.int64), 0
        if q is not None:
            ns = chk(q.ScaleLength(), f"tensor {i} scales", 4)
            nz = chk(q.ZeroPointLength(), f"tensor {i} zero points", 8)
            if ns:
                scale = np.asarray(q.ScaleAsNumpy(), np.float64).copy()
            if nz:
                zp = np.asarray(q.ZeroPointAsNumpy(), np.int64).copy()
            qdim = int(q.QuantizedDimension())
        tensors.append(TensorInfo(i, name, shape, ttype, data, scale, zp, qdim, sparse))
    n_ops = chk(sg.OperatorsLength(), "operators", 4)
    ops: list[OpInfo] = []
    for i in range(n_ops):
        o = sg.Operators(i)
        ci = int(o.OpcodeIndex())
        if not 0 <= ci < len(codes):
            raise TfliteFormatError(f"operator {i}: opcode index {ci} of {len(codes)}")
        name = codes[ci]
        ins, outs = _ivec(o, "Inputs", chk), _ivec(o, "Outputs", chk)
        for k in ins + outs:
            if k < -1 or k >= n_t:
                raise TfliteFormatError(f"operator {i} ({name}): tensor index {k} of {n_t}")
        opts: dict[str, Any] = {}
        if name in _OPTION_FIELDS or name in _OPTION_VECTORS:
            cls_name = (_OPTION_FIELDS.get(name) or _OPTION_VECTORS[name])[0]
            tab = o.BuiltinOptions()
            if tab is not None:
                cls = getattr(importlib.import_module(f"tflite.{cls_name}"), cls_name)
                ob = cls()
                ob.Init(tab.Bytes, tab.Pos)
                if name in _OPTION_FIELDS:
                    for f in _OPTION_FIELDS[name][1]:
                        opts[f] = getattr(ob, f)()
                else:
                    opts[_OPTION_VECTORS[name][1]] = _ivec(ob, _OPTION_VECTORS[name][1], chk)
        ops.append(OpInfo(i, name, ins, outs, opts))
    g_in, g_out = _ivec(sg, "Inputs", chk), _ivec(sg, "Outputs", chk)
    for k in g_in + g_out:
        if not 0 <= k < n_t:
            raise TfliteFormatError(f"graph input/output tensor index {k} of {n_t}")
    desc = (m.Description() or b"").decode("utf-8", "replace")
    return ModelInfo(tensors, ops, g_in, g_out, desc, version)


OP_NAMES_REV = {v: k for k, v in OP_NAMES.items()}
