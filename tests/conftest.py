from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", max_examples=60, deadline=None)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def shared_dir() -> Path:
    env = os.environ.get("PYMLI_SHARED")
    return Path(env) if env else Path(__file__).resolve().parent.parent.parent / "shared"


@pytest.fixture(scope="session")
def shared() -> Path:
    d = shared_dir()
    if not d.is_dir():
        pytest.skip(f"{d} is absent: the shared MLI recordings are needed")
    return d
