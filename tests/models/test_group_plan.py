"""Networks of group convolutions (groups of several channels, of one channel with a multiplier, many groups,
strides, dilations, paddings) and transpose convolutions: the prepared run
(:class:`pymli.kernels.conv_prepared.PreparedGroupConv` / ``PreparedTransposeConv`` as the layers' steps)
against the per-sample capi path and against the unprepared steps (the plain kernels on every call), bit for
bit, on every platform, the JIT on and off."""

from __future__ import annotations

import numpy as np
import pytest

from pymli.config import PRESETS, use_platform
from pymli.kernels import _jit
from pymli.kernels import convolution as KC
from pymli.models import Conv2D, FullyConnected, GroupConv2D, Network, TransposeConv2D
from pymli.models import layers as L
from pymli.models.quantize import quantize_network

from .test_plan import SCHEMES, assert_same, container_input

PREPARED_LAYERS = ("g4", "g8", "mult", "g1x1", "one", "t", "t2")


def _group_net(seed: int) -> Network:
    rng = np.random.default_rng(seed)

    def r(*s: int) -> np.ndarray:
        return rng.normal(0, .3, s)
    return Network((9, 8, 16), [
        GroupConv2D(r(3, 3, 4, 16), r(16), padding=1, relu="relu_6", name="g4"),  # 4 groups of 4 -> 4
        GroupConv2D(r(3, 2, 2, 24), r(24), stride=(2, 1), padding=(1, 1, 0, 1), dilation=(1, 2), name="g8"),
        GroupConv2D(r(2, 2, 1, 48), r(48), padding=(0, 1, 1, 0), name="mult"),  # depthwise, multiplier 2
        GroupConv2D(r(1, 1, 6, 8), r(8), name="g1x1"),  # 8 groups of 6 -> 1
        GroupConv2D(r(3, 3, 8, 20), r(20), padding=1, dilation=2, relu="gen", name="one"),  # one group
        TransposeConv2D(r(3, 3, 20, 6), r(6), stride=2, padding=1, name="t"),
        Conv2D(r(1, 1, 6, 6), r(6), name="pw"),
        TransposeConv2D(r(2, 4, 6, 4), r(4), stride=(1, 2), padding=(1, 0, 2, 1), relu="relu_1", name="t2"),
        FullyConnected(r(5 * 17 * 4, 5), r(5), name="fc"),
    ], name="groups")


def _quantised(scheme: str, seed: int = 0) -> Network:
    net = _group_net(seed)
    x = np.random.default_rng(seed + 1).uniform(-1, 1, (12, *net.input_shape))
    return quantize_network(net, x, scheme)


@pytest.fixture(params=[True, False], ids=["jit", "nojit"])
def jit(request: pytest.FixtureRequest):
    was = _jit.set_enabled(request.param)
    yield request.param
    _jit.set_enabled(was)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_group_network_equals_capi(scheme: str, jit: bool) -> None:
    q = _quantised(scheme)
    plan = q.prepare()
    assert set(PREPARED_LAYERS) <= set(plan.kernel_layers)
    x = container_input(q, 5, 2)
    for plat in PRESETS.values():
        assert_same(q, x, plat, batch=3)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_group_network_equals_the_unprepared_step(scheme: str, jit: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every captured value of ``Network.run`` with the prepared group layers equals the run whose group layers
    call the plain kernel on every call (the step before the prepared one), whole batches and single samples."""
    q = _quantised(scheme, 1)
    x = container_input(q, 6, 3)
    runs = {}
    for prepared in (True, False):
        if not prepared:
            def unprepared(kernel):  # type: ignore[no-untyped-def]
                def make(w, b, qk, *, out_dtype, **kw):  # type: ignore[no-untyped-def]
                    return lambda x: kernel(x, w, b, qk, **kw).astype(out_dtype, copy=False)
                return make
            monkeypatch.setattr(L, "prepare_group_conv", unprepared(KC.group_conv2d_hwcn))
            monkeypatch.setattr(L, "prepare_transpose_conv", unprepared(KC.transpose_conv2d_hwcn))
        q.invalidate()
        for plat in PRESETS.values():
            plan = q.prepare(plat)
            assert plan.mismatches == [] and set(PREPARED_LAYERS) <= set(plan.kernel_layers), plan.mismatches
            with use_platform(plat):
                runs[prepared, plat.name, 6] = q.run(x, platform=plat, batch=6)
                runs[prepared, plat.name, 1] = q.run(x, platform=plat, batch=1)
    for (prepared, name, batch), res in runs.items():
        if prepared:
            other = runs[False, name, batch]
            for k, v in other.values.items():
                assert np.array_equal(res.values[k], v), (k, name, batch)
            assert all(np.array_equal(res.values[k], runs[True, name, 1].values[k]) for k in res.values)
