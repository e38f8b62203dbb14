"""A model's convolution, depthwise and fully connected steps take their layers' one-shape forms after the
first Invoke (``PreparedFc.single`` / ``PreparedConv.single``): seeded random models whose runs switch
platform and the JIT between calls, against the same model's batched run (which never takes those forms)
and against the JIT off."""

from __future__ import annotations

import numpy as np
import pytest

from pymli import EM, VPX, use_platform
from pymli.kernels import _jit
from pymli.tflite import load
from pymli.tflite.examples import GraphMaker

pytestmark = pytest.mark.skipif(not _jit.available(), reason="numba (the jit extra) is not installed")


def _model(seed: int) -> bytes:
    g = GraphMaker((33, 31, 3), seed, description="one-shape steps")
    g.conv(8, 3, stride=2, act="RELU6").conv(24, 1, act="RELU6").dwconv(3, act="RELU6").conv(12, 1)
    g.conv(40, 1, act="RELU6").dwconv(3, stride=2, act="RELU6").conv(16, 1)
    g.reshape((1, 9 * 8 * 16)).fc(37, act="RELU").fc(10)
    return g.finish()


@pytest.mark.parametrize("seed", range(3))
def test_single_sample_runs_equal_the_batch_and_the_numpy_path(seed: int) -> None:
    m = load(_model(seed))
    rng = np.random.default_rng(seed)
    xs = rng.integers(-128, 128, (6, *m.inputs[0].shape[1:])).astype(np.int8)
    xs[0] = -128
    xs[1] = 127
    prev = _jit.set_enabled(True)
    try:
        wants = {}
        for plat in (VPX, EM):
            with use_platform(plat):
                wants[plat.name] = m.run(xs)  # a batch: the steps' general calls
        taken = 0
        for rep in range(3):
            for plat in (VPX, EM, VPX):
                for k, x in enumerate(xs):
                    with use_platform(plat):
                        got = m.run(x[None])
                    assert np.array_equal(got, wants[plat.name][k:k + 1]), (rep, plat.name, k)
            taken = sum("one_shape" in getattr(c, "__qualname__", "") for c in m._calls)
        # every step but the reshape: the first conv2d (3x3, stride 2: the one-group compiled product), and
        # the last fully connected layer (370 multiply-adds) too
        assert taken == 9, "the one-shape forms were not taken"
        _jit.set_enabled(False)
        for plat in (VPX, EM):
            with use_platform(plat):
                assert np.array_equal(m.run(xs[2:3]), wants[plat.name][2:3]), plat.name
    finally:
        _jit.set_enabled(prev)
