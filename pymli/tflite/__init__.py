"""Quantised TensorFlow Lite int8 models on pymli's MLI kernels, without TensorFlow.

* :func:`load` (path or bytes) reads the flatbuffer with the ``tflite`` package's generated schema
  classes and builds a :class:`pymli.models.Network` (:class:`TfliteModel`).
* :func:`pymli.tflite.compare.compare` runs the same model on the TFLite Micro reference interpreter
  (optional ``tflite-micro`` package) and reports the differences per tensor.
* :func:`pymli.tflite.inspect.inspect_model`: operators, tensors, quantisation, MLI functions and
  accumulator headroom.
* :mod:`pymli.tflite.builder` writes small int8 models from Python (tests, examples).

Errors are :class:`TfliteFormatError` (malformed bytes) and :class:`TfliteUnsupported` (an operator or
parameter MLI cannot run), both :class:`pymli.errors.MliError`. The ``tflite`` and ``flatbuffers``
packages are imported on first use, so ``pymli.tflite.errors`` and the CLI load without them.
"""

from __future__ import annotations

from typing import Any

from .errors import TfliteError, TfliteFormatError, TfliteUnsupported

__all__ = ["load", "TfliteModel", "TfliteError", "TfliteFormatError", "TfliteUnsupported", "SUPPORTED_OPS"]


def __getattr__(name: str) -> Any:
    if name in ("load", "TfliteModel", "SUPPORTED_OPS"):
        from . import importer

        return getattr(importer, name)
    raise AttributeError(f"module 'pymli.tflite' has no attribute {name!r}")
