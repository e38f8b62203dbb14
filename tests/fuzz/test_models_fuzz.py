"""``pymli.models`` against wrong arguments (issue 13, items 2 and 9).

Misuse probes of the network API: layer constructors given junk (None, strings, lists, NaN, dicts,
out-of-range ints, unknown names), :meth:`Network.add` with layers that do not fit or read unknown
tensors, :meth:`Network.run` / :meth:`Network.run_float` with inputs of the wrong shape, dtype or
values, unknown layer names, :func:`quantize_network` with a bad scheme or calibration data.
Properties: only ``MliError`` escapes (a failing ``add`` leaves the network unchanged); inputs are
never modified; the same call twice gives the same outcome; names users type are read in any case.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymli import MliError, Status
from pymli.models import (GRU, LSTM, Argmax, AvgPool, Concat, Conv2D, DepthwiseConv2D, Eltwise, FullyConnected,
                          GroupConv2D, L2Normalize, LeakyReLU, MaxPool, Network, Pad2D, Permute, PReLU, ReLU, Softmax,
                          TransposeConv2D)
from pymli.models.quantize import quantize_network

from .strategies import FUZZ, int_values, junk_values, odd_values

RNG = np.random.default_rng(7)
W3 = RNG.normal(size=(3, 3, 2, 4)) * 0.3
B4 = RNG.normal(size=4) * 0.1
WFC = RNG.normal(size=(36, 3)) * 0.2


def _small_net() -> Network:
    return Network((6, 6, 2), [Conv2D(W3, B4, padding=1, relu="gen", name="conv"), MaxPool(2, stride=2, name="pool"),
                               FullyConnected(WFC, np.zeros(3), name="fc")])


CALIB = RNG.normal(size=(8, 6, 6, 2))
QNET = quantize_network(_small_net(), CALIB, "sa8")


def _any() -> st.SearchStrategy:
    return st.one_of(st.integers(-2, 6), int_values(), odd_values(), junk_values(),
                     st.lists(st.integers(-2, 6), max_size=5), st.sampled_from(["none", "GEN", "Relu6", "bogus"]))


def _arr() -> st.SearchStrategy:
    return st.one_of(st.just(W3), st.just(B4), st.just(np.zeros((0,))), st.just(np.full((2, 2), math.nan)),
                     st.just(np.asarray(["a"], object)), junk_values(), st.just(np.zeros((3, 3, 2, 4, 1))))


# layer class -> strategy of (args, kwargs)
LAYERS: dict[str, tuple[type, st.SearchStrategy]] = {
    "conv2d": (Conv2D, st.tuples(st.tuples(_arr(), _arr()), st.fixed_dictionaries(
        {}, optional={"stride": _any(), "padding": _any(), "dilation": _any(), "relu": _any(), "name": _any()}))),
    "depthwise": (DepthwiseConv2D, st.tuples(st.tuples(_arr(), _arr()), st.fixed_dictionaries(
        {}, optional={"stride": _any(), "padding": _any()}))),
    "group": (GroupConv2D, st.tuples(st.tuples(_arr(), _arr()), st.fixed_dictionaries({}, optional={"stride": _any()}))),
    "transpose": (TransposeConv2D, st.tuples(st.tuples(_arr(), _arr()), st.fixed_dictionaries(
        {}, optional={"stride": _any(), "padding": _any()}))),
    "fully_connected": (FullyConnected, st.tuples(st.tuples(_arr(), _arr()), st.fixed_dictionaries(
        {}, optional={"relu": _any(), "per_step": _any(), "inputs": _any(), "out_q": _any(), "fn": _any()}))),
    "maxpool": (MaxPool, st.tuples(st.tuples(_any()), st.fixed_dictionaries({}, optional={"stride": _any(),
                                                                                           "padding": _any()}))),
    "avgpool": (AvgPool, st.tuples(st.tuples(_any()), st.fixed_dictionaries({}, optional={"stride": _any()}))),
    "eltwise": (Eltwise, st.tuples(st.tuples(_any()), st.fixed_dictionaries({}, optional={"const": _arr()}))),
    "relu": (ReLU, st.tuples(st.tuples(_any()), st.just({}))),
    "leaky_relu": (LeakyReLU, st.tuples(st.tuples(_any()), st.just({}))),
    "prelu": (PReLU, st.tuples(st.tuples(_arr()), st.fixed_dictionaries({}, optional={"axis": _any()}))),
    "softmax": (Softmax, st.tuples(st.tuples(_any()), st.just({}))),
    "l2_normalize": (L2Normalize, st.tuples(st.tuples(_any()), st.just({}))),
    "argmax": (Argmax, st.tuples(st.tuples(), st.fixed_dictionaries({}, optional={"axis": _any(), "topk": _any()}))),
    "permute": (Permute, st.tuples(st.tuples(_any()), st.just({}))),
    "concat": (Concat, st.tuples(st.tuples(), st.fixed_dictionaries({}, optional={"axis": _any()}))),
    "pad2d": (Pad2D, st.tuples(st.tuples(_any()), st.just({}))),
    "lstm": (LSTM, st.tuples(st.tuples(_arr(), _arr(), _arr()), st.fixed_dictionaries(
        {}, optional={"results": _any(), "direction": _any(), "act": _any()}))),
    "gru": (GRU, st.tuples(st.tuples(_arr(), _arr(), _arr()), st.fixed_dictionaries(
        {}, optional={"results": _any(), "direction": _any()}))),
}


def _outcome(call, /, *a, **kw) -> str:  # noqa: ANN001
    try:
        call(*a, **kw)
    except MliError as e:
        return e.status.name
    except NotImplementedError:  # KernelMissing: a capability pymli.capi lacks, not a misuse
        return "KernelMissing"
    except Exception as e:  # noqa: BLE001 - the finding
        return f"{type(e).__name__}: {str(e)[:100]}"
    return "OK"


def _mli_only(*outcomes: str) -> None:
    for o in outcomes:
        assert o in ("OK", "KernelMissing") or o.isupper(), f"non-MliError escaped: {o}"


@pytest.mark.parametrize("kind", sorted(LAYERS))
@FUZZ
@given(data=st.data())
def test_layer_constructor(kind: str, data: st.DataObject) -> None:
    """A layer built from junk refuses with MliError; one that builds can be added to a network
    (or refused with MliError), leaving the network as it was on failure."""
    cls, spec = LAYERS[kind]
    a, kw = data.draw(spec, label="args")
    o1, o2 = _outcome(cls, *a, **kw), _outcome(cls, *a, **kw)
    _mli_only(o1)
    assert o1 == o2, (o1, o2)
    if o1 == "OK":
        net = _small_net()
        before = [la.name for la in net]
        o = _outcome(net.add, cls(*a, **kw))
        _mli_only(o)
        if o != "OK":
            assert [la.name for la in net] == before


def _inputs() -> st.SearchStrategy:
    shapes = st.sampled_from([(6, 6, 2), (2, 6, 6, 2), (0, 6, 6, 2), (6, 6), (1, 6, 6, 3), (36,), ()])
    dtypes = st.sampled_from([np.float32, np.float64, np.int8, np.int16, np.int64, np.uint8, bool, object, "U1"])
    fills = st.sampled_from([0.5, -3.0, math.nan, math.inf, 200, -129, 1e30])
    arrays = st.builds(lambda s, d, f: np.full(s, f if np.dtype(d).kind != "U" else "a").astype(d)
                       if np.dtype(d).kind not in "iub" or math.isfinite(f) else np.zeros(s, d), shapes, dtypes, fills)
    return st.one_of(arrays, junk_values(), st.just([[1.0]]))


@FUZZ
@given(x=_inputs(), platform=st.one_of(st.none(), st.sampled_from(["EM", "vpx", "Vpx-Full-Accu", "arm"]), junk_values()),
       capture=st.one_of(st.booleans(), st.just(["conv"]), st.just(["nope"]), junk_values()))
def test_run_with_wrong_input(x: object, platform: object, capture: object) -> None:
    """run / run_float / predict with inputs of any shape, dtype or value: only MliError, twice the same."""
    snap = np.array(x, copy=True) if isinstance(x, np.ndarray) else None
    for fn, kw in ((QNET.run, {"platform": platform, "capture": capture}), (QNET.run_float, {}),
                   (QNET.predict, {})):
        o1, o2 = _outcome(fn, x, **kw), _outcome(fn, x, **kw)
        _mli_only(o1)
        assert o1 == o2
    if snap is not None:
        assert np.array_equal(np.asarray(x), snap, equal_nan=snap.dtype.kind == "f")


def test_platform_names_any_case_in_run() -> None:
    x = CALIB[:2]
    ref = QNET.run(x, platform="em").output
    assert np.array_equal(QNET.run(x, platform="EM").output, ref)
    with pytest.raises(MliError) as e:
        QNET.run(x, platform="arm")
    assert "vpx" in str(e.value)


@pytest.mark.parametrize("name", ["nope", "", None, 3, "CONV"])
def test_unknown_layer_names(name: object) -> None:
    with pytest.raises(MliError) as e:
        QNET[name]  # noqa: B018
    assert isinstance(e.value, KeyError) and "conv" in str(e.value)
    for call in (lambda: QNET.run_layer(name, [CALIB[:1]], [QNET.input_q]),
                 lambda: QNET.run(CALIB[:1], capture=[name])):
        _mli_only(_outcome(call))
        assert _outcome(call) != "OK"


@pytest.mark.parametrize(("build", "status"), [
    (lambda n: n.add(ReLU(name="conv")), Status.BAD_FUNC_CFG),  # duplicate name
    (lambda n: n.add(ReLU(inputs=["ghost"])), Status.BAD_FUNC_CFG),  # unknown tensor
    (lambda n: n.add(Eltwise("add")), Status.BAD_FUNC_CFG),  # one input for a two-input op
    (lambda n: n.add(Conv2D(W3, B4)), Status.SHAPE_MISMATCH),  # after fc: not an HWC input
    (lambda n: n.add(Softmax(axis=2)), Status.BAD_FUNC_CFG),  # axis >= rank of fc's (3,)
    (lambda n: n.add(Permute([1, 0])), Status.BAD_FUNC_CFG),
    (lambda n: n.add("relu"), Status.BAD_FUNC_CFG),
    (lambda n: n.add(MaxPool(9, inputs=["pool"])), Status.BAD_FUNC_CFG),  # kernel larger than the input
])
def test_add_refuses_and_leaves_the_network(build, status: Status) -> None:  # noqa: ANN001
    net = _small_net()
    before = [la.name for la in net]
    with pytest.raises(MliError) as e:
        build(net)
    assert e.value.status == status
    assert [la.name for la in net] == before


@pytest.mark.parametrize(("kw", "status"), [
    ({"scheme": "int4"}, Status.BAD_FUNC_CFG),
    ({"scheme": None}, Status.BAD_FUNC_CFG),
    ({"percentile": 0}, Status.BAD_FUNC_CFG),
    ({"percentile": math.nan}, Status.BAD_FUNC_CFG),
    ({"headroom_bits": -1}, Status.BAD_FUNC_CFG),
    ({"calib_x": np.zeros((0, 6, 6, 2))}, Status.SHAPE_MISMATCH),
    ({"calib_x": np.full((2, 6, 6, 2), math.inf)}, Status.BAD_TENSOR),
    ({"calib_x": np.zeros((2, 5, 6, 2))}, Status.SHAPE_MISMATCH),
    ({"calib_x": np.zeros((2, 6, 6, 2), np.int8)}, Status.TYPE_MISMATCH),
    ({"calib_x": None}, Status.BAD_TENSOR),
])
def test_quantize_network_misuse(kw: dict, status: Status) -> None:
    args = {"calib_x": CALIB, "scheme": "sa8", **kw}
    with pytest.raises(MliError) as e:
        quantize_network(_small_net(), args.pop("calib_x"), **args)
    assert e.value.status == status


def test_scheme_and_layer_names_any_case() -> None:
    a = quantize_network(_small_net(), CALIB, "SA8").run(CALIB[:2]).output
    b = QNET.run(CALIB[:2]).output
    assert np.array_equal(a, b)
    assert Eltwise("ADD").op == "add"
    assert LSTM(np.zeros((4, 2, 3)), np.zeros((4, 3, 3)), np.zeros((4, 3)), results="LAST",
                direction="Backward").direction == "backward"
