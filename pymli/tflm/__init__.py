"""TensorFlow Lite Micro's reference integer kernels and its arc_mli parameter glue, in NumPy.

Pure functions over NumPy arrays with explicit quantisation parameters, bit-exact with TFLM
(tflite-micro ``90b983c2``, the commit of ``shared/tflite_golden``) built with its defaults (no
``TFLITE_SINGLE_ROUNDING``). One module per operator family; :mod:`.quant_util` holds every
multiplier and rounding helper, :mod:`.fixedpoint` gemmlowp's fixed-point transcendental functions,
:mod:`.arc_mli` the conversions TFLM's ARC MLI glue applies before it calls MLI.
"""

from __future__ import annotations

__all__: list[str] = []
