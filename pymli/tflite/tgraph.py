"""Subgraph 0 of a ``.tflite`` as TensorFlow Lite Micro sees it: tensors with dtype, shape,
quantisation and constant data, operators with their ``tflite`` option tables.

This is the graph interface :mod:`pymli.tflm.handlers` computes on (``graph.tensors[i]``, ``op.options``,
``graph.extra["state"]``) and the one :mod:`pymli.tflite.tflm_model` prepares once at load.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tflite

from .errors import TfliteUnsupported

__all__ = ["TTensor", "TOp", "TGraph", "read_graph", "reset_value"]

_DT = {tflite.TensorType.INT8: np.int8, tflite.TensorType.INT16: np.int16,
       tflite.TensorType.INT32: np.int32, tflite.TensorType.INT64: np.int64,
       tflite.TensorType.FLOAT32: np.float32, tflite.TensorType.UINT8: np.uint8,
       tflite.TensorType.BOOL: np.bool_, tflite.TensorType.UINT32: np.uint32,
       tflite.TensorType.UINT64: np.uint64, tflite.TensorType.UINT16: np.uint16}
_OPNAMES = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
_TYPENAMES = {v: k for k, v in vars(tflite.TensorType).items() if not k.startswith("_")}
_OPTNAMES = {v: k for k, v in vars(tflite.BuiltinOptions).items() if not k.startswith("_")}


@dataclass(frozen=True)
class TTensor:
    """One tensor of the graph: static description and constant data (None if not constant)."""

    index: int
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    scale: np.ndarray  # float32, per tensor (1,) or per channel; empty if not quantised
    zero_point: np.ndarray  # int64
    qdim: int
    data: np.ndarray | None
    variable: bool

    @property
    def s(self) -> float:
        """The per-tensor scale (float32 value as a Python float)."""
        return float(self.scale[0]) if self.scale.size else 0.0

    @property
    def zp(self) -> int:
        """The per-tensor zero point."""
        return int(self.zero_point[0]) if self.zero_point.size else 0


@dataclass(frozen=True)
class TOp:
    """One operator: builtin name, tensor indices (-1 for an omitted input), options table."""

    index: int
    name: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options: Any
    intermediates: tuple[int, ...] = ()
    custom_options: bytes = b""  # a CUSTOM operator's options (flexbuffer), b"" for builtins


@dataclass
class TGraph:
    """Subgraph 0 of a model."""

    tensors: list[TTensor]
    ops: list[TOp]
    inputs: list[int]
    outputs: list[int]
    extra: dict = field(default_factory=dict)

    def t(self, i: int) -> TTensor | None:
        """Tensor ``i`` or None for -1."""
        return None if i < 0 else self.tensors[i]


def _options(op: Any) -> Any:
    typ = op.BuiltinOptionsType()
    if typ == 0:
        return None
    cls = getattr(tflite, _OPTNAMES[typ])
    o = cls()
    tab = op.BuiltinOptions()
    o.Init(tab.Bytes, tab.Pos)
    return o


def read_graph(path: str | Path | bytes) -> TGraph:
    """Parse subgraph 0 of a ``.tflite``.

    Args:
        path: the model file, or its bytes.

    Returns:
        the :class:`TGraph`.
    """
    buf = path if isinstance(path, bytes) else Path(path).read_bytes()
    m = tflite.Model.GetRootAsModel(buf, 0)
    g = m.Subgraphs(0)
    tensors = []
    for i in range(g.TensorsLength()):
        t = g.Tensors(i)
        if t.Type() not in _DT:
            name = _TYPENAMES.get(t.Type(), str(t.Type()))
            raise TfliteUnsupported(None, f"tensor {i}", f"element type {name} (supported: int8, "
                                    "uint8, int16, int32, int64, float32, bool)")
        dt = np.dtype(_DT[t.Type()])
        q = t.Quantization()
        scale = np.zeros(0, np.float32)
        zp = np.zeros(0, np.int64)
        qdim = 0
        if q is not None and q.ScaleLength():
            scale = q.ScaleAsNumpy().astype(np.float32)
            zp = q.ZeroPointAsNumpy().astype(np.int64)
            qdim = q.QuantizedDimension()
        shape = tuple(int(v) for v in t.ShapeAsNumpy()) if t.ShapeLength() else ()
        b = m.Buffers(t.Buffer())
        data = None
        if b is not None and b.DataLength():
            data = np.frombuffer(b.DataAsNumpy().tobytes(), dt).reshape(shape)
        tensors.append(TTensor(i, (t.Name() or b"").decode(), shape, dt, scale, zp, qdim, data,
                               bool(t.IsVariable())))
    ops = []
    for k in range(g.OperatorsLength()):
        op = g.Operators(k)
        oc = m.OperatorCodes(op.OpcodeIndex())
        code = max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
        name = _OPNAMES.get(code, str(code))
        if name == "CUSTOM":
            name = "CUSTOM:" + oc.CustomCode().decode()
        inter = tuple(int(v) for v in op.IntermediatesAsNumpy()) if op.IntermediatesLength() else ()
        copts = op.CustomOptionsAsNumpy().tobytes() if op.CustomOptionsLength() else b""
        ops.append(TOp(k, name, tuple(int(v) for v in op.InputsAsNumpy()),
                       tuple(int(v) for v in op.OutputsAsNumpy()), _options(op), inter, copts))
    return TGraph(tensors, ops, [int(v) for v in g.InputsAsNumpy()],
                  [int(v) for v in g.OutputsAsNumpy()])


def reset_value(t: TTensor) -> np.ndarray:
    """A variable tensor after TFLM's ``ResetVariableTensors``: its zero point for int8 (a byte
    ``memset``), zero for every other type.

    Args:
        t: the variable tensor.

    Returns:
        the reset array.
    """
    fill = t.zp if t.dtype == np.int8 else 0
    return np.full(t.shape, fill, t.dtype)
