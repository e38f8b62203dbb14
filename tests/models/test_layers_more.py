"""pymli.models: GRU, LSTM / GRU directions and results, group / transpose conv, l2_normalize,
argmax output, concat and padding layers: float twins, quantised runs, composition with pymli.capi."""

from __future__ import annotations

import numpy as np
import pytest

from pymli import capi
from pymli.capi.types import RnnCellCfg, RnnDirection, RnnOutActivation, RnnResults
from pymli.models import (
    GRU,
    LSTM,
    Argmax,
    Concat,
    Conv2D,
    DepthwiseConv2D,
    FullyConnected,
    GroupConv2D,
    L2Normalize,
    Network,
    Pad2D,
    QParams,
    Softmax,
    TransposeConv2D,
    mli_argmax,
)
from pymli.models import floatops as F
from pymli.models.quantize import quantize_network
from pymli.models.report import compare, snr_db

SCHEMES = ("fx16", "fx16_fx8_fx8", "sa8")
# SNR of the quantised output against the float twin on the dequantised constants: fx16 data keep
# about 15 bits, sa8 about 8 bits minus a few for the ranges
MIN_SNR = {"fx16": 55.0, "fx16_fx8_fx8": 55.0, "sa8": 22.0}
# against the float constants the network was quantised from (compare's default reference): fx8
# weights cost about as much as sa8 ones
MIN_SNR_ORIGINAL = {"fx16": 50.0, "fx16_fx8_fx8": 25.0, "sa8": 20.0}
T, N_IN, M = 5, 4, 6


def _rnn(cls: type, rng: np.random.Generator, **kw) -> Network:  # type: ignore[no-untyped-def]
    g = 3 if cls is GRU else 4
    layer = cls(rng.normal(0, .4, (g, N_IN, M)), rng.normal(0, .4, (g, M, M)), rng.normal(0, .2, (g, M)),
                name="rnn", **kw)
    return Network((T, N_IN), [layer])


def _seq(rng: np.random.Generator, n: int = 16) -> np.ndarray:
    return rng.normal(0, 1, (n, T, N_IN))


