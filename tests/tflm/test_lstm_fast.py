"""The compiled LSTM time loop (:mod:`pymli.kernels._jit_lstm`) against the NumPy loop of
:func:`pymli.tflm.lstm.unidirectional_sequence_lstm`, bit for bit: seeded random weights, biases, zero
points, scales (down to factors that QuantizeMultiplier flushes to zero), shapes, layouts, int8 and int16,
cell clips and extreme values, on both rounding platforms."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pymli import EM, VPX, use_platform
from pymli.kernels import _jit
from pymli.tflm import lstm

needs_jit = pytest.mark.skipif(not _jit.available(), reason="numba is not installed: no compiled LSTM loop")


def _case(rng: np.random.Generator, dt: type, nb: int, nt: int, ni: int, ns: int, *, extreme: bool = False,
          tiny: bool = False) -> tuple:
    """A random LSTM: ``(x (batch, time, input), params, hidden, cell)``."""
    info = np.iinfo(dt)
    if extreme:
        weights = {g: (rng.choice(np.array([-128, 127], np.int8), (ns, ni)),
                       rng.choice(np.array([-128, 127], np.int8), (ns, ns))) for g in lstm.GATES}
        x = rng.choice(np.array([info.min, info.max], dt), (nb, nt, ni))
    else:
        weights = {g: (rng.integers(-128, 128, (ns, ni)).astype(np.int8),
                       rng.integers(-128, 128, (ns, ns)).astype(np.int8)) for g in lstm.GATES}
        x = rng.integers(info.min, int(info.max) + 1, (nb, nt, ni)).astype(dt)
    bias_dt = np.int64 if dt == np.int16 else np.int32
    bias = {g: None if rng.random() < 0.25 else rng.integers(-(1 << 20), 1 << 20, ns).astype(bias_dt)
            for g in lstm.GATES}
    zp = 0 if dt == np.int16 else int(rng.integers(-128, 128))
    hzp = 0 if dt == np.int16 else int(rng.integers(-128, 128))
    lo = -40 if tiny else -14
    p = lstm.lstm_params(
        input_scale=float(np.float32(2.0 ** rng.uniform(lo, -2))), input_zp=zp,
        hidden_scale=float(np.float32(2.0 ** rng.uniform(-14, -2))), hidden_zp=hzp,
        cell_scale=2.0 ** int(rng.integers(-15, -8)), weights=weights, bias=bias,
        w_in_scale={g: float(np.float32(2.0 ** rng.uniform(lo, -3))) for g in lstm.GATES},
        w_rec_scale={g: float(np.float32(2.0 ** rng.uniform(lo, -3))) for g in lstm.GATES},
        cell_clip=float(rng.choice([0.0, 0.5, 3.0])), cell_tanh=bool(rng.random() < 0.8))
    hidden = rng.integers(info.min, int(info.max) + 1, (nb, ns)).astype(dt)
    cell = rng.integers(-32768, 32768, (nb, ns)).astype(np.int16)
    return x, p, hidden, cell


def _both(x: np.ndarray, p: lstm.LstmParams, hidden: np.ndarray, cell: np.ndarray, time_major: bool) -> None:
    """The compiled and the NumPy loop give the same output, hidden and cell state."""
    prev = _jit.set_enabled(False)
    try:
        plain = lstm.unidirectional_sequence_lstm(x, p, hidden, cell, time_major=time_major)
    finally:
        _jit.set_enabled(prev)
    fast = lstm.unidirectional_sequence_lstm(x, p, hidden, cell, time_major=time_major)
    for a, b in zip(plain, fast):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b)


@needs_jit
@pytest.mark.parametrize("platform", [VPX, EM])
@pytest.mark.parametrize("dt", [np.int8, np.int16])
@pytest.mark.parametrize("seed", range(12))
def test_compiled_loop_equals_numpy(seed: int, dt: type, platform: object) -> None:
    rng = np.random.default_rng(seed * 7 + (dt == np.int16))
    nb, nt, ni, ns = (int(v) for v in rng.integers(1, [4, 7, 10, 9]))
    x, p, hidden, cell = _case(rng, dt, nb, nt, ni, ns, extreme=seed % 4 == 3, tiny=seed % 4 == 2)
    time_major = bool(seed % 2)
    if time_major:
        x = np.ascontiguousarray(np.swapaxes(x, 0, 1))
    with use_platform(platform):
        _both(x, p, hidden, cell, time_major)


@needs_jit
@pytest.mark.parametrize("dt", [np.int8, np.int16])
def test_compiled_loop_strided_input(dt: type) -> None:
    rng = np.random.default_rng(99)
    x, p, hidden, cell = _case(rng, dt, 2, 10, 7, 6)
    _both(x[:, ::2], p, hidden, cell, False)  # a non-contiguous view
    _both(np.swapaxes(x, 0, 1), p, hidden, cell, True)
    _both(x, p, hidden[:, ::-1], cell[:, ::-1], False)


@needs_jit
def test_compiled_loop_int64_accumulators() -> None:
    """int16 hidden states over 520 units: column sums up to 32768 * 128 * 520 > 2**31, the int64 weights."""
    rng = np.random.default_rng(5)
    x, p, hidden, cell = _case(rng, np.int16, 1, 3, 4, 520, extreme=True)
    fz = p.fused
    assert 32768 * fz.rec_abs >= 1 << 31
    _both(x, p, hidden, cell, False)


def test_numpy_loop_without_numba_matches_golden_shape() -> None:
    """The NumPy loop alone (JIT off) keeps the documented shapes and dtypes."""
    rng = np.random.default_rng(3)
    x, p, hidden, cell = _case(rng, np.int8, 2, 4, 3, 5)
    prev = _jit.set_enabled(False)
    try:
        y, h, c = lstm.unidirectional_sequence_lstm(x, p, hidden, cell)
    finally:
        _jit.set_enabled(prev)
    assert y.shape == (2, 4, 5) and y.dtype == np.int8
    assert h.shape == hidden.shape and c.dtype == np.int16
    assert np.array_equal(y[:, -1], h)


@pytest.mark.parametrize("dt, ni", [(np.int8, 514), (np.int8, 600), (np.int16, 3), (np.int16, 5)])
def test_input_products_exact(dt: type, ni: int) -> None:
    """float32 up to the largest exact depth (int8, -128 zero point, all weights -128: 255 * 128 * 514 <
    2**24; int16: 32768 * 128 * 3), float64 beyond: the same values as the int64 product."""
    rng = np.random.default_rng(ni)
    info = np.iinfo(dt)
    w = np.full((ni, 8), -128, np.int64)
    w[:, 4:] = rng.integers(-128, 128, (ni, 4))
    gates = {g: lstm.LstmGate(w[:, 2 * k:2 * k + 2].T.astype(np.int8), np.zeros((2, 2), np.int8), None, 1 << 30,
                              0, 1 << 30, 0) for k, g in enumerate(lstm.GATES)}
    fz = lstm._fuse(gates)
    zp = -128 if dt == np.int8 else 0
    xs = np.full((5, ni), info.max, dt)
    xs[3:] = rng.integers(info.min, int(info.max) + 1, (2, ni))
    got = lstm._input_products(xs, zp, fz)
    assert got.dtype == (np.float32 if (dt, ni) in ((np.int8, 514), (np.int16, 3)) else np.float64)
    assert np.array_equal(got.astype(np.int64), (xs.astype(np.int64) - zp) @ fz.w_in)


@needs_jit
def test_warm_up_covers_the_calls() -> None:
    """After the module's ``warm_up``, int8 and int16 LSTMs (float32 and float64 input products, int32 and
    int64 recurrent accumulators) compile nothing new."""
    from pymli.kernels import _jit_lstm

    _jit_lstm.warm_up()
    before = len(_jit_lstm.lstm_steps.signatures)
    rng = np.random.default_rng(11)
    for dt, ni, ns in ((np.int8, 5, 4), (np.int16, 9, 3), (np.int8, 700, 2), (np.int16, 2, 520)):
        x, p, hidden, cell = _case(rng, dt, 1, 2, ni, ns)
        _both(x, p, hidden, cell, False)
    assert len(_jit_lstm.lstm_steps.signatures) == before


@pytest.mark.parametrize("seed", range(6))
def test_planned_requantisation_equals_quant_util(seed: int) -> None:
    """The NumPy loop's planned ``MultiplyByQuantizedMultiplier`` equals :mod:`pymli.tflm.quant_util`'s on int32
    extremes and random values, per column and scalar, shifts -40..8 (beyond -31: the general form), with
    and without the int32 promise, multipliers including 0 and ``-2**31``."""
    from pymli.tflm import quant_util as qu

    rng = np.random.default_rng(seed)
    lo, hi = -(1 << 31), (1 << 31) - 1
    x = np.concatenate([[lo, hi, 0, -1, 1, lo + 1], rng.integers(lo, hi + 1, 58)]).astype(np.int64)
    wide = np.concatenate([x, rng.integers(-(1 << 40), 1 << 40, 64)])
    m = rng.integers(0, 1 << 31, 64)
    m[:3] = [0, (1 << 31) - 1, 1 << 30]
    if seed == 5:
        m[3] = lo
    s = rng.integers(-40 if seed % 2 else -31, 9, 64)
    s[:4] = [0, -31, 1, -1]
    for mm, ss in ((m, s), (int(m[seed]), int(s[seed]))):
        plan = lstm._rq_plan(mm, ss)
        assert np.array_equal(lstm._rq(x.copy(), plan, True), qu.multiply_by_quantized_multiplier(x, mm, ss))
        mw = mm if np.ndim(mm) == 0 else np.concatenate([mm, mm])
        sw = ss if np.ndim(ss) == 0 else np.concatenate([ss, ss])
        assert np.array_equal(lstm._rq(wide.copy(), lstm._rq_plan(mw, sw), False),
                              qu.multiply_by_quantized_multiplier(qu.wrap(wide, 32), mw, sw))


@needs_jit
def test_out_of_plan_multipliers_take_the_numpy_loop() -> None:
    """Hand-made parameters beyond ``QuantizeMultiplier``'s range (a right shift of 40) give the NumPy loop's
    values with the JIT on as well."""
    rng = np.random.default_rng(21)
    x, p, hidden, cell = _case(rng, np.int8, 2, 3, 4, 3)
    gates = {g: lstm.LstmGate(q.w_in, q.w_rec, q.bias, q.in_multiplier, q.in_shift, 1 << 30, -40)
             for g, q in p.gates.items()}
    fz = lstm._fuse(gates)
    assert not fz.jit_ok
    _both(x, replace(p, gates=gates, fused=fz), hidden, cell, False)
