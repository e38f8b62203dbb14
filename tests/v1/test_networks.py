"""MLI 1.0's CIFAR-10 and HAR examples rebuilt as V1Networks (pymli.models.v1net), checked against the C recording.

For the three bit depths of both examples (../shared/models_v1): every test vector end to end with
every intermediate (HAR: every per-step tensor of its own LSTM layer too) equal to the C library's
recording, the output formats the kernels leave, each layer alone fed the recorded input, the
classes and the accuracy the C program printed, the float input conversion, and the per-layer
SNR report.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import numpy as np
import pytest

from pymli.models import KernelMissing
from pymli.models.qparams import QParams
from pymli.models.v1net import V1Network, V1ReLU, V1Report, har_quantize, load_v1_pack, v1_report
from pymli.v1 import MLI1_UP

from ..conftest import shared_dir

ROOT = shared_dir() / "models_v1"
DEPTHS = ("fx16", "fx8", "fx8w16d")
LAYERS = {"cifar10": ["permute", "conv1", "pool1", "conv2", "pool2", "conv3", "pool3", "ip1", "prob"],
          "har_smartphone": ["fc1", "relu1", "lstm2", "lstm3", "fc4"]}
VECTORS = {"cifar10": 20, "har_smartphone": 30}
PRINTED = {"cifar10": 0.95, "har_smartphone": 0.90}
PACKS = [(ex, d) for ex in LAYERS for d in DEPTHS]
# HAR runs ~1 s per vector: chunks of vectors keep each test short and let workers share them
CHUNKS = [(ex, d, lo, min(lo + step, VECTORS[ex])) for ex, d in PACKS
          for step in [VECTORS[ex] if ex == "cifar10" else 10] for lo in range(0, VECTORS[ex], step)]

pytestmark = pytest.mark.skipif(not ROOT.is_dir(), reason=f"{ROOT} is absent (set PYMLI_SHARED)")


@functools.cache
def pack(example: str, depth: str):  # type: ignore[no-untyped-def]
    return load_v1_pack(ROOT / example / depth)


@functools.cache
def run_all(example: str, depth: str):  # type: ignore[no-untyped-def]
    p = pack(example, depth)
    return p.network.run(p.inputs)


@pytest.mark.parametrize("example,depth", PACKS)
def test_structure(example: str, depth: str) -> None:
    p = pack(example, depth)
    assert [la.name for la in p.network] == LAYERS[example]
    assert p.accuracy == pytest.approx(PRINTED[example])
    assert p.inputs.shape[0] == VECTORS[example]
    assert p.network.missing_functions() == []
    # the network calls exactly the C functions the example calls
    called = {c["fn"] for c in p.model["calls"] if "fn" in c} | {
        b["fn"] for c in p.model["calls"] if "loop" in c for b in c["body"]}
    used = {n for la in p.network for n in la.functions_needed()}
    assert used == {n for n in called if n.startswith("mli_krn_")}


@pytest.mark.parametrize("example,depth,lo,hi", CHUNKS, ids=[f"{e}/{d}/v{lo}-{hi - 1}" for e, d, lo, hi in CHUNKS])
def test_every_vector_every_intermediate(example: str, depth: str, lo: int, hi: int) -> None:
    """The network on test vectors lo..hi-1: every layer, every captured intermediate and its format equal C's."""
    p = pack(example, depth)
    res = p.network.run(p.inputs[lo:hi])
    assert set(p.refs) <= set(res.values)
    for name in p.refs:
        ref = np.concatenate([p.reference(name)[lo:hi]])
        got = res[name]
        assert got.dtype == ref.dtype and got.shape == ref.shape, f"{name}: {got.shape} vs C {ref.shape}"
        bad = np.argwhere(got != ref)
        assert bad.size == 0, f"{example}/{depth} {name}: {len(bad)} values differ, first at {bad[0].tolist()}"
        assert res.qparams[name] == p.reference_qparams(name), f"{name}: {res.qparams[name].describe()}"
    assert np.array_equal(res.predictions(), p.vectors["pred"][lo:hi])


