"""``pymli.quant`` against wrong data and parameters (issue 13, items 2 and 9).

``quantize`` / ``choose_fx_frac_bits`` / ``choose_sa_params`` get float data with NaN, inf and huge
values, empty and 0-d arrays, lists, ``None``, object arrays, and parameters beyond their C types;
``dequantize`` gets invalid tensor structs. Properties: only ``MliError`` escapes, the input array is
never modified, the same call twice gives the same result.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymli import quant

from .known import KNOWN_QUANT
from .strategies import FUZZ, int_values, junk_values, odd_values, outcome, tensor_field_mutations, tensors

_FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)


def _data() -> st.SearchStrategy:
    return st.one_of(
        st.lists(_FLOATS, min_size=0, max_size=12).map(lambda v: np.asarray(v, np.float64)),
        st.lists(st.floats(-4, 4), min_size=1, max_size=24).map(lambda v: np.asarray(v).reshape(-1, 1 + (len(v) % 2 == 0))),
        st.just(np.float32(1.5)), st.just(np.zeros((2, 0))), st.just([1.0, math.nan]), st.just(None),
        st.just(np.asarray(["a"], object)), st.just(np.arange(6, dtype=np.int64) * 2**60),
    )


def _param() -> st.SearchStrategy:
    return st.one_of(st.none(), st.integers(-3, 40), int_values(), odd_values(), junk_values(),
                     st.lists(st.integers(-40000, 40000), min_size=0, max_size=3).map(np.asarray))


def _el() -> st.SearchStrategy:
    return st.one_of(st.sampled_from(["FX_8", "FX_16", "SA_8", "SA_32", "MLI_EL_SA_8"]), st.sampled_from(["FP_32", "x", "sa8"]),
                     junk_values(), st.integers(-1, 600))


SPECS = {
    "quantize": st.tuples(st.tuples(_data(), _el()), st.fixed_dictionaries(
        {}, optional={"frac_bits": _param(), "dim": _param(), "zero_point": _param(), "scale": _param(),
                      "scale_frac_bits": _param(), "range": st.one_of(st.tuples(_FLOATS, _FLOATS), junk_values()),
                      "symmetric": st.one_of(st.booleans(), junk_values())})),
    "choose_fx_frac_bits": st.tuples(st.tuples(_data(), _el()), st.fixed_dictionaries(
        {}, optional={"range": st.one_of(st.tuples(_FLOATS, _FLOATS), junk_values())})),
    "choose_sa_params": st.tuples(st.tuples(_data(), _el()), st.fixed_dictionaries(
        {}, optional={"dim": _param(), "range": st.one_of(st.tuples(_FLOATS, _FLOATS), junk_values()),
                      "scale": _param(), "zero_point": _param(), "symmetric": st.booleans()})),
}




def _check(name: str, fn, args: tuple, kwargs: dict) -> None:
    snap = [np.array(a, copy=True) if isinstance(a, np.ndarray) else repr(a) for a in args]
    s1, r1 = outcome(fn, args, kwargs)
    s2, r2 = outcome(fn, args, kwargs)
    probs = []
    if s1 != "OK" and not s1.isupper():
        probs.append(f"non-MliError escaped: {s1}")
    for a, b in zip(args, snap):
        if isinstance(a, np.ndarray) and not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
            probs.append("input array modified")
    if (s1.split(":")[0], r1) != (s2.split(":")[0], r2):
        probs.append(f"not deterministic: {s1} then {s2}")
    assert not probs, f"quant.{name}{args!r:.150} {kwargs!r:.150}: " + "; ".join(probs)


def _mark(n: str) -> list:
    return [pytest.mark.xfail(strict=True, reason=KNOWN_QUANT[n])] if n in KNOWN_QUANT else []


@pytest.mark.parametrize("name", [pytest.param(n, marks=_mark(n)) for n in SPECS])
@FUZZ
@given(data=st.data())
def test_quant_function(name: str, data: st.DataObject) -> None:
    args, kwargs = data.draw(SPECS[name], label="call")
    _check(name, getattr(quant, name), args, kwargs)


@pytest.mark.parametrize("junk", [pytest.param(j, marks=_mark(f"dequantize-{j}")) for j in ("field", "fieldtype")])
@FUZZ
@given(data=st.data())
def test_dequantize_invalid_struct(junk: str, data: st.DataObject) -> None:
    t = data.draw(tensors(), label="tensor")
    field, value = data.draw(tensor_field_mutations(t, junk=junk == "fieldtype"), label="field")
    object.__setattr__(t, field, value)
    _check("dequantize", quant.dequantize, (t,), {})
