"""Hypothesis-generated small networks, exported and run against the real MLI 2.0.2."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymli.config import VPX
from pymli.export import export_c
from pymli.models import (AvgPool, Concat, Conv2D, DepthwiseConv2D, Eltwise, FullyConnected, MaxPool, Network,
                          Pad2D, ReLU, Sigmoid, Softmax, Tanh)
from pymli.models.quantize import quantize_network

from .mli_c import compile_check, run_check


@st.composite
def networks(draw):  # type: ignore[no-untyped-def]
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    h = draw(st.integers(3, 7))
    w = draw(st.integers(3, 7))
    c = draw(st.integers(1, 4))
    layers = []
    shape = (h, w, c)
    names = ["input"]
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["conv", "dw", "maxpool", "avgpool", "relu", "branch_add", "concat",
                                     "sigm", "tanh", "pad"]))
        name = f"l{i}"
        hh, ww, cc = shape
        if kind == "conv":
            k = draw(st.integers(1, min(3, hh, ww)))
            co = draw(st.integers(1, 5))
            pad = draw(st.integers(0, k - 1))
            layers.append(Conv2D(rng.normal(0, 0.4, (k, k, cc, co)), rng.normal(0, 0.1, co), padding=pad,
                                 relu=draw(st.sampled_from(["none", "gen", "relu_6"])), name=name))
        elif kind == "dw":
            layers.append(DepthwiseConv2D(rng.normal(0, 0.4, (3, 3, 1, cc)), rng.normal(0, 0.1, cc), padding=1,
                                          name=name))
        elif kind in ("maxpool", "avgpool") and hh >= 2 and ww >= 2:
            cls = MaxPool if kind == "maxpool" else AvgPool
            layers.append(cls(2, stride=draw(st.integers(1, 2)), name=name))
        elif kind == "pad":
            layers.append(Pad2D(tuple(draw(st.integers(0, 2)) for _ in range(4)), name=name))
        elif kind == "relu":
            layers.append(ReLU(name=name))
        elif kind == "sigm":
            layers.append(Sigmoid(name=name))
        elif kind == "tanh":
            layers.append(Tanh(name=name))
        elif kind == "branch_add":
            prev = names[-1]
            layers.append(Conv2D(rng.normal(0, 0.4, (1, 1, cc, cc)), np.zeros(cc), name=name + "a", inputs=[prev]))
            layers.append(Eltwise("add", name=name, inputs=[prev, name + "a"]))
        elif kind == "concat":
            prev = names[-1]
            layers.append(Conv2D(rng.normal(0, 0.4, (1, 1, cc, 2)), np.zeros(2), name=name + "a", inputs=[prev]))
            layers.append(Conv2D(rng.normal(0, 0.4, (1, 1, cc, 3)), np.zeros(3), name=name + "b", inputs=[prev]))
            layers.append(Concat(axis=-1, name=name, inputs=[name + "a", name + "b"]))
        else:
            continue
        net = Network((h, w, c), layers)
        shape = net.shapes()[layers[-1].name]
        names.append(layers[-1].name)
    n_out = draw(st.integers(2, 6))
    layers.append(FullyConnected(rng.normal(0, 0.3, (int(np.prod(shape)), n_out)), np.zeros(n_out), name="fc"))
    if draw(st.booleans()):
        layers.append(Softmax(name="prob"))
    net = Network((h, w, c), layers, name=f"random{seed}")
    build = draw(st.sampled_from(["sa8", "fx16", "fx16_fx8_fx8"]))
    return quantize_network(net, rng.uniform(-1, 1, (12, h, w, c)), build)


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(net=networks())
def test_random_network_exports_bit_exact(net, mli_vpx, tmp_path_factory):
    out = tmp_path_factory.mktemp("net")
    res = export_c(net, out, None, VPX, n_default=3)
    r = run_check(compile_check(mli_vpx, out))
    assert r.returncode == 0 and "3/3 vectors bit-exact" in r.stdout, (net, r.stdout, r.stderr)
    assert res.plan.peak <= 1.1 * res.plan.lower_bound
