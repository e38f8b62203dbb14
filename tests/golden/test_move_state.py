"""The golden runner restores the DMA pool before each mli_mov_* case (recorded from that state)."""

from __future__ import annotations

import pytest

from pymli import capi
from pymli.capi.move import MovHandle, reset_dma_pool
from pymli.testing.golden import iter_cases, load_case, run_case
from pymli.testing.paths import shared_dir


def test_mov_cases_pass_after_the_pool_was_disturbed():
    files = iter_cases([shared_dir() / "golden"], only="^mli_mov_acquire_handle$")
    if not files:
        pytest.skip(f"no mli_mov_acquire_handle recordings under {shared_dir()}/golden (set PYMLI_SHARED)")
    assert capi.mli_mov_acquire_handle.mli_reset_state is reset_dma_pool
    try:
        capi.mli_mov_set_num_dma_ch(5, 1)
        capi.mli_mov_acquire_handle(1, MovHandle())  # pool now exhausted, base channel 5
        for f in files:
            assert run_case(load_case(f)) == [], f.name
    finally:
        reset_dma_pool()
