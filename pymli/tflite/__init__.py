"""Quantised TensorFlow Lite int8 models on pymli's MLI kernels, without TensorFlow.

* :func:`load` (path or bytes) reads the flatbuffer with the ``tflite`` package's generated schema
  classes. ``mapping="tflm"`` (default): the model as TensorFlow Lite Micro with the ARC MLI kernels
  computes it (:class:`TflmModel`: offloaded operators through pymli's MLI kernels with arc_mli's
  parameters, every other operator TFLM's reference integer kernel). ``mapping="mli"``: a
  :class:`pymli.models.Network` of MLI kernel calls (:class:`TfliteModel`, what the C export uses).
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

from .errors import (
    TfliteError,
    TfliteFormatError,
    TfliteInputError,
    TfliteLayoutError,
    TfliteUnsupported,
    TfliteWarning,
)

__all__ = ["load", "MAPPINGS", "TfliteModel", "TflmModel", "TfliteError", "TfliteFormatError",
           "TfliteUnsupported", "TfliteInputError", "TfliteLayoutError", "TfliteMappingError", "TfliteWarning",
           "SUPPORTED_OPS"]


def __getattr__(name: str) -> Any:
    # the loaders import the optional ``tflite`` / ``flatbuffers`` packages: on first use only
    if name in ("load", "MAPPINGS", "TfliteMappingError"):
        from . import loader

        return getattr(loader, name)
    if name == "TflmModel":
        from . import tflm_model

        return tflm_model.TflmModel
    if name in ("TfliteModel", "SUPPORTED_OPS"):
        from . import importer

        return getattr(importer, name)
    raise AttributeError(f"module 'pymli.tflite' has no attribute {name!r}")
