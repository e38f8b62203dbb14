"""The prepared pooling steps of ``mapping="tflm"`` models (offloaded MAX_POOL_2D / AVERAGE_POOL_2D through
:class:`pymli.kernels.pooling.PreparedPool`): tensor by tensor what the capi functions compute, on runs that
switch platform (rounding, AVEPOOL_16BIT_MUL) and the JIT between Invokes, alone and batched."""

from __future__ import annotations

import numpy as np
import pytest

from pymli.config import Platform
from pymli.formats import RoundMode
from pymli.kernels import _jit
from pymli.tflite.examples import GraphMaker

from .test_tflm_model_prepared import _load, plain_run

PLATFORMS = [Platform(mode, False, mul16, f"{mode.name}-{mul16}") for mode in (RoundMode.UP, RoundMode.CONVERGENT)
             for mul16 in (False, True)]


def _model(seed: int):  # noqa: ANN202
    """Pools of several geometries (VALID / SAME, strides 1-2, kernels 2-3) between convolutions that
    change the quantisation (the average pools then requantise)."""
    g = GraphMaker((13, 11, 5), seed)
    g.conv(6, 3, act="RELU").pool("avg", 3, 2, "SAME").pool("max", 2, 1, "SAME").conv(7, 1)
    g.pool("avg", 2, 2).pool("max", 3, 1, "SAME").pool("avg", 2, 1, "VALID")
    return _load(g.finish())


@pytest.mark.parametrize("seed", range(3))
def test_pool_steps_follow_platform_and_jit(seed: int) -> None:
    m = _model(seed)
    assert sum(s.mli is not None and s.mli.kind == "pool" for s in m.steps) == 5
    rng = np.random.default_rng(seed)
    shape = m.graph.tensors[m.graph.inputs[0]].shape
    xs = [rng.integers(-128, 128, shape).astype(np.int8) for _ in range(3)]
    xs += [np.full(shape, -128, np.int8), np.full(shape, 127, np.int8)]
    prev = _jit.set_enabled(True)
    try:
        for jit in (True, False, True):
            _jit.set_enabled(jit)
            for plat in PLATFORMS + PLATFORMS[::-1]:  # the prepared steps see every platform twice
                for k, x in enumerate(xs):
                    want = plain_run(m, [x], plat)
                    y, run = m.run(x, platform=plat, capture=True)
                    for ti, v in want.items():
                        got = run.values[0][ti]
                        assert got.dtype == v.dtype and np.array_equal(got, v), (jit, plat, k, ti)
                yb = m.run(np.stack([x[0] for x in xs]), platform=plat)  # the batched kernels
                for k, x in enumerate(xs):
                    assert np.array_equal(yb[k], m.run(x, platform=plat)[0]), (jit, plat, k)
    finally:
        _jit.set_enabled(prev)
