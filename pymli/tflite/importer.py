"""TFLite int8 graph -> :class:`pymli.models.Network` of MLI kernel calls.

:func:`load` reads the flatbuffer (:mod:`pymli.tflite.reader`), converts every int8 tensor to sa8
(:mod:`pymli.tflite.quant`), re-lays the weights the way MLI wants them and maps each operator on one
or a few layers. Everything is checked while mapping; an operator or parameter MLI cannot run raises
:class:`~pymli.tflite.errors.TfliteUnsupported` naming the operator, its index and the reason, and no
model is returned.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Platform
from ..formats import ElType
from ..models.layers import (
    AvgPool,
    Conv2D,
    DepthwiseConv2D,
    Eltwise,
    FullyConnected,
    Layer,
    LeakyReLU,
    MaxPool,
    Permute,
    PReLU,
    ReLU,
    Sigmoid,
    Softmax,
    Tanh,
)
from ..models.network import Network, RunResult
from ..models.qparams import Const, QParams
from .errors import TfliteError, TfliteFormatError, TfliteUnsupported
from .layers import ArgMax, Concat, L2Norm, Pad, Requant, Reshape, TransposeConv2D
from .quant import bias_qparams, float_to_mli_scale, sa8_qparams
from .reader import ACT_NAMES, PAD_NAMES, ModelInfo, OpInfo, TensorInfo, read_model

__all__ = ["load", "TfliteModel", "SUPPORTED_OPS", "quantize_input", "dequantize_output"]

#: largest activation tensor accepted (elements); larger shapes are refused at load time
MAX_ELEMENTS = 1 << 24

_FUSED = {"NONE": "none", "RELU": "gen", "RELU6": "relu_6", "RELU_N1_TO_1": "relu_1"}
#: kernel-set output parameters (zero point, real scale) of the LUT activations, as TFLite requires them
_LUT_OUT = {"LOGISTIC": (-128, 1 / 256), "SOFTMAX": (-128, 1 / 256), "TANH": (0, 1 / 128),
            "L2_NORMALIZATION": (0, 1 / 128)}


def quantize_input(x: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """Float input -> int8 as TFLite's QUANTIZE operator does it at the graph boundary.

    ``round(x / scale) + zero_point`` in float32, ties away from zero (C ``round``), saturated to int8.
    This is the offline boundary conversion of the model (not an MLI kernel).
    """
    v = np.asarray(x, np.float32) / np.float32(scale)
    r = np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))
    return np.clip(r.astype(np.int64) + int(zero_point), -128, 127).astype(np.int8)


def dequantize_output(q: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """int8 -> float32 as TFLite's DEQUANTIZE: ``(q - zero_point) * scale``."""
    return ((np.asarray(q, np.int64) - int(zero_point)).astype(np.float32) * np.float32(scale)).astype(np.float32)


@dataclasses.dataclass
class TfliteModel:
    """A loaded TFLite model: the pymli network plus the link to the TFLite tensors.

    Attributes:
        info: the decoded flatbuffer (tensors, operators).
        data: the model bytes.
        network: the pymli :class:`~pymli.models.Network` (input ``"input"``).
        tensor_layer: TFLite tensor index -> network tensor name holding its values.
        op_layers: operator index -> names of the layers it became.
        input_index, output_index: graph input / output tensor indices.
        float_input / float_output: the graph starts with QUANTIZE / ends with DEQUANTIZE.
        in_quant / out_quant: TFLite (scale, zero_point) of the int8 network input / output.
    """

    info: ModelInfo
    data: bytes
    network: Network
    tensor_layer: dict[int, str]
    op_layers: dict[int, list[str]]
    input_index: int
    output_index: int
    float_input: bool
    float_output: bool
    in_quant: tuple[float, int]
    out_quant: tuple[float, int]
    q_input_index: int
    q_output_index: int

    @property
    def input_shape(self) -> tuple[int, ...]:
        """TFLite shape of the graph input (batch first)."""
        return self.info.tensors[self.input_index].shape

    def prepare_input(self, x: np.ndarray) -> np.ndarray:
        """Input batch (TFLite shape, batch of any size) -> int8 network input batch."""
        x = np.asarray(x)
        t = self.info.tensors[self.input_index]
        shape = t.shape[1:]
        if x.shape == t.shape[1:] or (x.ndim == len(t.shape) - 1 and x.size == int(np.prod(shape))):
            x = x[None]
        x = x.reshape((x.shape[0],) + tuple(self.network.input_shape))
        if self.float_input or x.dtype.kind == "f":
            if x.dtype.kind != "f":
                raise ValueError("the model takes float input, got integers")
            return quantize_input(x, *self.in_quant)
        if x.dtype != np.int8:
            if x.min(initial=0) < -128 or x.max(initial=0) > 127:
                raise ValueError("int8 model input out of [-128, 127]")
            x = x.astype(np.int8)
        return x

    def run(self, x: np.ndarray, *, platform: Platform | str | None = None, capture: bool = False
            ) -> np.ndarray | tuple[np.ndarray, RunResult]:
        """Run on pymli's MLI kernels; returns the output batch in TFLite shape (float if the graph dequantises).

        With ``capture=True`` returns ``(output, RunResult)`` with every intermediate.
        """
        xq = self.prepare_input(x)
        res = self.network.run(xq, capture=bool(capture), platform=platform)
        out = self.output_from(res)
        return (out, res) if capture else out

    def output_from(self, res: RunResult) -> np.ndarray:
        y = res.output
        shape = self.info.tensors[self.q_output_index].shape
        y = y.reshape((y.shape[0],) + tuple(shape[1:]))
        if self.float_output:
            return dequantize_output(y, *self.out_quant)
        t = self.info.tensors[self.q_output_index]
        return y.astype(np.int64 if t.type == "INT64" else np.int32 if t.type == "INT32" else np.int8)

    def functions(self) -> dict[int, list[str]]:
        """Operator index -> MLI functions it calls."""
        names = self.network.function_names()
        return {i: [names[n] for n in ls] for i, ls in self.op_layers.items()}

    def tensor_values(self, res: RunResult, index: int) -> np.ndarray | None:
        """Values of TFLite tensor ``index`` from a captured run (TFLite shape, batch first)."""
        name = self.tensor_layer.get(index)
        if name is None or name not in res.values:
            return None
        v = res.values[name]
        return v.reshape((v.shape[0],) + tuple(self.info.tensors[index].shape[1:]))


