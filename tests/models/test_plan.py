"""Prepared execution (``Network.prepare`` / ``Plan``) against the per-sample capi path, bit for bit."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import numpy as np
import pytest

from pymli.config import EM, PRESETS, VPX, Platform, use_platform
from pymli.models import (
    GRU,
    LSTM,
    Argmax,
    AvgPool,
    Concat,
    Conv2D,
    DepthwiseConv2D,
    Eltwise,
    FullyConnected,
    GroupConv2D,
    L2Normalize,
    MaxPool,
    Network,
    Pad2D,
    Permute,
    QParams,
    ReLU,
    Sigmoid,
    Softmax,
    Tanh,
    TransposeConv2D,
)
from pymli.models.network import INPUT
from pymli.models.qparams import Const
from pymli.models.recurrent import UnrolledLSTM
from pymli.models.quantize import quantize_network

from .test_network import every_layer_net

SCHEMES = ("fx16", "fx16_fx8_fx8", "sa8")


def capi_run(net: Network, x: np.ndarray, platform: Platform) -> tuple[dict[str, np.ndarray], dict[str, QParams]]:
    """The reference: every sample, every layer through its capi function with fresh structs."""
    fns = net.functions()
    shapes = net.shapes()
    values: dict[str, list[np.ndarray]] = {}
    qps: dict[str, QParams] = {}
    with use_platform(platform):
        for la in net.layers:
            la.prepare()
        for n in range(x.shape[0]):
            acts: dict[str, Any] = {INPUT: (x[n], net.input_q)}
            for la in net.layers:
                in_qs = [acts[i][1] for i in la.inputs]
                out = la.output_qparams(in_qs).empty(shapes[la.name])
                extras = la.invoke(fns[la.name], [q.tensor(acts[i][0]) for q, i in zip(in_qs, la.inputs)], out)
                acts[la.name] = (out.numpy(), QParams.of(out))
                for k, (v, q) in (extras or {}).items():
                    values.setdefault(f"{la.name}.{k}", []).append(v)
                    qps[f"{la.name}.{k}"] = q
                values.setdefault(la.name, []).append(acts[la.name][0])
                qps[la.name] = acts[la.name][1]
    return {k: np.stack(v) for k, v in values.items()}, qps


def container_input(net: Network, n: int, seed: int) -> np.ndarray:
    """Random quantised input over the whole container (both limits and the zero point included)."""
    q = net.input_q
    x = np.random.default_rng(seed).integers(q.qmin, q.qmax, (n, *net.input_shape), endpoint=True)
    x.reshape(-1)[:3] = [q.qmin, q.qmax, q.zero_point if q.el_type.is_sa else 0]
    return x.astype(q.el_type.dtype)


def assert_same(net: Network, x: np.ndarray, platform: Platform, *, batch: int = 64) -> None:
    want, want_q = capi_run(net, x, platform)
    res = net.run(x, platform=platform, batch=batch)
    plan = net.prepare(platform)
    assert plan.mismatches == []
    assert set(res.values) == set(want) | {INPUT}
    assert np.array_equal(res.values[INPUT], x)
    for k, v in want.items():
        got = res.values[k]
        assert got.dtype == v.dtype and got.shape == v.shape, k
        assert np.array_equal(got, v), (k, platform.name)
        assert res.qparams[k] == want_q[k], k


def _conv_net(rng: np.random.Generator) -> Network:
    def r(*s: int) -> np.ndarray:
        return rng.normal(0, .3, s)
    return Network((9, 7, 4), [
        Conv2D(r(3, 2, 4, 6), r(6), stride=(2, 1), padding=(1, 0, 2, 1), dilation=(1, 2), relu="relu_1", name="c"),
        GroupConv2D(r(3, 3, 3, 6), r(6), padding=1, name="g"),
        DepthwiseConv2D(r(2, 2, 1, 6), r(6), stride=2, padding=(0, 1, 1, 0), relu="relu_6", name="dw"),
        TransposeConv2D(r(4, 4, 6, 3), r(3), stride=2, padding=1, name="t"),
        AvgPool((2, 3), stride=(1, 2), padding=(1, 0, 1, 1), name="ap"),
        MaxPool(3, stride=2, padding=1, name="mp"),
        Conv2D(r(1, 1, 3, 5), r(5), name="pw"),
        FullyConnected(r(20, 7), r(7), relu="gen", name="fc"),
        Tanh(name="th"),
        Eltwise("mul", const=0.5, name="half"),
        Eltwise("add", const=r(7), name="plus"),
        FullyConnected(r(7, 4), r(4), name="fc2"),
        Sigmoid(name="sg"),
    ], name="conv-mix")


def _move_net(rng: np.random.Generator) -> Network:
    def r(*s: int) -> np.ndarray:
        return rng.normal(0, .3, s)
    return Network((6, 5, 3), [
        Conv2D(r(3, 3, 3, 4), r(4), padding=1, name="a"),
        Conv2D(r(1, 1, 3, 4), r(4), inputs=["input"], name="b"),
        Concat(inputs=["a", "b"], name="cat"),
        Permute([1, 0, 2], name="perm"),
        Pad2D((1, 0, 2, 1), name="pad"),
        Eltwise("max", inputs=["pad", "pad"], name="mx"),
        ReLU("relu_6", name="r6"),
        L2Normalize(name="l2w"),
        L2Normalize(axis=2, name="l2", inputs=["r6"]),
        Softmax(name="smw", inputs=["pad"]),
        Softmax(axis=1, name="sm", inputs=["l2"]),
        Eltwise("add", inputs=["sm", "smw"], name="sum"),
        Eltwise("sub", inputs=["sum", "l2w"], name="diff"),
        Argmax(name="arg"),
    ], name="move-mix")


def _rnn_net(rng: np.random.Generator) -> Network:
    def r(*s: int) -> np.ndarray:
        return rng.normal(0, .3, s)
    return Network((5, 6), [
        FullyConnected(r(6, 8), r(8), per_step=True, relu="gen", name="fc"),
        LSTM(r(4, 8, 4), r(4, 4, 4), r(4, 4), name="lstm"),
        GRU(r(3, 4, 4), r(3, 4, 4), r(3, 4), direction="backward", results="last", name="gru"),
        FullyConnected(r(4, 3), r(3), name="out"),
    ], name="rnn-mix")


NETS = {"every-layer": lambda rng: every_layer_net(int(rng.integers(100))), "conv": _conv_net, "move": _move_net,
        "rnn": _rnn_net}


def _quantised(name: str, scheme: str, seed: int = 0) -> Network:
    rng = np.random.default_rng(seed)
    net = NETS[name](rng)
    x = rng.uniform(-1, 1, (12, *net.input_shape))
    return quantize_network(net, x, scheme)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("name", sorted(NETS))
def test_prepared_run_equals_capi_on_every_platform(name: str, scheme: str) -> None:
    q = _quantised(name, scheme)
    x = container_input(q, 5, 1)
    for plat in PRESETS.values():
        assert_same(q, x, plat, batch=3)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_kernel_steps_cover_the_layer_types(scheme: str) -> None:
    q = _quantised("every-layer", scheme)
    plan = q.prepare()
    fast = set(plan.kernel_layers)
    assert fast == {la.name for la in q.layers}
    assert plan.mismatches == []
    conv = _quantised("conv", scheme).prepare()
    assert set(conv.kernel_layers) == {la.name for la in _quantised("conv", scheme).layers}
    move = _quantised("move", scheme).prepare()
    assert [st.name for st in move.steps if not st.kernel] == ["arg"] and move.mismatches == []
    rnn = _quantised("rnn", scheme).prepare()
    assert rnn.kernel_layers == ["fc", "lstm", "gru", "out"] and rnn.steps[1].extras_q


@pytest.mark.parametrize("seed", range(12))
def test_random_networks(seed: int) -> None:
    rng = np.random.default_rng(seed)
    h, w, c = (int(v) for v in rng.integers(3, 9, 3))
    layers: list[Any] = []
    shape = (h, w, c)
    for k in range(int(rng.integers(2, 6))):
        kind = rng.choice(["conv", "dw", "max", "ave", "relu", "sigm", "add"])
        kh, kw = (int(v) for v in rng.integers(1, 4, 2))
        kh, kw = min(kh, shape[0]), min(kw, shape[1])
        pad = tuple(int(v) for v in rng.integers(0, 2, 4))
        pad = (min(pad[0], kh - 1), min(pad[1], kh - 1), min(pad[2], kw - 1), min(pad[3], kw - 1))
        stride = tuple(int(v) for v in rng.integers(1, 3, 2))
        name = f"l{k}"
        if kind == "conv":
            cout = int(rng.integers(1, 6))
            layers.append(Conv2D(rng.normal(0, .4, (kh, kw, shape[2], cout)), rng.normal(0, .2, cout), stride=stride,
                                 padding=pad, relu=str(rng.choice(["none", "gen", "relu_1"])), name=name))
        elif kind == "dw":
            layers.append(DepthwiseConv2D(rng.normal(0, .4, (kh, kw, 1, shape[2])), rng.normal(0, .2, shape[2]),
                                          stride=stride, padding=pad, name=name))
        elif kind in ("max", "ave"):
            layers.append((MaxPool if kind == "max" else AvgPool)((kh, kw), stride=stride, padding=pad, name=name))
        elif kind == "relu":
            layers.append(ReLU(str(rng.choice(["gen", "relu_1", "relu_6"])), name=name))
        elif kind == "sigm":
            layers.append(Sigmoid(name=name))
        else:
            layers.append(Eltwise(str(rng.choice(["add", "sub", "mul", "min", "max"])),
                                  inputs=[layers[-1].name if layers else "input", "input" if not layers else
                                          layers[-1].name], name=name))
        net = Network((h, w, c), layers)
        shape = net.shapes()[name]
    layers.append(FullyConnected(rng.normal(0, .3, (int(np.prod(shape)), 3)), rng.normal(0, .1, 3), name="fc"))
    net = Network((h, w, c), layers)
    scheme = SCHEMES[seed % 3]
    q = quantize_network(net, rng.uniform(-1, 1, (8, h, w, c)), scheme)
    x = container_input(q, 4, seed)
    for plat in (VPX, EM):
        assert_same(q, x, plat, batch=int(rng.integers(1, 5)))


@pytest.mark.parametrize("scheme", SCHEMES)
def test_batches_equal_single_samples(scheme: str) -> None:
    q = _quantised("conv", scheme, 3)
    x = container_input(q, 7, 2)
    whole = q.run(x, capture=False)
    for b in (1, 2, 7, 64):
        assert np.array_equal(q.run(x, capture=False, batch=b).output, whole.output)
    for n in range(x.shape[0]):
        assert np.array_equal(q.run(x[n], capture=False).output[0], whole.output[n])
    plan = q.prepare()
    assert np.array_equal(plan(x), whole.output)


def test_capture_lists_and_output_only() -> None:
    q = _quantised("every-layer", "sa8")
    x = container_input(q, 3, 5)
    full = q.run(x)
    some = q.run(x, capture=["dw", "input"])
    assert set(some.values) == {"dw", "input", q.output_name}
    assert np.array_equal(some["dw"], full["dw"]) and np.array_equal(some["input"], x)
    out = q.run(x, capture=False)
    assert set(out.values) == {q.output_name} and np.array_equal(out.output, full.output)
    assert out.qparams[q.output_name] == full.qparams[q.output_name]
    rnn = _quantised("rnn", "fx16")
    res = rnn.run(container_input(rnn, 2, 1))
    assert "lstm.cell" in res.values and res["lstm.cell"].shape[0] == 2


def test_plan_is_cached_and_invalidated() -> None:
    q = _quantised("conv", "sa8")
    x = container_input(q, 2, 7)
    plan = q.prepare()
    assert q.prepare() is plan and q.prepare(VPX) is not q.prepare(EM)
    q.run(x)
    assert q.prepare() is plan
    # a reassigned constant: the next run uses it
    fc = q["fc2"]
    fc.bias.set_quantized(np.asarray(fc.bias.q) + 3, fc.bias.qp)
    assert q.prepare() is not plan
    assert_same(q, x, VPX)
    # a reassigned output quantisation
    plan = q.prepare()
    q["c"].out_q = QParams.sa(int(q["c"].out_q.zero_point) + 1, q["c"].out_q.scale, q["c"].out_q.scale_frac_bits)
    assert q.prepare() is not plan
    assert_same(q, x, VPX)
    # an added layer
    plan = q.prepare()
    q.add(ReLU(name="last"))
    assert q.prepare() is not plan and q.run(x).output_name == "last"
    assert_same(q, x, EM)
    # an in-place edit needs invalidate()
    plan = q.prepare()
    q.invalidate()
    assert q.prepare() is not plan


def test_rounding_is_read_at_run_time() -> None:
    q = _quantised("conv", "fx16")
    x = container_input(q, 3, 9)
    plan = q.prepare(VPX)
    for plat in (VPX, EM):
        want, _ = capi_run(q, x, plat)
        with use_platform(plat):
            assert np.array_equal(plan(x), want[q.output_name])
    up, even = capi_run(q, x, VPX)[0], capi_run(q, x, EM)[0]
    assert any(not np.array_equal(up[k], even[k]) for k in up)  # the two roundings differ somewhere


def test_networks_pickle_and_copy_without_plans() -> None:
    q = _quantised("every-layer", "fx16")
    x = container_input(q, 2, 3)
    want = q.run(x).output
    for other in (pickle.loads(pickle.dumps(q)), copy.deepcopy(q)):
        assert "_plan_cache" not in vars(other)
        assert np.array_equal(other.run(x).output, want)


def test_a_wrong_kernel_step_falls_back_to_capi(monkeypatch: pytest.MonkeyPatch) -> None:
    q = _quantised("conv", "sa8")
    x = container_input(q, 2, 4)

    def wrong(self, *a, **k):  # type: ignore[no-untyped-def]
        return lambda xs: np.zeros((xs[0].shape[0], 7), np.int8)
    monkeypatch.setattr(FullyConnected, "plan_step", wrong)
    plan = q.prepare(VPX)
    assert plan.mismatches == ["fc", "fc2"] and "fc" not in plan.kernel_layers
    want, _ = capi_run(q, x, VPX)
    with use_platform(VPX):
        assert np.array_equal(plan(x), want[q.output_name])


def test_prepare_rejects_a_float_network() -> None:
    with pytest.raises(ValueError, match="not quantised"):
        _conv_net(np.random.default_rng(0)).prepare()


@pytest.mark.parametrize("scheme", SCHEMES)
def test_specialised_functions_give_the_same_plan_results(scheme: str) -> None:
    q = _quantised("conv", scheme, 1)
    x = container_input(q, 3, 8)
    names = q.functions(specialise=True)
    assert names["pw"].__name__.endswith("_k1x1") and names["g"].__name__.endswith("_k3x3")
    plan = q.prepare(specialise=True)
    assert plan is not q.prepare() and plan.kernel_layers == [la.name for la in q.layers]
    want = capi_run(q, x, VPX)[0]
    with use_platform(VPX):
        res = q.run(x, specialise=True)
    assert all(np.array_equal(res[k], want[k]) for k in want)


def test_a_function_named_with_fn_that_is_no_registry_choice_calls_capi() -> None:
    q = _quantised("conv", "sa8", 2)
    q["fc2"].fn = "mli_krn_fully_connected_sa8_sa8_sa32_ext_bias"
    x = container_input(q, 3, 6)
    plan = q.prepare(VPX)
    assert "fc2" not in plan.kernel_layers and "fc" in plan.kernel_layers
    assert_same(q, x, VPX, batch=2)


@pytest.mark.parametrize("w_bits", [16, 8])
@pytest.mark.parametrize("results", ["all", "last"])
def test_unrolled_lstm_step_equals_its_primitives(w_bits: int, results: str) -> None:
    rng = np.random.default_rng(w_bits)

    def const(shape: tuple[int, ...], frac: int, bits: int = w_bits) -> Const:
        hi = (1 << (bits - 1)) - 1
        return Const.quantized(rng.integers(-hi // 3, hi // 3, shape, endpoint=True).astype(np.int16 if bits == 16
                                                                                          else np.int8),
                               QParams.fx(bits, frac))
    fx = {"h0": 15, "c0": 12, "dense_i": 11, "dense_g": 12, "dense_f": 10, "dense_o": 11, "mul_fc": 12,
          "mul_ig": 13, "add_c": 11, "mul_out": 14}
    layer = UnrolledLSTM(const((4, 6, 5), w_bits - 2), const((4, 5, 5), w_bits - 1), const((4, 5), w_bits - 3),
                         qs={k: QParams.fx(16, f) for k, f in fx.items()}, results=results, name="u")
    net = Network((7, 6), [layer, FullyConnected(const((5 * (7 if results == "all" else 1), 3), 6),
                                                 const((3,), 5), name="fc")],
                  input_q=QParams.fx(16, 11))
    net["fc"].out_q = QParams.fx(16, 9)
    assert net.prepare().kernel_layers == ["u", "fc"]
    x = container_input(net, 3, 4)
    for plat in (VPX, EM):
        assert_same(net, x, plat, batch=2)
