"""``pymli.tflite.load`` (default ``mapping="tflm"``) on every model of shared/tflite_golden: every
sample, both platforms, every graph output and every recorded tensor equal what ``expect`` names
(``same_as`` followed); batches, streams and the glue-defect warnings on the same recordings."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from pymli.testing.paths import shared_dir
from pymli.tflite import TfliteWarning, load
from pymli.tflite.tflm_model import TflmModel

pytestmark = pytest.mark.usefixtures("shared")
G = shared_dir() / "tflite_golden"


def _manifest() -> dict:
    try:
        return json.loads((G / "manifest.json").read_text())
    except OSError:
        return {"models": {}}


MAN = _manifest()
MODELS = list(MAN["models"])


def _variant(spec: dict, platform: str) -> str:
    v = spec["expect"][platform][0]
    while "same_as" in spec["variants"].get(v, {}):
        v = spec["variants"][v]["same_as"]
    return v


_CACHE: dict[str, TflmModel] = {}


def _model(name: str) -> TflmModel:
    if name not in _CACHE:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TfliteWarning)
            _CACHE[name] = load(G / MAN["models"][name]["file"])
    return _CACHE[name]


def _inputs(name: str) -> list[np.ndarray]:
    z = np.load(G / "inputs" / f"{name}.npz")
    return [z[f"x{i}"] for i in range(len(MAN["models"][name]["inputs"]))]


@pytest.mark.parametrize("platform", ["vpx", "em"])
@pytest.mark.parametrize("name", MODELS)
def test_every_tensor_equals_expect(name: str, platform: str) -> None:
    spec = MAN["models"][name]
    m = _model(name)
    assert isinstance(m, TflmModel)
    xs = _inputs(name)
    d = G / "expected" / name / _variant(spec, platform)
    n_checked = 0
    for k in range(spec["n_samples"]):
        want = np.load(d / f"{k}.npz")
        got, run = m.run(*[x[k] for x in xs], platform=platform, capture=True)
        got = list(got) if isinstance(got, tuple) else [got]
        assert len(got) == len(spec["outputs"])
        for j, g in enumerate(got):
            w = want[f"out{j}"]
            assert g.dtype == w.dtype and g.shape == tuple(spec["outputs"][j]["shape"])
            assert np.array_equal(g.reshape(w.shape), w), f"sample {k} output {j}"
        for key in want.files:
            if key.startswith("t"):
                tv = m.tensor_values(run, int(key[1:]))
                assert tv is not None, key
                assert np.array_equal(tv.reshape(want[key].shape), want[key]), f"sample {k} tensor {key}"
                n_checked += 1
    assert n_checked > 0 or all(not f.startswith("t") for f in np.load(d / "0.npz").files)


@pytest.mark.parametrize("name", [n for n in MODELS if all(i["shape"][0] == 1 for i in MAN["models"][n]["inputs"])])
def test_batch_is_one_invoke_per_sample(name: str) -> None:
    m = _model(name)
    xs = _inputs(name)
    n = xs[0].shape[0]
    # (N, *shape[1:]): the batch axis replaces the model's batch of 1
    xb = [x.reshape((n,) + x.shape[2:]) for x in xs]
    got = m.run(*xb, platform="em")
    got = got if isinstance(got, tuple) else (got,)
    for k in range(n):
        one = m.run(*[x[k] for x in xs], platform="em")
        one = one if isinstance(one, tuple) else (one,)
        for g, o in zip(got, one):
            assert g.shape == (n,) + (o.shape[1:] if o.shape[:1] == (1,) else o.shape)
            assert np.array_equal(g[k].reshape(o.shape), o)
    # (N, *shape) gives the same values, stacked on a new axis
    got2 = m.run(*xs, platform="em")
    got2 = got2 if isinstance(got2, tuple) else (got2,)
    for g, g2 in zip(got, got2):
        assert g2.shape[0] == n and np.array_equal(g.reshape(g2.shape), g2)


def test_glue_defects_warned_once_and_listed() -> None:
    with pytest.warns(TfliteWarning) as rec:
        m = load(G / MAN["models"]["mini_nchw_int8"]["file"])
    assert len(rec) == 1
    msg = str(rec[0].message)
    kinds = {(d.kind, d.tensor, d.channel) for d in m.defects}
    assert kinds == {("scale_wrap", 9, 5), ("fc_relu_ignored", 26, None), ("fc_rank3", 31, None)}
    assert "op 3 CONV_2D" in msg and "channel 5" in msg and "LSB" in msg
    assert "op 9 FULLY_CONNECTED" in msg and "op 11 FULLY_CONNECTED" in msg
    assert m.warnings == [d.message for d in m.defects]


def test_no_warning_without_defect() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", TfliteWarning)
        m = load(G / MAN["models"]["custom_model_rf_keras"]["file"])
    assert m.defects == [] and m.warnings == []


def test_offload_decisions_follow_manifest() -> None:
    for name, spec in MAN["models"].items():
        m = _model(name)
        for step, rec in zip(m.steps, spec["ops"]):
            if rec["arc_mli"].startswith("MLI"):
                assert rec["arc_mli"].split()[1] == step.function, (name, step.op.index)
            elif name != "mini_int16":
                assert step.function is None, (name, step.op.index, rec["arc_mli"])


def _svdf_inputs() -> tuple[TflmModel, list[np.ndarray]]:
    return _model("keyword_scrambled"), [x for x in _inputs("keyword_scrambled")[0]]


def test_state_resets_every_run() -> None:
    m, xs = _svdf_inputs()
    a = m.run(xs[1], platform="vpx")
    m.run(xs[0], platform="vpx")
    assert np.array_equal(m.run(xs[1], platform="vpx"), a)


def test_stream_carries_state_and_reset_clears() -> None:
    m, xs = _svdf_inputs()
    state_idx = [t.index for t in m.graph.tensors if t.variable]
    assert state_idx
    fresh, run_f = m.run(xs[1], platform="vpx", capture=True)
    with m.stream() as s:
        s.run(xs[0], platform="vpx")
        carried, run_c = s.run(xs[1], platform="vpx", capture=True)
    # the SVDF state after the second Invoke depends on the first one
    assert any(not np.array_equal(m.tensor_values(run_f, i), m.tensor_values(run_c, i)) for i in state_idx)
    m.reset()
    m.run(xs[0], platform="vpx", keep_state=True)
    kept = m.run(xs[1], platform="vpx", keep_state=True)
    assert np.array_equal(kept, carried)
    # a batch with keep_state is the same stream
    m.reset()
    batch = m.run(np.stack(xs[:2]), platform="vpx", keep_state=True)
    assert np.array_equal(batch[1], carried)
    m.reset()
    assert np.array_equal(m.run(xs[1], platform="vpx", keep_state=True), fresh)
    m.reset()


def test_reference_only_model_is_platform_independent() -> None:
    m = _model("lstm_int16_2x3x2")
    assert all(s.function is None for s in m.steps)
    x = _inputs("lstm_int16_2x3x2")[0][0]
    assert np.array_equal(m.run(x, platform="vpx"), m.run(x, platform="EM"))


def test_sample_paths_exist() -> None:
    assert isinstance(G, Path) and MODELS, "shared/tflite_golden has models"
