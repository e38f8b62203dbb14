"""The single-sample Invoke of small TFLM models (``TflmModel._invoke``'s prepared plan: constants copied in,
the variables' read-only reset values, the compiled SVDF step's native entries, the small fully connected
layers' one-shape form): state-carrying models (SVDF, LSTM) run many times in a row equal fresh runs of the
same sequence and the step-by-step plain path, on both rounding platforms, with the JIT on and off."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pymli.config import use_platform
from pymli.kernels import _jit
from pymli.testing import shared_dir
from pymli.tflite import load
from pymli.tflite.errors import TfliteWarning
from pymli.tflite.examples import GraphMaker
from pymli.tflite.tflm_model import TflmModel, resolve_platform
from pymli.tflite.tgraph import reset_value
from pymli.tflm import shape_ops

PLATFORMS = ("vpx", "em")
_ROOT = shared_dir() / "tflite_golden" / "models"
_STATEFUL = ("keyword_scrambled", "lstm_int8_2x3x2", "micro_speech_lstm_v0")


def _load(data: bytes) -> TflmModel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TfliteWarning)
        return load(data)


def _model(name: str) -> TflmModel:
    path = _ROOT / f"{name}.tflite"
    if not path.is_file():
        pytest.skip(f"shared/tflite_golden is not laid out (PYMLI_SHARED): no {path.name}")
    return _load(path.read_bytes())


def _inputs(m: TflmModel, rng: np.random.Generator, extreme: int | None = None) -> list[np.ndarray]:
    """One sample per graph input (the whole integer range, or all ``extreme`` clipped to the type)."""
    xs = []
    for t in m.inputs:
        if t.dtype.kind == "f":
            xs.append(rng.standard_normal(t.shape).astype(t.dtype))
            continue
        info = np.iinfo(t.dtype)
        lo, hi = max(int(info.min), -(1 << 15)), min(int(info.max), (1 << 15) - 1)
        if extreme is not None:
            xs.append(np.full(t.shape, min(max(extreme, lo), hi), t.dtype))
        else:
            xs.append(rng.integers(lo, hi + 1, t.shape).astype(t.dtype))
    return xs


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", _STATEFUL)
def test_state_carrying_runs_equal_fresh_runs(name: str, platform: str, jit: bool) -> None:
    """A sequence of Invokes carried in a stream, run three times in a row (fresh streams, with
    single fresh runs in between), equals the same sequence on a freshly loaded model, and every
    fresh run equals the first one's output of the same input (the shared reset values stay intact)."""
    prev = _jit.set_enabled(jit)
    try:
        m = _model(name)
        rng = np.random.default_rng(len(name))
        seq = [_inputs(m, rng) for _ in range(9)] + [_inputs(m, rng, v) for v in (-(1 << 15), (1 << 15) - 1)]
        firsts = [m.run(*xs, platform=platform) for xs in seq]  # each from the reset state
        wants = []
        for rep in range(3):
            with m.stream() as s:
                got = [s.run(*xs, platform=platform) for xs in seq]
            if rep == 0:
                wants = got
            for k, (a, b) in enumerate(zip(got, wants)):
                assert a.dtype == b.dtype and np.array_equal(a, b), (rep, k)
            j = int(rng.integers(len(seq)))
            assert np.array_equal(m.run(*seq[j], platform=platform), firsts[j]), (rep, j)
        fresh = _model(name)
        with fresh.stream() as s:
            for k, xs in enumerate(seq):
                assert np.array_equal(s.run(*xs, platform=platform), wants[k]), k
        for _, r in m._resets:  # the shared reset values: read-only and unchanged
            assert not r.flags.writeable
        assert all(np.array_equal(r, reset_value(m.graph.tensors[i])) for i, r in m._resets)
        # the carried state, as the captured runs hold it, equals a stream's
        with m.stream() as s:
            runs = [s.run(*xs, platform=platform, capture=True)[1] for xs in seq[:3]]
        with fresh.stream() as s:
            for xs, r in zip(seq[:3], runs):
                _, r2 = s.run(*xs, platform=platform, capture=True)
                for t in m.graph.tensors:
                    a, b = m.tensor_values(r, t.index), fresh.tensor_values(r2, t.index)
                    assert (a is None) == (b is None) and (a is None or np.array_equal(a, b)), t.index
    finally:
        _jit.set_enabled(prev)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_svdf_stream_equals_the_steps_own_invokes(platform: str) -> None:
    """keyword_scrambled (seven SVDF, five FULLY_CONNECTED, SOFTMAX, QUANTIZE tables): a stream of
    Invokes equals every step's own Invoke (``Step.invoke``: no plan, no native entries, no one-shape
    forms) run one by one with the state carried, for every tensor of every Invoke."""
    m = _model("keyword_scrambled")
    g = m.graph
    T = g.tensors
    rng = np.random.default_rng(3)
    seq = [_inputs(m, rng) for _ in range(6)] + [_inputs(m, rng, v) for v in (-(1 << 15), (1 << 15) - 1)]
    state = {t.index: reset_value(t) for t in T if t.variable}
    with m.stream() as s:
        for k, xs in enumerate(seq):
            _, run = s.run(*xs, platform=platform, capture=True)
            vals: dict[int, np.ndarray] = dict(zip(g.inputs, xs))
            with use_platform(resolve_platform(platform)):
                for st in m.steps:
                    args = [None if i < 0 else T[i].data if T[i].data is not None else state[i] if T[i].variable
                            else vals[i] for i in st.op.inputs]
                    g.extra.pop("state", None)
                    for ti, v in zip(st.op.outputs, st.invoke(args)):  # type: ignore[misc]
                        vals[ti] = np.asarray(v).reshape(T[ti].shape)
                    for ti, v in g.extra.pop("state", {}).items():  # the SVDF's new state
                        state[ti] = vals[ti] = v
            assert any(T[ti].variable for ti in vals)
            for ti, v in vals.items():
                got = m.tensor_values(run, ti)
                assert got is not None and got.dtype == v.dtype and np.array_equal(got, v), (k, ti)


