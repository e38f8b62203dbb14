"""``scale_round_sat``'s folded per-slice shifts (int32 and uint32) against the int64 model."""

from __future__ import annotations

import numpy as np
import pytest

from pymli import EM, VPX, use_platform
from pymli.arith import lut as L
from pymli.arith.rounding import asr_rnd, sat, wrap


def _model(e: np.ndarray, r: np.ndarray, sh: np.ndarray, zp: int, bits: int) -> np.ndarray:
    return sat(wrap(asr_rnd(r * e.astype(np.int64), sh, 32) + zp, 32), bits)


@pytest.mark.parametrize("platform", [VPX, EM], ids=["vpx", "em"])
def test_scale_round_sat_per_slice_shifts_equal_model(platform, monkeypatch) -> None:
    calls = []
    real = L._folded_uint32
    monkeypatch.setattr(L, "_folded_uint32", lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(21)
    with use_platform(platform):
        for _ in range(300):
            slices, n = int(rng.integers(2, 200)), int(rng.integers(1, 40))
            non_negative = rng.random() < 0.6
            e = rng.integers(0 if non_negative else -32768, 32768, (slices, n)).astype(np.int16)
            if rng.random() < 0.3:
                e[:, 0] = 32767 if non_negative else -32768
            r = rng.integers(0 if non_negative else -32768, 32768, (slices, 1))
            if rng.random() < 0.4:
                r = rng.integers(16384, 32768, (slices, 1))  # softmax-like reciprocals
            if rng.random() < 0.5:
                sh = rng.integers(15, 18, (slices, 1))  # close shifts: folding (softmax's)
            else:
                sh = rng.integers(1, 34, (slices, 1))
            zp, bits = int(rng.choice([0, -128, 5])), int(rng.choice([8, 16]))
            assert np.array_equal(L.scale_round_sat(e, r, sh, zp, bits), _model(e, r, sh, zp, bits))
    assert len(calls) > 10  # the uint32 form was exercised
