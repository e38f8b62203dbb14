"""``warm_up()`` of the compiled reductions and table lookups (pymli/kernels/_jit_reduce.py, _jit_lut.py):
after it, the kernels that call them (argmax of every layout, l2_normalize, softmax, TFLM's wide
int8 softmax, the prepared ADD's pair gather) compile no new signature.

Skipped with a reason when numba is not installed (nothing is compiled then).
"""

from __future__ import annotations

from collections.abc import Iterator

import importlib

import numpy as np
import pytest

from pymli.arith.lut import create_lut
from pymli.kernels import _jit
from pymli.kernels import diverse as D
from pymli.kernels import transform as T
from pymli.tflm import activations as A

needs_numba = pytest.mark.skipif(not _jit.available(),
                                 reason="numba is not installed: the optional JIT (pip install '.[jit]') is not tested")


@pytest.fixture
def jit_on() -> Iterator[None]:
    prev = _jit.set_enabled(True)
    yield
    _jit.set_enabled(prev)


def _signatures(mod: object) -> dict[str, set]:
    return {name: set(getattr(mod, name).signatures) for name in mod.__all__ if name != "warm_up"}


def _new(before: dict[str, set], after: dict[str, set]) -> dict[str, set]:
    return {name: after[name] - before[name] for name in after if after[name] - before[name]}


@needs_numba
def test_reduce_warm_up_covers_the_kernels(jit_on: None) -> None:
    assert _jit.compiled("_jit_reduce") is not None
    mod = importlib.import_module("pymli.kernels._jit_reduce")  # the dispatchers themselves
    mod.warm_up()
    before = _signatures(mod)
    assert all(before.values())
    rng = np.random.default_rng(3)
    for dt in (np.int8, np.int16):
        x = rng.integers(-50, 50, (5, 6, 4)).astype(dt)
        for v in (x, x[:, ::2], np.flip(x, axis=0)):
            for axis in (-1, 0, 1, 2):
                D.argmax(v, axis, 2)
            D.argmax(v[:, :, :1], 2, 2)  # one slice along the last axis (strided)
            D.argmax(v[:1], 0, 2)  # one slice along the first axis
    lut, l2 = create_lut("softmax"), create_lut("l2_normalize")
    big16 = rng.integers(-3000, 3000, (64, 32, 16)).astype(np.int16)
    big8 = rng.integers(-100, 100, (64, 32, 16)).astype(np.int8)
    for axis in (-1, 0, 2):
        T.l2_normalize(big16, l2, axis=axis, bits=16, out_shift=15)
        T.l2_normalize(big8, l2, axis=axis, bits=8, out_shift=7, in_zp=3)
        T.softmax_fx(big16, lut, in_frac_bits=11, bits=16, axis=axis)
        T.softmax_fx(big8, lut, in_frac_bits=5, bits=8, axis=axis)
    assert _new(before, _signatures(mod)) == {}


@needs_numba
def test_lut_warm_up_covers_the_kernels(jit_on: None) -> None:
    assert _jit.compiled("_jit_lut") is not None
    mod = importlib.import_module("pymli.kernels._jit_lut")
    mod.warm_up()
    before = _signatures(mod)
    assert all(before.values())
    rng = np.random.default_rng(4)
    row = rng.integers(-128, 128, (1, 1000)).astype(np.int8)
    for od in (np.int8, np.int16):
        A.softmax_int8(row, input_multiplier=1 << 30, input_left_shift=20, diff_min=-1000, out_dtype=od)
    # the prepared ADD's call (pymli.tflite.tflm_model): its int8 table of results, two int8 operands
    table = rng.integers(-128, 128, 1 << 16).astype(np.int64).astype(np.int8, copy=False)
    x, y = (rng.integers(-128, 128, (3, 100)).astype(np.int8) for _ in range(2))
    out = np.empty(x.shape, np.int8)
    mod.gather_pairs(table, x.reshape(-1), y.reshape(-1), out.reshape(-1))
    assert np.array_equal(out, np.take(table, (x.view(np.uint8).astype(np.uint16) << 8) | y.view(np.uint8)))
    assert _new(before, _signatures(mod)) == {}