def test_small_model_keeps_intermediates_large_drops_them() -> None:
    """A single-sample run of a model with small intermediates keeps them (no drops); a larger model
    drops each after its last reader; both equal their captured runs' outputs."""
    small = GraphMaker((8,), 1)
    small.fc(16, act="RELU").fc(4)
    m = _load(small.finish())
    assert not any(m._drops)
    big = GraphMaker((260, 260, 8), 2)
    big.conv(16, 1, act="RELU6").conv(8, 1)  # 1.08 MB between the two steps
    mb = _load(big.finish())
    assert any(mb._drops)
    rng = np.random.default_rng(4)
    for mm in (m, mb):
        x = _inputs(mm, rng)[0]
        y = mm.run(x)
        y2, _ = mm.run(x, capture=True)
        assert np.array_equal(y, y2)


@pytest.mark.parametrize("seed", range(4))
def test_prepared_pad_and_transpose_equal_the_plain_ops(seed: int) -> None:
    """PAD / PADV2 (one sample: a fresh array filled once) and TRANSPOSE (a constant permutation) equal
    :func:`pymli.tflm.shape_ops.pad` and ``np.transpose`` on contiguous inputs, strided views, the extremes
    and a batched run's leading axis (the general branch)."""
    rng = np.random.default_rng(seed)
    h, w, c = (int(v) for v in rng.integers(1, 7, 3))
    g = GraphMaker((h, w, c), seed)
    pads = tuple(int(v) for v in rng.integers(0, 4, 4))
    g.transpose([0, 2, 1, 3]).pad(pads).pad(pads[::-1], v2=True)
    m = _load(g.finish())
    T = m.graph.tensors
    steps = {s.op.name: s for s in m.steps}
    assert set(steps) == {"TRANSPOSE", "PAD", "PADV2"}
    for k in range(6):
        if k < 4:
            x = rng.integers(-128, 128, (1, h, w, c)).astype(np.int8)
        else:
            x = np.full((1, h, w, c), (-128, 127)[k - 4], np.int8)
        wide = np.zeros((1, h, w, 2 * c), np.int8)
        wide[..., ::2] = x
        for xv in (x, wide[..., ::2]):
            t = steps["TRANSPOSE"]
            y = t.invoke([xv, T[t.op.inputs[1]].data])[0]  # type: ignore[misc]
            assert np.array_equal(y, np.transpose(xv, (0, 2, 1, 3)))
            for name in ("PAD", "PADV2"):
                s = steps[name]
                p = T[s.op.inputs[1]].data
                o = T[s.op.outputs[0]]
                args = [y, p] + ([T[s.op.inputs[2]].data] if name == "PADV2" else [])
                got = s.invoke(args)[0]  # type: ignore[misc]
                want = shape_ops.pad(y, p, value=o.zp)
                assert got.dtype == want.dtype and np.array_equal(got, want), (name, k)
                batched = s.invoke([np.stack([y[0], y[0][::-1]])[:, None]] + args[1:])[0]  # type: ignore[misc]
                assert np.array_equal(batched[0], want) and np.array_equal(batched[1], shape_ops.pad(
                    y[:, ::-1], p, value=o.zp)), name
                y = got
        assert np.array_equal(m.run(x), y)