@pytest.mark.parametrize("example,depth", [(e, d) for e, d in PACKS if e == "cifar10"])
def test_accuracy_printed_by_c(example: str, depth: str) -> None:
    p = pack(example, depth)
    res = run_all(example, depth)
    assert (res.predictions() == p.labels).mean() == pytest.approx(PRINTED[example])


@pytest.mark.parametrize("example,depth", PACKS)
def test_each_layer_alone(example: str, depth: str) -> None:
    """Each layer fed the C library's recorded input reproduces its recorded output (first 3 vectors)."""
    p = pack(example, depth)
    for la in p.network:
        x, q = p.recorded_input(la.name, 3)
        out, oq = p.network.run_layer(la.name, [x], [q])
        assert np.array_equal(out, p.reference(la.name, 3)), f"{example}/{depth} {la.name}"
        assert oq == p.reference_qparams(la.name)


@pytest.mark.parametrize("example,depth", PACKS)
def test_float_input_conversion(example: str, depth: str) -> None:
    """Float test inputs quantised the example's way equal the recorded model input."""
    p = pack(example, depth)
    q = p.network.quantize_input(p.float_inputs)
    assert np.array_equal(q, p.inputs)
    if example == "har_smartphone":  # the C helper rounds in float32, not float64
        assert q.dtype == p.inputs.dtype


def test_har_quantize_is_float32_arithmetic() -> None:
    # 0.5 + 2**-25 rounds to 0.5 in float32 after "+ 0.5f" only when computed in float32
    x = np.array([np.float32(0.5 - 2.0 ** -25), -3.7, 300.0, 0.0])
    q = har_quantize(x, 0, QParams.fx(16, 0).el_type)
    assert q.tolist() == [1, -4, 300, 0]  # float64 would give 0 for the first value
    assert har_quantize(np.array([100.0, -100.0]), 5, QParams.fx(8, 5).el_type).tolist() == [127, -128]


def test_predictions_take_the_first_maximum() -> None:
    p = pack("cifar10", "fx8")
    res = p.network.run(p.inputs[:2])
    res.values["prob"] = np.array([[5, 7, 7, 1, 0, 0, 0, 0, 0, 7], [0] * 10], dtype=np.int8)
    assert res.predictions().tolist() == [1, 0]


def test_platform_matters_and_defaults_to_mli1_conv() -> None:
    """Runs default to MLI 1.0's convergent build; round-half-up gives another result somewhere."""
    p = pack("cifar10", "fx8")
    res = p.network.run(p.inputs[:4])
    assert res.platform.name == "mli1-conv"
    up = p.network.run(p.inputs[:4], platform=MLI1_UP)
    assert any(not np.array_equal(up[n], res[n]) for n in LAYERS["cifar10"])


