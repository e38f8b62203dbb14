"""Kept for existing imports: the recordings' location now lives in :mod:`pymli.testing.paths`."""

from __future__ import annotations

from .testing.paths import golden_dirs, shared_dir

__all__ = ["shared_dir", "golden_dirs"]
