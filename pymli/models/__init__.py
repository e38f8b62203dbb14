"""Whole quantised networks on pymli's MLI kernels: build, quantise, run, compare, report.

* :class:`Network` of :mod:`~pymli.models.layers` (conv2d, depthwise, group and transpose conv,
  fully connected, pooling, eltwise, activations, softmax, l2_normalize, argmax, permute, concat,
  padding, LSTM and GRU in either direction), holding quantised constants and the quantisation of
  every intermediate; :meth:`Network.run` runs it through :mod:`pymli.capi`, :meth:`Network.run_float`
  runs the same description in float64.
* :func:`quantize_network`: fx16, fx16_fx8_fx8 or sa8 from calibration data.
* :func:`compare` / :class:`Report`: per-layer SNR, max error, accumulator guard bits, accuracy.
* :func:`load_pack`: the MLI example packs of ``shared/models`` as networks.
* :meth:`Network.save` / :func:`load_network`: one ``.npz`` file per network (:mod:`pymli.models.io`).
"""

from __future__ import annotations

from .layers import (
    Argmax, AvgPool, Concat, Conv2D, DepthwiseConv2D, Eltwise, FullyConnected, GroupConv2D, KernelMissing,
    L2Normalize, Layer, LeakyReLU, MaxPool, Pad2D, Permute, PReLU, ReLU, Sigmoid, Softmax, Tanh,
    TransposeConv2D,
)
from .io import NetworkFileError, load_network, save_network
from .mli_pack import Pack, load_pack
from .network import Network, RunResult, mli_argmax
from .qparams import Const, QParams
from .recurrent import GRU, LSTM, UnrolledLSTM
from .v1net import V1Network, V1Pack, V1Report, load_v1_pack, v1_report  # noqa: F401  (MLI 1.0's examples)

__all__ = [
    "GRU", "LSTM", "Argmax", "AvgPool", "Concat", "Const", "Conv2D", "DepthwiseConv2D", "Eltwise",
    "FullyConnected", "GroupConv2D", "KernelMissing", "L2Normalize", "Layer", "LeakyReLU", "MaxPool", "Network",
    "NetworkFileError", "PReLU", "Pack", "Pad2D", "Permute", "QParams", "ReLU", "RunResult", "Sigmoid",
    "Softmax", "Tanh", "TransposeConv2D", "UnrolledLSTM", "load_network", "load_pack", "mli_argmax",
    "save_network",
]
