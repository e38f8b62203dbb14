"""pymli: the embARC Machine Learning Inference library (MLI 2.0) in NumPy, bit for bit.

The public surface:

* :class:`Tensor`, :class:`Lut`: the ``mli_tensor`` and ``mli_lut`` structs;
* :class:`ElType`: element types; :class:`Status` and :class:`MliError`: errors;
* :class:`Platform`, :func:`use_platform` and the presets :data:`VPX`, :data:`EM`: rounding and
  accumulator options that the C library fixes at build time;
* :mod:`pymli.capi`: one callable per MLI C function, same name, same arguments.
"""

from __future__ import annotations

from .config import EM, PRESETS, VPX, VPX_FULL_ACCU, Platform, get_platform, set_platform, use_platform
from .errors import MliError, Status
from .formats import ElType, RoundMode
from .quant import dequantize, quantize
from .tensor import MLI_MAX_RANK, Lut, Tensor

__version__ = "0.1.0"

__all__ = [
    "Tensor", "Lut", "ElType", "RoundMode", "Status", "MliError", "Platform", "VPX", "VPX_FULL_ACCU", "EM",
    "PRESETS", "get_platform", "set_platform", "use_platform", "MLI_MAX_RANK", "quantize", "dequantize",
    "__version__",
]


def __getattr__(name: str):
    """Lazy subpackages (``pymli.capi``, ``pymli.ops``, ...) and the Pythonic ops (``pymli.conv2d``)."""
    import importlib

    if name in ("capi", "ops", "models", "quant", "arith", "kernels", "checks", "verify", "tflite"):
        return importlib.import_module(f"{__name__}.{name}")
    ops = importlib.import_module(f"{__name__}.ops")
    if name in ops.__all__:
        return getattr(ops, name)
    raise AttributeError(f"module 'pymli' has no attribute {name!r}")
