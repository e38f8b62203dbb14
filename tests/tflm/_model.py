"""The single-operator .tflite writer of the interpreter tests: :mod:`pymli.testing.tflm_models`'s
(``Tensor(shape, dtype, scale, zp, data=..., qdim=..., variable=...)``)."""

from __future__ import annotations

from pymli.testing.tflm_models import TensorSpec as Tensor
from pymli.testing.tflm_models import single_op

__all__ = ["Tensor", "single_op"]
