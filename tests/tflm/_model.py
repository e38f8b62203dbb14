"""A minimal single-operator .tflite writer for the interpreter tests (flatbuffers + the tflite
package's generated builder functions)."""

from __future__ import annotations

import importlib
from typing import Any

import flatbuffers
import numpy as np
import tflite

_TYPES = {np.dtype(np.int8): tflite.TensorType.INT8, np.dtype(np.int16): tflite.TensorType.INT16,
          np.dtype(np.int32): tflite.TensorType.INT32, np.dtype(np.int64): tflite.TensorType.INT64,
          np.dtype(np.float32): tflite.TensorType.FLOAT32, np.dtype(np.bool_): tflite.TensorType.BOOL}
# builtin name -> options table name (where it differs from the CamelCase of the name + "Options")
_OPT = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions", "CONV_2D": "Conv2DOptions",
        "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions", "FULLY_CONNECTED": "FullyConnectedOptions",
        "SOFTMAX": "SoftmaxOptions", "CONCATENATION": "ConcatenationOptions",
        "AVERAGE_POOL_2D": "Pool2DOptions", "MAX_POOL_2D": "Pool2DOptions",
        "STRIDED_SLICE": "StridedSliceOptions", "MEAN": "ReducerOptions", "SUM": "ReducerOptions",
        "LEAKY_RELU": "LeakyReluOptions", "TRANSPOSE_CONV": "TransposeConvOptions",
        "PAD": "PadOptions", "PADV2": "PadV2Options", "SLICE": "SliceOptions",
        "MAXIMUM": "MaximumMinimumOptions", "MINIMUM": "MaximumMinimumOptions",
        "SQUARED_DIFFERENCE": "SquaredDifferenceOptions", "DIV": "DivOptions",
        "HARD_SWISH": "HardSwishOptions", "PACK": "PackOptions", "UNPACK": "UnpackOptions",
        "SVDF": "SVDFOptions", "RESHAPE": "ReshapeOptions", "ARG_MAX": "ArgMaxOptions",
        "ARG_MIN": "ArgMinOptions", "REDUCE_MAX": "ReducerOptions", "REDUCE_MIN": "ReducerOptions",
        "DEPTH_TO_SPACE": "DepthToSpaceOptions", "SPACE_TO_DEPTH": "SpaceToDepthOptions",
        "SPACE_TO_BATCH_ND": "SpaceToBatchNDOptions", "BATCH_TO_SPACE_ND": "BatchToSpaceNDOptions",
        "MIRROR_PAD": "MirrorPadOptions", "GATHER_ND": "GatherNdOptions",
        "RESIZE_NEAREST_NEIGHBOR": "ResizeNearestNeighborOptions", "SELECT_V2": "SelectV2Options",
        "GATHER": "GatherOptions", "SPLIT": "SplitOptions", "CAST": "CastOptions",
        "BATCH_MATMUL": "BatchMatMulOptions", "CUMSUM": "CumsumOptions", "ADD_N": "AddNOptions",
        "UNIDIRECTIONAL_SEQUENCE_LSTM": "UnidirectionalSequenceLSTMOptions",
        "RESIZE_BILINEAR": "ResizeBilinearOptions"}


class Tensor:
    def __init__(self, shape: tuple[int, ...], dtype: Any, scale: Any = None, zp: Any = None,
                 data: np.ndarray | None = None, qdim: int = 0, variable: bool = False) -> None:
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.scale, self.zp, self.data, self.qdim, self.variable = scale, zp, data, qdim, variable


