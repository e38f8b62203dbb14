"""The int32 path of pymli.arith.eltwise.fx_eltwise equals its int64 model for every parameter it accepts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymli.arith import eltwise as E
from pymli.config import EM, VPX, use_platform

MODES = {"up": VPX, "convergent": EM}


def _int64_model(op, a, b, p, bits):
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(E, "_fx_eltwise_int32", lambda *args: None)
        return E.fx_eltwise(op, a, b, p, bits)
    finally:
        mp.undo()


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(list(E.EltOp)), st.sampled_from([8, 16]),
       st.tuples(st.integers(-40, 60), st.integers(-40, 60), st.integers(-40, 60)),
       st.sampled_from(["tt", "st", "ts", "ss"]), st.sampled_from(list(MODES)), st.integers(0, 2**32 - 1))
def test_int32_path_equals_int64_model(op, bits, fbs, forms, mode, seed) -> None:
    rng = np.random.default_rng(seed)
    dt = np.int8 if bits == 8 else np.int16
    info = np.iinfo(dt)
    f1, f2, fo = fbs
    if op in (E.EltOp.MIN, E.EltOp.MAX):
        f2 = f1
    p = E.fx_params(op, f1, f2, fo, bits)
    a = rng.integers(info.min, info.max + 1, 200).astype(dt)
    b = rng.integers(info.min, info.max + 1, 200).astype(dt)
    a[:7] = [info.min, info.max, 0, -1, 1, info.min, info.max]
    b[:7] = [info.min, info.max, 0, 1, -1, info.max, info.min]
    if forms[0] == "s":
        a = np.asarray(a[int(rng.integers(0, 200))])
    if forms[1] == "s":
        b = np.asarray(b[int(rng.integers(0, 200))])
    with use_platform(MODES[mode]):
        fast = E._fx_eltwise_int32(op, a, b, p, bits)
        want = _int64_model(op, a, b, p, bits)
    if fast is None:  # outside the int32 bounds: the int64 model answers
        return
    assert fast.dtype == dt and fast.shape == want.shape
    assert np.array_equal(fast, want)


def test_int32_path_taken_for_usual_formats() -> None:
    a = np.arange(-5, 5, dtype=np.int16)
    for op in E.EltOp:
        p = E.fx_params(op, 10, 10 if op in (E.EltOp.MIN, E.EltOp.MAX) else 12, 9, 16)
        assert E._fx_eltwise_int32(op, a, a, p, 16) is not None
    # mul with a 31-bit shift may round 2**30 up under ROUND_UP: left to the int64 model
    assert E._fx_eltwise_int32(E.EltOp.MUL, a, a, E.fx_params(E.EltOp.MUL, 30, 30, 0, 16), 16) is None
