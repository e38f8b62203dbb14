"""The prepared LSTM operator (:func:`pymli.tflm.lstm.prepare_unidirectional_sequence_lstm`: with the JIT one
compiled call, :func:`pymli.kernels._jit_lstm.lstm_op`) against the unprepared
:func:`pymli.tflm.lstm.unidirectional_sequence_lstm` with the JIT off (the NumPy loop), bit for bit: seeded
random int8 and int16 operators of several sizes, both layouts, the states carried over several calls,
extreme values, strided views, both rounding platforms, JIT on and off."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pymli import EM, VPX, use_platform
from pymli.errors import MliError
from pymli.kernels import _jit
from pymli.tflm import lstm

from .test_lstm_fast import _case

needs_jit = pytest.mark.skipif(not _jit.available(), reason="numba is not installed: no compiled LSTM operator")


def _reference(x: np.ndarray, p: lstm.LstmParams, hidden: np.ndarray, cell: np.ndarray, time_major: bool
               ) -> tuple:
    prev = _jit.set_enabled(False)
    try:
        return lstm.unidirectional_sequence_lstm(x, p, hidden, cell, time_major=time_major)
    finally:
        _jit.set_enabled(prev)


def _same(got: tuple, want: tuple) -> None:
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b)


def _run_calls(x: np.ndarray, p: lstm.LstmParams, hidden: np.ndarray, cell: np.ndarray, time_major: bool,
               calls: int = 3) -> None:
    """``calls`` Invokes of the prepared step, each fed the previous one's states, against the reference."""
    step = lstm.prepare_unidirectional_sequence_lstm(p, x.dtype, time_major=time_major)
    h, c = hidden, cell
    rh, rc = hidden, cell
    for k in range(calls):
        xk = x if k == 0 else x[::-1] if time_major else x[:, ::-1]
        got = step(xk, h, c)
        want = _reference(xk, p, rh, rc, time_major)
        _same(got, want)
        _, h, c = got
        _, rh, rc = want


@pytest.mark.parametrize("jit_on", [True, False])
@pytest.mark.parametrize("platform", [VPX, EM])
@pytest.mark.parametrize("dt", [np.int8, np.int16])
@pytest.mark.parametrize("seed", range(10))
def test_prepared_equals_reference(seed: int, dt: type, platform: object, jit_on: bool) -> None:
    if jit_on and not _jit.available():
        pytest.skip("numba is not installed: no compiled LSTM operator")
    rng = np.random.default_rng(1000 + seed * 7 + (dt == np.int16))
    nb, nt, ni, ns = (int(v) for v in rng.integers(1, [4, 7, 10, 9]))
    x, p, hidden, cell = _case(rng, dt, nb, nt, ni, ns, extreme=seed % 4 == 3, tiny=seed % 4 == 2)
    time_major = bool(seed % 2)
    if time_major:
        x = np.ascontiguousarray(np.swapaxes(x, 0, 1))
    prev = _jit.set_enabled(jit_on)
    try:
        with use_platform(platform):
            _run_calls(x, p, hidden, cell, time_major)
    finally:
        _jit.set_enabled(prev)


@needs_jit
@pytest.mark.parametrize("dt", [np.int8, np.int16])
def test_prepared_extreme_states_and_sizes(dt: type) -> None:
    """All weights and inputs at the type's extremes, states at their extremes, 1 to 40 units."""
    rng = np.random.default_rng(7)
    info = np.iinfo(dt)
    for nb, nt, ni, ns in ((1, 1, 1, 1), (2, 3, 2, 2), (3, 5, 17, 40), (1, 9, 33, 13)):
        x, p, hidden, cell = _case(rng, dt, nb, nt, ni, ns, extreme=True)
        hidden = rng.choice(np.array([info.min, info.max], dt), hidden.shape)
        cell = rng.choice(np.array([-32768, 32767], np.int16), cell.shape)
        for time_major in (False, True):
            xs = np.ascontiguousarray(np.swapaxes(x, 0, 1)) if time_major else x
            _run_calls(xs, p, hidden, cell, time_major)


@needs_jit
@pytest.mark.parametrize("dt", [np.int8, np.int16])
def test_prepared_strided_views(dt: type) -> None:
    """Non-contiguous input and states (the compiled call reads any layout)."""
    rng = np.random.default_rng(99)
    x, p, hidden, cell = _case(rng, dt, 2, 10, 7, 6)
    _run_calls(x[:, ::2], p, hidden, cell, False)
    _run_calls(np.swapaxes(x, 0, 1), p, hidden, cell, True)
    _run_calls(x, p, hidden[:, ::-1], cell[:, ::-1], False)
    x.flags.writeable = False
    _run_calls(x, p, hidden, cell, False)


@needs_jit
def test_prepared_large_input_takes_blas_path() -> None:
    """Beyond ``_WHOLE_MACS`` input products the step is the unprepared function (same values)."""
    rng = np.random.default_rng(4)
    x, p, hidden, cell = _case(rng, np.int8, 2, 20, 300, 8)
    assert x.size * 4 * 8 > lstm._WHOLE_MACS
    _run_calls(x, p, hidden, cell, False, calls=2)


@needs_jit
def test_prepared_out_of_plan_multipliers() -> None:
    """Parameters beyond ``QuantizeMultiplier``'s range (a right shift of 40) take the NumPy loop."""
    rng = np.random.default_rng(21)
    x, p, hidden, cell = _case(rng, np.int8, 2, 3, 4, 3)
    gates = {g: lstm.LstmGate(q.w_in, q.w_rec, q.bias, q.in_multiplier, q.in_shift, 1 << 30, -40)
             for g, q in p.gates.items()}
    _run_calls(x, replace(p, gates=gates, fused=lstm._fuse(gates)), hidden, cell, False)


@pytest.mark.parametrize("jit_on", [True, False])
def test_prepared_rejects_mismatches(jit_on: bool) -> None:
    """Wrong types and shapes raise as the unprepared function does (the compiled call checks no bounds)."""
    rng = np.random.default_rng(2)
    x, p, hidden, cell = _case(rng, np.int8, 2, 3, 4, 3)
    step = lstm.prepare_unidirectional_sequence_lstm(p, np.int8)
    prev = _jit.set_enabled(jit_on)
    try:
        with pytest.raises(MliError):
            step(x.astype(np.int16), hidden, cell)
        with pytest.raises(MliError):
            step(x, hidden, cell.astype(np.int8))
        with pytest.raises((MliError, ValueError)):
            step(x, hidden[:1], cell)
        with pytest.raises((MliError, ValueError)):
            step(x[..., :3], hidden, cell)
    finally:
        _jit.set_enabled(prev)


@needs_jit
def test_warm_up_covers_the_prepared_calls() -> None:
    """After ``warm_up`` the prepared int8 and int16 operators (contiguous, strided, read-only) compile
    nothing new."""
    from pymli.kernels import _jit_lstm

    _jit_lstm.warm_up()
    before = len(_jit_lstm.lstm_op.signatures)
    rng = np.random.default_rng(12)
    for dt in (np.int8, np.int16):
        x, p, hidden, cell = _case(rng, dt, 2, 3, 4, 3)
        _run_calls(x, p, hidden, cell, False)
        _run_calls(x[:, ::2], p, hidden[:, ::-1], cell[:, ::-1], False)
    assert len(_jit_lstm.lstm_op.signatures) == before
