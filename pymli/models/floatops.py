"""Float64 reference maths of the network layers (batched, NumPy only).

Every function takes a batch (axis 0) of HWC activations and returns a batch; layouts follow MLI:
convolution weights HWCN ``[kh, kw, cin, cout]``, depthwise weights ``[kh, kw, 1, c]``, fully
connected weights ``[in, out]``. These are the float counterparts used for per-layer comparison.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

__all__ = [
    "avg_pool",
    "conv2d",
    "depthwise_conv2d",
    "fully_connected",
    "group_conv2d",
    "gru_cell_seq",
    "l2_normalize",
    "max_pool",
    "pad_hw",
    "relu",
    "sigmoid",
    "softmax",
    "transpose_conv2d",
]


def pad_hw(x: np.ndarray, pad: tuple[int, int, int, int], value: float = 0.0) -> np.ndarray:
    """Pad a batch ``[N, H, W, C]`` by (top, bottom, left, right)."""
    t, b, l, r = pad
    return np.pad(x, ((0, 0), (t, b), (l, r), (0, 0)), constant_values=value)


def _windows(x: np.ndarray, kh: int, kw: int, stride: tuple[int, int], dil: tuple[int, int]) -> np.ndarray:
    """``[N, OH, OW, C, kh, kw]`` windows of a padded batch."""
    sh, sw = stride
    dh, dw = dil
    ekh, ekw = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    win = sliding_window_view(x, (ekh, ekw), axis=(1, 2))
    return win[:, ::sh, ::sw, :, ::dh, ::dw]


def conv2d(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: tuple[int, int] = (1, 1),
           pad: tuple[int, int, int, int] = (0, 0, 0, 0), dil: tuple[int, int] = (1, 1)) -> np.ndarray:
    """2-D convolution: x ``[N, H, W, Cin]``, w ``[kh, kw, Cin, Cout]``, b ``[Cout]``."""
    win = _windows(pad_hw(x, pad), w.shape[0], w.shape[1], stride, dil)
    return np.einsum("nhwcij,ijco->nhwo", win, w, optimize=True) + b


def depthwise_conv2d(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: tuple[int, int] = (1, 1),
                     pad: tuple[int, int, int, int] = (0, 0, 0, 0), dil: tuple[int, int] = (1, 1)) -> np.ndarray:
    """Depthwise convolution: x ``[N, H, W, C]``, w ``[kh, kw, 1, C]``, b ``[C]``."""
    win = _windows(pad_hw(x, pad), w.shape[0], w.shape[1], stride, dil)
    return np.einsum("nhwcij,ijc->nhwc", win, w[:, :, 0, :], optimize=True) + b


def group_conv2d(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: tuple[int, int] = (1, 1),
                 pad: tuple[int, int, int, int] = (0, 0, 0, 0), dil: tuple[int, int] = (1, 1)) -> np.ndarray:
    """Grouped convolution: w ``[kh, kw, Cin / groups, Cout]``; output channel o reads input group
    ``o // (Cout / groups)``."""
    cg, cout = w.shape[2], w.shape[3]
    groups = x.shape[3] // cg
    og = cout // groups
    outs = [conv2d(x[..., g * cg:(g + 1) * cg], w[..., g * og:(g + 1) * og], b[g * og:(g + 1) * og], stride, pad, dil)
            for g in range(groups)]
    return np.concatenate(outs, axis=-1)


def transpose_conv2d(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: tuple[int, int] = (1, 1),
                     pad: tuple[int, int, int, int] = (0, 0, 0, 0)) -> np.ndarray:
    """Transpose convolution: ``out[iy*sh + ky - top, ix*sw + kx - left] += x[iy, ix] @ w[ky, kx]``,
    w ``[kh, kw, Cin, Cout]``; the output is cut by the padding (top, bottom, left, right)."""
    n, h, wd, _ = x.shape
    kh, kw, _, cout = w.shape
    sh, sw = stride
    t, bo, l, r = pad
    full = np.zeros((n, (h - 1) * sh + kh, (wd - 1) * sw + kw, cout))
    for ky in range(kh):
        for kx in range(kw):
            full[:, ky:ky + (h - 1) * sh + 1:sh, kx:kx + (wd - 1) * sw + 1:sw] += x @ w[ky, kx]
    return full[:, t:full.shape[1] - bo, l:full.shape[2] - r] + b


def l2_normalize(x: np.ndarray, axis: int) -> np.ndarray:
    """``x / ||x||_2`` along ``axis`` of the batch (None: over each whole sample)."""
    if axis is None:
        ax: tuple[int, ...] | int = tuple(range(1, x.ndim))
    else:
        ax = axis
    nrm = np.sqrt(np.sum(x * x, axis=ax, keepdims=True))
    return x / np.where(nrm > 0, nrm, 1.0)


def fully_connected(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x ``[N, ...]`` flattened row-major, w ``[in, out]``."""
    return x.reshape(x.shape[0], -1) @ w + b


def max_pool(x: np.ndarray, k: tuple[int, int], stride: tuple[int, int], pad: tuple[int, int, int, int]) -> np.ndarray:
    """Max pooling; padding never wins."""
    win = _windows(pad_hw(x, pad, -np.inf), k[0], k[1], stride, (1, 1))
    return win.max(axis=(-2, -1))


def avg_pool(x: np.ndarray, k: tuple[int, int], stride: tuple[int, int], pad: tuple[int, int, int, int]) -> np.ndarray:
    """Average pooling over the real (non-padding) elements of each window, as MLI does."""
    win = _windows(pad_hw(x, pad), k[0], k[1], stride, (1, 1))
    ones = pad_hw(np.ones((1,) + x.shape[1:3] + (1,)), pad)
    cnt = _windows(ones, k[0], k[1], stride, (1, 1)).sum(axis=(-2, -1))
    return win.sum(axis=(-2, -1)) / cnt


def relu(x: np.ndarray, kind: str) -> np.ndarray:
    """MLI ReLU types: ``none``, ``gen`` (max 0), ``relu_1`` (clip to [-1, 1]), ``relu_6`` (clip to [0, 6])."""
    if kind == "gen":
        return np.maximum(x, 0.0)
    if kind == "relu_1":
        return np.clip(x, -1.0, 1.0)
    if kind == "relu_6":
        return np.clip(x, 0.0, 6.0)
    return x


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """Softmax of ``x`` along ``axis`` (max-subtracted for stability)."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """Logistic function ``1 / (1 + exp(-x))``."""
    return 1.0 / (1.0 + np.exp(-x))


def gru_cell_seq(x: np.ndarray, h0: np.ndarray, w_in: np.ndarray, w_out: np.ndarray, b: np.ndarray) -> np.ndarray:
    """GRU over a sequence, MLI gate order (z, r, u); returns all outputs ``[N, T, out]``."""
    h = h0
    outs = []
    for t in range(x.shape[1]):
        xin = np.einsum("ni,gio->gno", x[:, t], w_in) + b[:, None, :]
        z = sigmoid(xin[0] + h @ w_out[0])
        r = sigmoid(xin[1] + h @ w_out[1])
        pre_u = xin[2] + (r * h) @ w_out[2]
        u = np.tanh(pre_u)
        h = z * h + (1 - z) * u
        outs.append(h)
    return np.stack(outs, 1)
