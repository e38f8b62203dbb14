from __future__ import annotations

from pathlib import Path

import pytest

from pymli.config import EM, VPX

from ..conftest import shared_dir
from .mli_c import build_mli


@pytest.fixture(scope="session")
def mli_vpx() -> Path:
    """MLI 2.0.2 built for ROUND_MODE=UP, FULL_ACCU=OFF, AVEPOOL_16BIT_MUL=OFF (cached)."""
    return build_mli(shared_dir(), VPX)


@pytest.fixture(scope="session")
def mli_em() -> Path:
    """MLI 2.0.2 built for ROUND_MODE=CONVERGENT (cached)."""
    return build_mli(shared_dir(), EM)
