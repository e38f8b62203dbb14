"""Helpers shared by the model tests: a per-session cache of loaded packs, skipping on missing kernels."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from pymli import capi
from pymli.models import load_pack


@functools.cache
def cached_pack(path: Path):  # type: ignore[no-untyped-def]
    """load_pack(path), loaded once per test process."""
    return load_pack(path)


def skip_missing(names: list[str]) -> None:
    """Skip the test, naming them, when some MLI functions are not in pymli.capi yet."""
    missing = [n for n in dict.fromkeys(names) if n not in capi.FUNCTIONS]
    if missing:
        pytest.skip("not in pymli.capi yet: " + ", ".join(missing))
