"""Where the shared MLI recordings live: ``../shared`` beside the project, or ``$PYMLI_SHARED``."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["shared_dir"]


def shared_dir() -> Path:
    """The ``shared/`` folder (golden cases, models); it may not exist."""
    env = os.environ.get("PYMLI_SHARED")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent.parent / "shared"
