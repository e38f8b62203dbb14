"""Small int8 TFLite models generated in Python (tests, docs, ``pymli compare`` demos).

:class:`GraphMaker` builds a graph op by op with random float weights, quantises the constants
(per channel or per tensor) and calibrates every activation from a float run of random inputs, as
a TFLite converter would. :data:`OP_CASES` gives one-operator models with various settings;
:func:`cnn10` an 11-layer CNN (conv, depthwise, pooling, fully connected, softmax).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph.activation import TFLITE_FUSED
from ..graph.geometry import same_padding, transpose_padding_for_output
from ..models import floatops as F
from .builder import ModelWriter, choose_qparams, quantize_bias, quantize_per_channel, quantize_per_tensor

__all__ = ["GraphMaker", "cnn10", "OP_CASES", "TFLM_CANNOT_RUN"]


class GraphMaker:
    """Build a quantised graph while tracking a float64 calibration batch through it.

    Args:
        shape: input shape without batch (NHWC order for images).
        seed: random seed of weights and calibration data.
        float_io: wrap the int8 graph in QUANTIZE / DEQUANTIZE (float input and output).
    """

    def __init__(self, shape: tuple[int, ...], seed: int = 0, *, in_range: tuple[float, float] = (-2.0, 2.0),
                 float_io: bool = False, description: str = "pymli example") -> None:
        self.rng = np.random.default_rng(seed)
        self.w = ModelWriter(description)
        self.float_io = float_io
        s, z = choose_qparams(*in_range)
        self.xq = self.rng.integers(-128, 128, (16,) + tuple(shape))
        xf = (self.xq - z) * s
        self.n = 0
        if float_io:
            self.graph_in = self.w.tensor("input_f32", (1,) + tuple(shape), "FLOAT32")
            cur = self.w.tensor("input_int8", (1,) + tuple(shape), scale=s, zero_point=z)
            self.w.op("QUANTIZE", [self.graph_in], [cur])
        else:
            cur = self.graph_in = self.w.tensor("input", (1,) + tuple(shape), scale=s, zero_point=z)
        self.cur, self.f, self.q = cur, xf, (s, z)

    # ------------------------------------------------------------------ helpers
    def _name(self, kind: str) -> str:
        self.n += 1
        return f"{kind}{self.n}"

    def _act_out(self, kind: str, yf: np.ndarray, q: tuple[float, int] | None = None) -> int:
        if q is None:
            q = choose_qparams(float(yf.min()), float(yf.max()))
        # the calibration batch continues with what int8 can represent
        s, z = q
        yq = np.clip(np.round(yf / s) + z, -128, 127)
        idx = self.w.tensor(self._name(kind), (1,) + yf.shape[1:], scale=s, zero_point=z)
        self.f, self.q = (yq - z) * s, q
        return idx

    def _weights(self, wf: np.ndarray, axis: int, per_channel: bool) -> tuple[np.ndarray, np.ndarray]:
        if per_channel:
            return quantize_per_channel(wf, axis)
        s = max(float(np.abs(wf).max()) / 127.0, 1e-8)
        s = float(np.float32(s))
        return quantize_per_tensor(wf, s, 0), np.array([s])

    def _wtensor(self, kind: str, q: np.ndarray, scale: np.ndarray, axis: int) -> int:
        return self.w.tensor(self._name(kind + "_w"), q.shape, "INT8", q, scale=scale, zero_point=0,
                             qdim=axis if scale.size > 1 else 0)

    def _bias(self, kind: str, bf: np.ndarray, wscale: np.ndarray) -> tuple[int, np.ndarray]:
        bq = quantize_bias(bf, self.q[0], wscale if wscale.size > 1 else wscale[0])
        bs = (self.q[0] * np.broadcast_to(wscale, bf.shape)).astype(np.float32)
        return self.w.tensor(self._name(kind + "_b"), bf.shape, "INT32", bq, scale=bs, zero_point=0), \
            bq * bs.astype(np.float64)

    @staticmethod
    def _act(y: np.ndarray, act: str) -> np.ndarray:
        return F.relu(y, TFLITE_FUSED[act])

    # ------------------------------------------------------------------ MAC layers
    def conv(self, cout: int, k: int | tuple[int, int] = 3, stride: int = 1, padding: str = "SAME",
             dilation: int = 1, act: str = "NONE", per_channel: bool = True, depthwise: bool = False,
             bias: bool = True) -> GraphMaker:
        """Append CONV_2D (or DEPTHWISE_CONV_2D) with random weights; TFLite ``padding`` / activation names."""
        kh, kw = (k, k) if isinstance(k, int) else k
        _, h, wd, cin = self.f.shape
        if depthwise:
            cout = cin
        fan = kh * kw * (1 if depthwise else cin)
        wf = self.rng.normal(0, 1.2 / np.sqrt(fan), (1 if depthwise else cout, kh, kw, cin if not depthwise else cout))
        axis = 3 if depthwise else 0
        wq, ws = self._weights(wf, axis, per_channel)
        kind = "dwconv" if depthwise else "conv"
        wt = self._wtensor(kind, wq, ws, axis)
        bf = self.rng.normal(0, 0.2, cout)
        ins = [self.cur, wt]
        bd = np.zeros(cout)
        if bias:
            bt, bd = self._bias(kind, bf, ws)
            ins.append(bt)
        wdq = wq * (ws.reshape((-1, 1, 1, 1)) if not depthwise else ws.reshape((1, 1, 1, -1)))
        if padding == "SAME":
            t, b = same_padding(h, kh, stride, dilation)
            l, r = same_padding(wd, kw, stride, dilation)
        else:
            t = b = l = r = 0
        if depthwise:
            y = F.depthwise_conv2d(self.f, np.transpose(wdq, (1, 2, 0, 3)), bd, (stride, stride), (t, b, l, r),
                                   (dilation, dilation))
        else:
            y = F.conv2d(self.f, np.transpose(wdq, (1, 2, 3, 0)), bd, (stride, stride), (t, b, l, r),
                         (dilation, dilation))
        y = self._act(y, act)
        out = self._act_out(kind, y)
        opts: dict[str, Any] = dict(Padding=padding, StrideW=stride, StrideH=stride, FusedActivationFunction=act,
                                    DilationWFactor=dilation, DilationHFactor=dilation)
        if depthwise:
            opts["DepthMultiplier"] = 1
        self.w.op("DEPTHWISE_CONV_2D" if depthwise else "CONV_2D", ins, [out], **opts)
        self.cur = out
        return self

    def dwconv(self, k: int = 3, **kw: Any) -> GraphMaker:
        """Append DEPTHWISE_CONV_2D (multiplier 1); see :meth:`conv`."""
        return self.conv(0, k, depthwise=True, **kw)

    def fc(self, n: int, act: str = "NONE", per_channel: bool = False) -> GraphMaker:
        """Append FULLY_CONNECTED to ``n`` outputs with random weights."""
        x = self.f.reshape(self.f.shape[0], -1)
        nin = x.shape[1]
        wf = self.rng.normal(0, 1.2 / np.sqrt(nin), (n, nin))
        wq, ws = self._weights(wf, 0, per_channel)
        wt = self._wtensor("fc", wq, ws, 0)
        bt, bd = self._bias("fc", self.rng.normal(0, 0.2, n), ws)
        y = self._act(x @ (wq * ws.reshape(-1, 1)).T + bd, act)
        out = self._act_out("fc", y)
        self.w.op("FULLY_CONNECTED", [self.cur, wt, bt], [out], FusedActivationFunction=act)
        self.cur = out
        return self

    def transpose_conv(self, cout: int, k: int = 3, stride: int = 2, padding: str = "SAME",
                       per_channel: bool = True) -> GraphMaker:
        """Append TRANSPOSE_CONV to ``cout`` channels (SAME: ``in * stride``; VALID: ``(in - 1) * stride + k``)."""
        _, h, wd, cin = self.f.shape
        wf = self.rng.normal(0, 1.2 / np.sqrt(k * k * cin), (cout, k, k, cin))
        wq, ws = self._weights(wf, 0, per_channel)
        wt = self._wtensor("tconv", wq, ws, 0)
        bt, bd = self._bias("tconv", self.rng.normal(0, 0.2, cout), ws)
        if padding == "SAME":
            oh, ow = h * stride, wd * stride
        else:
            oh, ow = (h - 1) * stride + k, (wd - 1) * stride + k
        wdq = np.transpose(wq * ws.reshape(-1, 1, 1, 1), (1, 2, 3, 0))
        t, _ = transpose_padding_for_output(h, oh, k, stride, padding == "SAME")
        l, _ = transpose_padding_for_output(wd, ow, k, stride, padding == "SAME")
        full = np.zeros((self.f.shape[0], (h - 1) * stride + k, (wd - 1) * stride + k, cout))
        for i in range(k):
            for j in range(k):
                full[:, i:i + (h - 1) * stride + 1:stride, j:j + (wd - 1) * stride + 1:stride] += self.f @ wdq[i, j]
        y = full[:, t:t + oh, l:l + ow] + bd
        shape_t = self.w.const(self._name("tconv_shape"), np.array([1, oh, ow, cout], np.int32))
        out = self._act_out("tconv", y)
        self.w.op("TRANSPOSE_CONV", [shape_t, wt, self.cur, bt], [out], Padding=padding, StrideW=stride,
                  StrideH=stride)
        self.cur = out
        return self

    # ------------------------------------------------------------------ pooling
    def pool(self, kind: str, k: int = 2, stride: int = 2, padding: str = "VALID", act: str = "NONE") -> GraphMaker:
        """Append MAX_POOL_2D (``kind="max"``) or AVERAGE_POOL_2D."""
        _, h, wd, _ = self.f.shape
        if padding == "SAME":
            t, b = same_padding(h, k, stride)
            l, r = same_padding(wd, k, stride)
        else:
            t = b = l = r = 0
        if kind == "max":
            y = F.max_pool(self.f, (k, k), (stride, stride), (t, b, l, r))
            q = self.q
        else:
            y = F.avg_pool(self.f, (k, k), (stride, stride), (t, b, l, r))
            q = self.q  # TFLite requires the input's parameters
        y = self._act(y, act)
        out = self._act_out(kind + "pool", y, q)
        self.w.op("MAX_POOL_2D" if kind == "max" else "AVERAGE_POOL_2D", [self.cur], [out], Padding=padding,
                  StrideW=stride, StrideH=stride, FilterWidth=k, FilterHeight=k, FusedActivationFunction=act)
        self.cur = out
        return self

    # ------------------------------------------------------------------ element-wise, activations
    def eltwise(self, op: str, const: bool = False, act: str = "NONE", branch: str = "relu") -> GraphMaker:
        """``op`` in ADD, SUB, MUL, MINIMUM, MAXIMUM of the current tensor with a constant, or with a
        second branch of it: ``relu`` (same parameters, exact in both runtimes, so the comparison sees the
        operator's own error) or ``conv`` (a 1x1 convolution, other parameters)."""
        a_idx, af, aq = self.cur, self.f, self.q
        if const:
            cf = self.rng.normal(0, 1.0, af.shape[-1:])
            if op in ("MINIMUM", "MAXIMUM"):
                cs, cz = aq      # TFLite compares raw values: the constant shares the input's parameters
            else:
                cs, cz = choose_qparams(float(cf.min()), float(cf.max()))
            cq = quantize_per_tensor(cf, cs, cz)
            b_idx = self.w.tensor(self._name("const"), cf.shape, "INT8", cq, scale=cs, zero_point=cz)
            bf = (cq.astype(np.float64) - cz) * cs
        else:
            if branch == "relu":
                self.unary("RELU")
            else:
                self.conv(af.shape[-1], 1, act="NONE")
            b_idx, bf = self.cur, self.f
        fn = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply, "MINIMUM": np.minimum, "MAXIMUM": np.maximum}[op]
        y = self._act(fn(af, bf), act)
        q = aq if op in ("MINIMUM", "MAXIMUM") else None
        out = self._act_out(op.lower(), y, q)
        opts = {"FusedActivationFunction": act} if op in ("ADD", "SUB", "MUL") else {}
        self.w.op(op, [a_idx, b_idx], [out], **opts)
        self.cur = out
        return self

    def unary(self, op: str, **opts: Any) -> GraphMaker:
        """RELU, RELU6, RELU_N1_TO_1, LOGISTIC, TANH, SOFTMAX, L2_NORMALIZATION, LEAKY_RELU (``Alpha``)."""
        x = self.f
        q = None
        if op in ("RELU", "RELU6", "RELU_N1_TO_1"):
            y = self._act(x, op)
            q = self.q
        elif op == "LOGISTIC":
            y, q = F.sigmoid(x), (1 / 256, -128)
        elif op == "TANH":
            y, q = np.tanh(x), (1 / 128, 0)
        elif op == "SOFTMAX":
            y, q = F.softmax(x, -1), (1 / 256, -128)
        elif op == "L2_NORMALIZATION":
            y, q = x / np.maximum(np.sqrt((x * x).sum(-1, keepdims=True)), 1e-12), (1 / 128, 0)
        elif op == "LEAKY_RELU":
            a = float(opts.get("Alpha", 0.2))
            y = np.where(x >= 0, x, a * x)
        else:
            raise ValueError(op)
        out = self._act_out(op.lower(), y, q)
        if op == "SOFTMAX":
            opts.setdefault("Beta", 1.0)
        self.w.op(op, [self.cur], [out], **opts)
        self.cur = out
        return self

    def prelu(self) -> GraphMaker:
        """Append PRELU with one random int8 alpha per channel."""
        c = self.f.shape[-1]
        af = self.rng.uniform(-0.5, 0.8, c)
        s, z = choose_qparams(float(af.min()), float(af.max()))
        aq = quantize_per_tensor(af, s, z)
        at = self.w.tensor(self._name("alpha"), (1, 1, c), "INT8", aq, scale=s, zero_point=z)
        ad = (aq.astype(np.float64) - z) * s
        y = np.where(self.f >= 0, self.f, self.f * ad)
        out = self._act_out("prelu", y)
        self.w.op("PRELU", [self.cur, at], [out])
        self.cur = out
        return self

    # ------------------------------------------------------------------ data movement
    def reshape(self, shape: tuple[int, ...], op: str = "RESHAPE") -> GraphMaker:
        """Append RESHAPE (or ``op``, e.g. SQUEEZE) to the sample shape ``shape``."""
        y = self.f.reshape((self.f.shape[0],) + tuple(shape))
        dims = [i + 1 for i, s in enumerate(self.f.shape[1:]) if s == 1]
        out = self._act_out(op.lower(), y, self.q)
        if op == "RESHAPE":
            st = self.w.const(self._name("shape"), np.array((1,) + tuple(shape), np.int32))
            self.w.op("RESHAPE", [self.cur, st], [out], NewShape=[1, *shape])
        else:
            self.w.op("SQUEEZE", [self.cur], [out], SqueezeDims=dims)
        self.cur = out
        return self

    def transpose(self, perm: list[int]) -> GraphMaker:
        """Append TRANSPOSE with permutation ``perm`` (batch axis included)."""
        y = np.transpose(self.f, perm)
        out = self._act_out("transpose", y, self.q)
        pt = self.w.const(self._name("perm"), np.array(perm, np.int32))
        self.w.op("TRANSPOSE", [self.cur, pt], [out])
        self.cur = out
        return self

    def concat(self, equal_scales: bool = True, axis: int = -1) -> GraphMaker:
        """Concatenate the current tensor with a branch of it: a RELU (same parameters, no rescaling)
        or a 1x1 convolution (other parameters: inputs are requantised to the output's)."""
        a_idx, af, aq = self.cur, self.f, self.q
        if equal_scales:
            self.unary("RELU")
        else:
            self.conv(af.shape[-1], 1)
        b_idx, bf = self.cur, self.f
        y = np.concatenate([af, bf], axis=axis)
        out = self._act_out("concat", y, aq if equal_scales else None)
        self.w.op("CONCATENATION", [a_idx, b_idx], [out], Axis=axis, FusedActivationFunction="NONE")
        self.cur = out
        return self

    def pad(self, pads: tuple[int, int, int, int], v2: bool = False) -> GraphMaker:
        """Append PAD (PADV2 with ``v2``) of (top, bottom, left, right) around height and width."""
        t, b, l, r = pads
        y = F.pad_hw(self.f, pads)
        out = self._act_out("pad", y, self.q)
        pt = self.w.const(self._name("paddings"), np.array([[0, 0], [t, b], [l, r], [0, 0]], np.int32))
        ins = [self.cur, pt]
        if v2:
            ins.append(self.w.tensor(self._name("pad_value"), (), "INT8", np.array(self.q[1]), scale=self.q[0],
                                     zero_point=self.q[1]))
        self.w.op("PADV2" if v2 else "PAD", ins, [out])
        self.cur = out
        return self

    def argmax(self) -> GraphMaker:
        """Append ARG_MAX over the last axis (int32 output)."""
        ax = self.w.const(self._name("axis"), np.array([len(self.f.shape) - 1], np.int32))
        y = np.argmax(self.f, axis=-1)
        out = self.w.tensor(self._name("argmax"), (1,) + y.shape[1:], "INT32")
        self.w.op("ARG_MAX", [self.cur, ax], [out], OutputType="INT32")
        self.cur, self.f = out, y.astype(np.float64)
        return self

    # ------------------------------------------------------------------ output
    def finish(self) -> bytes:
        """The model bytes (graph input: the first tensor, output: the current one)."""
        out = self.cur
        if self.float_io:
            out = self.w.tensor("output_f32", self.w.tensors[self.cur]["shape"], "FLOAT32")
            self.w.op("DEQUANTIZE", [self.cur], [out])
        return self.w.finish([self.graph_in], [out])


