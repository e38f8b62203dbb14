"""Pythonic convolution and fully-connected layers over :class:`pymli.Tensor`.

Each function picks the MLI kernel from the tensor types (FX_16 x FX_16, FX_16 x FX_8 weights,
SA_8 x SA_8 with SA_32 bias), builds the cfg, allocates the output and runs the checked MLI code
of :mod:`pymli.capi`::

    y = pymli.ops.conv2d(x, w, b, stride=2, padding="same", relu="relu6")

Output quantisation (``out_quant``):

* ``None``: derived from this call's own exact result (the layer is computed once in floating
  point from the integer accumulators to find its range);
* a dict: ``{"frac_bits": n}`` (FX), ``{"zero_point": z, "scale": s, "scale_frac_bits": f}`` (SA),
  or ``{"min": lo, "max": hi}`` (a float range);
* an array of floats: a calibration sample of the expected outputs (its min / max are used).

Ranges become parameters as MLI's own test quantiser does: FX takes the largest ``frac_bits``
whose range holds the values; SA8 takes ``scale = (max - min) / 254`` as a 16-bit mantissa with
``scale_frac_bits = 15 - exponent`` and ``zero_point = round(-centre / scale)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import capi
from ..errors import MliError, Status
from ..formats import ElType
from ..kernels import convolution as K
from ..tensor import Tensor

__all__ = ["conv2d", "depthwise_conv2d", "group_conv2d", "transpose_conv2d", "fully_connected",
           "conv_output_size", "same_padding"]

_RELU = {None: capi.ReluType.NONE, "none": capi.ReluType.NONE, "gen": capi.ReluType.GEN, "relu": capi.ReluType.GEN,
         "relu1": capi.ReluType.RELU_1, "relu6": capi.ReluType.RELU_6}

Padding = int | tuple[int, int, int, int] | str


# ------------------------------------------------------------------------------ geometry
def _pair(v: int | tuple[int, int]) -> tuple[int, int]:
    if isinstance(v, (tuple, list)):
        return int(v[0]), int(v[1])
    return int(v), int(v)


def conv_output_size(in_size: int, k: int, stride: int, pad_a: int, pad_b: int, dilation: int = 1) -> int:
    """Output length of a convolution along one axis."""
    return K.out_size(in_size, k, stride, pad_a, pad_b, dilation)


def same_padding(in_size: int, k: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """TensorFlow 'SAME' padding (before, after): output ``ceil(in / stride)``, extra pad after."""
    eff = (k - 1) * dilation + 1
    out = -(-in_size // stride)
    total = max((out - 1) * stride + eff - in_size, 0)
    return total // 2, total - total // 2


def _padding(padding: Padding, in_hw: tuple[int, int], k_hw: tuple[int, int], stride: tuple[int, int],
             dilation: tuple[int, int]) -> tuple[int, int, int, int]:
    if isinstance(padding, str):
        if padding.lower() == "valid":
            return 0, 0, 0, 0
        if padding.lower() == "same":
            t, b = same_padding(in_hw[0], k_hw[0], stride[0], dilation[0])
            l, r = same_padding(in_hw[1], k_hw[1], stride[1], dilation[1])
            return t, b, l, r
        raise ValueError(f"padding {padding!r}: use an int, (top, bottom, left, right), 'same' or 'valid'")
    if isinstance(padding, (tuple, list)):
        if len(padding) == 2:
            return int(padding[0]), int(padding[0]), int(padding[1]), int(padding[1])
        t, b, l, r = (int(p) for p in padding)
        return t, b, l, r
    p = int(padding)
    return p, p, p, p


# ------------------------------------------------------------------------------ types
def _kind(x: Tensor, w: Tensor) -> str:
    if x.el_type == ElType.SA_8 and w.el_type == ElType.SA_8:
        return "sa8_sa8_sa32"
    if x.el_type == ElType.FX_16 and w.el_type == ElType.FX_16:
        return "fx16"
    if x.el_type == ElType.FX_16 and w.el_type == ElType.FX_8:
        return "fx16_fx8_fx8"
    if x.el_type == ElType.FX_8 and w.el_type == ElType.FX_8:
        return "fx8"
    raise MliError(Status.TYPE_MISMATCH, f"no MLI kernel for input {x.el_type.name} with weights {w.el_type.name}")


def _zero_bias(x: Tensor, w: Tensor, n: int, kind: str, dim: int) -> Tensor:
    """An all-zero bias in the format MLI requires for this input and these weights."""
    if kind == "sa8_sa8_sa32":
        s_in = int(np.asarray(x.scale).reshape(-1)[0])
        f_in = int(np.asarray(x.scale_frac_bits).reshape(-1)[0])
        ws = w.quant_vector("scale", n) if w.dim >= 0 else np.asarray([int(w.scale)])
        wf = w.quant_vector("scale_frac_bits", n) if w.dim >= 0 else np.asarray([int(w.scale_frac_bits)])
        prod = s_in * ws.astype(np.int64)
        sh = np.asarray([max(int(p).bit_length() - 15, 0) for p in prod])
        scale = prod >> sh
        frac = f_in + wf - sh
        if w.dim >= 0:
            return Tensor.from_numpy(np.zeros(n, np.int32), "SA_32", zero_point=np.zeros(n), scale=scale,
                                     scale_frac_bits=frac, dim=0)
        return Tensor.from_numpy(np.zeros(n, np.int32), "SA_32", scale=int(scale[0]), scale_frac_bits=int(frac[0]))
    el = ElType.FX_16 if kind == "fx16" else ElType.FX_8
    return Tensor.from_numpy(np.zeros(n, el.dtype), el, frac_bits=x.frac_bits + w.frac_bits)


# ------------------------------------------------------------------------------ output quantisation
def _fx_frac(lo: float, hi: float, bits: int, max_frac: int) -> int:
    m = max(abs(lo), abs(hi))
    if m == 0:
        return max_frac
    frac = math.floor(math.log2(((1 << (bits - 1)) - 1) / m))
    return min(frac, max_frac)


def _sa_params(lo: float, hi: float) -> dict[str, int]:
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / 254.0 if hi > lo else 1.0 / 128
    mant, exp = math.frexp(scale)
    s16 = min(int(math.floor(mant * 32768 + 0.5)), 32767)
    frac = 15 - exp
    centre = (hi + lo) / 2
    real_scale = s16 / 2.0 ** frac
    zp = int(math.floor(-centre / real_scale + 0.5))
    return {"zero_point": max(-128, min(127, zp)), "scale": s16, "scale_frac_bits": frac}


def _out_tensor(shape: tuple[int, ...], x: Tensor, w: Tensor, out_quant: Any,
                float_ref: "callable[[], np.ndarray]") -> Tensor:
    el = x.el_type
    if isinstance(out_quant, dict) and ("frac_bits" in out_quant or "scale" in out_quant):
        params = dict(out_quant)
    else:
        if out_quant is None:
            vals = float_ref()
            lo, hi = (float(vals.min()), float(vals.max())) if vals.size else (0.0, 0.0)
        elif isinstance(out_quant, dict):
            lo, hi = float(out_quant["min"]), float(out_quant["max"])
        else:
            arr = np.asarray(out_quant, dtype=np.float64)
            lo, hi = float(arr.min()), float(arr.max())
        if el.is_sa:
            params = _sa_params(lo, hi)
        else:
            params = {"frac_bits": _fx_frac(lo, hi, el.bits, x.frac_bits + w.frac_bits)}
    return Tensor.zeros(shape, el, **params)


def _dequant_acc(kind: str, acc: np.ndarray, x: Tensor, w: Tensor, b: Tensor, n: int) -> np.ndarray:
    """Float value of accumulator + bias (before requantisation), channels last."""
    if kind == "sa8_sa8_sa32":
        s_in = int(np.asarray(x.scale).reshape(-1)[0]) / 2.0 ** int(np.asarray(x.scale_frac_bits).reshape(-1)[0])
        ws = (w.quant_vector("scale", n) / 2.0 ** w.quant_vector("scale_frac_bits", n)) if w.dim >= 0 else \
            np.asarray([int(w.scale) / 2.0 ** int(w.scale_frac_bits)])
        bs = (b.quant_vector("scale", n) / 2.0 ** b.quant_vector("scale_frac_bits", n)) if b.dim >= 0 else \
            np.asarray([int(b.scale) / 2.0 ** int(b.scale_frac_bits)])
        return acc * (s_in * ws) + b.numpy().astype(np.float64) * bs
    return acc * 2.0 ** -(x.frac_bits + w.frac_bits) + b.numpy() * 2.0 ** -b.frac_bits


def _apply_relu(v: np.ndarray, relu: str | None) -> np.ndarray:
    r = _RELU[relu.lower() if isinstance(relu, str) else relu]
    if r == capi.ReluType.GEN:
        return np.maximum(v, 0)
    if r == capi.ReluType.RELU_1:
        return np.clip(v, -1, 1)
    if r == capi.ReluType.RELU_6:
        return np.clip(v, 0, 6)
    return v


def _centred(x: Tensor) -> np.ndarray:
    v = x.numpy().astype(np.int64)
    if x.el_type.is_sa:
        v = v - int(np.asarray(x.zero_point).reshape(-1)[0])
    return v


# ------------------------------------------------------------------------------ layers
def _conv_common(op: str, x: Tensor, w: Tensor, b: Tensor | None, stride: int | tuple[int, int],
                 padding: Padding, dilation: int | tuple[int, int], relu: str | None, out_quant: Any) -> Tensor:
    kind = _kind(x, w)
    if kind == "fx8":
        raise MliError(Status.TYPE_MISMATCH, "MLI has no fx8 convolution")
    s, d = _pair(stride), _pair(dilation)
    kh, kw = int(w.shape[0]), int(w.shape[1])
    h, wd = int(x.shape[0]), int(x.shape[1])
    n = int(w.shape[3])
    t, bo, l, r = _padding(padding, (h, wd), (kh, kw), s, d)
    ho = conv_output_size(h, kh, s[0], t, bo, d[0])
    wo = conv_output_size(wd, kw, s[1], l, r, d[1])
    if ho <= 0 or wo <= 0:
        raise MliError(Status.BAD_FUNC_CFG, f"empty output {ho}x{wo} for input {h}x{wd}, kernel {kh}x{kw}")
    if b is None:
        b = _zero_bias(x, w, n, kind, 0)
    cfg = capi.Conv2dCfg(relu=capi.ReluCfg(_RELU[relu.lower() if isinstance(relu, str) else relu]),
                         stride_width=s[1], stride_height=s[0], padding_left=l, padding_right=r,
                         padding_top=t, padding_bottom=bo, dilation_width=d[1], dilation_height=d[0])

    def float_ref() -> np.ndarray:
        xc, wv = _centred(x), w.numpy().astype(np.int64)
        geo = dict(stride=s, dilation=d, pad=(t, l), out_hw=(ho, wo))
        if op == "depthwise":
            acc = K.depthwise_accumulate(xc, wv, **geo)[0]
        else:
            acc = K.conv_accumulate(xc, wv, groups=int(x.shape[2]) // int(w.shape[2]), **geo)[0]
        return _apply_relu(_dequant_acc(kind, acc.astype(np.float64), x, w, b, n), relu)

    out = _out_tensor((ho, wo, n), x, w, out_quant, float_ref)
    name = {"conv": "mli_krn_conv2d_hwcn_", "depthwise": "mli_krn_depthwise_conv2d_hwcn_",
            "group": "mli_krn_group_conv2d_hwcn_"}[op] + kind
    capi.FUNCTIONS[name](x, w, b, cfg, out)
    return out


def conv2d(x: Tensor, w: Tensor, b: Tensor | None = None, stride: int | tuple[int, int] = 1,
           padding: Padding = 0, dilation: int | tuple[int, int] = 1, relu: str | None = None,
           out_quant: dict[str, Any] | npt.ArrayLike | None = None) -> Tensor:
    """2-D convolution (``mli_krn_conv2d_hwcn_*``) returning a new tensor.

    Args:
        x: (H, W, Cin) input, FX_16 or SA_8.
        w: (Kh, Kw, Cin, Cout) HWCN weights (FX_16 / FX_8 for FX_16 input, SA_8 for SA_8 input).
        b: (Cout,) bias (FX of the weights' type, SA_32 with scale = in scale x weights scale);
            ``None`` for a zero bias.
        stride, dilation: an int or (height, width).
        padding: an int, (vertical, horizontal), (top, bottom, left, right), 'same' or 'valid'.
        relu: None, 'gen' (max(x, 0)), 'relu1' (clip to [-1, 1]) or 'relu6' (clip to [0, 6]).
        out_quant: output quantisation (see the module docstring).

    Raises:
        MliError: the status the MLI function returns for invalid arguments.
    """
    return _conv_common("conv", x, w, b, stride, padding, dilation, relu, out_quant)


def depthwise_conv2d(x: Tensor, w: Tensor, b: Tensor | None = None, stride: int | tuple[int, int] = 1,
                     padding: Padding = 0, dilation: int | tuple[int, int] = 1, relu: str | None = None,
                     out_quant: dict[str, Any] | npt.ArrayLike | None = None) -> Tensor:
    """Depthwise convolution (``mli_krn_depthwise_conv2d_hwcn_*``): w is (Kh, Kw, 1, C)."""
    return _conv_common("depthwise", x, w, b, stride, padding, dilation, relu, out_quant)


def group_conv2d(x: Tensor, w: Tensor, b: Tensor | None = None, stride: int | tuple[int, int] = 1,
                 padding: Padding = 0, dilation: int | tuple[int, int] = 1, relu: str | None = None,
                 out_quant: dict[str, Any] | npt.ArrayLike | None = None) -> Tensor:
    """Group convolution (``mli_krn_group_conv2d_hwcn_*``): w is (Kh, Kw, Cin / groups, Cout)."""
    return _conv_common("group", x, w, b, stride, padding, dilation, relu, out_quant)


def transpose_conv2d(x: Tensor, w: Tensor, b: Tensor | None = None, stride: int | tuple[int, int] = 1,
                     padding: Padding = 0, relu: str | None = None,
                     out_quant: dict[str, Any] | npt.ArrayLike | None = None) -> Tensor:
    """Transpose convolution (``mli_krn_transpose_conv2d_hwcn_*``).

    The output is ``(in - 1) * stride + k - pad_before - pad_after`` along each axis; padding
    'same' gives ``in * stride`` (needs ``k >= stride``), 'valid' no padding.
    """
    kind = _kind(x, w)
    if kind == "fx8":
        raise MliError(Status.TYPE_MISMATCH, "MLI has no fx8 convolution")
    s = _pair(stride)
    kh, kw = int(w.shape[0]), int(w.shape[1])
    h, wd = int(x.shape[0]), int(x.shape[1])
    n = int(w.shape[3])
    if isinstance(padding, str) and padding.lower() == "same":
        th, tw = max(kh - s[0], 0), max(kw - s[1], 0)
        t, bo, l, r = th // 2, th - th // 2, tw // 2, tw - tw // 2
    else:
        t, bo, l, r = _padding(padding, (h, wd), (kh, kw), s, (1, 1))
    ho = K.transpose_out_size(h, kh, s[0], t, bo)
    wo = K.transpose_out_size(wd, kw, s[1], l, r)
    if b is None:
        b = _zero_bias(x, w, n, kind, 0)
    cfg = capi.Conv2dCfg(relu=capi.ReluCfg(_RELU[relu.lower() if isinstance(relu, str) else relu]),
                         stride_width=s[1], stride_height=s[0], padding_left=l, padding_right=r,
                         padding_top=t, padding_bottom=bo)

    def float_ref() -> np.ndarray:
        acc = K.transpose_accumulate(_centred(x), w.numpy().astype(np.int64), stride=s, pad=(t, l),
                                     out_hw=(ho, wo))[0]
        return _apply_relu(_dequant_acc(kind, acc.astype(np.float64), x, w, b, n), relu)

    out = _out_tensor((max(ho, 1), max(wo, 1), n), x, w, out_quant, float_ref)
    capi.FUNCTIONS["mli_krn_transpose_conv2d_hwcn_" + kind](x, w, b, cfg, out)
    return out


def fully_connected(x: Tensor, w: Tensor, b: Tensor | None = None, relu: str | None = None,
                    out_quant: dict[str, Any] | npt.ArrayLike | None = None) -> Tensor:
    """Fully connected layer (``mli_krn_fully_connected_*``): x of any shape with N_in elements,
    w (N_in, M_out), returns an (M_out,) tensor."""
    kind = _kind(x, w)
    m = int(w.shape[1])
    if b is None:
        b = _zero_bias(x, w, m, kind, 0)
    cfg = capi.FullyConnectedCfg(relu=capi.ReluCfg(_RELU[relu.lower() if isinstance(relu, str) else relu]))

    def float_ref() -> np.ndarray:
        xv = _centred(x).reshape(-1)
        acc = xv @ w.numpy().astype(np.int64)
        return _apply_relu(_dequant_acc(kind, acc.astype(np.float64), x, w, b, m), relu)

    out = _out_tensor((m,), x, w, out_quant, float_ref)
    capi.FUNCTIONS["mli_krn_fully_connected_" + kind](x, w, b, cfg, out)
    return out
