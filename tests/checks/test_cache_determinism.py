"""A check's result never depends on earlier calls (issue 13 item 5).

The struct checks are memoised under a key of the fields they read; a rank-0 tensor's ``value`` is
its C data pointer, so it belongs to the key. Each test runs the same pair of calls in both orders.
"""

from __future__ import annotations

import numpy as np
import pytest

from pymli import MliError, Status, Tensor, capi
from pymli.capi.types import FullyConnectedCfg
from pymli.checks import struct_key
from pymli.checks.conv import sa8_params_key


def _outcome(call) -> tuple[Status, str]:
    try:
        call()
    except MliError as e:
        return e.status, e.message
    return Status.OK, ""


def _fc_call(value: int, m: int):
    inp = Tensor.from_numpy(np.int16(value), "FX_16")
    inp.capacity = 2
    w = Tensor.from_numpy(np.ones((1, m), np.int16), "FX_16")
    b = Tensor.from_numpy(np.zeros((m,), np.int16), "FX_16")
    out = Tensor.from_numpy(np.zeros((m,), np.int16), "FX_16")
    return lambda: capi.mli_krn_fully_connected_fx16(inp, w, b, FullyConnectedCfg(), out)


@pytest.mark.parametrize("order", [(0, 5), (5, 0)])
def test_rank0_value_changes_the_outcome_in_any_order(order) -> None:
    m = 7 + order[0]  # a shape no other test uses: the cache starts without this key
    got = {v: _outcome(_fc_call(v, m)) for v in order}
    # value 0: the rank-0 "data pointer" is NULL; value 5: a non-NULL value C would use as an address.
    assert got[0][0] is Status.BAD_TENSOR and "NULL" in got[0][1]
    assert got[5][0] is Status.BAD_TENSOR and "rank-0 tensor (value 5)" in got[5][1]
    assert {v: _outcome(_fc_call(v, m)) for v in order} == got  # and again, after both


def test_same_call_twice_same_status() -> None:
    seen = {}
    for v in (0, 3, 0, 3):
        seen.setdefault(v, _outcome(_fc_call(v, 4)))
        assert _outcome(_fc_call(v, 4)) == seen[v]
    assert seen[0] != seen[3]


def test_struct_key_covers_the_checked_fields() -> None:
    t = Tensor.from_numpy(np.zeros((2, 3), np.int16), "FX_16")
    k = struct_key(t)
    for field, value in (("capacity", 6), ("mem_stride", [4, 1]), ("shape", [3, 2]), ("rank", 1),
                         ("data", None)):
        u = Tensor.from_numpy(np.zeros((2, 3), np.int16), "FX_16")
        setattr(u, field, value)
        assert struct_key(u) != k, field
    a, b = Tensor.from_numpy(np.int16(0), "FX_16"), Tensor.from_numpy(np.int16(1), "FX_16")
    assert struct_key(a) != struct_key(b)


def test_sa8_key_covers_per_axis_values() -> None:
    def sa(scales):
        return Tensor.from_numpy(np.zeros((2, 3), np.int8), "SA_8", zero_point=[0, 0, 0], scale=scales,
                                 scale_frac_bits=[0, 0, 0], dim=1)
    assert sa8_params_key(sa([1, 2, 3])) != sa8_params_key(sa([1, 2, 4]))
    assert sa8_params_key(sa([1, 2, 3])) == sa8_params_key(sa([1, 2, 3]))
