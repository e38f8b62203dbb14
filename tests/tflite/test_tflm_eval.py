"""``pymli eval`` / ``pymli.eval.evaluate`` with the tflm mapping (the default for a .tflite model)."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from pymli.cli import main
from pymli.eval import EvalError, evaluate
from pymli.models.network import mli_argmax
from pymli.tflite import load
from pymli.tflite.compare import tflm_available
from pymli.tflite.builder import ModelWriter
from pymli.tflite.examples import cnn10


@pytest.fixture(scope="module")
def data() -> tuple[bytes, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    return cnn10(), rng.integers(-128, 128, (9, 16, 16, 3)).astype(np.int8), rng.integers(0, 10, 9)


def test_eval_default_is_tflm_mapping(data) -> None:  # noqa: ANN001
    model, x, y = data
    m = load(model)
    rep = evaluate(model, x, labels=y, workers=1, batch=4, progress=False, platform="em")
    want = m.run(x, platform="em")
    assert rep.outputs.shape == (9, 10) and np.array_equal(rep.outputs, want)
    assert np.array_equal(rep.pred, mli_argmax(want))
    assert rep.accuracy == float(np.mean(rep.pred == y))
    assert [la.name for la in rep.layers] == [f"{s.op.index}:{s.op.name}" for s in m.steps]
    assert rep.layers[0].function == "mli_krn_conv2d_hwcn_sa8_sa8_sa32"
    assert rep.layers[-1].function.startswith("reference")
    mli = evaluate(model, x, labels=y, workers=1, batch=4, progress=False, platform="em", mapping="mli")
    assert np.array_equal(mli.outputs, load(model, mapping="mli").run(x, platform="em"))


def test_eval_tflm_chunks_and_workers_agree(data) -> None:  # noqa: ANN001
    model, x, y = data
    a = evaluate(model, x, labels=y, workers=1, batch=2, progress=False)
    b = evaluate(model, x, labels=y, workers=2, batch=5, progress=False)
    assert np.array_equal(a.outputs, b.outputs)
    assert [la.saturated for la in a.layers] == [la.saturated for la in b.layers]


def test_eval_tflm_refuses_against_float_and_several_inputs(data) -> None:  # noqa: ANN001
    model, x, _ = data
    with pytest.raises(EvalError, match="no float twin"):
        evaluate(model, x, workers=1, against="float", progress=False)
    with pytest.raises(EvalError, match="unknown mapping"):
        evaluate(model, x, workers=1, progress=False, mapping="tf")
    w = ModelWriter()
    a = w.tensor("a", [1, 4], scale=0.1, zero_point=0)
    b = w.tensor("b", [1, 4], scale=0.1, zero_point=0)
    c = w.tensor("c", [1, 4], scale=0.2, zero_point=0)
    w.op("ADD", [a, b], [c])
    with pytest.raises(EvalError, match="one input and one output"):
        evaluate(w.finish([a, b], [c]), np.zeros((2, 4), np.int8), workers=1, progress=False)


@pytest.mark.skipif(not tflm_available(), reason="TFLite Micro (pip install tflite-micro) not importable")
def test_eval_tflm_against_tflm(data) -> None:  # noqa: ANN001
    model, x, _ = data
    rep = evaluate(model, x, workers=1, against="tflm", progress=False)
    assert rep.against is not None and rep.against.max_lsb is not None and rep.against.max_lsb <= 3


def test_eval_cli_mapping_option(data, tmp_path) -> None:  # noqa: ANN001
    model, x, y = data
    p = tmp_path / "m.tflite"
    p.write_bytes(model)
    np.savez(tmp_path / "d.npz", x=x, y=y)
    for mapping in ("tflm", "mli"):
        r = CliRunner().invoke(main, ["eval", str(p), str(tmp_path / "d.npz"), "--mapping", mapping, "--workers", "1",
                                      "--no-progress", "--out", str(tmp_path / f"{mapping}.npz")])
        assert r.exit_code == 0, r.output
    got = np.load(tmp_path / "tflm.npz")["outputs"]
    assert np.array_equal(got, load(model).run(x))
