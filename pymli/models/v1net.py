"""MLI 1.0's example networks (CIFAR-10, HAR smartphone) rebuilt on pymli's network API over :mod:`pymli.v1`.

The packs of ``shared/models_v1`` record MLI 1.0's two example applications call by call. This
module does not replay those calls (:mod:`pymli.v1.packs` does): it builds each example as a
:class:`V1Network` of layers - CHW convolution and pooling, fully connected, ReLU, softmax, permute,
the LSTM cell, and HAR's own LSTM made of basic-RNN / sigm / tanh / eltwise calls - whose quantised
path calls :mod:`pymli.v1.capi` (the exact C symbol the example calls) and whose float64 path is the
same network in NumPy. Weights, biases and every ``frac_bits`` come from the pack.

Example:
    >>> pack = load_v1_pack(shared_dir() / "models_v1/cifar10/fx16")
    >>> res = pack.network.run(pack.inputs)            # MLI 1.0 kernels, default build MLI1_CONV
    >>> np.array_equal(res["conv1"], pack.reference("conv1"))
    True
    >>> v1_report(pack).print()                        # per-layer SNR against float, exactness vs C

Conventions of the 1.x examples: feature maps are CHW ``[C, H, W]`` (the CIFAR-10 input is HWC
and its first layer permutes it), convolution weights ``[Co, Ci, Kh, Kw]``, fully connected
weights ``[out, in]`` over the row-major flattened input, LSTM weights ``[4, M, N + M]`` (gates
i, g, f, o; each row N input weights then M state weights). The examples' harness takes the FIRST
maximum of the output as the class (:meth:`V1RunResult.predictions`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..config import Platform
from ..formats import ElType
from ..tensor import Tensor
from ..v1 import capi as v1capi
from ..v1.cfg import Conv2dCfg, PermuteCfg, PoolCfg, ReluCfg, ReluType, RnnAct, RnnCellCfg, RnnMode
from ..v1.config import MLI1_CONV
from ..v1.kernels import out_size
from ..v1.tensor import ElType as V1ElType
from ..v1.tensor import Tensor as V1Tensor
from . import floatops as F
from .layers import KernelMissing, Layer
from .network import Network, RunResult
from .qparams import Const, QParams
from .report import LayerStats, Report, compare, snr_db

__all__ = [
    "ChwAvgPool",
    "ChwConv2D",
    "ChwMaxPool",
    "HarLSTM",
    "V1FullyConnected",
    "V1LSTM",
    "V1Layer",
    "V1Network",
    "V1Pack",
    "V1Permute",
    "V1ReLU",
    "V1Report",
    "V1RunResult",
    "V1Softmax",
    "har_quantize",
    "load_v1_pack",
    "v1_report",
]

_RELU = {"none": ReluType.NONE, "gen": ReluType.GEN, "relu_1": ReluType.RELU_1, "relu_6": ReluType.RELU_6}
_RELU_C = {"MLI_RELU_NONE": "none", "MLI_RELU_GEN": "gen", "MLI_RELU_1": "relu_1", "MLI_RELU_6": "relu_6"}


# ====================================================================== tensor plumbing
def _v1_el(el: ElType) -> V1ElType:
    if el == ElType.FX_8:
        return V1ElType.FX_8
    if el == ElType.FX_16:
        return V1ElType.FX_16
    raise ValueError(f"MLI 1.x has no {el.name} tensors (FX_8 and FX_16 only)")


def _v1(q: np.ndarray, qp: QParams) -> V1Tensor:
    """A 1.x tensor holding quantised values ``q`` with parameters ``qp``."""
    return V1Tensor.from_numpy(np.asarray(q), _v1_el(qp.el_type), frac_bits=qp.frac_bits)


def _v1_const(c: Const) -> V1Tensor:
    return _v1(c.q, c.qp)  # type: ignore[arg-type]


def _v1_out(qp: QParams, n: int) -> V1Tensor:
    """An output struct as the examples pass it: a buffer of ``n`` elements and the caller's frac_bits."""
    return V1Tensor.empty(n, _v1_el(qp.el_type), frac_bits=qp.frac_bits)


def _qp(t: V1Tensor) -> QParams:
    """The element parameters a 1.x tensor holds after a call."""
    return QParams(ElType.FX_8 if int(t.el_type) == V1ElType.FX_8 else ElType.FX_16, frac_bits=int(t.frac_bits))


def _store(src: V1Tensor, out: Tensor) -> None:
    """Copy a 1.x result (values and frac_bits the kernel left) into the network's output tensor."""
    out.write(src.to_numpy().reshape(out.shape[: out.rank]))
    out.frac_bits = int(src.frac_bits)


def _first_max(x: np.ndarray) -> np.ndarray:
    """Class per sample as MLI 1.0's example harness picks it: the FIRST maximum (strict ``<``)."""
    x = np.asarray(x)
    return np.argmax(x.reshape(x.shape[0], -1), axis=-1)


# ====================================================================== layers
class V1Layer(Layer):
    """A layer running one MLI 1.x function (``fn``: the exact C symbol) from :mod:`pymli.v1.capi`.

    The network hands it 2.0 tensors (:class:`pymli.Tensor`); the layer passes 1.x tensors with the
    same values and ``frac_bits`` to the 1.x function and copies its result back.

    Args:
        fn: the C function (a key of :data:`pymli.v1.capi.FUNCTIONS`).
        **kw: ``name``, ``inputs``, ``out_q`` (the output struct's format before the call) as for
            :class:`~pymli.models.layers.Layer`.
    """

    kind = "v1"

    def __init__(self, fn: str, **kw: Any) -> None:
        super().__init__(fn=fn, **kw)

    def function_name(self, in_qs: list[QParams]) -> str:
        """The 1.x C function of the layer."""
        return str(self.fn)

    def c_name(self, in_qs: list[QParams]) -> str:
        """The 1.x C function of the layer."""
        return str(self.fn)

    def functions_needed(self) -> list[str]:
        """Every 1.x C function the layer calls."""
        return [str(self.fn)]

    def function(self, in_qs: list[QParams], *, specialise: bool = False) -> Callable[..., Any]:
        """The :mod:`pymli.v1.capi` callable ``fn`` (the 1.x examples name their specialisations).

        Raises:
            KernelMissing: ``fn`` is not a 1.x function.
        """
        try:
            return v1capi.FUNCTIONS[str(self.fn)]
        except KeyError:
            raise KernelMissing(str(self.fn)) from None

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> dict[str, Any] | None:
        """Convert to 1.x tensors, call :meth:`call`, store the result into ``out``."""
        v1_ins = [_v1(t.numpy(), QParams.of(t)) for t in ins]
        o = _v1_out(QParams.of(out), out.num_elements)
        extras = self.call(fn, v1_ins, o)
        _store(o, out)
        return extras

    def call(self, fn: Callable[..., Any], ins: list[V1Tensor], out: V1Tensor) -> dict[str, Any] | None:
        """Call the 1.x function with the C argument order (``out`` is the 1.x output struct)."""
        fn(ins[0], out)
        return None

    def result_qparams(self, in_qs: list[QParams]) -> QParams:
        """Parameters of the output after the call."""
        if self.kernel_sets_output:
            return QParams(in_qs[0].el_type, frac_bits=in_qs[0].bits - 1)
        return self.output_qparams(in_qs)