def test_wrong_kernel_is_detected(monkeypatch: pytest.MonkeyPatch) -> None:
    import pymli.v1.kernels as K

    p = pack("cifar10", "fx16")
    orig = K.avepool_chw
    monkeypatch.setattr(K, "avepool_chw", lambda *a, **k: orig(*a, **k) // 2)
    res = p.network.run(p.inputs[:1])
    cmp = p.compare_recorded(res, 1)
    assert cmp["pool2"][0] < cmp["pool2"][1] and cmp["conv2"][0] == cmp["conv2"][1]


def test_unknown_function_is_reported() -> None:
    net = V1Network((4,), [V1ReLU("gen", fn="mli_krn_relu_fx32", name="r")], input_q=QParams.fx(16, 8))
    assert net.missing_functions() == ["mli_krn_relu_fx32"]
    with pytest.raises(KernelMissing):
        net.run(np.zeros((1, 4), np.int16))


def test_float_twin_tracks_fx16() -> None:
    """The float64 run (dequantised constants) stays within a few output LSBs of the fx16 network."""
    p = pack("cifar10", "fx16")
    ref = p.network.run_float(p.float_inputs[:4])
    conv1 = QParams.fx(16, 11).dequantize(p.reference("conv1", 4))
    assert np.abs(conv1 - ref["conv1"]).max() <= 2.0 ** -11
    assert np.array_equal(ref["permute"], np.transpose(p.float_inputs[:4], (0, 3, 1, 2)))


# ---------------------------------------------------------------------------------------------- report
@pytest.mark.parametrize("example,depth", PACKS)
def test_snr_report(example: str, depth: str) -> None:
    n = None if example == "cifar10" else 3
    p = pack(example, depth)
    rep = v1_report(p, n, result=run_all(example, depth) if example == "cifar10" else None)
    assert isinstance(rep, V1Report)
    assert [s.name for s in rep.layers] == LAYERS[example]
    assert rep.bit_exact and rep.recorded and all(ok == tot > 0 for ok, tot in rep.recorded.values())
    floor = 50.0 if depth != "fx8" else 5.0
    for s in rep.layers:
        assert math.isfinite(s.snr_db) or s.snr_db == math.inf
        assert s.snr_db > floor, f"{s.name}: {s.snr_db:.1f} dB"
        if s.macs is not None:
            # MLI 1.0's accumulators: 40 bits for fx16 x fx16, int32 otherwise
            want = {"fx16": 8, "fx8": 16, "fx8w16d": 8}[depth]
            assert s.guard_available == want
            assert s.acc_headroom_bits is not None and s.acc_headroom_bits > 0
    assert rep.c_accuracy == pytest.approx(PRINTED[example])
    d = json.loads(rep.to_json())
    assert d["bit_exact"] is True and d["c_lines"]["hardcoded_vector"].startswith("Result Quality")
    if example == "cifar10":
        assert rep.accuracy == pytest.approx(PRINTED[example])
        first = rep["conv1"]
        assert 60 < first.snr_db < 80 if depth != "fx8" else 20 < first.snr_db < 40


def test_report_notices_a_difference(monkeypatch: pytest.MonkeyPatch) -> None:
    import pymli.v1.kernels as K

    p = pack("cifar10", "fx8")
    orig = K.maxpool_chw
    monkeypatch.setattr(K, "maxpool_chw", lambda *a, **k: orig(*a, **k) - 1)
    rep = v1_report(p, 2)
    assert not rep.bit_exact
    assert rep.recorded["pool1"][0] < rep.recorded["pool1"][1]
    text = rep.table().caption
    assert "equal to the MLI 1.0 recording" in text


def test_report_table_prints(tmp_path: Path) -> None:
    from rich.console import Console

    p = pack("cifar10", "fx16")
    rep = v1_report(p, 2)
    con = Console(width=200, record=True, file=open(tmp_path / "out.txt", "w"))
    rep.print(con, kernels=True)
    text = con.export_text()
    assert "conv2d_chw_fx16_k5x5_str1_krnpad" in text and "9/9 tensors" in text


# ---------------------------------------------------------------------------------------------- CLI
def test_cli_v1net(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from pymli.cli import main

    out = tmp_path / "rep.json"
    r = CliRunner().invoke(main, ["v1net", "cifar10", "--depth", "fx8", "--samples", "2", "--packs", str(ROOT),
                                  "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert "every tensor equal to the MLI 1.0 recording: yes" in r.output
    d = json.loads(out.read_text())
    assert d["fx8"]["bit_exact"] is True and d["fx8"]["samples"] == 2
    r = CliRunner().invoke(main, ["v1net", "cifar10", "--depth", "fx8", "--samples", "2", "--packs", str(ROOT),
                                  "--platform", "up"])
    assert r.exit_code == 0 and "recording: NO" in r.output  # the examples were recorded on the conv build


def test_cli_v1net_user_errors(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from pymli.cli import main

    r = CliRunner().invoke(main, ["v1net", "har", "--packs", str(tmp_path)])
    assert r.exit_code == 2 and "Traceback" not in r.output and "--packs" in r.output
    r = CliRunner().invoke(main, ["v1net", "mnist"])
    assert r.exit_code == 2
    r = CliRunner().invoke(main, ["v1net", "cifar10", "--samples", "0"])
    assert r.exit_code == 2
