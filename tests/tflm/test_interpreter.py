"""Generated single-operator models: pymli.tflm's handler equals the TFLite Micro Python
interpreter (tflite-micro pip package) exactly, on random inputs over the whole input range."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest

from pymli.tflm import handlers
from pymli.testing import tflm_golden as _golden

from ._model import Tensor, single_op

runtime = pytest.importorskip("tflite_micro.python.tflite_micro.runtime",
                              reason="the tflite_micro interpreter is an optional test dependency")

I8, I16, I32, F32 = np.int8, np.int16, np.int32, np.float32


@dataclass
class Case:
    name: str
    op: str
    make: Callable[[np.random.Generator], tuple[list, list, dict]]
    known: str = ""  # a reason this case is expected to differ (pip interpreter vs 90b983c2)
    extra: dict = field(default_factory=dict)


def tflite_type(name: str) -> int:
    import tflite
    return getattr(tflite.TensorType, name)


def act(shape: tuple[int, ...], dtype: Any, scale: float, zp: int = 0) -> Tensor:
    return Tensor(shape, dtype, scale, zp)


def const(data: np.ndarray, dtype: Any = I32, scale: Any = None, zp: Any = None, qdim: int = 0) -> Tensor:
    d = np.asarray(data)
    return Tensor(d.shape, dtype, scale, zp, data=d.astype(dtype), qdim=qdim)


def _binary(op: str, dt: Any, s1: tuple, s2: tuple, so: tuple, **opts: Any) -> Callable:
    def make(r: np.random.Generator) -> tuple[list, list, dict]:
        zp = (lambda: int(r.integers(-20, 20))) if dt == I8 else (lambda: 0)
        a = act(s1, dt, float(r.uniform(0.01, 0.2)), zp())
        b = act(s2, dt, float(r.uniform(0.01, 0.2)), zp())
        o = act(so, dt, float(r.uniform(0.02, 0.3)), zp())
        return [a, b], [o], opts
    return make


def _unary(op: str, dt: Any, shape: tuple, si: float, zi: int, so: float, zo: int, odt: Any = None,
           **opts: Any) -> Callable:
    def make(r: np.random.Generator) -> tuple[list, list, dict]:
        return [act(shape, dt, si, zi)], [act(shape, odt or dt, so, zo)], opts
    return make


def _resize(dt: Any, shape: tuple, size: tuple[int, int], align: bool, half: bool) -> Callable:
    def make(r: np.random.Generator) -> tuple[list, list, dict]:
        n, _, _, c = shape
        return ([act(shape, dt, 0.1), const(np.array(size))], [act((n, *size, c), dt, 0.1)],
                dict(AlignCorners=align, HalfPixelCenters=half))
    return make


def _conv(dt: Any, dw: bool, dm: int = 1, stride: int = 1, dil: int = 1, same: bool = True,
          act_fn: int = 0) -> Callable:
    def make(r: np.random.Generator) -> tuple[list, list, dict]:
        cin, k = 3, 3
        cout = cin * dm if dw else 4
        zi = int(r.integers(-10, 10)) if dt == I8 else 0
        zo = int(r.integers(-10, 10)) if dt == I8 else 0
        x = act((1, 9, 8, cin), dt, 0.05, zi)
        ws = r.uniform(0.002, 0.02, cout).astype(np.float32)
        wshape = (1, k, k, cout) if dw else (cout, k, k, cin)
        w = const(r.integers(-127, 128, wshape), I8, ws, 0, qdim=3 if dw else 0)
        bdt = np.int64 if dt == I16 else I32
        b = const(r.integers(-2000, 2000, cout), bdt, 0.05 * ws, 0)
        eff = (k - 1) * dil + 1
        oh = -(-9 // stride) if same else (9 - eff) // stride + 1
        ow = -(-8 // stride) if same else (8 - eff) // stride + 1
        o = act((1, oh, ow, cout), dt, 0.08, zo)
        opts = dict(Padding=0 if same else 1, StrideH=stride, StrideW=stride, DilationHFactor=dil,
                    DilationWFactor=dil, FusedActivationFunction=act_fn)
        if dw:
            opts["DepthMultiplier"] = dm
        return [x, w, b], [o], opts
    return make


def _fc(dt: Any, act_fn: int = 0) -> Callable:
    def make(r: np.random.Generator) -> tuple[list, list, dict]:
        zi = int(r.integers(-10, 10)) if dt == I8 else 0
        zo = int(r.integers(-10, 10)) if dt == I8 else 0
        x = act((2, 12), dt, 0.05, zi)
        w = const(r.integers(-127, 128, (5, 12)), I8, 0.01, 0)
        b = const(r.integers(-3000, 3000, 5), np.int64 if dt == I16 else I32, 0.0005, 0)
        return [x, w, b], [act((2, 5), dt, 0.07, zo)], dict(FusedActivationFunction=act_fn)
    return make


def _pool(op: str, same: bool) -> Callable:
    def make(r: np.random.Generator) -> tuple[list, list, dict]:
        x = act((1, 7, 6, 3), I8, 0.05, 3)
        oh, ow = (-(-7 // 2), -(-6 // 2)) if same else ((7 - 3) // 2 + 1, (6 - 3) // 2 + 1)
        return [x], [act((1, oh, ow, 3), I8, 0.05, 3)], dict(
            Padding=0 if same else 1, StrideH=2, StrideW=2, FilterHeight=3, FilterWidth=3)
    return make


def _tconv(dt: Any) -> Callable:
    def make(r: np.random.Generator) -> tuple[list, list, dict]:
        zi = 2 if dt == I8 else 0
        ws = r.uniform(0.002, 0.02, 4).astype(np.float32)
        shape = const(np.array([1, 8, 10, 4]), I32)
        w = const(r.integers(-127, 128, (4, 3, 3, 3)), I8, ws, 0)
        x = act((1, 4, 5, 3), dt, 0.05, zi)
        b = const(r.integers(-500, 500, 4), np.int64 if dt == I16 else I32, 0.05 * ws, 0)
        return [shape, w, x, b], [act((1, 8, 10, 4), dt, 0.06, -1 if dt == I8 else 0)], dict(
            Padding=0, StrideH=2, StrideW=2)
    return make


CASES = [
    Case("add_i8_bcast", "ADD", _binary("ADD", I8, (1, 4, 5, 3), (1, 1, 5, 1), (1, 4, 5, 3))),
    Case("add_i16", "ADD", _binary("ADD", I16, (2, 7), (2, 7), (2, 7))),
    Case("add_i8_relu", "ADD", _binary("ADD", I8, (3, 6), (3, 6), (3, 6), FusedActivationFunction=1)),
    Case("sub_i8_bcast", "SUB", _binary("SUB", I8, (2, 3, 4), (4,), (2, 3, 4))),
    Case("sub_i16_bcast", "SUB", _binary("SUB", I16, (1, 5, 4), (4,), (1, 5, 4))),
    Case("mul_i8_bcast", "MUL", _binary("MUL", I8, (2, 3, 4), (1, 3, 1), (2, 3, 4))),
    Case("mul_i16", "MUL", _binary("MUL", I16, (3, 5), (3, 5), (3, 5))),
    Case("add_i32", "ADD", lambda r: ([Tensor((2, 5), I32), Tensor((1, 5), I32)], [Tensor((2, 5), I32)], {})),
    Case("sub_i32", "SUB", lambda r: ([Tensor((2, 5), I32), Tensor((2, 5), I32)], [Tensor((2, 5), I32)], {})),
    Case("pack_i8", "PACK", lambda r: ([act((2, 3), I8, 0.1), act((2, 3), I8, 0.1)], [act((2, 2, 3), I8, 0.1)],
                                       dict(ValuesCount=2, Axis=1))),
    Case("unpack_i16", "UNPACK", lambda r: ([act((3, 4), I16, 0.1)], [act((3,), I16, 0.1) for _ in range(4)],
                                            dict(Num=4, Axis=1))),
    Case("abs_i8_rescale", "ABS", _unary("ABS", I8, (4, 30), 0.05, 3, 0.04, -100)),
    Case("abs_i16", "ABS", _unary("ABS", I16, (4, 30), 0.001, 0, 0.001, 0)),
    Case("relu_i8", "RELU", _unary("RELU", I8, (4, 30), 0.05, 3, 0.03, -100)),
    Case("relu_i16", "RELU", _unary("RELU", I16, (4, 30), 0.001, 0, 0.0007, 0)),
    Case("relu6_i8", "RELU6", _unary("RELU6", I8, (4, 30), 0.03, -20, 0.03, -20)),
    Case("argmax_i8", "ARG_MAX", lambda r: ([act((3, 7, 5), I8, 0.1), const(np.array([1]))],
                                            [Tensor((3, 5), I32)], dict(OutputType=tflite_type("INT32")))),
    Case("argmin_i8", "ARG_MIN", lambda r: ([act((3, 7), I8, 0.1), const(np.array([-1]))],
                                             [Tensor((3,), I32)], dict(OutputType=tflite_type("INT32")))),
    Case("reduce_max_i8", "REDUCE_MAX", lambda r: ([act((2, 5, 4), I8, 0.1, 2), const(np.array([1]))],
                                                   [act((2, 1, 4), I8, 0.1, 2)], dict(KeepDims=True))),
    Case("depth_to_space_i8", "DEPTH_TO_SPACE", lambda r: ([act((1, 3, 2, 8), I8, 0.1)],
                                                           [act((1, 6, 4, 2), I8, 0.1)], dict(BlockSize=2))),
    Case("space_to_depth_i8", "SPACE_TO_DEPTH", lambda r: ([act((1, 4, 6, 3), I8, 0.1)],
                                                           [act((1, 2, 3, 12), I8, 0.1)], dict(BlockSize=2))),
    Case("space_to_batch_i8", "SPACE_TO_BATCH_ND", lambda r: (
        [act((1, 6, 4, 2), I8, 0.1, 3), const(np.array([2, 2])), const(np.array([[0, 0], [0, 0]]))],
        [act((4, 3, 2, 2), I8, 0.1, 3)], {})),
    Case("space_to_batch_padded_i8", "SPACE_TO_BATCH_ND", lambda r: (
        [act((1, 5, 4, 2), I8, 0.1, 3), const(np.array([2, 2])), const(np.array([[1, 0], [0, 0]]))],
        [act((4, 3, 2, 2), I8, 0.1, 3)], {}),
         known="TFLM micro never sets SpaceToBatchParams.output_offset: the pad value is whatever the "
               "arena held (0 when fresh, which pymli uses)"),
    Case("batch_to_space_i8", "BATCH_TO_SPACE_ND", lambda r: (
        [act((4, 3, 2, 2), I8, 0.1, 3), const(np.array([2, 2])), const(np.array([[1, 0], [0, 1]]))],
        [act((1, 5, 3, 2), I8, 0.1, 3)], {})),
    Case("mirror_pad_reflect", "MIRROR_PAD", lambda r: (
        [act((1, 4, 5, 2), I8, 0.1), const(np.array([[0, 0], [2, 1], [1, 3], [0, 0]]))],
        [act((1, 7, 9, 2), I8, 0.1)], dict(Mode=0))),
    Case("mirror_pad_symmetric", "MIRROR_PAD", lambda r: (
        [act((4, 5), I8, 0.1), const(np.array([[2, 1], [1, 3]]))], [act((7, 9), I8, 0.1)], dict(Mode=1))),
    Case("gather_nd_i8", "GATHER_ND", lambda r: (
        [act((4, 5, 3), I8, 0.1), const(np.array([[0, 1], [3, 4], [2, 0]]))], [act((3, 3), I8, 0.1)], {})),
    Case("gather_i8", "GATHER", lambda r: (
        [act((4, 5), I8, 0.1), const(np.array([3, 0, 3]))], [act((4, 3), I8, 0.1)], dict(Axis=1))),
    Case("resize_nn", "RESIZE_NEAREST_NEIGHBOR", _resize(I8, (1, 3, 5, 2), (7, 8), align=False, half=False)),
    Case("resize_nn_half", "RESIZE_NEAREST_NEIGHBOR", _resize(I8, (1, 3, 5, 2), (7, 8), align=False, half=True)),
    Case("resize_nn_align", "RESIZE_NEAREST_NEIGHBOR", _resize(I16, (1, 3, 5, 2), (7, 8), align=True, half=False)),
    Case("resize_bilinear", "RESIZE_BILINEAR", _resize(I8, (1, 3, 5, 2), (7, 8), align=False, half=False)),
    Case("resize_bilinear_half", "RESIZE_BILINEAR", _resize(I8, (2, 4, 3, 2), (9, 5), align=False, half=True)),
    Case("resize_bilinear_align", "RESIZE_BILINEAR", _resize(I8, (1, 3, 5, 2), (6, 11), align=True, half=False)),
    Case("split_i8", "SPLIT", lambda r: ([const(np.array([1])), act((2, 6), I8, 0.1)],
                                         [act((2, 3), I8, 0.1), act((2, 3), I8, 0.1)], dict(NumSplits=2))),
    Case("prelu_i8", "PRELU", lambda r: ([act((1, 4, 5, 3), I8, 0.05, 3), const(r.integers(-128, 128, (1, 1, 3)), I8, 0.01, 5)],
                                         [act((1, 4, 5, 3), I8, 0.04, -2)], {})),
    Case("prelu_i16", "PRELU", lambda r: ([act((2, 5, 3), I16, 0.001), const(r.integers(-128, 128, (3,)), I8, 0.01, 0)],
                                          [act((2, 5, 3), I16, 0.001)], {})),
    Case("less_i8", "LESS", lambda r: ([act((3, 4), I8, 0.05, 3), act((1, 4), I8, 0.07, -5)], [Tensor((3, 4), np.bool_)], {})),
    Case("equal_i8", "EQUAL", lambda r: ([act((3, 4), I8, 0.05, 3), act((3, 4), I8, 0.05, 3)], [Tensor((3, 4), np.bool_)], {})),
    Case("greater_equal_i32", "GREATER_EQUAL", lambda r: ([Tensor((3, 4), I32), Tensor((3, 4), I32)],
                                                          [Tensor((3, 4), np.bool_)], {})),
    Case("elu_i8", "ELU", _unary("ELU", I8, (4, 64), 0.05, 10, 0.03, -30)),
    Case("batch_matmul_i8", "BATCH_MATMUL", lambda r: (
        [act((2, 3, 5), I8, 0.05, 3), act((1, 5, 4), I8, 0.04, -2)], [act((2, 3, 4), I8, 0.3, 1)], dict(AdjX=False, AdjY=False))),
    Case("batch_matmul_i8_adj", "BATCH_MATMUL", lambda r: (
        [act((2, 5, 3), I8, 0.05, 3), act((2, 4, 5), I8, 0.04, -2)], [act((2, 3, 4), I8, 0.3, 1)], dict(AdjX=True, AdjY=True))),
    Case("batch_matmul_i16", "BATCH_MATMUL", lambda r: (
        [act((2, 3, 5), I16, 0.001), act((2, 5, 4), I16, 0.001)], [act((2, 3, 4), I16, 0.05)], dict(AdjX=False, AdjY=False))),
    Case("add_n_i8", "ADD_N", lambda r: ([act((3, 4), I8, 0.05, 3) for _ in range(3)], [act((3, 4), I8, 0.12, -5)], {})),
    Case("cumsum_i8", "CUMSUM", lambda r: ([act((3, 6, 2), I8, 0.05, 3), const(np.array([1]))],
                                           [act((3, 6, 2), I8, 0.2, -5)], dict(Exclusive=False, Reverse=False))),
    Case("cumsum_i8_excl_rev", "CUMSUM", lambda r: ([act((3, 6), I8, 0.05, -7), const(np.array([-1]))],
                                                    [act((3, 6), I8, 0.2, 4)], dict(Exclusive=True, Reverse=True))),
    Case("maximum_i8", "MAXIMUM", lambda r: ([act((3, 4), I8, 0.1, 1), act((1, 4), I8, 0.1, 1)],
                                             [act((3, 4), I8, 0.1, 1)], {})),
    Case("minimum_i16", "MINIMUM", lambda r: ([act((3, 4), I16, 0.1), act((3, 4), I16, 0.1)],
                                              [act((3, 4), I16, 0.1)], {})),
    Case("softmax_i8", "SOFTMAX", _unary("SOFTMAX", I8, (3, 10), 0.1, 5, 1 / 256, -128, Beta=1.0)),
    Case("softmax_i8_beta", "SOFTMAX", _unary("SOFTMAX", I8, (2, 33), 0.03, -7, 1 / 256, -128, Beta=0.7)),
    Case("softmax_i8_i16", "SOFTMAX", _unary("SOFTMAX", I8, (2, 9), 0.08, 3, 1 / 65536, -32768, I16, Beta=1.0)),
    Case("softmax_i16", "SOFTMAX", _unary("SOFTMAX", I16, (3, 20), 0.0008, 0, 1 / 32768, 0, Beta=1.0)),
    Case("softmax_i16_small", "SOFTMAX", _unary("SOFTMAX", I16, (5, 7), 0.00005, 0, 1 / 32768, 0, Beta=1.0)),
    Case("logistic_i8", "LOGISTIC", _unary("LOGISTIC", I8, (4, 64), 0.06, -3, 1 / 256, -128)),
    Case("tanh_i8", "TANH", _unary("TANH", I8, (4, 64), 0.06, -3, 1 / 128, 0)),
    Case("tanh_i8_s2", "TANH", _unary("TANH", I8, (4, 64), 0.021, 11, 1 / 128, 0)),
    Case("tanh_i16_pot", "TANH", _unary("TANH", I16, (4, 256), 2.0**-12, 0, 2.0**-15, 0)),
    Case("tanh_i16", "TANH", _unary("TANH", I16, (4, 256), 0.0003, 0, 2.0**-15, 0)),
    Case("logistic_i16_pot", "LOGISTIC", _unary("LOGISTIC", I16, (4, 256), 2.0**-12, 0, 2.0**-15, 0)),
    Case("logistic_i16", "LOGISTIC", _unary("LOGISTIC", I16, (4, 256), 0.0007, 0, 2.0**-15, 0)),
    Case("hard_swish_i8", "HARD_SWISH", _unary("HARD_SWISH", I8, (4, 64), 0.05, -3, 0.04, -40)),
    Case("hard_swish_i8_wide", "HARD_SWISH", _unary("HARD_SWISH", I8, (4, 64), 0.2, 10, 0.1, -100)),
    Case("sqdiff_i8_bcast", "SQUARED_DIFFERENCE", _binary("SQUARED_DIFFERENCE", I8, (2, 3, 4), (1, 4),
                                                          (2, 3, 4))),
    Case("sqdiff_i16", "SQUARED_DIFFERENCE", _binary("SQUARED_DIFFERENCE", I16, (3, 9), (3, 9), (3, 9))),
    Case("rsqrt_i8", "RSQRT", _unary("RSQRT", I8, (4, 64), 0.05, -128, 0.02, -128)),
    Case("rsqrt_i16", "RSQRT", _unary("RSQRT", I16, (4, 64), 0.001, 0, 0.0005, 0), extra={"min": [0]}),
    Case("div_i8_bcast", "DIV", lambda r: ([act((2, 3, 4), I8, 0.05, 3), act((1, 4), I8, 0.03, -128)],
                                           [act((2, 3, 4), I8, 0.2, -2)], {}),
         extra={"min": [None, -127]}),
    Case("leaky_relu_i8", "LEAKY_RELU", _unary("LEAKY_RELU", I8, (5, 50), 0.05, 4, 0.04, -10, Alpha=0.2)),
    Case("leaky_relu_i16", "LEAKY_RELU", _unary("LEAKY_RELU", I16, (5, 50), 0.001, 0, 0.0008, 0, Alpha=0.1),
         known="the pip interpreter's LEAKY_RELU rounding differs from 90b983c2 (golden README)"),
    Case("quantize_f32_i8", "QUANTIZE", _unary("QUANTIZE", F32, (4, 30), None, None, 0.05, 3, I8)),
    Case("quantize_f32_i16", "QUANTIZE", _unary("QUANTIZE", F32, (4, 30), None, None, 0.003, 0, I16)),
    Case("requantize_i8_i8", "QUANTIZE", _unary("QUANTIZE", I8, (4, 30), 0.05, 3, 0.07, -5, I8)),
    Case("requantize_i8_i16", "QUANTIZE", _unary("QUANTIZE", I8, (4, 30), 0.05, 3, 0.001, 0, I16)),
    Case("requantize_i16_i8", "QUANTIZE", _unary("QUANTIZE", I16, (4, 30), 0.001, 0, 0.05, 3, I8)),
    Case("requantize_i16_i32", "QUANTIZE", _unary("QUANTIZE", I16, (4, 30), 0.001, 0, 0.0001, 0, I32)),
    Case("dequantize_i8", "DEQUANTIZE", _unary("DEQUANTIZE", I8, (4, 30), 0.05, 3, None, None, F32)),
    Case("dequantize_i16", "DEQUANTIZE", _unary("DEQUANTIZE", I16, (4, 30), 0.001, 0, None, None, F32)),
    Case("mean_i8_keep", "MEAN", lambda r: ([act((1, 5, 6, 3), I8, 0.05, 2), const(np.array([1, 2]))],
                                            [act((1, 1, 1, 3), I8, 0.04, -3)], dict(KeepDims=True))),
    Case("mean_i16_axis", "MEAN", lambda r: ([act((2, 7, 3), I16, 0.001), const(np.array([-1]))],
                                             [act((2, 7), I16, 0.0009)], dict(KeepDims=False))),
    Case("sum_i8", "SUM", lambda r: ([act((2, 6, 3), I8, 0.05, 2), const(np.array([1]))],
                                     [act((2, 3), I8, 0.3, -1)], dict(KeepDims=False))),
    Case("pad_i8", "PAD", lambda r: ([act((1, 3, 4, 2), I8, 0.05, 7), const(np.array([[0, 0], [1, 2], [0, 3], [0, 0]]))],
                                     [act((1, 6, 7, 2), I8, 0.05, 7)], {})),
    Case("padv2_i16", "PADV2", lambda r: ([act((3, 4), I16, 0.05), const(np.array([[2, 1], [0, 3]])),
                                           const(np.array([-5]), I16, 0.05, 0)],
                                          [act((6, 7), I16, 0.05)], {})),
    Case("strided_slice_i8", "STRIDED_SLICE", lambda r: (
        [act((1, 8, 7, 3), I8, 0.05), const(np.array([0, 1, -1, 0])), const(np.array([1, -1, 0, 3])),
         const(np.array([1, 2, -2, 1]))], [act((1, 3, 3, 3), I8, 0.05)],
        dict(BeginMask=1, EndMask=8, ShrinkAxisMask=0))),
    Case("strided_slice_shrink_i16", "STRIDED_SLICE", lambda r: (
        [act((4, 6), I16, 0.05), const(np.array([2, 1])), const(np.array([3, 6])), const(np.array([1, 2]))],
        [act((3,), I16, 0.05)], dict(ShrinkAxisMask=1))),
    Case("slice_i8", "SLICE", lambda r: ([act((3, 6, 4), I8, 0.05), const(np.array([1, 0, 1])),
                                          const(np.array([2, -1, 2]))], [act((2, 6, 2), I8, 0.05)], {})),
    Case("concat_i8", "CONCATENATION", lambda r: ([act((2, 3), I8, 0.05, 1), act((2, 4), I8, 0.05, 1)],
                                                  [act((2, 7), I8, 0.05, 1)], dict(Axis=-1))),
    Case("conv_i8_same", "CONV_2D", _conv(I8, False)),
    Case("conv_i8_valid_s2_relu", "CONV_2D", _conv(I8, False, stride=2, same=False, act_fn=1)),
    Case("conv_i8_dil2", "CONV_2D", _conv(I8, False, dil=2, same=True)),
    Case("conv_16x8", "CONV_2D", _conv(I16, False)),
    Case("dw_i8_dm2_s2", "DEPTHWISE_CONV_2D", _conv(I8, True, dm=2, stride=2)),
    Case("dw_i8_dil2_relu6", "DEPTHWISE_CONV_2D", _conv(I8, True, dil=2, act_fn=3)),
    Case("dw_16x8", "DEPTHWISE_CONV_2D", _conv(I16, True, dm=1)),
    Case("fc_i8", "FULLY_CONNECTED", _fc(I8)),
    Case("fc_i8_relu", "FULLY_CONNECTED", _fc(I8, 1)),
    Case("fc_16x8", "FULLY_CONNECTED", _fc(I16)),
    Case("avgpool_same", "AVERAGE_POOL_2D", _pool("AVERAGE_POOL_2D", True)),
    Case("maxpool_valid", "MAX_POOL_2D", _pool("MAX_POOL_2D", False)),
    Case("tconv_i8", "TRANSPOSE_CONV", _tconv(I8)),
    Case("tconv_16x8", "TRANSPOSE_CONV", _tconv(I16)),
]


def _random(t: Tensor, r: np.random.Generator, lo: int | None = None) -> np.ndarray:
    if t.dtype == np.float32:
        return r.uniform(-8, 8, t.shape).astype(np.float32)
    info = np.iinfo(t.dtype)
    return r.integers(info.min if lo is None else lo, int(info.max) + 1, t.shape).astype(t.dtype)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_handler_equals_interpreter(case: Case) -> None:
    r = np.random.default_rng(zlib.crc32(case.name.encode()))
    ins, outs, opts = case.make(r)
    data = single_op(case.op, ins, outs, opts)
    g = _golden.read_graph(data)
    ip = runtime.Interpreter.from_bytes(data, arena_size=1 << 20)
    for trial in range(3):
        live = [t for t in ins if t is not None and t.data is None and not t.variable]
        mins = case.extra.get("min", [None] * len(live))
        xs = [_random(t, r, lo) for t, lo in zip(live, mins)]
        for i, x in enumerate(xs):
            ip.set_input(x, i)
        ip.invoke()
        it = iter(xs)
        vals = [t.data if t.data is not None else next(it) for t in ins]
        gots = handlers.run_op(g, g.ops[0], vals)
        assert len(gots) == len(outs)
        for j, got in enumerate(gots):
            want = ip.get_output(j)
            same = np.array_equal(np.asarray(got).reshape(want.shape), want)
            if case.known and not same:
                pytest.xfail(case.known)
            assert np.asarray(got).dtype == want.dtype
            assert same, f"trial {trial} output {j}: max diff " \
                f"{np.max(np.abs(np.asarray(got, np.float64).reshape(want.shape) - want))}"


@pytest.mark.parametrize("state_dtype", [I8, I16])
def test_svdf_stream_equals_interpreter(state_dtype: Any) -> None:
    """SVDF with a variable state carried over successive Invokes (int8 or int16 state)."""
    r = np.random.default_rng(7 + np.dtype(state_dtype).itemsize)
    n_in, rank, nu, nm, nb = 6, 2, 3, 4, 2
    nf = rank * nu
    s_state, s_wt = 0.02, 0.01
    x = act((nb, n_in), I8, 0.05, 3)
    wf = const(r.integers(-127, 128, (nf, n_in)), I8, 0.01, 0)
    wt = const(r.integers(-127 if state_dtype == I8 else -32767, 128 if state_dtype == I8 else 32767,
                          (nf, nm)), state_dtype, s_wt, 0)
    b = const(r.integers(-300, 300, nu), I32, np.float32(s_state) * np.float32(s_wt), 0)
    st = Tensor((nb, nf * nm), state_dtype, s_state, -4 if state_dtype == I8 else 0, variable=True)
    o = act((nb, nu), I8, 0.08, 1)
    data = single_op("SVDF", [x, wf, wt, b, st], [o], dict(Rank=rank, FusedActivationFunction=0))
    g = _golden.read_graph(data)
    ip = runtime.Interpreter.from_bytes(data, arena_size=1 << 20)
    state = _golden.reset_value(g.tensors[4])
    for step in range(4):
        xv = _random(x, r)
        ip.set_input(xv, 0)
        ip.invoke()
        got = handlers.run_op(g, g.ops[0], [xv, wf.data, wt.data, b.data, state])[0]
        state = g.extra["state"][4]
        assert np.array_equal(got, ip.get_output(0)), f"step {step}"


@pytest.mark.parametrize("wide,time_major,clip", [(False, False, 0.0), (False, True, 3.0),
                                                  (True, False, 2.0), (True, True, 0.0)])
def test_lstm_equals_interpreter(wide: bool, time_major: bool, clip: float) -> None:
    """UNIDIRECTIONAL_SEQUENCE_LSTM (8x8->16 and 16x8), batch- or time-major, with / without cell
    clip, streamed over 2 Invokes (hidden and cell state carried)."""
    r = np.random.default_rng(11 + 2 * wide + time_major)
    dt = I16 if wide else I8
    nb, nt, ni, ns = 2, 4, 3, 5
    xzp = 0 if wide else 4
    hzp = 0 if wide else -9
    x = act((nt, nb, ni) if time_major else (nb, nt, ni), dt, 0.02 if not wide else 0.0002, xzp)
    bdt = np.int64 if wide else I32
    w_in = [const(r.integers(-127, 128, (ns, ni)), I8, float(r.uniform(0.005, 0.02)), 0) for _ in range(4)]
    w_rec = [const(r.integers(-127, 128, (ns, ns)), I8, float(r.uniform(0.005, 0.02)), 0) for _ in range(4)]
    bias = [const(r.integers(-3000, 3000, ns), bdt, 0.0001, 0) for _ in range(4)]
    h = Tensor((nb, ns), dt, 0.008 if not wide else 0.00004, hzp, variable=True)
    c = Tensor((nb, ns), I16, 2.0**-11, 0, variable=True)
    o = act(x.shape[:2] + (ns,), dt, h.scale, hzp)
    ins = [x, *w_in, *w_rec, None, None, None, *bias, None, None, h, c, None, None, None, None]
    data = single_op("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [o],
                     dict(FusedActivationFunction=4, CellClip=clip, ProjClip=0.0, TimeMajor=time_major))
    g = _golden.read_graph(data)
    ip = runtime.Interpreter.from_bytes(data, arena_size=1 << 20)
    state = {g.ops[0].inputs[18]: _golden.reset_value(g.tensors[g.ops[0].inputs[18]]),
             g.ops[0].inputs[19]: _golden.reset_value(g.tensors[g.ops[0].inputs[19]])}
    for step in range(2):
        xv = _random(x, r)
        ip.set_input(xv, 0)
        ip.invoke()
        got = _golden.run_graph(g, [xv], state=state)[g.outputs[0]]
        assert np.array_equal(got, ip.get_output(0)), f"invoke {step}"