def _chw_to_hwc(x: np.ndarray) -> np.ndarray:
    return np.moveaxis(x, 1, -1)


def _hwc_to_chw(x: np.ndarray) -> np.ndarray:
    return np.moveaxis(x, -1, 1)


class V1Permute(V1Layer):
    """``mli_krn_permute_fx*``: axes reordered by ``perm`` (output axis i = input axis ``perm[i]``).

    Args:
        perm: the permutation (rank entries). fn: the C function. **kw: as :class:`V1Layer`.
    """

    kind = "permute"
    follows_input = True

    def __init__(self, perm: Sequence[int], fn: str, **kw: Any) -> None:
        super().__init__(fn, **kw)
        self.perm = tuple(int(p) for p in perm)

    def cfg_dict(self) -> dict[str, Any]:
        return {"perm": self.perm}

    def out_shape(self, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        return tuple(in_shapes[0][p] for p in self.perm)

    def call(self, fn: Callable[..., Any], ins: list[V1Tensor], out: V1Tensor) -> None:
        fn(ins[0], PermuteCfg(self.perm + (0,) * (4 - len(self.perm))), out)

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        return np.transpose(xs[0], (0,) + tuple(p + 1 for p in self.perm))


class ChwConv2D(V1Layer):
    """``mli_krn_conv2d_chw_*``: CHW convolution, weights ``[Co, Ci, Kh, Kw]``, fused ReLU.

    Args:
        weights, bias: quantised constants. stride: (h, w). padding: (top, bottom, left, right).
        relu: ``none``, ``gen``, ``relu_1`` or ``relu_6``. fn: the C function. out_q: output format.
    """

    kind = "conv2d_chw"

    def __init__(self, weights: Const, bias: Const, *, stride: tuple[int, int], padding: tuple[int, int, int, int],
                 relu: str, fn: str, **kw: Any) -> None:
        super().__init__(fn, **kw)
        self.weights, self.bias = weights, bias
        self.stride, self.padding, self.relu = tuple(stride), tuple(padding), relu
        self._w = self._b = None

    def consts(self) -> dict[str, Const]:
        return {"weights": self.weights, "bias": self.bias}

    def cfg_dict(self) -> dict[str, Any]:
        return {"stride": self.stride, "padding": self.padding, "relu": self.relu}

    def out_shape(self, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        c, h, w = in_shapes[0]
        co, ci, kh, kw = self.weights.shape
        if ci != c:
            raise ValueError(f"{self.name}: weights {self.weights.shape} do not fit input {in_shapes[0]}")
        t, b, l, r = self.padding
        return (co, out_size(h, kh, t, b, self.stride[0]), out_size(w, kw, l, r, self.stride[1]))

    def mac_count(self, in_shapes: list[tuple[int, ...]]) -> int:
        return int(np.prod(self.weights.shape[1:]))

    def prepare(self) -> None:
        self._w, self._b = _v1_const(self.weights), _v1_const(self.bias)

    def cfg(self) -> Conv2dCfg:
        """The layer's ``mli_conv2d_cfg``."""
        t, b, l, r = self.padding
        return Conv2dCfg(ReluCfg(_RELU[self.relu]), self.stride[1], self.stride[0], l, r, t, b)

    def call(self, fn: Callable[..., Any], ins: list[V1Tensor], out: V1Tensor) -> None:
        fn(ins[0], self._w, self._b, self.cfg(), out)

    def linear(self, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The convolution before its ReLU on a CHW batch (float or integer-valued)."""
        y = F.conv2d(_chw_to_hwc(x), np.transpose(w, (2, 3, 1, 0)), b, self.stride, self.padding)
        return _hwc_to_chw(y)

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        return F.relu(self.linear(xs[0], self.weights.value(original), self.bias.value(original)), self.relu)

    def accumulator(self, x_q: np.ndarray, in_q: QParams) -> np.ndarray:
        """The exact accumulator (bias in the accumulator's format, before any 32/40-bit limit).

        float64: exact, every partial sum is below 2**53 (16-bit operands, < 2**21 products).
        """
        shift = in_q.frac_bits + self.weights.qp.frac_bits - self.bias.qp.frac_bits  # type: ignore[union-attr]
        b = np.asarray(self.bias.q, np.float64) * 2.0 ** shift
        return self.linear(np.asarray(x_q, np.float64), np.asarray(self.weights.q, np.float64), b)


class _ChwPool(V1Layer):
    """CHW pooling over ``kernel`` (h, w) windows, ``stride`` (h, w), ``padding`` (top, bottom, left, right)."""

    follows_input = True
    kind = "pool_chw"

    def __init__(self, kernel: tuple[int, int], *, stride: tuple[int, int], padding: tuple[int, int, int, int],
                 fn: str, **kw: Any) -> None:
        super().__init__(fn, **kw)
        self.kernel, self.stride, self.padding = tuple(kernel), tuple(stride), tuple(padding)

    def cfg_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "stride": self.stride, "padding": self.padding}

    def out_shape(self, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        c, h, w = in_shapes[0]
        t, b, l, r = self.padding
        return (c, out_size(h, self.kernel[0], t, b, self.stride[0]), out_size(w, self.kernel[1], l, r, self.stride[1]))

    def call(self, fn: Callable[..., Any], ins: list[V1Tensor], out: V1Tensor) -> None:
        t, b, l, r = self.padding
        fn(ins[0], PoolCfg(self.kernel[1], self.kernel[0], self.stride[1], self.stride[0], l, r, t, b), out)


class ChwMaxPool(_ChwPool):
    """``mli_krn_maxpool_chw_*``: the maximum of each window (padding never wins); keeps frac_bits."""

    kind = "maxpool_chw"

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        return _hwc_to_chw(F.max_pool(_chw_to_hwc(xs[0]), self.kernel, self.stride, self.padding))


class ChwAvgPool(_ChwPool):
    """``mli_krn_avepool_chw_*``: the mean over the real elements of each window; keeps frac_bits."""

    kind = "avepool_chw"

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        return _hwc_to_chw(F.avg_pool(_chw_to_hwc(xs[0]), self.kernel, self.stride, self.padding))


class V1FullyConnected(V1Layer):
    """``mli_krn_fully_connected_*``: weights ``[M, N]`` (out, in), bias ``[M]``.

    Args:
        per_step: apply it to every row of a ``[T, N]`` input, one call per row (HAR's first layer,
            which walks the sequence with a sub-tensor view).
    """

    kind = "fully_connected"

    def __init__(self, weights: Const, bias: Const, *, fn: str, per_step: bool = False, **kw: Any) -> None:
        super().__init__(fn, **kw)
        self.weights, self.bias, self.per_step = weights, bias, per_step
        self._w = self._b = None

    def consts(self) -> dict[str, Const]:
        return {"weights": self.weights, "bias": self.bias}

    def cfg_dict(self) -> dict[str, Any]:
        return {"per_step": self.per_step}

    def out_shape(self, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        m, n = self.weights.shape
        shp = in_shapes[0]
        if (shp[-1] if self.per_step else int(np.prod(shp))) != n:
            raise ValueError(f"{self.name}: weights {self.weights.shape} do not fit input {shp}")
        return (shp[0], m) if self.per_step else (m,)

    def mac_count(self, in_shapes: list[tuple[int, ...]]) -> int:
        return int(self.weights.shape[1])

    def prepare(self) -> None:
        self._w, self._b = _v1_const(self.weights), _v1_const(self.bias)

    def call(self, fn: Callable[..., Any], ins: list[V1Tensor], out: V1Tensor) -> None:
        if not self.per_step:
            fn(ins[0], self._w, self._b, out)
            return
        x = ins[0].to_numpy()
        m = self.weights.shape[0]
        rows, frac = [], out.frac_bits
        for t in range(x.shape[0]):  # one call per time step, as the example walks its sub-tensor view
            o = V1Tensor.empty(m, out.el_type, frac_bits=out.frac_bits)
            fn(V1Tensor.from_numpy(x[t], ins[0].el_type, frac_bits=ins[0].frac_bits), self._w, self._b, o)
            rows.append(o.to_numpy())
            frac = o.frac_bits
        res = V1Tensor.from_numpy(np.stack(rows).reshape(x.shape[0], m), out.el_type, frac_bits=frac)
        out.data, out.capacity, out.shape, out.rank = res.data, res.capacity, res.shape, res.rank

    def linear(self, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``x @ w.T + b`` per sample (per step with ``per_step``)."""
        if self.per_step:
            return x @ w.T + b
        return x.reshape(x.shape[0], -1) @ w.T + b

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        return self.linear(xs[0], self.weights.value(original), self.bias.value(original))

    def accumulator(self, x_q: np.ndarray, in_q: QParams) -> np.ndarray:
        """The exact accumulator (bias shifted to the accumulator's format); float64, exact here."""
        shift = in_q.frac_bits + self.weights.qp.frac_bits - self.bias.qp.frac_bits  # type: ignore[union-attr]
        b = np.asarray(self.bias.q, np.float64) * 2.0 ** shift
        return self.linear(np.asarray(x_q, np.float64), np.asarray(self.weights.q, np.float64), b)


class V1ReLU(V1Layer):
    """``mli_krn_relu_fx*`` (limits from the input's frac_bits); keeps frac_bits.

    Args:
        type: ``none``, ``gen``, ``relu_1`` or ``relu_6``. fn: the C function. **kw: as :class:`V1Layer`.
    """

    kind = "relu"
    follows_input = True

    def __init__(self, type: str = "gen", *, fn: str, **kw: Any) -> None:  # noqa: A002  (MLI's field name)
        super().__init__(fn, **kw)
        self.type = type

    def cfg_dict(self) -> dict[str, Any]:
        return {"type": self.type}

    def call(self, fn: Callable[..., Any], ins: list[V1Tensor], out: V1Tensor) -> None:
        fn(ins[0], ReluCfg(_RELU[self.type]), out)

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        return F.relu(xs[0], self.type)


class V1Softmax(V1Layer):
    """``mli_krn_softmax_fx*`` over the whole sample; the kernel sets frac_bits 15 (fx16) / 7 (fx8)."""

    kind = "softmax"
    kernel_sets_output = True

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        x = xs[0]
        return F.softmax(x.reshape(x.shape[0], -1), -1).reshape(x.shape)


def _sigm(x: np.ndarray) -> np.ndarray:
    return F.sigmoid(x)


def _lstm_float(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Float LSTM over ``x`` [N, T, in] with MLI 1.x weights [4, M, in + M] (gates i, g, f, o), zero state.

    Returns:
        (outputs [N, T, M], per-step intermediates ``dense`` [N, T, 4, M], ``i``, ``g``, ``f``, ``o``,
        ``fc``, ``ig``, ``cell``, ``tanh`` [N, T, M]).
    """
    n_b, steps, n_in = x.shape
    m = w.shape[1]
    h = np.zeros((n_b, m))
    c = np.zeros((n_b, m))
    rec: dict[str, list[np.ndarray]] = {k: [] for k in ("dense", "i", "g", "f", "o", "fc", "ig", "cell", "tanh", "h")}
    for t in range(steps):  # the recurrence is sequential; each step is vectorised over the batch
        d = np.einsum("gmk,nk->ngm", w[:, :, :n_in], x[:, t]) + np.einsum("gmk,nk->ngm", w[:, :, n_in:], h) + b
        i, g, f, o = _sigm(d[:, 0]), np.tanh(d[:, 1]), _sigm(d[:, 2]), _sigm(d[:, 3])
        fc, ig = f * c, i * g
        c = fc + ig
        th = np.tanh(c)
        h = th * o
        for k, v in (("dense", d), ("i", i), ("g", g), ("f", f), ("o", o), ("fc", fc), ("ig", ig), ("cell", c),
                     ("tanh", th), ("h", h)):
            rec[k].append(v)
    out = {k: np.stack(v, axis=1) for k, v in rec.items()}
    return out["h"], out


def _lstm_input_accumulator(layer: Any, x_q: np.ndarray, in_q: QParams) -> np.ndarray:
    """The exact input part of a 1.x LSTM's dense step: ``x_t @ W_in + bias`` in the accumulator's format.

    ``[N, T, 4, M]``; MLI accumulates and rescales the part on the previous output separately.
    float64: exact (16-bit operands, fewer than 2**21 products).
    """
    n_in = x_q.shape[-1]
    shift = in_q.frac_bits + layer.weights.qp.frac_bits - layer.bias.qp.frac_bits
    w = np.asarray(layer.weights.q, np.float64)[:, :, :n_in]
    b = np.asarray(layer.bias.q, np.float64) * 2.0 ** shift
    return np.einsum("gmk,ntk->ntgm", w, np.asarray(x_q, np.float64)) + b


class V1LSTM(V1Layer):
    """``mli_krn_lstm_cell_*`` in ``RNN_BATCH_TO_BATCH`` mode over a ``[T, N]`` sequence, zero initial state.

    Args:
        weights: ``[4, M, N + M]``; bias: ``[4, M]`` (gates i, g, f, o).
        act: output activation of the cell (``RNN_ACT_TANH`` in HAR).
        h0_q: format of the (zero) previous output; cell_q: format of the cell; ir_q: of the scratch.
        result_q: the output format the kernel leaves (Q15 / Q7 after tanh).

    Extra captured tensors: ``<layer>.cell`` (cell after the last step), ``<layer>.ir`` (the scratch
    tensor after the call: the last step's gate pre-activations).
    """

    kind = "lstm_cell"

    def __init__(self, weights: Const, bias: Const, *, fn: str, act: RnnAct, h0_q: QParams, cell_q: QParams,
                 ir_q: QParams, result_q: QParams, **kw: Any) -> None:
        super().__init__(fn, **kw)
        self.weights, self.bias, self.act = weights, bias, RnnAct(act)
        self.h0_q, self.cell_q, self.ir_q, self.result_q = h0_q, cell_q, ir_q, result_q
        self._w = self._b = None

    def consts(self) -> dict[str, Const]:
        return {"weights": self.weights, "bias": self.bias}

    def cfg_dict(self) -> dict[str, Any]:
        return {"mode": "RNN_BATCH_TO_BATCH", "act": self.act.name}

    def out_shape(self, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        return (in_shapes[0][0], self.weights.shape[1])

    def mac_count(self, in_shapes: list[tuple[int, ...]]) -> int:
        return int(self.weights.shape[2])

    def result_qparams(self, in_qs: list[QParams]) -> QParams:
        return self.result_q

    def prepare(self) -> None:
        self._w, self._b = _v1_const(self.weights), _v1_const(self.bias)

    def call(self, fn: Callable[..., Any], ins: list[V1Tensor], out: V1Tensor) -> dict[str, Any]:
        m = self.weights.shape[1]
        prev = _v1(np.zeros(m, self.h0_q.el_type.dtype), self.h0_q)
        cell = _v1(np.zeros(m, self.cell_q.el_type.dtype), self.cell_q)
        ir = _v1_out(self.ir_q, 4 * m)
        fn(ins[0], prev, self._w, self._b, RnnCellCfg(RnnMode.BATCH_TO_BATCH, self.act, ir), cell, out)
        return {"cell": (cell.to_numpy(), _qp(cell)), "ir": (ir.to_numpy(), _qp(ir))}

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        h, _ = _lstm_float(xs[0], self.weights.value(original), self.bias.value(original))
        return h

    def accumulator(self, x_q: np.ndarray, in_q: QParams) -> np.ndarray:
        """The exact input part of the dense step per step and gate (see :func:`_lstm_input_accumulator`)."""
        return _lstm_input_accumulator(self, x_q, in_q)


class HarLSTM(V1Layer):
    """The HAR example's own LSTM layer ("custom user LSTM", batch to last) from MLI 1.x calls.

    Per step: ``mli_krn_basic_rnn_cell_*`` (one to one, no activation) gives the four gate
    pre-activations ``[4, M]`` from ``x_t`` and ``h_{t-1}``; then ``i = sigm``, ``g = tanh``, ``f = sigm``,
    ``o = sigm`` (kernel formats Q15 / Q7), ``fc = f * c``, ``ig = i * g`` (eltwise mul into the cell
    format), ``c = fc + ig`` (eltwise add), ``tanh(c)``, ``h = tanh(c) * o``. State and cell start at zero.

    Args:
        weights: ``[4, M, N + M]``; bias ``[4, M]``.
        fns: C functions by role: ``dense``, ``sigm``, ``tanh``, ``mul``, ``add``.
        qs: formats by role: ``dense`` (gate pre-activations), ``h0``, ``c0`` (the zero states),
            ``fc``, ``ig``, ``cell``, ``h`` (outputs of the eltwise calls).

    Output: the last ``h`` ``[M]``. Every per-step intermediate is captured as ``<layer>.<role>``
    (``dense`` ``[T, 4, M]``; ``i``, ``g``, ``f``, ``o``, ``fc``, ``ig``, ``cell``, ``tanh``, ``h`` ``[T, M]``).
    """

    kind = "har_lstm"
    ROLES: ClassVar[tuple[str, ...]] = ("dense", "i", "g", "f", "o", "fc", "ig", "cell", "tanh", "h")

    def __init__(self, weights: Const, bias: Const, *, fns: dict[str, str], qs: dict[str, QParams], **kw: Any) -> None:
        super().__init__(fns["dense"], **kw)
        self.weights, self.bias, self.fns, self.qs = weights, bias, dict(fns), dict(qs)
        self._w = self._b = None

    def consts(self) -> dict[str, Const]:
        return {"weights": self.weights, "bias": self.bias}

    def cfg_dict(self) -> dict[str, Any]:
        return {"fns": self.fns}

    def functions_needed(self) -> list[str]:
        return list(self.fns.values())

    def out_shape(self, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        return (self.weights.shape[1],)

    def mac_count(self, in_shapes: list[tuple[int, ...]]) -> int:
        return int(self.weights.shape[2])

    def output_qparams(self, in_qs: list[QParams]) -> QParams:
        return self.qs["h"]

    def prepare(self) -> None:
        self._w, self._b = _v1_const(self.weights), _v1_const(self.bias)

    def call(self, fn: Callable[..., Any], ins: list[V1Tensor], out: V1Tensor) -> dict[str, Any]:
        f = {k: v1capi.FUNCTIONS[v] for k, v in self.fns.items()}
        qs = self.qs
        x = ins[0].to_numpy()
        m = self.weights.shape[1]
        h = _v1(np.zeros(m, qs["h0"].el_type.dtype), qs["h0"])
        c = _v1(np.zeros(m, qs["c0"].el_type.dtype), qs["c0"])
        cfg = RnnCellCfg(RnnMode.ONE_TO_ONE, RnnAct.NONE, None)
        rec: dict[str, list[V1Tensor]] = {k: [] for k in self.ROLES}
        for t in range(x.shape[0]):  # a recurrence: each step needs the previous h and c
            xt = V1Tensor.from_numpy(x[t][None], ins[0].el_type, frac_bits=ins[0].frac_bits)
            d = _v1_out(qs["dense"], 4 * m)
            f["dense"](xt, h, self._w, self._b, cfg, d)
            gates = d.to_numpy().reshape(4, m)
            acts = {}
            for k, role, kind in ((0, "i", "sigm"), (1, "g", "tanh"), (2, "f", "sigm"), (3, "o", "sigm")):
                a = _v1_out(qs["dense"], m)
                f[kind](V1Tensor.from_numpy(gates[k], d.el_type, frac_bits=d.frac_bits), a)
                acts[role] = a
            fc = _v1_out(qs["fc"], m)
            f["mul"](acts["f"], c, fc)
            ig = _v1_out(qs["ig"], m)
            f["mul"](acts["i"], acts["g"], ig)
            c = _v1_out(qs["cell"], m)
            f["add"](fc, ig, c)
            th = _v1_out(qs["cell"], m)
            f["tanh"](c, th)
            h = _v1_out(qs["h"], m)
            f["mul"](th, acts["o"], h)
            for role, v in (("dense", d), *acts.items(), ("fc", fc), ("ig", ig), ("cell", c), ("tanh", th), ("h", h)):
                rec[role].append(v)
        out.data, out.capacity, out.shape, out.rank = h.data, h.capacity, h.shape, h.rank
        out.frac_bits, out.el_type = h.frac_bits, h.el_type
        return {role: (np.stack([v.to_numpy() for v in vs]), _qp(vs[-1])) for role, vs in rec.items()}

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        h, _ = _lstm_float(xs[0], self.weights.value(original), self.bias.value(original))
        return h[:, -1]

    def accumulator(self, x_q: np.ndarray, in_q: QParams) -> np.ndarray:
        """The exact input part of the dense step per step and gate (see :func:`_lstm_input_accumulator`)."""
        return _lstm_input_accumulator(self, x_q, in_q)

    def forward_float_steps(self, x: np.ndarray, original: bool = False) -> dict[str, np.ndarray]:
        """Every per-step intermediate of the float twin (same roles as the captured ones), batch first."""
        return _lstm_float(x, self.weights.value(original), self.bias.value(original))[1]


# ====================================================================== network
@dataclasses.dataclass
class V1RunResult(RunResult):
    """:class:`~pymli.models.network.RunResult` of a 1.x network: classes by the FIRST maximum."""

    def predictions(self) -> np.ndarray:
        """Class per sample: index of the first maximum of the output (MLI 1.0's example harness)."""
        return _first_max(self.output)


class V1Network(Network):
    """A :class:`~pymli.models.network.Network` of :class:`V1Layer` run on :mod:`pymli.v1.capi`.

    Runs default to the MLI 1.0 build the examples use (:data:`pymli.v1.MLI1_CONV`: convergent
    rounding, release); ``input_preprocess`` (if set) quantises float input as the C example does.

    Args:
        input_shape, layers, input_q, name: as :class:`~pymli.models.network.Network`.
    """

    def missing_functions(self) -> list[str]:
        """1.x functions the layers call that :mod:`pymli.v1.capi` does not have."""
        need = [n for la in self.layers for n in getattr(la, "functions_needed", lambda: [la.fn])()]
        return [n for n in dict.fromkeys(need) if n not in v1capi.FUNCTIONS]

    def quantize_input(self, x: np.ndarray) -> np.ndarray:
        """Float samples -> quantised input (the example's own conversion when ``input_preprocess`` is set)."""
        if self.input_preprocess is not None:
            return self.input_preprocess(x)
        return super().quantize_input(x)

    def run(self, x: np.ndarray, *, capture: bool | Sequence[str] = True, platform: Platform | str | None = None,
            progress: Callable[[int], None] | None = None, specialise: bool = False,
            batch: int = 64) -> V1RunResult:
        """Run through :mod:`pymli.v1.capi` (see :meth:`Network.run`); default platform ``MLI1_CONV``."""
        res = super().run(x, capture=capture, platform=platform if platform is not None else MLI1_CONV,
                          progress=progress, specialise=specialise, batch=batch)
        return V1RunResult(res.values, res.qparams, res.output_name, res.platform, res.index_output)

    def run_layer(self, name: str, inputs: Sequence[np.ndarray], in_qs: Sequence[QParams], *,
                  platform: Platform | str | None = None) -> tuple[np.ndarray, QParams]:
        """Run one layer alone (see :meth:`Network.run_layer`); default platform ``MLI1_CONV``."""
        return super().run_layer(name, inputs, in_qs, platform=platform if platform is not None else MLI1_CONV)

    def float_predictions(self, acts: dict[str, np.ndarray]) -> np.ndarray:
        """Class per sample of a :meth:`run_float` result (first maximum, as the 1.0 harness)."""
        return _first_max(acts[self.output_name])


def har_quantize(x: np.ndarray, frac_bits: int, el_type: ElType) -> np.ndarray:
    """MLI 1.0 examples' ``mli_hlp_float_to_fx_tensor``: ``sat((int)(x * 2^f + (x > 0 ? 0.5 : -0.5)))`` in float32.

    Args:
        x: float data (any shape). frac_bits: fractional bits. el_type: ``FX_8`` or ``FX_16``.

    Returns:
        np.ndarray: quantised values in the container dtype.
    """
    v = np.asarray(x, np.float32) * np.float32(2.0 ** frac_bits)
    v = v + np.where(np.asarray(x, np.float32) > 0, np.float32(0.5), np.float32(-0.5))
    q = np.trunc(v.astype(np.float64))
    info = np.iinfo(el_type.dtype)
    return np.clip(q, info.min, info.max).astype(el_type.dtype)


# ====================================================================== packs
@dataclasses.dataclass
class V1Pack:
    """A ``models_v1`` pack loaded as a :class:`V1Network` with its test vectors.

    Attributes:
        network: the example as a network of 1.x layers.
        vectors: ``vectors.npz`` contents (name -> array, test vector first).
        model: parsed ``model.json``.
        refs: network tensor name -> its recording: ``(vectors key, None)`` pieces, or ``(key, "one step")``
            for a call made once that is one step of a per-step tensor (see :meth:`reference`).
        accuracy: accuracy the C program printed (fraction).
        reference_lines: the C program's accuracy and hard-coded-vector S/N lines.
    """

    network: V1Network
    vectors: dict[str, np.ndarray]
    model: dict[str, Any]
    refs: dict[str, list[tuple[str, Any]]]
    accuracy: float
    reference_lines: dict[str, str]

    @property
    def inputs(self) -> np.ndarray:
        """The recorded quantised network inputs (``input.q``), batch first."""
        return self.vectors["input.q"]

    @property
    def labels(self) -> np.ndarray:
        """Ground-truth classes."""
        return self.vectors["label"]

    @property
    def float_inputs(self) -> np.ndarray:
        """The raw test inputs as floats (CIFAR-10: ``(pixel - 128) / 128``; HAR: the float32 sequences)."""
        if "input.float" in self.vectors:
            return self.vectors["input.float"].astype(np.float64)
        return (self.vectors["input.image_u8"].astype(np.float64) - 128.0) / 128.0

    def reference(self, name: str, n: int | None = None) -> np.ndarray:
        """The C library's recording of network tensor ``name`` (layer or ``<layer>.<extra>``), first ``n`` vectors.

        Tensors made of several recorded calls (HAR's LSTM steps: the loop's 127 iterations plus the
        calls after it) are concatenated along the step axis.
        """
        parts = []
        for key, sel in self.refs[name]:
            v = self.vectors[key][:n]
            parts.append(v[:, None] if sel == "one step" else v)
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)

    def reference_qparams(self, name: str) -> QParams:
        """The element parameters of the recording of network tensor ``name`` (after its call in C)."""
        meta = self.model["vectors"][self.refs[name][-1][0]]
        return QParams(ElType.FX_8 if meta["dtype"] == "int8" else ElType.FX_16, frac_bits=int(meta["frac_bits"]))

    def recorded_input(self, layer: str, n: int | None = None) -> tuple[np.ndarray, QParams]:
        """What layer ``layer`` reads in C: the recording of its producer (or the quantised input) and its format."""
        src = self.network[layer].inputs[0]
        if src == "input":
            return self.inputs[:n], self.network.input_q  # type: ignore[return-value]
        return self.reference(src, n), self.reference_qparams(src)

    def compare_recorded(self, result: RunResult, n: int | None = None) -> dict[str, tuple[int, int]]:
        """Per recorded tensor: (values equal to C, values) for a run on the first ``n`` vectors."""
        out = {}
        for name in self.refs:
            ref = self.reference(name, n)
            got = result[name]
            out[name] = (int(np.sum(got == ref)) if got.shape == ref.shape else 0, int(ref.size))
        return out


def _arg(call: dict[str, Any], name: str) -> dict[str, Any]:
    for a in call["args"]:
        if a["param"] == name:
            return a
    raise KeyError(f"{call.get('id')}: no argument {name}")


def _desc_q(desc: dict[str, Any], el: ElType | None = None) -> QParams:
    """Format of a recorded struct; ``el`` overrides a stale ``el_type`` (outputs: the kernel sets it)."""
    if el is None:
        el = ElType.FX_8 if desc["el_type"] in ("MLI_EL_FX_8", 0) else ElType.FX_16
    return QParams(el, frac_bits=int(desc["frac_bits"]))


def _const(name: str, model: dict[str, Any], consts: Any) -> Const:
    d = model["constants"][name]
    q = np.asarray(consts[d.get("npz_key", name)]).reshape(d["shape"])
    return Const.quantized(q, _desc_q(d))


def _fields(call: dict[str, Any]) -> dict[str, Any]:
    return _arg(call, "cfg")["cfg"]["fields"]


def _data_el(fn: str) -> ElType:
    """Data element type of a 1.x function from its suffix (fx8 -> FX_8; fx16, fx8w16d -> FX_16)."""
    return ElType.FX_8 if "_fx8" in fn and "fx8w16d" not in fn else ElType.FX_16


def _calls(model: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for c in model["calls"]:
        if "loop" in c:
            for b in c["body"]:
                out[f"{c['loop']}.{b['id']}"] = b
        else:
            out[c["id"]] = c
    return out


def _cifar10(model: dict[str, Any], consts: Any, name: str) -> tuple[V1Network, dict[str, list[tuple[str, Any]]]]:
    calls = _calls(model)
    inp = model["input"]["model_input_tensor"]
    net = V1Network(inp["shape"], input_q=_desc_q(inp), name=name)
    refs: dict[str, list[tuple[str, Any]]] = {}
    for cid, c in calls.items():
        fn = c["fn"]
        el = _data_el(fn)
        out_q = _desc_q(_arg(c, "out")["tensor"], el)
        if "permute" in fn:
            perm = _fields(c)["perm_dim"][: len(inp["shape"])]
            net.add(V1Permute(perm, fn, name=cid))
        elif "conv2d" in fn:
            f = _fields(c)
            net.add(ChwConv2D(_const(_arg(c, "weights")["const"], model, consts),
                              _const(_arg(c, "bias")["const"], model, consts),
                              stride=(f["stride_height"], f["stride_width"]),
                              padding=(f["padding_top"], f["padding_bottom"], f["padding_left"], f["padding_right"]),
                              relu=_RELU_C[f["relu"]["type"]], fn=fn, out_q=out_q, name=cid))
        elif "pool" in fn:
            f = _fields(c)
            cls = ChwMaxPool if "maxpool" in fn else ChwAvgPool
            net.add(cls((f["kernel_height"], f["kernel_width"]), stride=(f["stride_height"], f["stride_width"]),
                        padding=(f["padding_top"], f["padding_bottom"], f["padding_left"], f["padding_right"]),
                        fn=fn, name=cid))
        elif "fully_connected" in fn:
            net.add(V1FullyConnected(_const(_arg(c, "weights")["const"], model, consts),
                                     _const(_arg(c, "bias")["const"], model, consts), fn=fn, out_q=out_q, name=cid))
        elif "softmax" in fn:
            net.add(V1Softmax(fn, name=cid))
        else:
            raise NotImplementedError(f"CIFAR-10 pack call {cid}: {fn}")
        refs[cid] = [(_arg(c, "out")["vectors_key"], None)]
    return net, refs


def _har(model: dict[str, Any], consts: Any, name: str) -> tuple[V1Network, dict[str, list[tuple[str, Any]]]]:
    c = _calls(model)
    inp = model["input"]["model_input_tensor"]
    el_in = _desc_q(inp).el_type
    net = V1Network(inp["shape"], input_q=_desc_q(inp), name=name)
    net.input_preprocess = (lambda x, f=int(inp["frac_bits"]), e=el_in: har_quantize(x, f, e))
    refs: dict[str, list[tuple[str, Any]]] = {}

    fc1 = c["loop1.fully_connected1"]
    el = _data_el(fc1["fn"])
    net.add(V1FullyConnected(_const(_arg(fc1, "weights")["const"], model, consts),
                             _const(_arg(fc1, "bias")["const"], model, consts), fn=fc1["fn"], per_step=True,
                             out_q=_desc_q(_arg(fc1, "out")["tensor"], el), name="fc1"))
    refs["fc1"] = [("loop1.fully_connected1.out", None)]

    relu = c["relu1"]
    net.add(V1ReLU(_RELU_C[_fields(relu)["type"]], fn=relu["fn"], name="relu1"))
    refs["relu1"] = [("relu1.out", None)]

    ls = c["lstm_cell1"]
    act = {"RNN_ACT_NONE": RnnAct.NONE, "RNN_ACT_TANH": RnnAct.TANH, "RNN_ACT_SIGM": RnnAct.SIGM}[_fields(ls)["act"]]
    sets = _arg(ls, "out").get("kernel_sets", {})
    res_q = QParams(el, frac_bits=int(sets.get("frac_bits", _arg(ls, "out")["tensor"]["frac_bits"])))
    net.add(V1LSTM(_const(_arg(ls, "weights")["const"], model, consts),
                   _const(_arg(ls, "bias")["const"], model, consts),
                   fn=ls["fn"], act=act, h0_q=_desc_q(_arg(ls, "prev_out")["tensor"], el),
                   cell_q=_desc_q(_arg(ls, "cell")["tensor"], el), ir_q=_desc_q(_arg(ls, "cfg.ir_tsr")["tensor"], el),
                   result_q=res_q, out_q=_desc_q(_arg(ls, "out")["tensor"], el), name="lstm2"))
    refs["lstm2"] = [("lstm_cell1.out", None)]
    refs["lstm2.cell"] = [("lstm_cell1.cell", None)]
    refs["lstm2.ir"] = [("lstm_cell1.cfg.ir_tsr", None)]

    d0, mul1, mul2, add1, mul3 = (c[k] for k in ("basic_rnn_cell1", "loop2.eltwise_mul1", "loop2.eltwise_mul2",
                                                 "loop2.eltwise_add1", "loop2.eltwise_mul3"))
    qs = {"dense": _desc_q(_arg(d0, "out")["tensor"], el), "h0": _desc_q(_arg(d0, "prev_out")["tensor"], el),
          "c0": _desc_q(_arg(mul1, "in2")["tensor"], el), "fc": _desc_q(_arg(mul1, "out")["tensor"], el),
          "ig": _desc_q(_arg(mul2, "out")["tensor"], el), "cell": _desc_q(_arg(add1, "out")["tensor"], el),
          "h": _desc_q(_arg(mul3, "out")["tensor"], el)}
    fns = {"dense": d0["fn"], "sigm": c["loop2.sigm1"]["fn"], "tanh": c["loop2.tanh1"]["fn"], "mul": mul1["fn"],
           "add": add1["fn"]}
    net.add(HarLSTM(_const(_arg(d0, "weights")["const"], model, consts),
                    _const(_arg(d0, "bias")["const"], model, consts),
                    fns=fns, qs=qs, name="lstm3"))
    # steps 0..126 are the loop's iterations (its dense call computes step t + 1), step 127 the calls after it
    last = {"i": "sigm4", "g": "tanh3", "f": "sigm5", "o": "sigm6", "fc": "eltwise_mul4", "ig": "eltwise_mul5",
            "cell": "eltwise_add2", "tanh": "tanh4", "h": "eltwise_mul6"}
    loop = {"i": "sigm1", "g": "tanh1", "f": "sigm2", "o": "sigm3", "fc": "eltwise_mul1", "ig": "eltwise_mul2",
            "cell": "eltwise_add1", "tanh": "tanh2", "h": "eltwise_mul3"}
    refs["lstm3"] = [("eltwise_mul6.out", None)]
    refs["lstm3.dense"] = [("basic_rnn_cell1.out", "one step"), ("loop2.basic_rnn_cell2.out", None)]
    for role in loop:
        refs[f"lstm3.{role}"] = [(f"loop2.{loop[role]}.out", None), (f"{last[role]}.out", "one step")]

    fc4 = c["fully_connected2"]
    net.add(V1FullyConnected(_const(_arg(fc4, "weights")["const"], model, consts),
                             _const(_arg(fc4, "bias")["const"], model, consts), fn=fc4["fn"],
                             out_q=_desc_q(_arg(fc4, "out")["tensor"], el), name="fc4"))
    refs["fc4"] = [("fully_connected2.out", None)]
    return net, refs


def load_v1_pack(folder: str | Path) -> V1Pack:
    """Build the network of a ``models_v1`` pack folder (``cifar10/<depth>`` or ``har_smartphone/<depth>``).

    Args:
        folder: a pack folder holding ``model.json``, ``constants.npz`` and ``vectors.npz``.

    Returns:
        V1Pack: the network, the test vectors and the recorded references.

    Raises:
        NotImplementedError: not one of MLI 1.0's two examples.
    """
    folder = Path(folder)
    model = json.loads((folder / "model.json").read_text())
    with np.load(folder / "constants.npz") as z:
        consts = {k: z[k] for k in z.files}
    with np.load(folder / "vectors.npz") as z:
        vectors = {k: z[k] for k in z.files}
    name = f"{model['example']}/{model['variant']}"
    if "cifar10" in model["example"]:
        net, refs = _cifar10(model, consts, name)
    elif "har" in model["example"]:
        net, refs = _har(model, consts, name)
    else:
        raise NotImplementedError(f"{folder}: example {model['example']!r} is not one of MLI 1.0's two examples")
    ref = model["reference"]
    acc_line = ref.get("accuracy_line", "")
    pct = acc_line.split("Accuracy:")[-1].split("%")[0].strip() if "Accuracy:" in acc_line else ""
    return V1Pack(net, vectors, model, refs, float(pct) / 100 if pct else math.nan,
                  {"accuracy": acc_line, "hardcoded_vector": ref.get("hardcoded_vector_line", "")})


# ====================================================================== report
#: value bits (sign excluded) of MLI 1.0's accumulators: 40-bit for fx16 x fx16, int32 otherwise
def _acc_value_bits(in_el: ElType, w_el: ElType) -> int:
    return 39 if (in_el == ElType.FX_16 and w_el == ElType.FX_16) else 31


@dataclasses.dataclass
class V1Report(Report):
    """:class:`~pymli.models.report.Report` of a 1.x example plus its agreement with the C recording.

    Attributes:
        recorded: tensor name -> (values equal to the MLI 1.0 recording, values compared).
        c_accuracy: accuracy the C program printed. c_lines: its printed accuracy / S/N lines.
    """

    recorded: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)
    c_accuracy: float | None = None
    c_lines: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def bit_exact(self) -> bool:
        """Every recorded tensor equal to the C library's, value for value."""
        return bool(self.recorded) and all(ok == n for ok, n in self.recorded.values())

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d.update(recorded={k: {"equal": a, "values": b} for k, (a, b) in self.recorded.items()},
                 bit_exact=self.bit_exact, c_accuracy=self.c_accuracy, c_lines=self.c_lines)
        return d

    def table(self, title: str | None = None, *, kernels: bool = False) -> Any:
        t = super().table(title, kernels=kernels)
        exact = sum(ok == n for ok, n in self.recorded.values())
        c_acc = "" if self.c_accuracy is None else f", C printed {100 * self.c_accuracy:.2f} %"
        t.caption = (f"{t.caption or ''}{c_acc}; equal to the MLI 1.0 recording: {exact}/{len(self.recorded)} "
                     "tensors (every layer and intermediate)")
        return t


def v1_report(pack: V1Pack, n: int | None = None, *, result: RunResult | None = None,
              progress: Callable[[int], None] | None = None) -> V1Report:
    """Per-layer SNR against the float64 twin and agreement with the C recording, for a pack's first ``n`` vectors.

    The float reference is the network with the pack's (dequantised) constants on the float test
    inputs (CIFAR-10: ``(pixel - 128) / 128``, HAR: the float sequences). The accumulator columns
    describe MLI 1.0's accumulators: 40 bits (8 guard bits) for fx16, ``int32`` for fx8 (16 guard
    bits) and fx8w16d (8 guard bits).

    Args:
        pack: a loaded pack. n: number of test vectors (default: all).
        result: a previous ``pack.network.run(pack.inputs[:n])`` with every intermediate.
        progress: progress callback for the run.

    Returns:
        V1Report: the report.
    """
    x = pack.inputs[:n]
    if result is None:
        result = pack.network.run(x, progress=progress)
    rep = compare(pack.network, x, pack.labels[:n], result=result, reference="dequantized")
    xf = pack.float_inputs[:n]
    # the float twin on the raw float inputs (compare used the dequantised quantised input)
    ref = pack.network.run_float(xf)
    layers: list[LayerStats] = []
    for st in rep.layers:
        la = pack.network[st.name]
        out = result.qparams[st.name].dequantize(result[st.name], batch=True)
        st.snr_db = snr_db(ref[st.name], out)
        st.max_err = float(np.max(np.abs(out - ref[st.name])))
        st.ref_max = float(np.max(np.abs(ref[st.name])))
        w = getattr(la, "weights", None)
        if st.macs is not None and w is not None:
            in_el = result.qparams[la.inputs[0]].el_type
            w_el = w.qp.el_type
            st.acc_bits = _acc_value_bits(in_el, w_el)
            st.guard_available = st.acc_bits - in_el.bits - w_el.bits + 1
            st.acc_headroom_bits = None if st.acc_peak_bits is None else st.acc_bits - st.acc_peak_bits
        layers.append(st)
    accuracy = float(np.mean(result.predictions() == pack.labels[:n]))
    float_acc = float(np.mean(pack.network.float_predictions(ref) == pack.labels[:n]))
    return V1Report(rep.network, rep.platform, rep.samples, layers, accuracy, float_acc,
                    "dequantised constants, float inputs", pack.compare_recorded(result, n), pack.accuracy,
                    dict(pack.reference_lines))
