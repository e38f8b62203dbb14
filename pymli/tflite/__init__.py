"""Quantised TensorFlow Lite int8 models on pymli's MLI kernels, without TensorFlow.

* :func:`load` (path or bytes) reads the flatbuffer with the ``tflite`` package's generated schema
  classes and builds a :class:`pymli.models.Network` (:class:`TfliteModel`).
* :func:`pymli.tflite.compare.compare` runs the same model on the TFLite Micro reference interpreter
  (optional ``tflite-micro`` package) and reports the differences per tensor.
* :mod:`pymli.tflite.builder` writes small int8 models from Python (tests, examples).

Errors are :class:`TfliteFormatError` (malformed bytes) and :class:`TfliteUnsupported` (an operator or
parameter MLI cannot run), both :class:`pymli.errors.MliError`.
"""

from __future__ import annotations

from .errors import TfliteError, TfliteFormatError, TfliteUnsupported
from .importer import SUPPORTED_OPS, TfliteModel, load

__all__ = ["load", "TfliteModel", "TfliteError", "TfliteFormatError", "TfliteUnsupported", "SUPPORTED_OPS"]
