"""The compiled SVDF step (:mod:`pymli.kernels._jit_svdf`) against the NumPy prepared step of
:func:`pymli.tflm.svdf.prepare_svdf_int8` and the plain :func:`pymli.tflm.svdf.svdf_int8`, bit for bit:
seeded random shapes, ranks, weights, biases (or none), zero points, scales (down to factors that
QuantizeMultiplier flushes to zero, up to left shifts), int8 and int16 state, extreme values, the state
carried over several invocations, on both rounding platforms."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from pymli import EM, VPX, use_platform
from pymli.kernels import _jit
from pymli.tflm import svdf

needs_jit = pytest.mark.skipif(not _jit.available(), reason="numba is not installed: no compiled SVDF step")


def _case(rng: np.random.Generator, sd: type, *, extreme: bool = False) -> tuple:
    """A random SVDF: ``(w_feature, w_time, bias, params, rank, inputs (T, B, n_input), state)``."""
    rank = int(rng.integers(1, 4))
    n_unit, n_in, nm, nb, nt = (int(rng.integers(1, 9)), int(rng.integers(1, 40)), int(rng.integers(1, 12)),
                                int(rng.integers(1, 4)), int(rng.integers(1, 6)))
    nf = n_unit * rank
    si = np.iinfo(sd)
    if extreme:
        wf = rng.choice(np.array([-128, 127], np.int8), (nf, n_in))
        wt = rng.choice(np.array([si.min, si.max], sd), (nf, nm))
        xs = rng.choice(np.array([-128, 127], np.int8), (nt, nb, n_in))
        state = rng.choice(np.array([si.min, si.max], sd), (nb, nf * nm))
        bias = rng.choice(np.array([-(1 << 31), (1 << 31) - 1], np.int32), n_unit)
        zps = [int(rng.choice([-128, 127])) for _ in range(3)]
    else:
        wf = rng.integers(-128, 128, (nf, n_in)).astype(np.int8)
        wt = rng.integers(si.min, int(si.max) + 1, (nf, nm)).astype(sd)
        xs = rng.integers(-128, 128, (nt, nb, n_in)).astype(np.int8)
        state = rng.integers(si.min, int(si.max) + 1, (nb, nf * nm)).astype(sd)
        bias = rng.integers(-(1 << 20), 1 << 20, n_unit).astype(np.int32)
        zps = [int(v) for v in rng.integers(-128, 128, 3)]
    if rng.random() < 0.25:
        bias = None
    if sd == np.int16 and rng.random() < 0.5:
        zps[1] = 0
    # the two factors: from flushed to zero (below 2**-32) to left shifts
    sc = [float(np.float32(2.0 ** rng.uniform(-12, 0))) for _ in range(5)]
    e1, e2 = 2.0 ** rng.uniform(-36, 6), 2.0 ** rng.uniform(-36, 6)
    state_scale = sc[0] * sc[1] / e1
    out_scale = state_scale * sc[2] / e2
    p = svdf.svdf_params(sc[0], zps[0], sc[1], state_scale, zps[1], sc[2], out_scale, zps[2])
    return wf, wt, bias, p, rank, xs, state


def _run(step, xs: np.ndarray, state: np.ndarray) -> tuple[list, np.ndarray]:
    """Every input through ``step``, the state carried over: ``(outputs, last state)``."""
    outs = []
    for x in xs:
        y, state = step(x, state)
        outs.append(y)
    return outs, state


def _check(case: tuple) -> None:
    wf, wt, bias, p, rank, xs, state = case
    step = svdf.prepare_svdf_int8(wf, wt, bias, p, rank=rank)
    fast, fast_state = _run(step, xs, state)
    prev = _jit.set_enabled(False)
    try:
        plain, plain_state = _run(step, xs, state)
    finally:
        _jit.set_enabled(prev)
    ref, ref_state = _run(lambda x, s: svdf.svdf_int8(x, wf, wt, bias, s, p, rank=rank), xs, state)
    for a, b, c in zip(fast, plain, ref):
        assert a.dtype == b.dtype == np.int8 and a.shape == b.shape == c.shape
        assert np.array_equal(a, b) and np.array_equal(a, c)
    assert fast_state.dtype == plain_state.dtype == state.dtype and fast_state.shape == state.shape
    assert np.array_equal(fast_state, plain_state) and np.array_equal(fast_state, ref_state)


@needs_jit
@pytest.mark.parametrize("platform", [EM, VPX])
@pytest.mark.parametrize("sd", [np.int8, np.int16])
@pytest.mark.parametrize("seed", range(12))
def test_compiled_step_matches_numpy(platform: object, sd: type, seed: int) -> None:
    rng = np.random.default_rng([seed, np.dtype(sd).itemsize])
    with use_platform(platform):
        _check(_case(rng, sd))


@needs_jit
@pytest.mark.parametrize("sd", [np.int8, np.int16])
@pytest.mark.parametrize("seed", range(8))
def test_compiled_step_extremes(sd: type, seed: int) -> None:
    rng = np.random.default_rng([100 + seed, np.dtype(sd).itemsize])
    wf, wt, bias, p, rank, xs, state = _case(rng, sd, extreme=True)
    if seed % 2:  # a state of another shape (the same size): the new state keeps it
        state = state.reshape(state.shape[0], wt.shape[0], wt.shape[1])
    _check((wf, wt, bias, p, rank, xs, state))


@pytest.fixture
def jit_on() -> Iterator[None]:
    """The JIT switched on for the test (whatever PYMLI_JIT says), restored after."""
    prev = _jit.set_enabled(True)
    yield
    _jit.set_enabled(prev)


@needs_jit
def test_compiled_step_is_taken(monkeypatch: pytest.MonkeyPatch, jit_on: None) -> None:
    """The prepared step calls the compiled kernel (through its native entry) when the JIT is on (else the
    comparisons above compare the NumPy step with itself), and not when it is off."""
    mod = _jit.compiled("_jit_svdf")
    assert mod is not None
    real = mod._module.step_entry
    calls = []

    def entry(sd: np.dtype) -> object:
        ep = real(sd)

        def spy(*args: object) -> object:
            calls.append(1)
            return ep(*args)  # type: ignore[operator]
        return spy
    monkeypatch.setattr(mod._module, "step_entry", entry)
    wf, wt, bias, p, rank, xs, state = _case(np.random.default_rng(7), np.int16)
    step = svdf.prepare_svdf_int8(wf, wt, bias, p, rank=rank)
    step(xs[0], state)
    step(xs[0], state[:, ::-1][:, ::-1])  # a view: the same entry (any layout)
    assert len(calls) == 2
    prev = _jit.set_enabled(False)
    try:
        step(xs[0], state)
    finally:
        _jit.set_enabled(prev)
    assert len(calls) == 2


@needs_jit
def test_compiled_step_rejects_bad_input() -> None:
    wf, wt, bias, p, rank, xs, state = _case(np.random.default_rng(3), np.int8)
    step = svdf.prepare_svdf_int8(wf, wt, bias, p, rank=rank)
    with pytest.raises(svdf.MliError):
        step(xs[0], state.astype(np.int16))
    with pytest.raises(ValueError):  # a state of the wrong size (the compiled step does not check bounds)
        step(xs[0], state[:, 1:])


@needs_jit
@pytest.mark.parametrize("sd", [np.int8, np.int16])
@pytest.mark.parametrize("seed", range(4))
def test_compiled_step_on_views(jit_on: None, sd: type, seed: int) -> None:
    """The compiled step's native entry takes any layout: strided, reversed and read-only input and state
    views (a model's reset state is read-only) give the NumPy step's and the reference's values."""
    rng = np.random.default_rng([seed, 99, np.dtype(sd).itemsize])
    wf, wt, bias, p, rank, xs, state = _case(rng, sd, extreme=seed == 3)
    step = svdf.prepare_svdf_int8(wf, wt, bias, p, rank=rank)
    nb, n_in = xs.shape[1:]
    wide = np.zeros((nb, 2 * n_in), np.int8)
    wide[:, ::2] = xs[0]
    views = [(wide[:, ::2], state[:, ::-1].copy()[:, ::-1]), (xs[0][::-1].copy()[::-1], state.copy())]
    views[1][1].flags.writeable = False
    for x, st in views:
        got, got_state = step(x, st)
        prev = _jit.set_enabled(False)
        try:
            plain, plain_state = step(np.ascontiguousarray(x), np.ascontiguousarray(st))
        finally:
            _jit.set_enabled(prev)
        ref, ref_state = svdf.svdf_int8(np.ascontiguousarray(x), wf, wt, bias, np.ascontiguousarray(st), p, rank=rank)
        assert np.array_equal(got, plain) and np.array_equal(got, ref)
        assert got_state.dtype == st.dtype and np.array_equal(got_state, plain_state)
        assert np.array_equal(got_state, ref_state)
