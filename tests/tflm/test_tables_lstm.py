"""The sigmoid table's relation to sigmoid(i/24); int16 sigmoid / tanh properties."""

from __future__ import annotations

import numpy as np

from pymli.tflm._tables import SIGMOID_Q16
from pymli.tflm.lstm import checked_log2, sigmoid_int16, tanh_int16


def test_sigmoid_table_is_sigmoid_of_i_over_24_within_one() -> None:
    i = np.arange(256)
    near = np.minimum(65535, np.floor(65536 / (1 + np.exp(-i / 24)) + 0.5)).astype(np.int64)
    d = SIGMOID_Q16 - near
    assert set(d.tolist()) <= {0, 1} and np.all(np.diff(SIGMOID_Q16) >= 0)


def test_sigmoid_int16_q312_close_to_float() -> None:
    x = np.arange(-32768, 32768, dtype=np.int64).astype(np.int16)
    y = sigmoid_int16(x).astype(np.float64) / 32768
    ref = 1 / (1 + np.exp(-x.astype(np.float64) / 4096))
    assert np.max(np.abs(y - ref)) < 2e-4
    assert np.all(np.diff(sigmoid_int16(x).astype(np.int64)) >= 0)


def test_tanh_int16_q312_odd_and_close() -> None:
    x = np.arange(-32767, 32768, dtype=np.int64).astype(np.int16)
    y = tanh_int16(x).astype(np.int64)
    ref = np.tanh(x.astype(np.float64) / 4096)
    assert np.max(np.abs(y / 32768 - ref)) < 3e-4
    assert np.all(np.abs(y + y[::-1]) <= 1)


def test_checked_log2() -> None:
    assert checked_log2(2.0**-12) == (-12, True)
    assert checked_log2(0.3)[1] is False
