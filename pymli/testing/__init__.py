"""Test support shipped with pymli: the golden-case runner, the recordings' location, test models.

* :mod:`pymli.testing.golden`: replay C-library recordings through :mod:`pymli.capi`
  (``python -m pymli.verify`` / ``pymli verify``);
* :mod:`pymli.testing.paths`: where the recordings live (``$PYMLI_SHARED``, default ``../shared``);
* :mod:`pymli.testing.tflite_models`: small int8 TFLite models built in Python;
* :mod:`pymli.testing.cstructs`: ctypes mirrors of the MLI 2.0.2 structs, to call ``libmli.so``.

This package may import every floor below the CLI; nothing in the library imports it.
"""

from __future__ import annotations

from .golden import Case, CaseError, iter_cases, load_case, run_case, run_dirs
from .paths import GOLDEN_SUBDIRS, golden_dirs, shared_dir

__all__ = ["Case", "CaseError", "load_case", "run_case", "iter_cases", "run_dirs", "shared_dir", "golden_dirs",
           "GOLDEN_SUBDIRS"]
