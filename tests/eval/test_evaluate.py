"""evaluate(): outputs bit-identical to model.run sample by sample, for any worker count and chunk size."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pymli.eval import EvalError, evaluate
from pymli.eval.report import top_k_hits
from pymli.models.network import mli_argmax

TIMING = {"throughput", "seconds", "workers", "backend", "computed"}


def _same_report(a, b) -> None:  # noqa: ANN001
    da, db = a.to_dict(), b.to_dict()
    for k in da:
        if k not in TIMING:
            assert da[k] == db[k], k


@pytest.mark.parametrize("workers,batch", [(1, 1), (1, 5), (2, 3), (2, 16)])
def test_tflite_outputs_identical(cnn10_path, dataset, reference, workers, batch) -> None:  # noqa: ANN001
    path, x, y = dataset
    rep = evaluate(cnn10_path, path, workers=workers, batch=batch, progress=False, mapping="mli")
    assert rep.outputs.dtype == reference.dtype
    assert np.array_equal(rep.outputs, reference)
    assert np.array_equal(rep.pred, mli_argmax(reference.reshape(len(x), -1)))
    assert rep.samples == rep.total == len(x)
    assert rep.accuracy == pytest.approx(float(np.mean(rep.pred == y)))
    assert rep.backend == ("inline" if workers == 1 else "processes")


def test_report_independent_of_workers_and_chunks(cnn10_path, dataset) -> None:  # noqa: ANN001
    path, _, _ = dataset
    a = evaluate(cnn10_path, path, workers=1, batch=4, progress=False, mapping="mli")
    b = evaluate(cnn10_path, path, workers=2, batch=7, progress=False, mapping="mli")
    _same_report(a, b)
    assert a.layers and any(la.saturated > 0 for la in a.layers)


def test_network_outputs_and_layers_match_models_report(digits_sa8) -> None:  # noqa: ANN001
    from pymli.models.report import compare

    net, x, y = digits_sa8
    res = net.run(x)
    rep = evaluate(net, x, labels=y, workers=2, batch=6, progress=False, mapping="mli")
    assert np.array_equal(rep.outputs, res.output)
    assert np.array_equal(rep.pred, res.predictions())
    assert rep.accuracy == float(np.mean(res.predictions() == y))
    ref = compare(net, x, y, result=res)
    assert rep.accuracy == ref.accuracy
    for la in rep.layers:
        st = ref[la.name]
        assert la.saturated == st.saturated, la.name
        assert la.acc_headroom_min == st.acc_headroom_bits, la.name
        assert la.acc_bits == st.acc_bits, la.name
    assert any(la.acc_headroom_min is not None for la in rep.layers)


def test_accuracy_top5_confusion(cnn10_path, dataset, reference) -> None:  # noqa: ANN001
    path, x, y = dataset
    rep = evaluate(cnn10_path, path, workers=1, batch=8, progress=False, mapping="mli")
    scores = reference.reshape(len(x), -1).astype(np.int64)
    # top-5 by a slow sort: descending score, ties to the higher index (MLI arg-max rule)
    hits = []
    for s, lab in zip(scores, y):
        order = sorted(range(len(s)), key=lambda k: (-s[k], -k))
        hits.append(lab in order[:5])
    assert rep.top5 == pytest.approx(float(np.mean(hits)))
    assert np.array_equal(top_k_hits(scores, y, 1), mli_argmax(scores) == y)
    assert rep.confusion.shape == (10, 10)
    assert rep.confusion.sum() == len(x)
    assert np.trace(rep.confusion) == int(np.sum(rep.pred == y))
    for lab, p in zip(y, rep.pred):
        assert rep.confusion[lab, p] > 0


def test_json_keys_and_values(cnn10_path, dataset, tmp_path) -> None:  # noqa: ANN001
    path, x, _ = dataset
    rep = evaluate(cnn10_path, path, workers=1, batch=8, limit=10, progress=False, mapping="mli")
    d = json.loads(rep.to_json(tmp_path / "r.json"))
    assert json.loads((tmp_path / "r.json").read_text()) == d
    for k in ("samples", "accuracy", "top5", "throughput", "layers", "confusion", "platform", "against"):
        assert k in d
    assert d["samples"] == 10 and rep.outputs.shape[0] == 10
    assert {"name", "function", "saturated", "acc_headroom_min"} <= set(d["layers"][0])
    assert d["throughput"] > 0


def test_no_labels_no_accuracy(cnn10_path, dataset, reference) -> None:  # noqa: ANN001
    _, x, _ = dataset
    rep = evaluate(cnn10_path, x, workers=1, progress=False, layers=False, mapping="mli")
    assert rep.accuracy is None and rep.confusion is None and rep.layers == []
    assert np.array_equal(rep.outputs, reference)


def test_platform_em_equals_model_run(cnn10_model, cnn10_path, dataset) -> None:  # noqa: ANN001
    _, x, _ = dataset
    ref = cnn10_model.run(x[:6], platform="em")
    rep = evaluate(cnn10_path, x[:6], platform="em", workers=2, batch=2, progress=False, mapping="mli")
    assert rep.platform == "em"
    assert np.array_equal(rep.outputs, ref)


def test_against_float_network(digits_sa8) -> None:  # noqa: ANN001
    net, x, y = digits_sa8
    rep = evaluate(net, x, labels=y, against="float", workers=1, batch=16, progress=False, mapping="mli")
    res = net.run(x, capture=False)
    fl = net.run_float(x, original=True)
    fp = net.float_predictions(fl)
    assert rep.against.reference == "float"
    assert rep.against.differing == float(np.mean(fp != res.predictions()))
    q_ref = res.qparams[net.output_name].quantize(fl[net.output_name], batch=True).astype(np.int64)
    d = np.abs(res.output.astype(np.int64) - q_ref)
    assert rep.against.max_lsb == int(d.max())
    assert rep.against.mean_lsb == pytest.approx(float(d.mean()))


def test_against_tflm(cnn10_model, cnn10_path, dataset) -> None:  # noqa: ANN001
    from pymli.tflite.compare import run_tflm, tflm_available

    if not tflm_available():
        pytest.skip("tflite-micro is not installed: no TFLite Micro reference")
    _, x, _ = dataset
    rep = evaluate(cnn10_path, x[:8], against="tflm", workers=1, batch=3, progress=False, mapping="mli")
    theirs = run_tflm(cnn10_model, x[:8], [cnn10_model.output_index])[cnn10_model.output_index]
    d = np.abs(rep.outputs.astype(np.int64) - theirs.astype(np.int64))
    assert rep.against.max_lsb == int(d.max())
    assert rep.against.differing == float(np.mean(mli_argmax(theirs.reshape(8, -1)) != rep.pred))


def test_against_tflm_needs_tflite(digits_sa8) -> None:  # noqa: ANN001
    net, x, _ = digits_sa8
    with pytest.raises(EvalError, match="needs a .tflite"):
        evaluate(net, x, against="tflm", workers=1, progress=False, mapping="mli")


def test_resume_reuses_kept_chunks(cnn10_path, dataset, reference, tmp_path) -> None:  # noqa: ANN001
    path, _, _ = dataset
    out = tmp_path / "p.npz"
    evaluate(cnn10_path, path, workers=1, batch=5, out=out, keep_chunks=True, progress=False, mapping="mli")
    d = tmp_path / "p.npz.chunks"
    files = sorted(d.glob("chunk-*.npz"))
    assert len(files) == 5  # 22 samples in chunks of 5
    # mark a kept chunk so its reuse shows, and drop another one so it must be computed again
    with np.load(files[0]) as z:
        kept = dict(z)
    kept["outputs"] = np.full_like(kept["outputs"], 99)
    np.savez(files[0], **kept)
    files[2].unlink()
    seen = []
    rep = evaluate(cnn10_path, path, workers=1, batch=5, out=out, resume=True, progress=lambda d, t: seen.append(d), mapping="mli")
    assert np.all(rep.outputs[:5] == 99)
    assert np.array_equal(rep.outputs[5:], reference[5:])
    assert rep.computed == 5 and seen == [22]  # only chunk 10:15 ran; 17 samples came from the folder
    assert not d.exists()  # removed once the whole run is in --out
    z = np.load(out)
    assert np.array_equal(z["outputs"][5:], reference[5:])


def test_resume_refuses_other_settings(cnn10_path, dataset, tmp_path) -> None:  # noqa: ANN001
    path, _, _ = dataset
    out = tmp_path / "p.npz"
    evaluate(cnn10_path, path, workers=1, batch=11, out=out, keep_chunks=True, progress=False, layers=False, mapping="mli")
    with pytest.raises(EvalError, match="another model"):
        evaluate(cnn10_path, path, workers=1, batch=11, out=out, resume=True, platform="em", progress=False,
                 layers=False, mapping="mli")


@pytest.mark.parametrize("kw,match", [({"batch": 0}, "batch"), ({"workers": 0}, "workers"), ({"limit": 0}, "limit"),
                                      ({"resume": True}, "resume needs out"), ({"platform": "arm"}, "platform"),
                                      ({"against": "onnx"}, "against")])
def test_bad_options(cnn10_path, dataset, kw, match) -> None:  # noqa: ANN001
    path, _, _ = dataset
    with pytest.raises(EvalError, match=match):
        evaluate(cnn10_path, path, progress=False, **kw, mapping="mli")


def test_unquantised_network_refused() -> None:
    from pymli.models import FullyConnected, Network

    net = Network((4,), [FullyConnected(np.ones((4, 2)), np.zeros(2))])
    with pytest.raises(EvalError, match="not quantised"):
        evaluate(net, np.zeros((2, 4)), progress=False, mapping="mli")


def test_plot_writes_pictures(cnn10_path, dataset, tmp_path) -> None:  # noqa: ANN001
    pytest.importorskip("matplotlib", reason="plot is the optional matplotlib extra")
    path, _, _ = dataset
    rep = evaluate(cnn10_path, path, workers=1, limit=6, progress=False, mapping="mli")
    files = rep.plot(tmp_path / "pics")
    assert sorted(f.name for f in files) == ["confusion.png", "layers.png"]
    assert all(f.stat().st_size > 1000 and f.read_bytes()[:4] == b"\x89PNG" for f in files)


def test_float_io_model(dataset) -> None:  # noqa: ANN001
    import pymli.tflite as tfl
    from pymli.tflite.examples import cnn10

    data = cnn10(float_io=True)
    m = tfl.load(data, mapping="mli")
    xf = np.random.default_rng(4).uniform(-2, 2, (9, 16, 16, 3)).astype(np.float32)
    rep = evaluate(data, xf, labels=np.arange(9) % 10, workers=2, batch=4, progress=False, mapping="mli")
    want = m.run(xf)
    assert rep.outputs.dtype == np.float32 and np.array_equal(rep.outputs, want)
    assert np.array_equal(rep.pred, mli_argmax(want.reshape(9, -1)))


def test_argmax_output_model() -> None:
    import pymli.tflite as tfl
    from pymli.tflite.examples import GraphMaker

    g = GraphMaker((6, 6, 2), 3)
    g.conv(4, 3, act="RELU").reshape((144,)).fc(7).argmax()
    data = g.finish()
    m = tfl.load(data, mapping="mli")
    x = np.random.default_rng(5).integers(-128, 128, (10, 6, 6, 2)).astype(np.int8)
    y = np.arange(10) % 7
    rep = evaluate(data, x, labels=y, workers=1, batch=3, progress=False, mapping="mli")
    want = m.run(x)
    assert np.array_equal(rep.outputs, want)
    assert np.array_equal(rep.pred, want.reshape(10, -1)[:, 0])
    assert rep.top5 is None and rep.accuracy == float(np.mean(rep.pred == y))
    fl = evaluate(data, x, workers=1, against="float", progress=False, mapping="mli").against
    fo = m.network.run_float(x, original=True)[m.network.output_name].reshape(10, -1)[:, 0]
    assert fl.max_lsb is None  # offsets: no LSB difference
    assert fl.differing == float(np.mean(np.rint(fo).astype(np.int64) != rep.pred))


def test_saved_network_file_equals_model_run(digits_sa8, tmp_path) -> None:  # noqa: ANN001
    """A saved network file is a model: the same outputs as Network.run, whatever the workers."""
    net, x, y = digits_sa8
    path = tmp_path / "digits_sa8.npz"
    net.save(path)
    want = net.run(x[:14])
    for workers in (1, 2):
        rep = evaluate(path, x[:14], labels=y[:14], workers=workers, batch=4, progress=False)
        assert np.array_equal(rep.outputs, want.output) and np.array_equal(rep.pred, want.predictions())
    # an in-memory network travels to the workers in the same format
    direct = evaluate(net, x[:14], labels=y[:14], workers=2, batch=4, progress=False, against="float")
    assert np.array_equal(direct.outputs, want.output) and direct.against is not None


def test_saved_network_file_problems(digits_sa8, tmp_path) -> None:  # noqa: ANN001
    from pymli.models.digits import digits_network

    _, x, _ = digits_sa8
    digits_network().save(tmp_path / "float.npz")
    with pytest.raises(EvalError, match="float.npz: network 'digits-cnn' is not quantised"):
        evaluate(tmp_path / "float.npz", x[:2], progress=False)
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    with pytest.raises(EvalError, match="other.npz: no 'graph' description"):
        evaluate(tmp_path / "other.npz", x[:2], progress=False)
    (tmp_path / "model.bin").write_bytes(b"neither")
    with pytest.raises(EvalError, match="nor a saved network"):
        evaluate(tmp_path / "model.bin", x[:2], progress=False)


def test_network_of_tflite_layers_travels_pickled(cnn10_model, dataset) -> None:  # noqa: ANN001
    """A Network the file format cannot hold (the TFLite importer's layers) still runs on the workers."""
    from pymli.eval.model import model_ref
    from pymli.models import netfile

    net = cnn10_model.network
    _, x, _ = dataset
    saveable = all(type(la) in netfile._KINDS for la in net)
    assert model_ref(net).kind == ("network" if saveable else "pickled")
    rep = evaluate(net, x[:6], workers=2, batch=3, progress=False)
    assert np.array_equal(rep.outputs, net.run(x[:6], capture=False).output)