SUPPORTED_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "AVERAGE_POOL_2D", "MAX_POOL_2D", "ADD", "SUB",
                 "MUL", "MINIMUM", "MAXIMUM", "RELU", "RELU6", "RELU_N1_TO_1", "LEAKY_RELU", "PRELU", "LOGISTIC",
                 "TANH", "SOFTMAX", "L2_NORMALIZATION", "RESHAPE", "SQUEEZE", "TRANSPOSE", "CONCATENATION", "PAD",
                 "PADV2", "ARG_MAX", "TRANSPOSE_CONV", "QUANTIZE", "DEQUANTIZE")


def load(src: str | os.PathLike[str] | bytes | bytearray | memoryview) -> TfliteModel:
    """Load a quantised int8 TFLite model (path or bytes) as a pymli network.

    Raises:
        TfliteFormatError: the bytes are not a valid TFLite flatbuffer.
        TfliteUnsupported: an operator or parameter MLI cannot run (names operator, index and reason).
        OSError: the file cannot be read.
    """
    if isinstance(src, (bytes, bytearray, memoryview)):
        data = bytes(src)
    else:
        data = Path(src).read_bytes()
    info = read_model(data)
    try:
        return _Importer(info, data).build()
    except TfliteError:
        raise
    except (ValueError, IndexError, KeyError, TypeError, ArithmeticError) as e:
        # inconsistent shapes or parameters caught by the network / layers while building
        raise TfliteFormatError(f"inconsistent model: {type(e).__name__}: {e}") from None


def la_kind(net: Network, name: str) -> str:
    return "input" if name == "input" else net[name].kind


