"""Whole datasets through pymli's MLI kernels: ``pymli eval`` and :func:`evaluate`.

* :func:`evaluate` runs a ``.tflite`` model or a quantised :class:`pymli.models.Network` over an ``.npz``,
  a ``.npy``, a folder of ``.npy`` files or of images, on every core (worker processes) or on a Dask
  cluster, and returns an :class:`EvalReport` (accuracy, top-5, confusion matrix, throughput, per-layer
  saturation and accumulator headroom, optional comparison with float or TFLite Micro) with
  ``.to_json()`` and ``.plot()``.
* :func:`open_data` checks a dataset against a model input before anything runs; every problem is an
  :class:`EvalError` (an :class:`pymli.MliError`) with one clear sentence.
* :data:`eval_command` (in :mod:`pymli.eval.command`) is the click command.
"""

from __future__ import annotations

from .data import DataSource, EvalError, ImagePrep, InputSpec, open_data, parse_preprocess
from .report import AgainstEval, EvalReport, LayerEval
from .runner import evaluate

__all__ = ["evaluate", "EvalReport", "LayerEval", "AgainstEval", "EvalError", "DataSource", "InputSpec",
           "ImagePrep", "open_data", "parse_preprocess"]
