"""Where the shared MLI recordings live: ``$PYMLI_SHARED``, or ``../shared`` beside the project.

The golden C-library recordings (``golden/``, ``golden_mli_tests/``) and MLI's example models
(``models/``) are not part of the package: they are made by recording the C library (see the
``README.md`` files in that folder) and kept beside the repository.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["GOLDEN_SUBDIRS", "shared_dir", "golden_dirs"]

GOLDEN_SUBDIRS = ("golden", "golden_mli_tests")


def shared_dir() -> Path:
    """The ``shared/`` folder (golden cases, models).

    Returns:
        ``Path($PYMLI_SHARED)`` when the variable is set and not empty, else ``../shared`` from the
        repository root (the folder holding ``pymli/``). The folder may not exist.
    """
    env = os.environ.get("PYMLI_SHARED")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "shared"


def golden_dirs() -> list[Path]:
    """The golden-case folders under :func:`shared_dir` that exist (possibly none).

    Returns:
        ``shared/golden`` and ``shared/golden_mli_tests``, those present, in that order.
    """
    return [shared_dir() / d for d in GOLDEN_SUBDIRS if (shared_dir() / d).is_dir()]