class _Importer:
    def __init__(self, info: ModelInfo, data: bytes) -> None:
        self.info, self.data = info, data
        self.t = info.tensors
        self.names: dict[int, str] = {}
        self.qp: dict[str, QParams] = {}
        self.layers: list[Layer] = []
        self.op_layers: dict[int, list[str]] = {}
        self.used: set[str] = {"input"}
        self.op: OpInfo | None = None

    # ------------------------------------------------------------ helpers
    def fail(self, reason: str) -> TfliteUnsupported:
        op = self.op
        return TfliteUnsupported(op.index if op else None, op.name if op else "model", reason)

    def uname(self, base: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_./:-]", "_", base) or "t"
        name, k = base, 1
        while name in self.used:
            k += 1
            name = f"{base}#{k}"
        self.used.add(name)
        return name

    def act(self, idx: int) -> TensorInfo:
        """An int8 activation tensor with batch 1, per-tensor quantised."""
        t = self.tensor(idx)
        if t.is_const:
            raise self.fail(f"tensor {idx} ({t.name}) is a constant where an activation is expected")
        if t.type != "INT8":
            raise self.fail(f"tensor {idx} ({t.name}) has type {t.type}; only int8 activations run on MLI sa8")
        if not t.quantized:
            raise self.fail(f"tensor {idx} ({t.name}) has no quantisation parameters")
        if t.per_channel:
            raise self.fail(f"activation tensor {idx} ({t.name}) is quantised per channel; MLI kernels need per tensor")
        if not t.shape or t.shape[0] != 1:
            raise self.fail(f"tensor {idx} ({t.name}) shape {t.shape}: batch 1 expected")
        if len(t.shape) > 5:
            raise self.fail(f"tensor {idx} ({t.name}) rank {len(t.shape)}: MLI tensors have rank <= 4 plus batch")
        if any(s <= 0 for s in t.shape) or int(np.prod(t.shape, dtype=object)) > MAX_ELEMENTS:
            raise self.fail(f"tensor {idx} ({t.name}) shape {t.shape}: empty or more than {MAX_ELEMENTS} elements")
        return t

    def tensor(self, idx: int) -> TensorInfo:
        if idx < 0 or idx >= len(self.t):
            raise self.fail(f"missing tensor (index {idx})")
        return self.t[idx]

    def in_name(self, idx: int) -> str:
        if idx not in self.names:
            raise self.fail(f"reads tensor {idx} ({self.t[idx].name}) that no earlier operator produces")
        return self.names[idx]

    def tq(self, t: TensorInfo) -> QParams:
        try:
            return sa8_qparams(t.scale, t.zero_point if t.zero_point.size else np.zeros(1, np.int64))
        except ValueError as e:
            raise self.fail(f"tensor {t.index} ({t.name}): {e}") from None

    def add(self, layer: Layer, inputs: list[str], out_idx: int | None = None, out_q: QParams | None = None,
            base: str | None = None) -> str:
        assert self.op is not None
        layer.name = self.uname(base or (self.t[out_idx].name if out_idx is not None else self.op.name.lower()))
        layer.inputs = list(inputs)
        if out_q is not None:
            layer.out_q = out_q
        self.layers.append(layer)
        self.op_layers.setdefault(self.op.index, []).append(layer.name)
        return layer.name

    def cur_q(self, name: str) -> QParams:
        return self.qp[name]

    def finish(self, name: str, layer_q: QParams, out_idx: int) -> None:
        """Bind ``name`` (with parameters ``layer_q``) to TFLite tensor ``out_idx``, requantising if needed."""
        t = self.act(out_idx)
        want = self.tq(t)
        if layer_q != want:
            name = self.add(Requant(), [name], out_q=want, base=t.name + "/requant")
        self.qp[name] = want
        self.names[out_idx] = name

    def sample_shape(self, t: TensorInfo) -> tuple[int, ...]:
        return tuple(t.shape[1:])

    def const(self, idx: int, what: str, types: tuple[str, ...]) -> TensorInfo:
        t = self.tensor(idx)
        if not t.is_const:
            raise self.fail(f"{what} (tensor {idx}) must be a constant")
        if t.type not in types:
            raise self.fail(f"{what} (tensor {idx}) has type {t.type}, expected {'/'.join(types)}")
        if t.sparse:
            raise self.fail(f"{what} (tensor {idx}) is stored sparse; MLI takes dense constants")
        return t

    def fused(self, opts: dict[str, Any]) -> str:
        a = ACT_NAMES.get(int(opts.get("FusedActivationFunction", 0)), "?")
        if a not in _FUSED:
            raise self.fail(f"fused activation {a} has no MLI equivalent")
        return _FUSED[a]

    def then_relu(self, name: str, kind: str, q: QParams) -> str:
        if kind == "none":
            return name
        n = self.add(ReLU(kind), [name], base=name + "/relu")
        return n

    @staticmethod
    def same_pad(size: int, k: int, stride: int, dil: int = 1) -> tuple[int, int]:
        ek = (k - 1) * dil + 1
        out = (size + stride - 1) // stride
        total = max((out - 1) * stride + ek - size, 0)
        return total // 2, total - total // 2

    def padding(self, opts: dict[str, Any], h: int, w: int, kh: int, kw: int, sh: int, sw: int, dh: int = 1,
                dw: int = 1) -> tuple[int, int, int, int]:
        p = PAD_NAMES.get(int(opts.get("Padding", 0)), "?")
        if p == "VALID":
            return (0, 0, 0, 0)
        if p != "SAME":
            raise self.fail(f"padding {p}")
        t, b = self.same_pad(h, kh, sh, dh)
        l, r = self.same_pad(w, kw, sw, dw)
        return (t, b, l, r)

    def weights(self, idx: int, perm: tuple[int, ...], qdim_map: dict[int, int]) -> Const:
        t = self.const(idx, "weights", ("INT8",))
        if not t.quantized:
            raise self.fail(f"weights (tensor {idx}) are not quantised")
        if t.zero_point.size and np.any(t.zero_point != 0):
            raise self.fail("weights with a non-zero zero point (MLI sa8 weights are symmetric)")
        dim = -1
        if t.per_channel:
            if t.qdim not in qdim_map:
                raise self.fail(f"weights quantised along dimension {t.qdim}, MLI wants the output channels")
            dim = qdim_map[t.qdim]
            if t.scale.size != t.shape[t.qdim]:
                raise self.fail(f"weights have {t.scale.size} scales for {t.shape[t.qdim]} channels")
        try:
            qp = sa8_qparams(t.scale, np.zeros(t.scale.size, np.int64), dim)
        except ValueError as e:
            raise self.fail(f"weights: {e}") from None
        if dim >= 0:
            qp = dataclasses.replace(qp, zero_point=np.zeros(t.scale.size, np.int64))
        return Const.quantized(np.ascontiguousarray(np.transpose(t.data, perm)), qp)

    def bias(self, idx: int, in_q: QParams, w: Const, n: int) -> Const:
        bq = bias_qparams(in_q, w.qp)  # type: ignore[arg-type]
        if idx < 0:
            return Const.quantized(np.zeros(n, np.int32), bq)
        t = self.const(idx, "bias", ("INT32",))
        if t.data.size != n:  # type: ignore[union-attr]
            raise self.fail(f"bias has {t.data.size} values for {n} output channels")  # type: ignore[union-attr]
        return Const.quantized(t.data.reshape(n).astype(np.int32), bq)  # type: ignore[union-attr]

    # ------------------------------------------------------------ driver
    def build(self) -> TfliteModel:
        info = self.info
        if len(info.inputs) != 1 or len(info.outputs) != 1:
            raise TfliteUnsupported(None, "model", f"{len(info.inputs)} inputs and {len(info.outputs)} outputs; "
                                                   "one input and one output are supported")
        in_idx, out_idx = info.inputs[0], info.outputs[0]
        ops = list(info.ops)
        float_input = float_output = False
        q_in, q_out = in_idx, out_idx
        if ops and ops[0].name == "QUANTIZE" and self.t[in_idx].type == "FLOAT32" and ops[0].inputs[:1] == [in_idx]:
            float_input = True
            q_in = ops[0].outputs[0] if ops[0].outputs else -1
            self.op_layers[ops[0].index] = []
            ops = ops[1:]
        if (ops and ops[-1].name == "DEQUANTIZE" and self.t[out_idx].type == "FLOAT32"
                and ops[-1].outputs[:1] == [out_idx]):
            float_output = True
            q_out = ops[-1].inputs[0] if ops[-1].inputs else -1
            self.op_layers[ops[-1].index] = []
            ops = ops[:-1]
        self.op = None
        tin = self.tensor(q_in)
        if any(s <= 0 for s in tin.shape) or int(np.prod(tin.shape, dtype=object)) > MAX_ELEMENTS:
            raise TfliteUnsupported(None, "model", f"input tensor {q_in} shape {tin.shape}: empty or too large")
        if tin.type != "INT8" or not tin.quantized or tin.per_channel or not tin.shape or tin.shape[0] != 1:
            raise TfliteUnsupported(None, "model", f"input tensor {q_in} ({tin.name}): {tin.type} {tin.shape}; "
                                                   "an int8 per-tensor input with batch 1 is needed")
        in_q = self.tq(tin)
        self.names[q_in] = "input"
        self.qp["input"] = in_q
        for op in ops:
            self.op = op
            handler = getattr(self, "op_" + op.name.lower().replace(":", "_"), None)
            if handler is None:
                raise self.fail("operator not supported by pymli's MLI mapping")
            if not op.outputs:
                raise self.fail("no output tensor")
            handler(op)
        self.op = None
        if q_out not in self.names:
            raise TfliteUnsupported(None, "model", f"output tensor {q_out} is not produced by any operator")
        if not self.layers:
            raise TfliteUnsupported(None, "model", "no operator to run")
        final = self.names[q_out]
        if final != self.layers[-1].name:
            # the network output is its last layer: move the output producer to the end when it is not
            raise TfliteUnsupported(None, "model", "the graph output is not produced by the last operator")
        net = Network(self.sample_shape(tin), [], input_q=in_q, name=info.description or "tflite")
        for la in self.layers:
            try:
                net.add(la)
            except ValueError as e:
                op_idx = next(i for i, ls in self.op_layers.items() if la.name in ls)
                op = self.info.ops[op_idx]
                raise TfliteUnsupported(op_idx, op.name, f"layer {la.name}: {e}") from None
        shapes = net.shapes()
        for idx, name in self.names.items():
            want = tuple(self.t[idx].shape[1:])
            got = tuple(shapes[name])
            if got != want and not (la_kind(net, name) == "argmax" and int(np.prod(got)) == int(np.prod(want))):
                op_idx = next((i for i, ls in self.op_layers.items() if name in ls), None)
                op_name = self.info.ops[op_idx].name if op_idx is not None else "model"
                raise TfliteUnsupported(op_idx, op_name, f"tensor {idx} ({self.t[idx].name}) has shape "
                                        f"{self.t[idx].shape}, the operator computes {(1,) + got}")
        try:
            net.planned_qparams()
            missing = net.missing_functions()
        except (ValueError, KeyError) as e:
            raise TfliteUnsupported(None, "model", f"quantisation: {e}") from None
        if missing:
            raise TfliteUnsupported(None, "model", f"MLI functions not available in pymli.capi: {missing}")
        ti, to = self.t[q_in], self.t[q_out]
        def tq(t: TensorInfo) -> tuple[float, int]:
            return (float(t.scale[0]) if t.scale.size else 1.0, int(t.zero_point[0]) if t.zero_point.size else 0)
        return TfliteModel(info, self.data, net, dict(self.names), self.op_layers, in_idx, out_idx, float_input,
                           float_output, tq(ti), tq(to), q_in, q_out)

    # ------------------------------------------------------------ operators
    def _conv_common(self, op: OpInfo, depthwise: bool) -> None:
        if len(op.inputs) < 2:
            raise self.fail("needs input and weights")
        x = self.act(op.inputs[0])
        if len(x.shape) != 4:
            raise self.fail(f"input rank {len(x.shape)}, NHWC expected")
        o = op.options
        sh, sw = int(o.get("StrideH", 1)), int(o.get("StrideW", 1))
        dh, dw = int(o.get("DilationHFactor", 1)), int(o.get("DilationWFactor", 1))
        if min(sh, sw, dh, dw) < 1:
            raise self.fail(f"stride {sh}x{sw} / dilation {dh}x{dw} must be positive")
        wt = self.tensor(op.inputs[1])
        if len(wt.shape) != 4:
            raise self.fail(f"weights rank {len(wt.shape)}, 4 expected")
        _, h, w, cin = x.shape
        if depthwise:
            _, kh, kw, cout = wt.shape
            if wt.shape[0] != 1:
                raise self.fail(f"depthwise weights {wt.shape}: first dimension 1 expected")
            if cout != cin:
                raise self.fail(f"depth multiplier {o.get('DepthMultiplier', 1)} ({cin} -> {cout} channels): "
                                "MLI depthwise convolution keeps the channel count")
            wc = self.weights(op.inputs[1], (1, 2, 0, 3), {3: 3})
        else:
            cout, kh, kw, wcin = wt.shape
            if wcin != cin:
                raise self.fail(f"weights {wt.shape} expect {wcin} input channels, input has {cin} "
                                "(grouped convolution is not mapped)")
            wc = self.weights(op.inputs[1], (1, 2, 3, 0), {0: 3})
        pad = self.padding(o, h, w, kh, kw, sh, sw, dh, dw)
        in_q = self.cur_q(self.in_name(op.inputs[0]))
        b = self.bias(op.inputs[2] if len(op.inputs) > 2 else -1, in_q, wc, cout)
        relu = self.fused(o)
        out_t = self.act(op.outputs[0])
        cls = DepthwiseConv2D if depthwise else Conv2D
        la = cls(wc, b, stride=(sh, sw), padding=pad, dilation=(dh, dw), relu=relu)
        oq = self.tq(out_t)
        n = self.add(la, [self.in_name(op.inputs[0])], op.outputs[0], out_q=oq)
        self.finish(n, oq, op.outputs[0])

    def op_conv_2d(self, op: OpInfo) -> None:
        self._conv_common(op, False)

    def op_depthwise_conv_2d(self, op: OpInfo) -> None:
        self._conv_common(op, True)

    def op_transpose_conv(self, op: OpInfo) -> None:
        if len(op.inputs) < 3:
            raise self.fail("needs output shape, weights and input")
        x = self.act(op.inputs[2])
        wt = self.tensor(op.inputs[1])
        if len(x.shape) != 4 or len(wt.shape) != 4:
            raise self.fail("NHWC input and OHWI weights expected")
        o = op.options
        sh, sw = int(o.get("StrideH", 1)), int(o.get("StrideW", 1))
        if min(sh, sw) < 1:
            raise self.fail(f"stride {sh}x{sw}")
        cout, kh, kw, wcin = wt.shape
        out_t = self.act(op.outputs[0])
        _, oh, ow, oc = out_t.shape
        if oc != cout or wcin != x.shape[3]:
            raise self.fail(f"weights {wt.shape} do not fit input {x.shape} / output {out_t.shape}")
        p = PAD_NAMES.get(int(o.get("Padding", 0)), "?")

        def pads(in_size: int, out_size: int, k: int, s: int) -> tuple[int, int]:
            # TFLite: the padding of a convolution from the output back to the input size
            n = (out_size + s - 1) // s if p == "SAME" else (out_size - k + s) // s
            total = max((n - 1) * s + k - out_size, 0)
            before = total // 2
            after = (in_size - 1) * s + k - out_size - before
            return before, after

        t, b = pads(x.shape[1], oh, kh, sh)
        l, r = pads(x.shape[2], ow, kw, sw)
        if min(t, b, l, r) < 0 or max(t, b) >= kh or max(l, r) >= kw or sh > kh or sw > kw:
            raise self.fail(f"padding ({t}, {b}, {l}, {r}) / stride {sh}x{sw} for a {kh}x{kw} kernel: MLI needs "
                            "0 <= padding < kernel and stride <= kernel")
        wc = self.weights(op.inputs[1], (1, 2, 3, 0), {0: 3})
        in_q = self.cur_q(self.in_name(op.inputs[2]))
        bias = self.bias(op.inputs[3] if len(op.inputs) > 3 else -1, in_q, wc, cout)
        la = TransposeConv2D(wc, bias, stride=(sh, sw), padding=(t, b, l, r), relu=self.fused(o))
        oq = self.tq(out_t)
        n = self.add(la, [self.in_name(op.inputs[2])], op.outputs[0], out_q=oq)
        self.finish(n, oq, op.outputs[0])

    def op_fully_connected(self, op: OpInfo) -> None:
        if len(op.inputs) < 2:
            raise self.fail("needs input and weights")
        x = self.act(op.inputs[0])
        o = op.options
        if int(o.get("WeightsFormat", 0)) != 0:
            raise self.fail("shuffled weights format")
        wt = self.tensor(op.inputs[1])
        if len(wt.shape) != 2:
            raise self.fail(f"weights {wt.shape}: [out, in] expected")
        n_out, n_in = wt.shape
        if int(np.prod(x.shape[1:])) != n_in:
            raise self.fail(f"input {x.shape} has {int(np.prod(x.shape[1:]))} values per sample, weights expect {n_in}")
        out_t = self.act(op.outputs[0])
        if int(np.prod(out_t.shape[1:])) != n_out:
            raise self.fail(f"output {out_t.shape} does not hold {n_out} values per sample")
        wc = self.weights(op.inputs[1], (1, 0), {0: 1})
        in_q = self.cur_q(self.in_name(op.inputs[0]))
        b = self.bias(op.inputs[2] if len(op.inputs) > 2 else -1, in_q, wc, n_out)
        oq = self.tq(out_t)
        n = self.add(FullyConnected(wc, b, relu=self.fused(o)), [self.in_name(op.inputs[0])], op.outputs[0], out_q=oq)
        if tuple(out_t.shape[1:]) != (n_out,):
            n = self.add(Reshape(out_t.shape[1:]), [n], base=n + "/reshape")
        self.finish(n, oq, op.outputs[0])

    def _pool(self, op: OpInfo, cls: type) -> None:
        x = self.act(op.inputs[0])
        if len(x.shape) != 4:
            raise self.fail(f"input rank {len(x.shape)}, NHWC expected")
        o = op.options
        kh, kw = int(o.get("FilterHeight", 1)), int(o.get("FilterWidth", 1))
        sh, sw = int(o.get("StrideH", 1)), int(o.get("StrideW", 1))
        if min(kh, kw, sh, sw) < 1:
            raise self.fail(f"filter {kh}x{kw} / stride {sh}x{sw} must be positive")
        pad = self.padding(o, x.shape[1], x.shape[2], kh, kw, sh, sw)
        if max(pad[:2]) >= kh or max(pad[2:]) >= kw:
            raise self.fail(f"padding {pad} not smaller than the {kh}x{kw} window")
        relu = self.fused(o)
        in_name = self.in_name(op.inputs[0])
        in_q = self.cur_q(in_name)
        out_t = self.act(op.outputs[0])
        oq = self.tq(out_t)
        if cls is MaxPool:
            n = self.add(MaxPool((kh, kw), stride=(sh, sw), padding=pad), [in_name], op.outputs[0])
            q = in_q
        else:
            n = self.add(AvgPool((kh, kw), stride=(sh, sw), padding=pad), [in_name], op.outputs[0], out_q=oq)
            q = oq
        n = self.then_relu(n, relu, q)
        self.finish(n, q, op.outputs[0])

    def op_max_pool_2d(self, op: OpInfo) -> None:
        self._pool(op, MaxPool)

    def op_average_pool_2d(self, op: OpInfo) -> None:
        self._pool(op, AvgPool)

    def _eltwise(self, op: OpInfo, kind: str) -> None:
        if len(op.inputs) != 2:
            raise self.fail(f"{len(op.inputs)} inputs, 2 expected")
        a, b = (self.tensor(i) for i in op.inputs)
        ia, ib = op.inputs
        if a.is_const and b.is_const:
            raise self.fail("both inputs are constants")
        if a.is_const:
            if kind == "sub":
                raise self.fail("constant first operand of SUB")
            a, b, ia, ib = b, a, ib, ia
        self.act(ia)
        out_t = self.act(op.outputs[0])
        rank = len(out_t.shape)
        in_a = self.in_name(ia)
        qa = self.cur_q(in_a)
        minmax = kind in ("min", "max")
        if b.is_const:
            if b.type != "INT8" or not b.quantized or b.per_channel:
                raise self.fail(f"constant operand {ib}: {b.type}, per-tensor int8 expected")
            cshape = b.shape
            if len(cshape) == rank:
                if cshape[0] != 1:
                    raise self.fail(f"constant operand shape {cshape} has a batch")
                cshape = cshape[1:]
            sample = tuple(a.shape[1:])
            try:
                cval = np.broadcast_to(b.data.reshape(cshape), sample)  # type: ignore[union-attr]
            except ValueError:
                raise self.fail(f"constant operand {b.shape} does not broadcast to {a.shape}") from None
            cq = self.tq(b)
            if minmax and cq != qa:
                # MLI min / max need operands of one format: express the constant in the input's (offline)
                real = (cval.astype(np.float64) - float(b.zero_point[0] if b.zero_point.size else 0)) * float(b.scale[0])
                cval = quantize_input(real, float(a.scale[0]), int(a.zero_point[0]) if a.zero_point.size else 0)
                cq = qa
            # MLI eltwise takes a scalar or an operand of the input's shape: expand broadcast constants
            const = Const.quantized(np.ascontiguousarray(cval).astype(np.int8), cq)
            la = Eltwise(kind, const=const)
            ins = [in_a]
        else:
            self.act(ib)
            if a.shape != b.shape:
                raise self.fail(f"broadcast of {a.shape} with {b.shape} between two activations is not mapped")
            in_b = self.in_name(ib)
            if minmax and self.cur_q(in_b) != qa:
                in_b = self.add(Requant(), [in_b], out_q=qa, base=f"{self.t[ib].name}/requant")
                self.qp[in_b] = qa
            la = Eltwise(kind)
            ins = [in_a, in_b]
        oq = self.tq(out_t)
        if tuple(a.shape[1:]) != tuple(out_t.shape[1:]):
            raise self.fail(f"output shape {out_t.shape} does not match the operands")
        n = self.add(la, ins, op.outputs[0], out_q=oq)
        n = self.then_relu(n, self.fused(op.options), oq)
        self.finish(n, oq, op.outputs[0])

    def op_add(self, op: OpInfo) -> None:
        self._eltwise(op, "add")

    def op_sub(self, op: OpInfo) -> None:
        self._eltwise(op, "sub")

    def op_mul(self, op: OpInfo) -> None:
        self._eltwise(op, "mul")

    def op_minimum(self, op: OpInfo) -> None:
        self._eltwise(op, "min")

    def op_maximum(self, op: OpInfo) -> None:
        self._eltwise(op, "max")

    def _relu(self, op: OpInfo, kind: str) -> None:
        self.act(op.inputs[0])
        in_name = self.in_name(op.inputs[0])
        q = self.cur_q(in_name)
        n = self.add(ReLU(kind), [in_name], op.outputs[0])
        self.finish(n, q, op.outputs[0])

    def op_relu(self, op: OpInfo) -> None:
        self._relu(op, "gen")

    def op_relu6(self, op: OpInfo) -> None:
        self._relu(op, "relu_6")

    def op_relu_n1_to_1(self, op: OpInfo) -> None:
        self._relu(op, "relu_1")

    def op_leaky_relu(self, op: OpInfo) -> None:
        self.act(op.inputs[0])
        alpha = float(op.options.get("Alpha", 0.2))
        if not np.isfinite(alpha):
            raise self.fail(f"alpha {alpha}")
        if alpha == 0:
            slope = Const.quantized(np.asarray(0, np.int8), QParams.sa(0, 1 << 14, 14))
        else:
            s, f = float_to_mli_scale(abs(alpha))
            slope = Const.quantized(np.asarray(1 if alpha > 0 else -1, np.int8), QParams.sa(0, s, f))
        oq = self.tq(self.act(op.outputs[0]))
        n = self.add(LeakyReLU(slope), [self.in_name(op.inputs[0])], op.outputs[0], out_q=oq)
        self.finish(n, oq, op.outputs[0])

    def op_prelu(self, op: OpInfo) -> None:
        if len(op.inputs) != 2:
            raise self.fail("needs input and alpha")
        x = self.act(op.inputs[0])
        al = self.const(op.inputs[1], "alpha", ("INT8",))
        if not al.quantized or al.per_channel:
            raise self.fail("alpha must be int8 quantised per tensor")
        c = x.shape[-1]
        vals = al.data.reshape(-1)  # type: ignore[union-attr]
        if vals.size not in (1, c) or (vals.size == c and int(np.prod(al.shape)) != al.shape[-1]):
            raise self.fail(f"alpha shape {al.shape}: one value or one per channel (last axis) expected")
        if vals.size == 1:
            vals = np.repeat(vals, c)
        oq = self.tq(self.act(op.outputs[0]))
        slope = Const.quantized(vals.astype(np.int8), self.tq(al))
        n = self.add(PReLU(slope), [self.in_name(op.inputs[0])], op.outputs[0], out_q=oq)
        self.finish(n, oq, op.outputs[0])

    def _lut(self, op: OpInfo, layer: Layer) -> None:
        self.act(op.inputs[0])
        zp, s = _LUT_OUT[op.name]
        sc, f = float_to_mli_scale(s)
        q = QParams.sa(zp, sc, f)
        n = self.add(layer, [self.in_name(op.inputs[0])], op.outputs[0])
        self.finish(n, q, op.outputs[0])

    def op_logistic(self, op: OpInfo) -> None:
        self._lut(op, Sigmoid())

    def op_tanh(self, op: OpInfo) -> None:
        self._lut(op, Tanh())

    def op_softmax(self, op: OpInfo) -> None:
        beta = float(op.options.get("Beta", 1.0))
        if beta != 1.0:
            raise self.fail(f"beta {beta}: MLI softmax has no beta (only 1.0 is mapped)")
        x = self.act(op.inputs[0])
        self._lut(op, Softmax(axis=len(x.shape) - 2))

    def op_l2_normalization(self, op: OpInfo) -> None:
        if self.fused(op.options) != "none":
            raise self.fail("fused activation after L2 normalisation")
        self._lut(op, L2Norm())

    def _reshape(self, op: OpInfo) -> None:
        x = self.act(op.inputs[0])
        out_t = self.act(op.outputs[0])
        if int(np.prod(x.shape)) != int(np.prod(out_t.shape)):
            raise self.fail(f"cannot reshape {x.shape} to {out_t.shape}")
        in_name = self.in_name(op.inputs[0])
        q = self.cur_q(in_name)
        n = self.add(Reshape(tuple(out_t.shape[1:]) or (1,)), [in_name], op.outputs[0])
        self.finish(n, q, op.outputs[0])

    def op_reshape(self, op: OpInfo) -> None:
        self._reshape(op)

    def op_squeeze(self, op: OpInfo) -> None:
        self._reshape(op)

    def op_transpose(self, op: OpInfo) -> None:
        x = self.act(op.inputs[0])
        if len(op.inputs) != 2:
            raise self.fail("needs input and permutation")
        p = self.const(op.inputs[1], "permutation", ("INT32", "INT64"))
        perm = [int(v) for v in p.data.reshape(-1)]  # type: ignore[union-attr]
        if sorted(perm) != list(range(len(x.shape))):
            raise self.fail(f"permutation {perm} for rank {len(x.shape)}")
        if perm[0] != 0:
            raise self.fail(f"permutation {perm} moves the batch axis")
        in_name = self.in_name(op.inputs[0])
        q = self.cur_q(in_name)
        n = self.add(Permute([v - 1 for v in perm[1:]]), [in_name], op.outputs[0])
        self.finish(n, q, op.outputs[0])

    def op_concatenation(self, op: OpInfo) -> None:
        if not op.inputs:
            raise self.fail("no input")
        out_t = self.act(op.outputs[0])
        rank = len(out_t.shape)
        axis = int(op.options.get("Axis", 0))
        axis = axis + rank if axis < 0 else axis
        if not 1 <= axis < rank:
            raise self.fail(f"axis {op.options.get('Axis')} (rank {rank}): only non-batch axes are mapped")
        if len(op.inputs) > 8:
            raise self.fail(f"{len(op.inputs)} inputs, MLI concatenates at most 8")
        oq = self.tq(out_t)
        names = []
        for i in op.inputs:
            self.act(i)
            n = self.in_name(i)
            if self.cur_q(n) != oq:
                n = self.add(Requant(), [n], out_q=oq, base=f"{self.t[i].name}/requant")
                self.qp[n] = oq
            names.append(n)
        n = self.add(Concat(axis - 1, len(names)), names, op.outputs[0])
        n = self.then_relu(n, self.fused(op.options), oq)
        self.finish(n, oq, op.outputs[0])

    def op_pad(self, op: OpInfo) -> None:
        x = self.act(op.inputs[0])
        if len(op.inputs) < 2:
            raise self.fail("needs input and paddings")
        if len(x.shape) != 4:
            raise self.fail(f"input rank {len(x.shape)}: MLI pads HWC maps (NHWC)")
        p = self.const(op.inputs[1], "paddings", ("INT32", "INT64"))
        pads = p.data.reshape(-1)  # type: ignore[union-attr]
        if pads.size != 8:
            raise self.fail(f"paddings {p.shape}, [4, 2] expected")
        pads = pads.reshape(4, 2)
        if np.any(pads[0] != 0) or np.any(pads[3] != 0):
            raise self.fail("padding of the batch or channel axis (MLI pads height and width)")
        if np.any(pads < 0):
            raise self.fail("negative padding")
        in_name = self.in_name(op.inputs[0])
        q = self.cur_q(in_name)
        out_t = self.act(op.outputs[0])
        if self.tq(out_t) != q:
            raise self.fail("output quantisation differs from the input's")
        if len(op.inputs) > 2 and op.inputs[2] >= 0:
            cv = self.const(op.inputs[2], "constant value", ("INT8",))
            if int(cv.data.reshape(-1)[0]) != int(q.zero_point):  # type: ignore[union-attr]
                raise self.fail("pads with a value other than the zero point (MLI pads with the zero point)")
        n = self.add(Pad((int(pads[1, 0]), int(pads[1, 1]), int(pads[2, 0]), int(pads[2, 1]))), [in_name],
                     op.outputs[0])
        self.finish(n, q, op.outputs[0])

    def op_padv2(self, op: OpInfo) -> None:
        self.op_pad(op)

    def op_arg_max(self, op: OpInfo) -> None:
        x = self.act(op.inputs[0])
        if len(op.inputs) != 2:
            raise self.fail("needs input and axis")
        ax = self.const(op.inputs[1], "axis", ("INT32", "INT64"))
        axis = int(ax.data.reshape(-1)[0])  # type: ignore[union-attr]
        rank = len(x.shape)
        axis = axis + rank if axis < 0 else axis
        if axis != rank - 1 or rank < 2:
            raise self.fail(f"axis {axis} of rank {rank}: only the last (non-batch) axis is mapped")
        out_t = self.tensor(op.outputs[0])
        if out_t.type not in ("INT32", "INT64"):
            raise self.fail(f"output type {out_t.type}")
        n = self.add(ArgMax(), [self.in_name(op.inputs[0])], op.outputs[0])
        self.names[op.outputs[0]] = n
        self.qp[n] = QParams.sa(0, 1, 0, -1, ElType.SA_32)

    def op_quantize(self, op: OpInfo) -> None:
        src = self.tensor(op.inputs[0])
        if src.type != "INT8":
            raise self.fail(f"QUANTIZE from {src.type} inside the graph (only at the input, or int8 -> int8)")
        self.act(op.inputs[0])
        n = self.in_name(op.inputs[0])
        oq = self.tq(self.act(op.outputs[0]))
        m = self.add(Requant(), [n], op.outputs[0], out_q=oq)
        self.finish(m, oq, op.outputs[0])

    def op_dequantize(self, op: OpInfo) -> None:
        raise self.fail("DEQUANTIZE inside the graph (only the graph output can be dequantised)")

