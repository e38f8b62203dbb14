"""Small int8 TFLite test models built in Python (re-exported from :mod:`pymli.tflite.examples`).

The builders stay in ``pymli/tflite/examples.py`` beside the TFLite writer they use (the TFLite
package is being reorganised separately); tests and docs may import them from here.
"""

from __future__ import annotations

from ..tflite.examples import OP_CASES, TFLM_CANNOT_RUN, GraphMaker, cnn10

__all__ = ["GraphMaker", "cnn10", "OP_CASES", "TFLM_CANNOT_RUN"]
