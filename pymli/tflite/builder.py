"""Write small TFLite models from Python (tests, documentation examples), without TensorFlow.

The ``tflite`` PyPI package ships the generated reader classes and the ``<Table>Start/Add/End``
builder functions of the schema (no ``*T`` object API), which :class:`ModelWriter` drives with a
``flatbuffers.Builder``. :func:`quantize_per_channel` and friends produce the int8 constants a TFLite
converter would write.

Example:
    >>> w = ModelWriter()
    >>> x = w.tensor("x", (1, 4, 4, 2), scale=0.05, zero_point=-3)
    >>> y = w.tensor("y", (1, 2, 2, 2), scale=0.05, zero_point=-3)
    >>> w.op("MAX_POOL_2D", [x], [y], Padding="VALID", StrideW=2, StrideH=2, FilterWidth=2, FilterHeight=2)
    >>> data = w.finish([x], [y])
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from .reader import _OPTION_FIELDS, _OPTION_VECTORS, ACT_NAMES, OP_NAMES, PAD_NAMES, TYPE_NAMES

__all__ = ["ModelWriter", "quantize_per_channel", "quantize_per_tensor", "quantize_bias", "choose_qparams",
           "finish_model"]

_TYPE_CODES = {v: k for k, v in TYPE_NAMES.items()}
_OP_CODES = {v: k for k, v in OP_NAMES.items()}
_ACT_CODES = {v: k for k, v in ACT_NAMES.items()}
_PAD_CODES = {v: k for k, v in PAD_NAMES.items()}
_NP = {"INT8": "<i1", "INT16": "<i2", "INT32": "<i4", "INT64": "<i8", "FLOAT32": "<f4", "UINT8": "u1"}


def _mod(name: str) -> Any:
    return importlib.import_module(f"tflite.{name}")


def finish_model(b: Any, opcodes: Sequence[int], subgraphs: Sequence[int], buffers: Sequence[int],
                 description: str) -> bytes:
    """Close a model being written: the root ``Model`` table (schema version 3) and the file bytes.

    Args:
        b: the ``flatbuffers.Builder`` holding the finished tables.
        opcodes: offsets of the ``OperatorCode`` tables, in opcode-index order.
        subgraphs: offsets of the ``SubGraph`` tables.
        buffers: offsets of the ``Buffer`` tables (index 0 the empty buffer).
        description: the model's description string.

    Returns:
        The ``.tflite`` bytes (file identifier ``TFL3``).
    """
    M = _mod("Model")

    def ovec(start: Any, offs: Sequence[int]) -> int:
        start(b, len(offs))
        for o in reversed(list(offs)):
            b.PrependUOffsetTRelative(o)
        return b.EndVector()

    oc_vec = ovec(M.ModelStartOperatorCodesVector, opcodes)
    sg_vec = ovec(M.ModelStartSubgraphsVector, subgraphs)
    buf_vec = ovec(M.ModelStartBuffersVector, buffers)
    desc = b.CreateString(description)
    M.ModelStart(b)
    M.ModelAddVersion(b, 3)
    M.ModelAddOperatorCodes(b, oc_vec)
    M.ModelAddSubgraphs(b, sg_vec)
    M.ModelAddBuffers(b, buf_vec)
    M.ModelAddDescription(b, desc)
    b.Finish(M.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def choose_qparams(lo: float, hi: float) -> tuple[float, int]:
    """int8 (scale, zero_point) covering ``[min(lo, 0), max(hi, 0)]`` (TFLite converter style)."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if hi - lo < 1e-12:
        hi = lo + 1e-3
    scale = (hi - lo) / 255.0
    zp = int(np.clip(np.round(-128 - lo / scale), -128, 127))
    return scale, zp