# ----------------------------------------------------------------------------- GRU float twin
def test_gru_float_matches_textbook_cell() -> None:
    """MLI's GRU: reset gate on the state before the candidate product; h = z h + (1 - z) u."""
    rng = np.random.default_rng(0)
    net = _rnn(GRU, rng)
    la = net["rnn"]
    wi, wo, b = la.weights_in.value(), la.weights_out.value(), la.bias.value()
    x = _seq(rng, 3)
    sig = lambda v: 1 / (1 + np.exp(-v))
    for n in range(3):
        h = np.zeros(M)
        hs = []
        for t in range(T):
            z = sig(x[n, t] @ wi[0] + h @ wo[0] + b[0])
            r = sig(x[n, t] @ wi[1] + h @ wo[1] + b[1])
            u = np.tanh(x[n, t] @ wi[2] + (r * h) @ wo[2] + b[2])
            h = z * h + (1 - z) * u
            hs.append(h)
        np.testing.assert_allclose(net.run_float(x)["rnn"][n], np.stack(hs), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("cls", [GRU, LSTM])
def test_backward_float_is_forward_on_reversed_frames(cls: type) -> None:
    rng = np.random.default_rng(1)
    x = _seq(rng, 4)
    fwd = _rnn(cls, np.random.default_rng(2))
    bwd = _rnn(cls, np.random.default_rng(2), direction="backward")
    last = _rnn(cls, np.random.default_rng(2), direction="backward", results="last")
    np.testing.assert_allclose(bwd.run_float(x)["rnn"], fwd.run_float(x[:, ::-1])["rnn"], rtol=1e-12)
    np.testing.assert_allclose(last.run_float(x)["rnn"][:, 0], bwd.run_float(x)["rnn"][:, -1], rtol=1e-12)
    assert last.shapes()["rnn"] == (1, M) and bwd.shapes()["rnn"] == (T, M)


def test_rnn_rejects_bad_arguments() -> None:
    rng = np.random.default_rng(3)
    with pytest.raises(ValueError, match="direction"):
        _rnn(GRU, rng, direction="sideways")
    with pytest.raises(ValueError, match="GRU wants"):
        GRU(rng.normal(size=(4, N_IN, M)), rng.normal(size=(4, M, M)), rng.normal(size=(4, M)))


# ----------------------------------------------------------------------------- quantised recurrent layers
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("direction", ["forward", "backward"])
@pytest.mark.parametrize("results", ["all", "last"])
@pytest.mark.parametrize("cls", [GRU, LSTM])
def test_rnn_quantised_tracks_float(cls: type, results: str, direction: str, scheme: str) -> None:
    rng = np.random.default_rng(4)
    net = _rnn(cls, rng, results=results, direction=direction)
    x = _seq(rng)
    q = quantize_network(net, x, scheme)
    kind = "gru" if cls is GRU else "lstm"
    suffix = {"fx16": "fx16", "fx16_fx8_fx8": "fx16_fx8_fx8", "sa8": "sa8_sa8_sa32"}[scheme]
    assert q.function_names()["rnn"] == f"mli_krn_{kind}_cell_{suffix}"
    if scheme == "sa8":  # per-gate parameters (dim 0) for weights and bias
        assert q["rnn"].weights_in.qp.dim == 0 and q["rnn"].bias.qp.dim == 0
    res = q.run(x[:6])
    assert res["rnn"].shape == (6, T if results == "all" else 1, M)
    assert snr_db(q.run_float(x[:6])["rnn"], res.dequantized("rnn")) > MIN_SNR[scheme]


def _lut(name: str):  # type: ignore[no-untyped-def]
    from pymli.models.recurrent import _make_lut

    return _make_lut(name)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("direction", ["forward", "backward"])
@pytest.mark.parametrize("cls", [GRU, LSTM])
def test_rnn_run_equals_capi_steps(cls: type, direction: str, scheme: str) -> None:
    """Network.run == one-frame facade calls chained by hand (prev_out / cell fed back), and
    results="last" == the last row of results="all"."""
    rng = np.random.default_rng(5)
    x = _seq(rng, 3)
    q_all = quantize_network(_rnn(cls, np.random.default_rng(6), direction=direction), x, scheme)
    q_last = quantize_network(_rnn(cls, np.random.default_rng(6), direction=direction, results="last"), x, scheme)
    la = q_all["rnn"]
    out_q = la.out_q
    assert q_last["rnn"].out_q == out_q
    fn = capi.FUNCTIONS[q_all.function_names()["rnn"]]
    tanh, sigm = _lut("tanh"), _lut("sigm")
    xq = q_all.quantize_input(x)
    run_all, run_last = q_all.run(xq)["rnn"], q_last.run(xq)["rnn"]
    for n in range(x.shape[0]):
        zp = int(out_q.zero_point) if out_q.el_type.is_sa else 0
        h = np.full(M, zp, out_q.el_type.dtype)
        cell = None
        if cls is LSTM:
            czp = int(la.cell_q.zero_point) if la.cell_q.el_type.is_sa else 0
            cell = la.cell_q.tensor(np.full(M, czp, la.cell_q.el_type.dtype))
        steps = []
        order = range(T - 1, -1, -1) if direction == "backward" else range(T)
        for t in order:
            out = out_q.empty((1, M))
            cfg = RnnCellCfg(direction=RnnDirection.FORWARD, results=RnnResults.LAST, act=RnnOutActivation.TANH,
                             scratch_capacity=4 * M * 2)
            args = [q_all.input_q.tensor(xq[n, t:t + 1]), out_q.tensor(h), la.weights_in.tensor(),
                    la.weights_out.tensor(), la.bias.tensor(), tanh, sigm, cfg]
            fn(*args, *([cell] if cell is not None else []), out)
            h = out.numpy().reshape(M)
            steps.append(h)
        np.testing.assert_array_equal(run_all[n], np.stack(steps))
        np.testing.assert_array_equal(run_last[n, 0], steps[-1])


def test_gru_report_rows_have_guard_bits() -> None:
    rng = np.random.default_rng(7)
    net = _rnn(GRU, rng)
    net.add(FullyConnected(rng.normal(0, .3, (T * M, 3)), np.zeros(3), name="fc"))
    x = _seq(rng)
    for scheme in SCHEMES:
        q = quantize_network(net, x, scheme)
        s = compare(q, x[:4])["rnn"]
        assert s.kind == "gru" and s.macs == N_IN + M
        assert s.guard_needed == int(np.ceil(np.log2(N_IN + M + 1)))
        assert s.acc_peak_bits is not None and 0 < s.acc_peak_bits <= s.acc_bits
        assert s.acc_headroom_bits == s.acc_bits - s.acc_peak_bits
        assert s.snr_db > MIN_SNR_ORIGINAL[scheme]


# ----------------------------------------------------------------------------- convolutions
def _img(rng: np.random.Generator, n: int = 10, c: int = 4) -> np.ndarray:
    return rng.normal(0, 1, (n, 6, 6, c))


def test_transpose_conv_float_matches_scatter_loop() -> None:
    rng = np.random.default_rng(8)
    x, w, b = rng.normal(size=(2, 3, 4, 2)), rng.normal(size=(3, 2, 2, 5)), rng.normal(size=5)
    stride, pad = (2, 1), (1, 0, 1, 1)
    full = np.zeros((2, (3 - 1) * 2 + 3, (4 - 1) * 1 + 2, 5))
    for iy in range(3):
        for ix in range(4):
            for ky in range(3):
                for kx in range(2):
                    full[:, iy * 2 + ky, ix + kx] += x[:, iy, ix] @ w[ky, kx]
    expect = full[:, 1:, 1:-1] + b
    got = F.transpose_conv2d(x, w, b, stride, pad)
    np.testing.assert_allclose(got, expect, rtol=1e-12)
    layer = TransposeConv2D(w, b, stride=stride, padding=pad)
    assert layer.out_shape([(3, 4, 2)]) == expect.shape[1:]


def test_group_conv_float_is_conv_per_group() -> None:
    rng = np.random.default_rng(9)
    x, w, b = rng.normal(size=(2, 5, 5, 6)), rng.normal(size=(3, 3, 2, 9)), rng.normal(size=9)
    got = F.group_conv2d(x, w, b, (1, 1), (1, 1, 1, 1))
    for g in range(3):
        ref = F.conv2d(x[..., 2 * g:2 * g + 2], w[..., 3 * g:3 * g + 3], b[3 * g:3 * g + 3], (1, 1), (1, 1, 1, 1))
        np.testing.assert_allclose(got[..., 3 * g:3 * g + 3], ref, rtol=1e-12)
    with pytest.raises(ValueError, match="do not fit"):
        Network((5, 5, 5), [GroupConv2D(w, b)])


CONV_NETS = {
    "group": lambda r: GroupConv2D(r.normal(0, .3, (3, 3, 2, 6)), r.normal(0, .1, 6), padding=1, name="out"),
    "group_relu": lambda r: GroupConv2D(r.normal(0, .3, (3, 3, 1, 8)), r.normal(0, .1, 8), stride=2, relu="gen",
                                        name="out"),
    "transpose": lambda r: TransposeConv2D(r.normal(0, .3, (3, 3, 4, 3)), r.normal(0, .1, 3), stride=2, padding=1,
                                           name="out"),
    "transpose_k4s2": lambda r: TransposeConv2D(r.normal(0, .3, (4, 4, 4, 2)), r.normal(0, .1, 2), stride=2,
                                                padding=(1, 1, 1, 1), name="out"),
}


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("kind", sorted(CONV_NETS))
def test_conv_layers_quantised_track_float(kind: str, scheme: str) -> None:
    rng = np.random.default_rng(10)
    net = Network((6, 6, 4), [CONV_NETS[kind](rng)])
    x = _img(rng)
    q = quantize_network(net, x, scheme)
    res = q.run(x[:3])
    assert snr_db(q.run_float(x[:3])["out"], res.dequantized("out")) > MIN_SNR[scheme] - 15
    s = compare(q, x[:3], result=res)["out"]
    assert s.macs == q["out"].mac_count([(6, 6, 4)]) and s.acc_headroom_bits is not None and s.acc_headroom_bits > 0


@pytest.mark.parametrize("scheme", SCHEMES)
def test_group_conv_equals_conv_and_depthwise_bit_exact(scheme: str) -> None:
    """groups = 1 is a plain convolution and groups = channels a depthwise one: other MLI kernels, same bits."""
    rng = np.random.default_rng(11)
    x = _img(rng)
    w, b = rng.normal(0, .3, (3, 3, 4, 5)), rng.normal(0, .1, 5)
    wd, bd = rng.normal(0, .3, (3, 3, 1, 4)), rng.normal(0, .1, 4)
    for a, c in ((Conv2D(w, b, padding=1, name="o"), GroupConv2D(w, b, padding=1, name="o")),
                 (DepthwiseConv2D(wd, bd, stride=2, name="o"), GroupConv2D(wd, bd, stride=2, name="o"))):
        qa = quantize_network(Network((6, 6, 4), [a]), x, scheme)
        qc = quantize_network(Network((6, 6, 4), [c]), x, scheme)
        assert qc.function_names()["o"].startswith("mli_krn_group_conv2d_hwcn_")
        np.testing.assert_array_equal(qa.run(x[:3])["o"], qc.run(x[:3])["o"])


# ----------------------------------------------------------------------------- l2 / argmax / concat / pad
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("axis", [-1, 2])
def test_l2_normalize_layer(scheme: str, axis: int) -> None:
    rng = np.random.default_rng(12)
    net = Network((6, 6, 4), [Conv2D(rng.normal(0, .3, (3, 3, 4, 5)), rng.normal(0, .1, 5), name="c"),
                              L2Normalize(axis=axis, name="l2")])
    x = _img(rng)
    f = net.run_float(x)["l2"]
    norms = np.sqrt((f ** 2).sum(axis=-1)) if axis == 2 else np.sqrt((f ** 2).reshape(len(f), -1).sum(-1))
    np.testing.assert_allclose(norms, 1.0, rtol=1e-12)
    q = quantize_network(net, x, scheme)
    res = q.run(x[:3])
    expect_q = QParams.fx(16, 15) if scheme != "sa8" else QParams.sa(0, 1, 7)
    assert res.qparams["l2"] == expect_q
    assert snr_db(q.run_float(x[:3])["l2"], res.dequantized("l2")) > MIN_SNR[scheme] - 5


@pytest.mark.parametrize("scheme", SCHEMES)
def test_argmax_output_layer_predictions(scheme: str) -> None:
    rng = np.random.default_rng(13)
    body = [Conv2D(rng.normal(0, .3, (6, 6, 4, 10)), rng.normal(0, .1, 10), name="logits")]
    x = _img(rng, 20)
    q = quantize_network(Network((6, 6, 4), body + [Argmax(name="am")]), x, scheme)
    assert q.index_output and q.function_names()["am"].startswith("mli_krn_argmax_")
    res = q.run(x)
    assert res["am"].shape == (20, 1, 1) and res.qparams["am"].el_type.name == "SA_32"
    # the kernel's offsets are MLI's arg-max of the logits the run captured
    np.testing.assert_array_equal(res.predictions(), mli_argmax(res["logits"].reshape(20, -1)))
    labels = q.float_predictions(q.run_float(x))
    rep = compare(q, x, labels, result=res)
    assert rep.float_accuracy == 1.0 and rep.accuracy == float(np.mean(res.predictions() == labels))
    assert rep.accuracy > 0.7


def test_argmax_topk_along_axis_float_offsets() -> None:
    x = np.array([[[[1.0, 5.0, 3.0], [4.0, 0.0, 6.0]]]])  # one sample (1, 2, 3)
    la = Argmax(axis=2, topk=2)
    # slices along the channel axis: channel 0 holds offsets 0, 3; channel 1: 1, 4; channel 2: 2, 5
    np.testing.assert_array_equal(la.forward_float([x]), [[[3, 0], [1, 4], [5, 2]]])
    assert la.out_shape([(1, 2, 3)]) == (3, 2)
    with pytest.raises(ValueError, match="topk"):
        Argmax(axis=2, topk=3).out_shape([(1, 2, 3)])


@pytest.mark.parametrize("scheme", SCHEMES)
def test_argmax_topk_quantised_matches_float(scheme: str) -> None:
    rng = np.random.default_rng(14)
    net = Network((6, 6, 4), [Conv2D(rng.normal(0, .3, (3, 3, 4, 5)), rng.normal(0, .1, 5), name="c"),
                              Argmax(axis=2, topk=2, name="am")])
    x = _img(rng, 4)
    q = quantize_network(net, x, scheme)
    res = q.run(x)
    f = q.run_float(x)
    # offsets agree wherever the float top-2 is not a near tie the quantisation could swap
    agree = np.mean(res["am"] == f["am"])
    assert res["am"].shape == (4, 5, 2) and agree > 0.9


@pytest.mark.parametrize("scheme", SCHEMES)
def test_concat_layer(scheme: str) -> None:
    rng = np.random.default_rng(15)
    net = Network((6, 6, 4), [Conv2D(rng.normal(0, .3, (3, 3, 4, 5)), rng.normal(0, .1, 5), padding=1, name="a"),
                              Conv2D(rng.normal(0, .9, (1, 1, 4, 3)), rng.normal(0, .1, 3), inputs=["input"], name="b"),
                              Concat(axis=-1, inputs=["a", "b"], name="cat")])
    x = _img(rng)
    q = quantize_network(net, x, scheme)
    plan = q.planned_qparams()
    assert plan["a"] == plan["b"] == plan["cat"]
    res = q.run(x[:3])
    np.testing.assert_array_equal(res["cat"], np.concatenate([res["a"], res["b"]], axis=-1))
    assert snr_db(q.run_float(x[:3])["cat"], res.dequantized("cat")) > MIN_SNR[scheme] - 15
    with pytest.raises(ValueError, match="concatenate"):
        Network((6, 6, 4), [Conv2D(rng.normal(size=(3, 3, 4, 5)), np.zeros(5), name="a"),
                            Concat(inputs=["a", "input"])])


@pytest.mark.parametrize("scheme", SCHEMES)
def test_pad_layer(scheme: str) -> None:
    rng = np.random.default_rng(16)
    net = Network((6, 6, 4), [Conv2D(rng.normal(0, .3, (3, 3, 4, 5)), rng.normal(0, .1, 5), name="c"),
                              Pad2D((1, 2, 0, 1), name="p"), Softmax(name="sm")])
    x = _img(rng)
    q = quantize_network(net, x, scheme)
    res = q.run(x[:3])
    qp = res.qparams["c"]
    zp = int(qp.zero_point) if qp.el_type.is_sa else 0
    expect = np.pad(res["c"], ((0, 0), (1, 2), (0, 1), (0, 0)), constant_values=zp)
    np.testing.assert_array_equal(res["p"], expect)
    assert res.qparams["p"] == qp and res["p"].shape == (3, 7, 5, 5)
    assert snr_db(q.run_float(x[:3])["sm"], res.dequantized("sm")) > MIN_SNR[scheme] - 25


SPECIALISED = {
    "transpose_k4x4_str2": (lambda r, **kw: TransposeConv2D(r.normal(0, .3, (4, 4, 4, 3)), r.normal(0, .1, 3),
                                                            stride=2, padding=1, name="o", **kw), "_k4x4_str2"),
    "transpose_k2x2_str2": (lambda r, **kw: TransposeConv2D(r.normal(0, .3, (2, 2, 4, 3)), r.normal(0, .1, 3),
                                                            stride=2, name="o", **kw), "_k2x2_str2"),
    "group_k3x3": (lambda r, **kw: GroupConv2D(r.normal(0, .3, (3, 3, 2, 4)), r.normal(0, .1, 4), padding=1,
                                               name="o", **kw), "_k3x3"),
}


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("kind", sorted(SPECIALISED))
def test_specialised_kernel_via_fn_equals_generic(kind: str, scheme: str) -> None:
    """``fn=`` picks an MLI specialisation; it gives the generic kernel's bits."""
    make, tail = SPECIALISED[kind]
    x = _img(np.random.default_rng(17), 3)
    generic = quantize_network(Network((6, 6, 4), [make(np.random.default_rng(18))]), x, scheme)
    name = generic.function_names()["o"] + tail
    special = quantize_network(Network((6, 6, 4), [make(np.random.default_rng(18), fn=name)]), x, scheme)
    assert special.function_names()["o"] == name
    np.testing.assert_array_equal(generic.run(x)["o"], special.run(x)["o"])
