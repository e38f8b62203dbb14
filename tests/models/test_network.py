"""pymli.models: quantisation parameters, float maths, network plumbing, quantiser and report."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymli import capi
from pymli.formats import ElType
from pymli.models import (
    AvgPool,
    Conv2D,
    DepthwiseConv2D,
    Eltwise,
    FullyConnected,
    KernelMissing,
    LeakyReLU,
    MaxPool,
    Network,
    Permute,
    PReLU,
    QParams,
    ReLU,
    Sigmoid,
    Softmax,
    Tanh,
    mli_argmax,
)
from pymli.models import floatops as F
from pymli.models.qparams import fx_frac_for_range, sa_scale_repr
from pymli.models.quantize import quantize_network
from pymli.models.report import ARC_GUARD_BITS, compare, snr_db


def _need(net: Network) -> None:
    missing = net.missing_functions()
    if missing:
        pytest.skip("not in pymli.capi yet: " + ", ".join(missing))


# ----------------------------------------------------------------------------- hand-computed report
def tiny_fc() -> Network:
    return Network((1, 1, 2), [FullyConnected(np.array([[0.5], [0.25]]), np.array([0.0]), name="fc")], name="tiny")


def test_tiny_network_report_matches_hand_computation() -> None:
    """fx16 FC y = 0.5 a + 0.25 b, calibrated on a = b = 1, evaluated on a = b = 0.3.

    Calibration: input max 1.0 -> frac 14 (1.0 * 2**15 would not fit); weights max 0.5 -> frac 15;
    output max 0.75 -> frac 15 (<= 14 + 15). Input 0.3 -> round(0.3 * 2**14) = 4915. Accumulator
    4915 * 16384 + 4915 * 8192 = 120791040; shift 14 + 15 - 15 = 14: 7372.5 rounds up to 7373, so
    y = 7373 / 2**15 = 0.225006103515625 against 0.225: error 2**-14 * 0.1 = 6.103515625e-06 and
    SNR = 20 log10(0.225 / 6.103515625e-06) = 20 log10(36864) dB. The layer alone (float FC fed the
    dequantised input 4915 / 2**14) gives 0.75 * 4915 / 16384 = 0.22499084472656250: error
    1.52587890625e-05 = 2**-16, SNR 20 log10(0.22499084472656250 * 2**16).
    """
    net = tiny_fc()
    q = quantize_network(net, np.ones((1, 1, 1, 2)), "fx16")
    assert q.input_q == QParams.fx(16, 14)
    fc = q["fc"]
    assert fc.weights.qp == QParams.fx(16, 15) and fc.weights.q.ravel().tolist() == [16384, 8192]
    assert fc.out_q == QParams.fx(16, 15)
    _need(q)
    x = np.full((1, 1, 1, 2), 0.3)
    res = q.run(x)
    assert res["fc"].tolist() == [[7373]]
    rep = compare(q, x)
    s = rep["fc"]
    assert s.max_err == pytest.approx(6.103515625e-06, rel=1e-12)
    assert s.snr_db == pytest.approx(20 * math.log10(36864), abs=1e-9)
    assert s.snr_local_db == pytest.approx(20 * math.log10(0.2249908447265625 * 2 ** 16), abs=1e-9)
    # accumulator: 2 products + bias -> 2 guard bits worst case; peak 120791040 needs 27 bits
    assert (s.macs, s.guard_needed, s.acc_peak_bits) == (2, 2, 27)
    arc = compare(q, x, guard_bits=ARC_GUARD_BITS)["fc"]
    assert (arc.guard_available, arc.acc_bits, arc.acc_headroom_bits) == (8, 39, 12)
    assert s.headroom_bits == 2          # 7373 < 32767 / 4
    assert s.saturated == 0.0


def test_snr_db_formula() -> None:
    assert snr_db([1.0, 1.0], [1.1, 0.9]) == pytest.approx(20.0)
    assert snr_db([1.0, -2.0], [1.0, -2.0]) == math.inf
    assert snr_db([0.0], [1.0]) == -math.inf


# ----------------------------------------------------------------------------- quantisation parameters
@given(st.floats(min_value=1e-9, max_value=1e6))
def test_sa_scale_repr_is_normalised_and_close(step: float) -> None:
    scale, sfb = sa_scale_repr(step)
    assert 1 << 14 <= int(scale[0]) < 1 << 15
    assert abs(scale[0] * 2.0 ** -sfb[0] / step - 1) <= 2 ** -14


@given(st.floats(min_value=1e-6, max_value=1e4), st.sampled_from([8, 16]))
def test_fx_frac_for_range_is_the_largest_that_fits(m: float, bits: int) -> None:
    f = fx_frac_for_range(m, bits)
    lim = 2 ** (bits - 1) - 1
    assert m * 2.0 ** f <= lim < m * 2.0 ** (f + 1)


def test_qparams_per_axis_roundtrip() -> None:
    qp = QParams.sa([0, 0, 0], [16384, 20000, 30000], [20, 18, 16], dim=1)
    x = np.random.default_rng(1).normal(0, 0.05, (4, 3))
    q = qp.quantize(x)
    assert q.dtype == np.int8
    assert np.all(np.abs(qp.dequantize(q) - x) <= qp.step()[None, :] / 2 + 1e-12)
    qb = qp.quantize(x[None], batch=True)
    assert np.array_equal(qb[0], q)
    t = qp.tensor(q)
    assert t.dim == 1 and QParams.of(t) == qp
    assert QParams.from_dict(qp.to_dict()) == qp


# ----------------------------------------------------------------------------- float maths
def _naive_conv(x: np.ndarray, w: np.ndarray, b: np.ndarray, s: tuple[int, int], p: tuple[int, int, int, int],
                d: tuple[int, int]) -> np.ndarray:
    xp = F.pad_hw(x, p)
    kh, kw, _, co = w.shape
    n, hp, wp, _ = xp.shape
    oh = (hp - (kh - 1) * d[0] - 1) // s[0] + 1
    ow = (wp - (kw - 1) * d[1] - 1) // s[1] + 1
    out = np.zeros((n, oh, ow, co))
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for c in range(kw):
                    out[:, i, j] += xp[:, i * s[0] + a * d[0], j * s[1] + c * d[1]] @ w[a, c]
    return out + b


@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 2), st.integers(0, 2), st.integers(1, 2),
       st.integers(1, 3))
def test_conv2d_matches_naive(k: int, s: int, d: int, p: int, cin: int, cout: int) -> None:
    rng = np.random.default_rng(k * 100 + s * 10 + p)
    x = rng.normal(size=(2, 6, 5, cin))
    w = rng.normal(size=(k, k, cin, cout))
    b = rng.normal(size=cout)
    pad = (p, max(p - 1, 0), p, p)
    got = F.conv2d(x, w, b, (s, s), pad, (d, d))
    assert np.allclose(got, _naive_conv(x, w, b, (s, s), pad, (d, d)))


def test_avg_pool_divides_by_real_elements() -> None:
    x = np.arange(16, dtype=float).reshape(1, 4, 4, 1)
    y = F.avg_pool(x, (3, 3), (2, 2), (0, 1, 0, 1))
    assert y.shape == (1, 2, 2, 1)
    assert y[0, 1, 1, 0] == pytest.approx(np.mean([10, 11, 14, 15]))     # corner: 4 real elements
    assert y[0, 0, 1, 0] == pytest.approx(np.mean([2, 3, 6, 7, 10, 11]))  # border: 6
    assert F.max_pool(x, (3, 3), (2, 2), (0, 1, 0, 1))[0, 1, 1, 0] == 15


def test_depthwise_is_per_channel_conv() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(size=(1, 5, 5, 3))
    w = rng.normal(size=(3, 3, 1, 3))
    got = F.depthwise_conv2d(x, w, np.zeros(3), (1, 1), (1, 1, 1, 1), (1, 1))
    for c in range(3):
        ref = _naive_conv(x[..., c:c + 1], w[:, :, :, c:c + 1], np.zeros(1), (1, 1), (1, 1, 1, 1), (1, 1))
        assert np.allclose(got[..., c:c + 1], ref)


def test_mli_argmax_takes_last_of_ties() -> None:
    assert mli_argmax(np.array([[1, 3, 3], [5, 0, 5]])).tolist() == [2, 2]


# ----------------------------------------------------------------------------- network plumbing
def every_layer_net(seed: int = 0) -> Network:
    rng = np.random.default_rng(seed)
    return Network((6, 6, 3), [
        Conv2D(rng.normal(0, .3, (3, 3, 3, 4)), rng.normal(0, .1, 4), padding=1, name="c1"),
        DepthwiseConv2D(rng.normal(0, .3, (3, 3, 1, 4)), rng.normal(0, .1, 4), padding=1, name="dw"),
        ReLU("gen", name="r", inputs=["c1"]),
        Eltwise("add", name="add", inputs=["dw", "r"]),
        LeakyReLU(0.125, name="leaky"),
        PReLU(rng.uniform(0, .5, 4), name="prelu", inputs=["dw"]),
        Eltwise("mul", name="mul", inputs=["leaky", "prelu"]),
        Permute([2, 0, 1], name="perm"),
        Sigmoid(name="sig"),
        Tanh(name="th", inputs=["add"]),
        MaxPool(2, stride=2, name="mp"),
        AvgPool(3, stride=3, name="ap", inputs=["add"]),
        FullyConnected(rng.normal(0, .3, (16, 5)), rng.normal(0, .1, 5), relu="relu_6", name="fc"),
        Softmax(name="sm"),
    ], name="every-layer")


def test_network_wiring_and_shapes() -> None:
    net = every_layer_net()
    sh = net.shapes()
    assert sh["perm"] == (4, 6, 6) and sh["mp"] == (3, 3, 4) and sh["ap"] == (2, 2, 4) and sh["sm"] == (5,)
    assert net["fc"].inputs == ["ap"]
    with pytest.raises(ValueError, match="unknown tensor"):
        net.add(ReLU(name="bad", inputs=["nowhere"]))
    with pytest.raises(ValueError, match="duplicate"):
        net.add(ReLU(name="c1"))
    with pytest.raises(ValueError, match="weights expect"):
        net.add(FullyConnected(np.zeros((3, 2)), np.zeros(2), name="fc2", inputs=["c1"]))
    assert "fc2" not in [la.name for la in net]


@pytest.mark.parametrize("scheme,min_snr", [("fx16", 60.0), ("fx16_fx8_fx8", 25.0), ("sa8", 25.0)])
def test_every_layer_quantised_tracks_float(scheme: str, min_snr: float) -> None:
    net = every_layer_net()
    x = np.random.default_rng(3).uniform(-1, 1, (24, 6, 6, 3))
    q = quantize_network(net, x, scheme)
    assert q.is_quantized and not net.is_quantized
    _need(q)
    rep = compare(q, x[:6])
    for s in rep.layers:
        assert s.snr_db > min_snr, f"{scheme}/{s.name}: SNR {s.snr_db:.1f} dB"
    fns = q.function_names()
    assert fns["dw"].startswith("mli_krn_depthwise_conv2d_hwcn_")
    assert fns["c1"].endswith({"fx16": "_fx16", "fx16_fx8_fx8": "_fx16_fx8_fx8", "sa8": "_sa8_sa8_sa32"}[scheme])


def test_run_single_batch_capture_progress() -> None:
    net = every_layer_net()
    x = np.random.default_rng(4).uniform(-1, 1, (3, 6, 6, 3))
    q = quantize_network(net, x, "sa8")
    _need(q)
    ticks: list[int] = []
    full = q.run(x, progress=ticks.append)
    assert ticks == [3]                  # one batch of three samples
    q.run(x, progress=ticks.append, batch=2)
    assert ticks == [3, 2, 1]
    one = q.run(x[1], capture=["add"])
    assert set(one.values) == {"add", "sm"}
    assert np.array_equal(one["add"][0], full["add"][1]) and np.array_equal(one.output[0], full.output[1])
    # integer input is taken as already quantised
    again = q.run(q.quantize_input(x), capture=False)
    assert np.array_equal(again.output, full.output)
    assert full.qparams["sm"] == QParams.sa(-128, 1, 8)     # set by the softmax kernel
    assert full.dequantized().shape == (3, 5)


def test_missing_kernel_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    q = quantize_network(tiny_fc(), np.ones((1, 1, 1, 2)), "fx16")
    monkeypatch.delitem(capi.FUNCTIONS, "mli_krn_fully_connected_fx16", raising=False)
    assert q.missing_functions() == ["mli_krn_fully_connected_fx16"]
    with pytest.raises(KernelMissing, match="mli_krn_fully_connected_fx16"):
        q.run(np.ones((1, 1, 2)))


def test_report_outputs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    net = every_layer_net()
    x = np.random.default_rng(5).uniform(-1, 1, (8, 6, 6, 3))
    q = quantize_network(net, x, "fx16")
    _need(q)
    rep = compare(q, x, labels=np.zeros(8, int))
    d = json.loads(rep.to_json(tmp_path / "r.json"))
    assert [r["name"] for r in d["layers"]] == [la.name for la in net]
    assert d["accuracy"] == pytest.approx(float(np.mean(q.predict(x) == 0)))
    from rich.console import Console

    buf = io.StringIO()
    rep.print(Console(file=buf, width=200), kernels=True)
    assert "conv2d_hwcn_fx16" in buf.getvalue() and "accuracy" in buf.getvalue()
    pytest.importorskip("matplotlib")
    rep.plot(tmp_path / "r.png")
    assert (tmp_path / "r.png").stat().st_size > 0


def test_quantize_rejects_unknown_scheme() -> None:
    with pytest.raises(ValueError, match="scheme"):
        quantize_network(tiny_fc(), np.ones((1, 1, 1, 2)), "int4")


def test_fx_weights_respect_mli_frac_constraints() -> None:
    net = every_layer_net()
    x = np.random.default_rng(6).uniform(-1, 1, (8, 6, 6, 3))
    for scheme, bits in (("fx16", 16), ("fx16_fx8_fx8", 8)):
        q = quantize_network(net, x, scheme)
        qs = q.expected_qparams()
        for name in ("c1", "dw", "fc"):
            la = q[name]
            in_frac = qs[la.inputs[0]].frac_bits
            assert la.weights.qp.el_type == (ElType.FX_16 if bits == 16 else ElType.FX_8)
            assert la.bias.qp.frac_bits <= in_frac + la.weights.qp.frac_bits
            assert la.out_q.frac_bits <= in_frac + la.weights.qp.frac_bits


@given(st.floats(min_value=1e-9, max_value=1e6))
def test_sa_scale_repr_round_up_never_shrinks(step: float) -> None:
    scale, sfb = sa_scale_repr(step, round_up=True)
    assert scale[0] * 2.0 ** -sfb[0] >= step
    assert 1 << 14 <= int(scale[0]) < 1 << 15


def lstm_net(seed: int = 0) -> Network:
    from pymli.models import LSTM

    rng = np.random.default_rng(seed)
    return Network((10, 5), [
        FullyConnected(rng.normal(0, .4, (5, 8)), rng.normal(0, .1, 8), relu="gen", per_step=True, name="fc1"),
        LSTM(rng.normal(0, .3, (4, 8, 6)), rng.normal(0, .3, (4, 6, 6)), rng.normal(0, .2, (4, 6)), name="lstm"),
        LSTM(rng.normal(0, .3, (4, 6, 6)), rng.normal(0, .3, (4, 6, 6)), rng.normal(0, .2, (4, 6)),
             results="last", name="last"),
        FullyConnected(rng.normal(0, .4, (6, 3)), rng.normal(0, .1, 3), name="fc2"),
    ], name="lstm-net")


def test_lstm_float_matches_textbook_cell() -> None:
    net = lstm_net()
    x = np.random.default_rng(1).normal(size=(2, 10, 5))
    acts = net.run_float(x)
    la = net["lstm"]
    w_in, w_out, b = (c.value() for c in (la.weights_in, la.weights_out, la.bias))
    sig = lambda v: 1 / (1 + np.exp(-v))
    h = np.zeros(6)
    c = np.zeros(6)
    for t in range(10):   # sample 1, gates i, g, f, o
        xt = acts["fc1"][1, t]
        z = [xt @ w_in[k] + h @ w_out[k] + b[k] for k in range(4)]
        c = sig(z[2]) * c + sig(z[0]) * np.tanh(z[1])
        h = sig(z[3]) * np.tanh(c)
        assert np.allclose(acts["lstm"][1, t], h)
    assert acts["last"].shape == (2, 1, 6)


@pytest.mark.parametrize("scheme,min_snr", [("fx16", 50.0), ("fx16_fx8_fx8", 30.0), ("sa8", 15.0)])
def test_lstm_network_quantised_tracks_float(scheme: str, min_snr: float) -> None:
    net = lstm_net()
    x = np.random.default_rng(2).normal(size=(12, 10, 5))
    q = quantize_network(net, x, scheme)
    _need(q)
    res = q.run(x[:3])
    assert res["lstm.cell"].shape == (3, 6) and res["lstm"].shape == (3, 10, 6)
    rep = compare(q, x[:3], result=res)
    for s in rep.layers:
        assert s.snr_db > min_snr, f"{scheme}/{s.name}: {s.snr_db:.1f} dB"
    assert rep["lstm"].guard_needed == 4   # 8 inputs + 6 recurrent products + bias -> 15 terms


@pytest.mark.parametrize("scheme", ["fx16", "sa8"])
def test_eltwise_max_inputs_share_a_format(scheme: str) -> None:
    rng = np.random.default_rng(7)
    net = Network((4, 4, 2), [
        Conv2D(rng.normal(0, .2, (1, 1, 2, 3)), np.zeros(3), name="small"),
        Conv2D(rng.normal(0, 2.0, (1, 1, 2, 3)), np.zeros(3), name="big", inputs=["input"]),
        Eltwise("max", name="mx", inputs=["small", "big"]),
    ])
    x = rng.uniform(-1, 1, (10, 4, 4, 2))
    q = quantize_network(net, x, scheme)
    qs = q.expected_qparams()
    assert qs["small"] == qs["big"]
    _need(q)
    rep = compare(q, x)
    assert rep["mx"].snr_db > (60 if scheme == "fx16" else 25)