def quantize_per_tensor(x: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """Float values -> int8 with one TFLite ``scale`` / ``zero_point`` (test-model builder; NumPy rounding)."""
    return np.clip(np.round(np.asarray(x) / scale) + zero_point, -128, 127).astype(np.int8)


def quantize_per_channel(w: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 weights, one scale per slice of ``axis`` (``max|w| / 127``)."""
    w = np.asarray(w, np.float64)
    red = tuple(i for i in range(w.ndim) if i != axis)
    m = np.max(np.abs(w), axis=red)
    scale = np.where(m > 0, m / 127.0, 1.0)
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.round(w / scale.reshape(shape)), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32).astype(np.float64)


def quantize_bias(b: np.ndarray, in_scale: float, w_scale: np.ndarray) -> np.ndarray:
    """int32 bias in units of ``in_scale * w_scale``."""
    return np.round(np.asarray(b) / (in_scale * np.asarray(w_scale))).astype(np.int32)


class ModelWriter:
    """Collect tensors and operators, then :meth:`finish` into TFLite flatbuffer bytes."""

    def __init__(self, description: str = "pymli test model") -> None:
        self.description = description
        self.tensors: list[dict[str, Any]] = []
        self.buffers: list[bytes] = [b""]
        self.ops: list[tuple[int, list[int], list[int], str, dict[str, Any]]] = []
        self.opcodes: list[str] = []

    def tensor(self, name: str, shape: Sequence[int], type: str = "INT8", data: np.ndarray | None = None,
               scale: Any = None, zero_point: Any = None, qdim: int = 0) -> int:
        """Add a tensor (a constant when ``data`` is given); returns its index."""
        buf = 0
        if data is not None:
            if type in _NP:
                raw = np.asarray(data).astype(_NP[type]).reshape(tuple(shape)).tobytes()
            else:   # packed types (INT4 ...): the bytes as given
                raw = np.asarray(data, np.uint8).tobytes()
            self.buffers.append(raw)
            buf = len(self.buffers) - 1
        q = None
        if scale is not None:
            sc = np.atleast_1d(np.asarray(scale, np.float32))
            zp = np.atleast_1d(np.asarray(0 if zero_point is None else zero_point, np.int64))
            if zp.size == 1 and sc.size > 1:
                zp = np.repeat(zp, sc.size)
            q = (sc, zp, int(qdim))
        self.tensors.append({"name": name, "shape": [int(s) for s in shape], "type": type, "buffer": buf, "q": q})
        return len(self.tensors) - 1

    def const(self, name: str, data: np.ndarray, type: str = "INT32", **kw: Any) -> int:
        """Add a constant tensor holding ``data`` (its shape); returns its index."""
        data = np.asarray(data)
        return self.tensor(name, data.shape, type, data, **kw)

    def op(self, name: str, inputs: Sequence[int], outputs: Sequence[int], **options: Any) -> None:
        """Add an operator; ``options`` are fields of its options table (``Padding="SAME"``,
        ``FusedActivationFunction="RELU"``, ``NewShape=[...]`` ...)."""
        if name not in self.opcodes:
            self.opcodes.append(name)
        self.ops.append((self.opcodes.index(name), list(inputs), list(outputs), name, options))

    # ------------------------------------------------------------------ serialisation
    def finish(self, inputs: Sequence[int], outputs: Sequence[int]) -> bytes:
        """The model as TFLite flatbuffer bytes with graph ``inputs`` and ``outputs`` (tensor indices)."""
        import flatbuffers  # imported on first use, like the tflite package (see pymli.tflite)

        b = flatbuffers.Builder(1024)
        SG, T, QP, OP, OC, BU = (_mod(n) for n in ("SubGraph", "Tensor", "QuantizationParameters",
                                                        "Operator", "OperatorCode", "Buffer"))

        def ivec(start: Any, vals: Sequence[int]) -> int:
            start(b, len(vals))
            for v in reversed(list(vals)):
                b.PrependInt32(int(v))
            return b.EndVector()

        def ovec(start: Any, offs: Sequence[int]) -> int:
            start(b, len(offs))
            for o in reversed(list(offs)):
                b.PrependUOffsetTRelative(o)
            return b.EndVector()

        # buffers
        buf_offs = []
        for data in self.buffers:
            d = b.CreateNumpyVector(np.frombuffer(data, np.uint8)) if data else None
            BU.BufferStart(b)
            if d is not None:
                BU.BufferAddData(b, d)
            buf_offs.append(BU.BufferEnd(b))
        # tensors
        t_offs = []
        for t in self.tensors:
            name = b.CreateString(t["name"])
            shape = ivec(T.TensorStartShapeVector, t["shape"])
            q = None
            if t["q"] is not None:
                sc, zp, qdim = t["q"]
                s_off = b.CreateNumpyVector(sc.astype("<f4"))
                z_off = b.CreateNumpyVector(zp.astype("<i8"))
                QP.QuantizationParametersStart(b)
                QP.QuantizationParametersAddScale(b, s_off)
                QP.QuantizationParametersAddZeroPoint(b, z_off)
                QP.QuantizationParametersAddQuantizedDimension(b, qdim)
                q = QP.QuantizationParametersEnd(b)
            T.TensorStart(b)
            T.TensorAddShape(b, shape)
            T.TensorAddType(b, _TYPE_CODES[t["type"]])
            T.TensorAddBuffer(b, t["buffer"])
            T.TensorAddName(b, name)
            if q is not None:
                T.TensorAddQuantization(b, q)
            t_offs.append(T.TensorEnd(b))
        # operators
        BO = _mod("BuiltinOptions").BuiltinOptions
        op_offs = []
        for code, ins, outs, name, options in self.ops:
            opt_off, opt_type = None, 0
            if name in _OPTION_FIELDS or name in _OPTION_VECTORS:
                cls = (_OPTION_FIELDS.get(name) or _OPTION_VECTORS[name])[0]
                mod = _mod(cls)
                vec_off = None
                if name in _OPTION_VECTORS:
                    field = _OPTION_VECTORS[name][1]
                    if field in options:
                        vec_off = ivec(getattr(mod, f"{cls}Start{field}Vector"), options[field])
                getattr(mod, f"{cls}Start")(b)
                if vec_off is not None:
                    getattr(mod, f"{cls}Add{_OPTION_VECTORS[name][1]}")(b, vec_off)
                for field, v in options.items():
                    if name in _OPTION_VECTORS:
                        continue
                    if field == "Padding" and isinstance(v, str):
                        v = _PAD_CODES[v]
                    if field == "FusedActivationFunction" and isinstance(v, str):
                        v = _ACT_CODES[v]
                    if field == "OutputType" and isinstance(v, str):
                        v = _TYPE_CODES[v]
                    getattr(mod, f"{cls}Add{field}")(b, v)
                opt_off = getattr(mod, f"{cls}End")(b)
                opt_type = getattr(BO, cls)
            i_off = ivec(OP.OperatorStartInputsVector, ins)
            o_off = ivec(OP.OperatorStartOutputsVector, outs)
            OP.OperatorStart(b)
            OP.OperatorAddOpcodeIndex(b, code)
            OP.OperatorAddInputs(b, i_off)
            OP.OperatorAddOutputs(b, o_off)
            if opt_off is not None:
                OP.OperatorAddBuiltinOptionsType(b, opt_type)
                OP.OperatorAddBuiltinOptions(b, opt_off)
            op_offs.append(OP.OperatorEnd(b))
        tensors_vec = ovec(SG.SubGraphStartTensorsVector, t_offs)
        ops_vec = ovec(SG.SubGraphStartOperatorsVector, op_offs)
        in_vec = ivec(SG.SubGraphStartInputsVector, inputs)
        out_vec = ivec(SG.SubGraphStartOutputsVector, outputs)
        sg_name = b.CreateString("main")
        SG.SubGraphStart(b)
        SG.SubGraphAddTensors(b, tensors_vec)
        SG.SubGraphAddOperators(b, ops_vec)
        SG.SubGraphAddInputs(b, in_vec)
        SG.SubGraphAddOutputs(b, out_vec)
        SG.SubGraphAddName(b, sg_name)
        sg = SG.SubGraphEnd(b)
        oc_offs = []
        for name in self.opcodes:
            code = _OP_CODES[name]
            OC.OperatorCodeStart(b)
            OC.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
            OC.OperatorCodeAddBuiltinCode(b, code)
            OC.OperatorCodeAddVersion(b, 1)
            oc_offs.append(OC.OperatorCodeEnd(b))
        return finish_model(b, oc_offs, [sg], buf_offs, self.description)