def single_op(op: str, inputs: list[Tensor | None], outputs: list[Tensor],
              options: dict[str, Any] | None = None) -> bytes:
    """Bytes of a model with one operator; graph inputs are the non-constant, non-variable inputs."""
    b = flatbuffers.Builder(1024)
    tensors = [t for t in inputs if t is not None] + outputs
    index = {id(t): i for i, t in enumerate(tensors)}

    def ivec(start: Any, vals: list[int]) -> int:
        start(b, len(vals))
        for v in reversed(vals):
            b.PrependInt32(int(v))
        return b.EndVector()

    def ovec(start: Any, offs: list[int]) -> int:
        start(b, len(offs))
        for o in reversed(offs):
            b.PrependUOffsetTRelative(o)
        return b.EndVector()

    bufs = [tflite.BufferStart(b) or tflite.BufferEnd(b)]
    buf_of = {}
    for t in tensors:
        if t.data is not None:
            d = b.CreateNumpyVector(np.frombuffer(np.ascontiguousarray(
                np.asarray(t.data).astype(t.dtype.newbyteorder("<"))).tobytes(), np.uint8))
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
        tflite.TensorAddType(b, _TYPES[t.dtype])
        tflite.TensorAddBuffer(b, buf_of.get(id(t), 0))
        tflite.TensorAddName(b, name)
        tflite.TensorAddIsVariable(b, t.variable)
        if q is not None:
            tflite.TensorAddQuantization(b, q)
        toffs.append(tflite.TensorEnd(b))
    opt_off, opt_type = None, 0
    cls = _OPT.get(op)
    if cls is not None:
        mod = importlib.import_module(f"tflite.{cls}")
        vecs = {}
        for k, v in (options or {}).items():
            if isinstance(v, (list, tuple)):
                vecs[k] = ivec(getattr(mod, f"{cls}Start{k}Vector"), list(v))
        getattr(mod, f"{cls}Start")(b)
        for k, v in (options or {}).items():
            getattr(mod, f"{cls}Add{k}")(b, vecs.get(k, v))
        opt_off = getattr(mod, f"{cls}End")(b)
        opt_type = getattr(tflite.BuiltinOptions, cls)
    code = getattr(tflite.BuiltinOperator, op)
    in_idx = [index[id(t)] if t is not None else -1 for t in inputs]
    out_idx = [index[id(t)] for t in outputs]
    io = ivec(tflite.OperatorStartInputsVector, in_idx)
    oo = ivec(tflite.OperatorStartOutputsVector, out_idx)
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, 0)
    tflite.OperatorAddInputs(b, io)
    tflite.OperatorAddOutputs(b, oo)
    if opt_off is not None:
        tflite.OperatorAddBuiltinOptionsType(b, opt_type)
        tflite.OperatorAddBuiltinOptions(b, opt_off)
    opo = tflite.OperatorEnd(b)
    g_in = [index[id(t)] for t in inputs if t is not None and t.data is None and not t.variable]
    sgi = ivec(tflite.SubGraphStartInputsVector, g_in)
    sgo = ivec(tflite.SubGraphStartOutputsVector, out_idx)
    sgt = ovec(tflite.SubGraphStartTensorsVector, toffs)
    sgops = ovec(tflite.SubGraphStartOperatorsVector, [opo])
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, sgt)
    tflite.SubGraphAddInputs(b, sgi)
    tflite.SubGraphAddOutputs(b, sgo)
    tflite.SubGraphAddOperators(b, sgops)
    sg = tflite.SubGraphEnd(b)
    tflite.OperatorCodeStart(b)
    tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
    tflite.OperatorCodeAddBuiltinCode(b, code)
    tflite.OperatorCodeAddVersion(b, 1)
    oc = tflite.OperatorCodeEnd(b)
    ocs = ovec(tflite.ModelStartOperatorCodesVector, [oc])
    sgs = ovec(tflite.ModelStartSubgraphsVector, [sg])
    bv = ovec(tflite.ModelStartBuffersVector, bufs)
    desc = b.CreateString("pymli.tflm test")
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, ocs)
    tflite.ModelAddSubgraphs(b, sgs)
    tflite.ModelAddDescription(b, desc)
    tflite.ModelAddBuffers(b, bv)
    m = tflite.ModelEnd(b)
    b.Finish(m, file_identifier=b"TFL3")
    return bytes(b.Output())
