"""Whole quantised networks on pymli's MLI kernels: build, quantise, run, compare, report.

* :class:`Network` of :mod:`~pymli.models.layers` (conv2d, depthwise, fully connected, pooling,
  eltwise, activations, softmax, permute, LSTM), holding quantised constants and the quantisation of
  every intermediate; :meth:`Network.run` runs it through :mod:`pymli.capi`, :meth:`Network.run_float`
  runs the same description in float64.
* :func:`quantize_network`: fx16, fx16_fx8_fx8 or sa8 from calibration data.
* :func:`compare` / :class:`Report`: per-layer SNR, max error, accumulator guard bits, accuracy.
* :func:`load_pack`: the MLI example packs of ``shared/models`` as networks.
"""

from __future__ import annotations

from .layers import (
                     AvgPool,
                     Conv2D,
                     DepthwiseConv2D,
                     Eltwise,
                     FullyConnected,
                     KernelMissing,
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
from .mli_pack import Pack, load_pack
from .network import Network, RunResult, mli_argmax
from .qparams import Const, QParams
from .recurrent import LSTM, UnrolledLSTM

__all__ = [
                     "LSTM",
                     "AvgPool",
                     "Const",
                     "Conv2D",
                     "DepthwiseConv2D",
                     "Eltwise",
                     "FullyConnected",
                     "KernelMissing",
                     "Layer",
                     "LeakyReLU",
                     "MaxPool",
                     "Network",
                     "PReLU",
                     "Pack",
                     "Permute",
                     "QParams",
                     "ReLU",
                     "RunResult",
                     "Sigmoid",
                     "Softmax",
                     "Tanh",
                     "UnrolledLSTM",
                     "load_pack",
                     "mli_argmax",
]