def cnn10(seed: int = 0, float_io: bool = False) -> bytes:
    """An 11-layer int8 CNN on 16x16x3 inputs: conv, depthwise, pooling, fully connected, softmax."""
    g = GraphMaker((16, 16, 3), seed, float_io=float_io, description="pymli cnn10")
    g.conv(8, 3, act="RELU")                       # 16x16x8
    g.dwconv(3, act="RELU6")                       # depthwise
    g.conv(12, 1, act="RELU")                      # pointwise
    g.pool("max", 2, 2)                            # 8x8
    g.conv(16, 3, stride=2, padding="SAME", act="RELU", per_channel=False)   # 4x4x16
    g.dwconv(3, padding="VALID", act="RELU")       # 2x2x16
    g.pool("avg", 2, 2)                            # 1x1x16
    g.reshape((16,))
    g.fc(24, act="RELU")
    g.fc(10)
    g.unary("SOFTMAX")
    return g.finish()


def _one(seed: int, shape: tuple[int, ...], build: Any, **kw: Any) -> bytes:
    g = GraphMaker(shape, seed, **kw)
    build(g)
    return g.finish()


#: name -> (builder(seed) of a one-operator model, exact: the operator does no rescaling, so TFLite Micro
#: must agree bit for bit; otherwise within 1 LSB)
OP_CASES: dict[str, tuple[Any, bool]] = {
    "conv_same_s1_pc": (lambda s: _one(s, (7, 6, 3), lambda g: g.conv(5, 3)), False),
    "conv_valid_s2_pt": (lambda s: _one(s, (9, 8, 4), lambda g: g.conv(4, 3, 2, "VALID", per_channel=False)), False),
    "conv_same_s2_relu": (lambda s: _one(s, (8, 7, 2), lambda g: g.conv(6, (3, 2), 2, "SAME", act="RELU")), False),
    "conv_dil2_relu6": (lambda s: _one(s, (9, 9, 3), lambda g: g.conv(4, 3, 1, "SAME", dilation=2, act="RELU6")),
                        False),
    "conv_1x1_nobias_relu1": (lambda s: _one(s, (5, 5, 6), lambda g: g.conv(3, 1, act="RELU_N1_TO_1", bias=False)),
                              False),
    "conv_5x5_valid": (lambda s: _one(s, (9, 10, 2), lambda g: g.conv(3, 5, 1, "VALID")), False),
    "dwconv_same_pc": (lambda s: _one(s, (7, 7, 4), lambda g: g.dwconv(3)), False),
    "dwconv_valid_s2_pt": (lambda s: _one(s, (9, 8, 3), lambda g: g.dwconv(3, stride=2, padding="VALID",
                                                                            per_channel=False)), False),
    "dwconv_same_s2_relu6": (lambda s: _one(s, (8, 8, 5), lambda g: g.dwconv(5, stride=2, act="RELU6")), False),
    "fc_pt": (lambda s: _one(s, (20,), lambda g: g.fc(7)), False),
    "fc_pc_relu": (lambda s: _one(s, (3, 3, 2), lambda g: g.fc(6, act="RELU", per_channel=True)), False),
    "tconv_same_s2": (lambda s: _one(s, (4, 4, 3), lambda g: g.transpose_conv(4, 3, 2, "SAME")), False),
    "tconv_valid_s2_pt": (lambda s: _one(s, (3, 4, 2), lambda g: g.transpose_conv(3, 2, 2, "VALID",
                                                                                   per_channel=False)), False),
    "maxpool_valid": (lambda s: _one(s, (8, 8, 3), lambda g: g.pool("max", 2, 2)), True),
    "maxpool_same_s1": (lambda s: _one(s, (7, 6, 2), lambda g: g.pool("max", 3, 1, "SAME")), True),
    "maxpool_same_s2": (lambda s: _one(s, (7, 7, 2), lambda g: g.pool("max", 3, 2, "SAME")), True),
    "avgpool_valid": (lambda s: _one(s, (8, 8, 3), lambda g: g.pool("avg", 2, 2)), False),
    "avgpool_same_s1": (lambda s: _one(s, (6, 7, 2), lambda g: g.pool("avg", 3, 1, "SAME")), False),
    "avgpool_relu": (lambda s: _one(s, (6, 6, 2), lambda g: g.pool("avg", 2, 2, act="RELU")), False),
    "add": (lambda s: _one(s, (5, 5, 3), lambda g: g.eltwise("ADD")), False),
    "add_relu": (lambda s: _one(s, (5, 4, 3), lambda g: g.eltwise("ADD", act="RELU")), False),
    "add_const": (lambda s: _one(s, (4, 4, 3), lambda g: g.eltwise("ADD", const=True)), False),
    "sub": (lambda s: _one(s, (5, 5, 3), lambda g: g.eltwise("SUB")), False),
    "mul": (lambda s: _one(s, (5, 5, 3), lambda g: g.eltwise("MUL")), False),
    "minimum_const": (lambda s: _one(s, (4, 4, 3), lambda g: g.eltwise("MINIMUM", const=True)), False),
    "mul_const": (lambda s: _one(s, (4, 5, 2), lambda g: g.eltwise("MUL", const=True)), False),
    "minimum": (lambda s: _one(s, (4, 4, 3), lambda g: g.eltwise("MINIMUM")), False),
    "maximum": (lambda s: _one(s, (4, 4, 3), lambda g: g.eltwise("MAXIMUM")), False),
    "relu": (lambda s: _one(s, (4, 4, 3), lambda g: g.unary("RELU")), True),
    "relu6": (lambda s: _one(s, (4, 4, 3), lambda g: g.unary("RELU6"), in_range=(-8.0, 9.0)), True),
    "relu_n1_to_1": (lambda s: _one(s, (4, 4, 3), lambda g: g.unary("RELU_N1_TO_1")), True),
    "leaky_relu": (lambda s: _one(s, (4, 4, 3), lambda g: g.unary("LEAKY_RELU", Alpha=0.2)), False),
    "prelu": (lambda s: _one(s, (4, 4, 3), lambda g: g.prelu()), False),
    "logistic": (lambda s: _one(s, (4, 4, 3), lambda g: g.unary("LOGISTIC"), in_range=(-6.0, 6.0)), False),
    "tanh": (lambda s: _one(s, (4, 4, 3), lambda g: g.unary("TANH"), in_range=(-3.0, 3.0)), False),
    "softmax": (lambda s: _one(s, (10,), lambda g: g.unary("SOFTMAX"), in_range=(-4.0, 4.0)), False),
    "softmax_2d": (lambda s: _one(s, (3, 6), lambda g: g.unary("SOFTMAX"), in_range=(-4.0, 4.0)), False),
    "l2norm": (lambda s: _one(s, (4, 8), lambda g: g.unary("L2_NORMALIZATION")), False),
    "reshape": (lambda s: _one(s, (4, 4, 3), lambda g: g.reshape((12, 4))), True),
    "squeeze": (lambda s: _one(s, (1, 1, 7), lambda g: g.reshape((7,), op="SQUEEZE")), True),
    "transpose": (lambda s: _one(s, (3, 4, 5), lambda g: g.transpose([0, 2, 1, 3])), True),
    "concat_equal": (lambda s: _one(s, (4, 4, 3), lambda g: g.concat(True)), True),
    "concat_rescale": (lambda s: _one(s, (4, 3, 2), lambda g: g.concat(False, axis=1)), False),
    "pad": (lambda s: _one(s, (4, 5, 2), lambda g: g.pad((1, 2, 0, 1))), True),
    "padv2": (lambda s: _one(s, (3, 3, 2), lambda g: g.pad((2, 0, 1, 1), v2=True)), True),
    "argmax": (lambda s: _one(s, (3, 9), lambda g: g.argmax()), True),
    "quant_dequant": (lambda s: _one(s, (4, 4, 3), lambda g: g.conv(3, 3), float_io=True), False),
}

#: cases TFLite Micro cannot run, with the reason (their pymli side is still tested against float)
TFLM_CANNOT_RUN = {
    "relu_n1_to_1": "TFLite Micro registers no RELU_N1_TO_1 kernel",
    "concat_rescale": "TFLite Micro's CONCATENATION requires the inputs' scales to equal the output's",
}
