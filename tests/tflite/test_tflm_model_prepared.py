"""Prepared execution of ``mapping="tflm"`` models (issue 14 items 4-5): the prepared steps (kernels called
with parameters computed at load, reference handlers split into prepare / invoke) compute exactly what
the unprepared path computes (every operator through its capi function or its reference handler, built
anew per Invoke), tensor by tensor; and a batch of N samples gives what N runs give, on both platforms.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pymli.config import use_platform
from pymli.errors import MliError
from pymli.kernels import _jit
from pymli.testing import tflm_models as tm
from pymli.tflite import load
from pymli.tflite.errors import TfliteError, TfliteInputError, TfliteUnsupported, TfliteWarning
from pymli.tflite.examples import GraphMaker
from pymli.tflite.tflm_model import TflmModel, resolve_platform, run_offload
from pymli.tflite.tgraph import reset_value
from pymli.testing import shared_dir

PLATFORMS = ("vpx", "em")


def _golden() -> list:
    root = shared_dir() / "tflite_golden" / "models"
    return sorted(root.glob("*.tflite")) if root.is_dir() else []


GOLDEN = _golden()


def _load(data) -> TflmModel:  # noqa: ANN001
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TfliteWarning)
        return load(data)


def plain_run(m: TflmModel, xs: list[np.ndarray], platform: str) -> dict[int, np.ndarray]:
    """One Invoke through the unprepared path: capi functions with fresh structs, handlers that derive
    their parameters on the call; state from the reset values."""
    g = m.graph
    T = g.tensors
    vals = {ti: np.asarray(x).reshape(T[ti].shape) for ti, x in zip(g.inputs, xs)}
    state = {t.index: reset_value(t) for t in T if t.variable}
    g.extra["op_state"] = {}
    with use_platform(resolve_platform(platform)):
        for s in m.steps:
            op = s.op
            args = [None if i < 0 else T[i].data if T[i].data is not None else state[i] if T[i].variable
                    else vals[i] for i in op.inputs]
            g.extra.pop("state", None)
            outs = run_offload(s.mli, g, op, args) if s.mli is not None else s.handler(g, op, args)
            outs = [outs] if s.mli is not None else outs
            for ti, v in zip(op.outputs, outs):
                if ti >= 0:
                    vals[ti] = np.asarray(v).reshape(T[ti].shape)
            for ti, v in g.extra.pop("state", {}).items():
                state[ti] = vals[ti] = v
    return vals


def random_inputs(m: TflmModel, rng: np.random.Generator, n: int | None = None, extreme: str = "") -> list:
    """One array per graph input (whole integer range; ``extreme``: all ``min`` or all ``max``)."""
    xs = []
    for t in m.inputs:
        shape = tuple(t.shape) if n is None else (n,) + tuple(t.shape)
        if t.dtype.kind == "f":
            xs.append((rng.standard_normal(shape) * 3).astype(t.dtype))
            continue
        info = np.iinfo(t.dtype)
        if extreme:
            xs.append(np.full(shape, info.min if extreme == "min" else info.max, t.dtype))
        else:
            xs.append(rng.integers(int(info.min), int(info.max) + 1, shape).astype(t.dtype))
    return xs


def _assert_same_tensors(m: TflmModel, run, want: dict[int, np.ndarray], what: str) -> None:  # noqa: ANN001
    for i, v in want.items():
        got = m.tensor_values(run, i)
        assert got is not None and got.dtype == v.dtype and np.array_equal(got, v), f"{what}: tensor {i} differs"


@pytest.mark.skipif(not GOLDEN, reason="shared/tflite_golden is not laid out (PYMLI_SHARED)")
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_prepared_equals_unprepared(path, platform: str) -> None:  # noqa: ANN001
    m = _load(path.read_bytes())
    rng = np.random.default_rng(7)
    cases = [random_inputs(m, rng) for _ in range(3)] + [random_inputs(m, rng, extreme=e) for e in ("min", "max")]
    for k, xs in enumerate(cases):
        want = plain_run(m, xs, platform)
        _, run = m.run(*xs, platform=platform, capture=True)
        _assert_same_tensors(m, run, want, f"{path.stem} case {k}")


@pytest.mark.skipif(not GOLDEN, reason="shared/tflite_golden is not laid out (PYMLI_SHARED)")
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_batch_equals_samples(path, platform: str) -> None:  # noqa: ANN001
    m = _load(path.read_bytes())
    n = 5
    xb = random_inputs(m, np.random.default_rng(3), n)
    if not all(t.shape and t.shape[0] == 1 for t in m.inputs):  # no batch of 1 to stack samples on
        with pytest.raises(TfliteInputError):
            m.run(*xb, platform=platform)
        return
    yb, run = m.run(*xb, platform=platform, capture=True)
    yb = yb if isinstance(yb, tuple) else (yb,)
    singles = [m.run(*[x[k] for x in xb], platform=platform) for k in range(n)]
    singles = [s if isinstance(s, tuple) else (s,) for s in singles]
    for j, y in enumerate(yb):
        assert np.array_equal(y, np.stack([s[j] for s in singles])), f"output {j}"
    for k in (0, n - 1):  # captured tensors of a batched run: per sample, what that sample's run holds
        _, one = m.run(*[x[k] for x in xb], platform=platform, capture=True)
        for i in range(len(m.graph.tensors)):
            a, b = m.tensor_values(run, i), m.tensor_values(one, i)
            assert (a is None) == (b is None)
            if a is not None and m.graph.tensors[i].data is None:
                assert np.array_equal(a[k], b), f"tensor {i} sample {k}"


def _cnn(seed: int) -> bytes:
    g = GraphMaker((9, 7, 3), seed)
    g.conv(6, 3, stride=2, act="RELU6").dwconv(3, act="RELU").conv(5, 1, padding="VALID")
    g.eltwise("ADD", branch="conv").pool("avg", 2, 1).pool("max", 2, 1, padding="SAME")
    g.unary("LOGISTIC").reshape((-1,)).fc(7, act="RELU").fc(4).unary("SOFTMAX")
    return g.finish()


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("platform", PLATFORMS)
def test_offloaded_chain_prepared_batched(seed: int, platform: str) -> None:
    m = _load(_cnn(seed))
    assert {s.function for s in m.steps} >= {"mli_krn_eltwise_add_sa8", None}
    rng = np.random.default_rng(seed)
    xb = random_inputs(m, rng, 6)
    xb[0][0] = -128
    xb[0][1] = 127
    yb = m.run(*xb, platform=platform)
    for k in range(6):
        want = plain_run(m, [xb[0][k]], platform)
        assert np.array_equal(yb[k], want[m.graph.outputs[0]])
        assert np.array_equal(m.run(xb[0][k], platform=platform), want[m.graph.outputs[0]])
    # the batch axis may replace the model's batch of 1
    y2 = m.run(xb[0].reshape((6,) + m.inputs[0].shape[1:]), platform=platform)
    assert np.array_equal(y2.reshape(yb.shape), yb)


def test_platform_is_read_per_run_not_baked_at_prepare() -> None:
    m = _load(_cnn(0))
    x = random_inputs(m, np.random.default_rng(0), 8)[0]
    y_vpx, y_em = m.run(x, platform="vpx"), m.run(x, platform="em")
    assert not np.array_equal(y_vpx, y_em)  # the two roundings differ on this model...
    assert np.array_equal(m.run(x, platform="vpx"), y_vpx)  # ...and each is reproduced after the other
    assert np.array_equal(_load(_cnn(0)).run(x, platform="em"), y_em)


def test_first_invoke_checks_through_capi(monkeypatch: pytest.MonkeyPatch) -> None:
    m = _load(_cnn(1))
    from pymli import capi

    seen = []
    real = capi.mli_krn_fully_connected_sa8_sa8_sa32

    def spy(*a):  # noqa: ANN002, ANN202
        seen.append(1)
        return real(*a)
    monkeypatch.setattr(capi, "mli_krn_fully_connected_sa8_sa8_sa32", spy)
    x = random_inputs(m, np.random.default_rng(1))
    m.run(*x)
    assert len(seen) == 2  # two FC layers, checked once each
    m.run(*x)
    m.run(random_inputs(m, np.random.default_rng(2), 4)[0])
    assert len(seen) == 2


def test_refused_arguments_raise_on_every_run(monkeypatch: pytest.MonkeyPatch) -> None:
    m = _load(_cnn(2))
    from pymli import capi
    from pymli.errors import Status

    def refuse(*a):  # noqa: ANN002, ANN202
        raise MliError(Status.SHAPE_MISMATCH, "refused")
    monkeypatch.setattr(capi, "mli_krn_avepool_hwc_sa8", refuse)
    x = random_inputs(m, np.random.default_rng(1))[0]
    for xs in (x, np.stack([x[0]] * 3)):
        with pytest.raises(TfliteError, match="AVERAGE_POOL_2D"):
            m.run(xs)


def _generated() -> list:
    keys = sorted(tm.VARIANTS)
    return [(k, s) for k in keys for s in (0,)]


@pytest.mark.parametrize("key,seed", _generated(), ids=[f"{k}-{s}" for k, s in _generated()])
def test_generated_op_prepared_and_batched(key: str, seed: int) -> None:
    om = tm.generate(key, seed, invokes=3)
    try:
        m = _load(om.model)
    except TfliteUnsupported as e:  # operators the loaded model runs elsewhere: only the handler path applies
        assert om.op not in {"CONV_2D", "FULLY_CONNECTED", "ADD", "SOFTMAX"}, e
        return
    for platform in PLATFORMS:
        outs = []
        for xs in om.feeds:
            try:
                want = plain_run(m, list(xs), platform)
            except (MliError, ValueError):  # a refused operator: the prepared run refuses it too
                with pytest.raises((MliError, ValueError)):
                    m.run(*xs, platform=platform)
                return
            y, run = m.run(*xs, platform=platform, capture=True)
            _assert_same_tensors(m, run, want, f"{key} {platform}")
            outs.append(y if isinstance(y, tuple) else (y,))
        if m.inputs and m.batchable and all(t.shape and t.shape[0] == 1 for t in m.inputs):
            xb = [np.stack([f[j] for f in om.feeds]) for j in range(len(m.inputs))]
            yb = m.run(*xb, platform=platform)
            yb = yb if isinstance(yb, tuple) else (yb,)
            for j, y in enumerate(yb):
                assert np.array_equal(y, np.stack([o[j] for o in outs])), f"{key} {platform} output {j}"


@pytest.mark.parametrize("platform", PLATFORMS)
def test_offloaded_add_table_equals_capi(platform: str) -> None:
    g = GraphMaker((12, 10, 4), 5)
    g.conv(4, 3, act="NONE").eltwise("ADD", branch="conv", act="RELU6").eltwise("ADD", branch="relu")
    m = _load(g.finish())
    adds = [s for s in m.steps if s.op.name == "ADD"]
    assert adds and all(s.function == "mli_krn_eltwise_add_sa8" for s in adds)
    rng = np.random.default_rng(11)
    for xs in [random_inputs(m, rng) for _ in range(3)] + [random_inputs(m, rng, extreme=e) for e in ("min", "max")]:
        want = plain_run(m, xs, platform)
        _, run = m.run(*xs, platform=platform, capture=True)
        _assert_same_tensors(m, run, want, platform)


@pytest.mark.skipif(not GOLDEN, reason="shared/tflite_golden is not laid out (PYMLI_SHARED)")
@pytest.mark.parametrize("name", ["keyword_scrambled", "lstm_int8_2x3x2", "micro_speech_lstm_v0"])
def test_stateful_models_keep_sample_by_sample_semantics(name: str) -> None:
    paths = [p for p in GOLDEN if p.stem == name]
    assert paths, name
    m = _load(paths[0].read_bytes())
    assert not m.batchable  # variable tensors: never one step over all samples
    n = 4
    if not all(t.shape and t.shape[0] == 1 for t in m.inputs):
        xs_each = [random_inputs(m, np.random.default_rng(k)) for k in range(n)]
        batch = None
    else:
        batch = random_inputs(m, np.random.default_rng(5), n)
        xs_each = [[x[k] for x in batch] for k in range(n)]
    with m.stream() as s:
        want = [s.run(*xs) for xs in xs_each]  # each Invoke starts from the previous one's state
    with m.stream() as s:
        if batch is not None:
            got = s.run(*batch)
            assert np.array_equal(got, np.stack(want))
        else:
            for xs, w in zip(xs_each, want):
                assert np.array_equal(s.run(*xs), w)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_direct_kernel_calls_after_first_invoke(platform: str) -> None:
    """After a step's first Invoke (through its capi function) a single-sample run calls the prepared
    kernel directly (conv, depthwise, pointwise, ADD of 256+ and of fewer elements, pools, FC on a
    rank-4 input); every later run equals the unprepared path, on random inputs and on the extremes."""
    g = GraphMaker((11, 9, 3), 21)
    g.conv(8, 3, stride=2, act="RELU6").dwconv(3, act="RELU6").conv(16, 1).eltwise("ADD", branch="conv")
    g.pool("max", 2, 1).pool("avg", 2, 2).eltwise("ADD", branch="conv").fc(10, act="RELU")
    m = _load(g.finish())
    off = [s for s in m.steps if s.mli is not None]
    assert {s.op.name for s in off} >= {"CONV_2D", "DEPTHWISE_CONV_2D", "ADD", "MAX_POOL_2D", "AVERAGE_POOL_2D",
                                         "FULLY_CONNECTED"}
    rng = np.random.default_rng(5)
    xs = [rng.integers(-128, 128, (1, 11, 9, 3)).astype(np.int8) for _ in range(4)]
    xs += [np.full((1, 11, 9, 3), -128, np.int8), np.full((1, 11, 9, 3), 127, np.int8)]
    for k, x in enumerate(xs):
        y = m.run(x, platform=platform)
        want = plain_run(m, [x], platform)[m.graph.outputs[0]]
        assert y.dtype == want.dtype and np.array_equal(y, want), k
    direct = [c is not s.invoke for c, s in zip(m._calls, m.steps)]
    assert direct == [s.mli is not None for s in m.steps]


@pytest.mark.skipif(not _jit.available(), reason="numba (the jit extra) is not installed")
def test_add_table_gather_jit_equals_numpy() -> None:
    """The compiled gather of the prepared sa8 ADD (``_jit_lut.gather_pairs``) equals NumPy's on random and
    extreme pairs, and a model's ADD steps give the same tensors with the JIT on and off, alone and batched."""
    prev = _jit.set_enabled(True)
    try:
        lut = _jit.compiled("_jit_lut")
        rng = np.random.default_rng(5)
        table = rng.integers(-128, 128, 65536).astype(np.int8)
        x = np.concatenate([rng.integers(-128, 128, 3000), [-128, 127, 0, -1, 1, -128, 127]]).astype(np.int8)
        y = np.concatenate([rng.integers(-128, 128, 3000), [127, -128, 0, 1, -1, -128, 127]]).astype(np.int8)
        for a, b in ((x, y), (x[::-1].copy(), y), (x[:1], y[:1]), (x[:0], y[:0])):
            out = np.empty(a.shape, np.int8)
            lut.gather_pairs(table, a, b, out)
            assert np.array_equal(out, np.take(table, (a.view(np.uint8).astype(np.uint16) << 8) | b.view(np.uint8)))
        g = GraphMaker((12, 10, 4), 9)
        g.conv(4, 3, act="NONE").eltwise("ADD", branch="conv", act="RELU6").eltwise("ADD", branch="relu")
        m = _load(g.finish())
        xs = random_inputs(m, rng)
        xb = [np.stack([random_inputs(m, rng)[0][0] for _ in range(5)])]
        for platform in PLATFORMS:
            on = (m.run(*xs, platform=platform), m.run(*xb, platform=platform))
            _jit.set_enabled(False)
            off = (m.run(*xs, platform=platform), m.run(*xb, platform=platform))
            _jit.set_enabled(True)
            assert all(np.array_equal(a, b) for a, b in zip(on, off)), platform
    finally:
        _jit.set_enabled(prev)
