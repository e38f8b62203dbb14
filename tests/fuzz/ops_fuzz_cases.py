"""``pymli.ops`` (the Pythonic API) against random and wrong arguments (issue 13, items 2 and 9).

Run by test_ops_fuzz.py in a fresh interpreter (see there why); alone: ``pytest tests/fuzz/ops_fuzz_cases.py``.

Each op is called with random tensors (:func:`tests.fuzz.strategies.tensors`, valid structs of any
element type and rank, so most calls are type or shape mismatches) and random keyword values (in
range, beyond C types, NaN / inf, wrong Python types); :func:`test_op_junk_operand` also hands a
non-tensor (None, a list, a NumPy array, a dict, ...) where a tensor or a list of tensors belongs.
Properties: only ``MliError`` escapes; the inputs' buffers (including bytes around the views) are
never written; the same call twice gives the same status and result.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, seed
from hypothesis import strategies as st

from pymli import Tensor, ops

from .known import KNOWN_OPS
from .strategies import FUZZ, int_values, junk_values, odd_values, outcome, tensors


def _any() -> st.SearchStrategy:
    return st.one_of(st.integers(-2, 6), int_values(), odd_values(), junk_values(),
                     st.lists(st.integers(-2, 6), min_size=0, max_size=5))


def _t() -> st.SearchStrategy[Tensor]:
    return tensors(max_rank=4)


def _quant() -> st.SearchStrategy:
    return st.one_of(st.none(), st.fixed_dictionaries({"zero_point": st.integers(-130, 130),
                                                       "scale": st.integers(-2, 40000),
                                                       "scale_frac_bits": st.integers(-2, 130)}),
                     st.fixed_dictionaries({"frac_bits": st.integers(-2, 40)}), _any())


# op name -> strategy of (args, kwargs)
SPECS: dict[str, st.SearchStrategy] = {
    "relu": st.tuples(st.tuples(_t()), st.fixed_dictionaries({"kind": st.one_of(st.sampled_from(["GEN", "RELU_6", "relu1", "bogus"]), _any())})),
    "leaky_relu": st.tuples(st.tuples(_t(), _t()), st.just({})),
    "prelu": st.tuples(st.tuples(_t(), _t()), st.fixed_dictionaries({"axis": _any()})),
    "conv2d": st.tuples(st.tuples(_t(), _t(), st.one_of(st.none(), _t())),
                        st.fixed_dictionaries({"stride": _any(), "padding": _any(), "dilation": _any(), "out_quant": _quant()})),
    "depthwise_conv2d": st.tuples(st.tuples(_t(), _t(), st.one_of(st.none(), _t())),
                                  st.fixed_dictionaries({"stride": _any(), "padding": _any(), "out_quant": _quant()})),
    "group_conv2d": st.tuples(st.tuples(_t(), _t(), st.one_of(st.none(), _t())),
                              st.fixed_dictionaries({"stride": _any(), "padding": _any(), "out_quant": _quant()})),
    "transpose_conv2d": st.tuples(st.tuples(_t(), _t(), st.one_of(st.none(), _t())),
                                  st.fixed_dictionaries({"stride": _any(), "padding": _any(), "out_quant": _quant()})),
    "fully_connected": st.tuples(st.tuples(_t(), _t(), st.one_of(st.none(), _t())),
                                 st.fixed_dictionaries({"relu": st.one_of(st.none(), _any()), "out_quant": _quant()})),
    "conv_output_size": st.tuples(st.tuples(_any(), _any(), _any(), _any(), _any()), st.just({})),
    "same_padding": st.tuples(st.tuples(_any(), _any(), _any()), st.just({})),
    "permute": st.tuples(st.tuples(_t(), _any()), st.just({})),
    "transpose": st.tuples(st.tuples(_t(), _any()), st.just({})),
    "argmax": st.tuples(st.tuples(_t()), st.fixed_dictionaries({"axis": _any(), "topk": _any()})),
    **{n: st.tuples(st.tuples(_t(), _t()), st.fixed_dictionaries({"quant": st.one_of(st.none(), _quant())}))
       for n in ("add", "sub", "mul", "minimum", "maximum")},
    "sigmoid": st.tuples(st.tuples(_t()), st.just({})),
    "tanh": st.tuples(st.tuples(_t()), st.just({})),
    "softmax": st.tuples(st.tuples(_t()), st.fixed_dictionaries({"axis": st.one_of(st.none(), _any())})),
    "l2_normalize": st.tuples(st.tuples(_t()), st.fixed_dictionaries({"axis": st.one_of(st.none(), _any())})),
    "activation_lut": st.tuples(st.tuples(st.one_of(st.sampled_from(["sigm", "tanh", "softmax", "l2_normalize", "x"]),
                                                    junk_values())), st.just({})),
    "move_tensor": st.tuples(st.tuples(_t()), st.fixed_dictionaries({"offset": _any(), "size": _any(), "step": _any(),
                                                                     "perm": _any()})),
    "copy": st.tuples(st.tuples(_t()), st.just({})),
    "slice_tensor": st.tuples(st.tuples(_t(), _any(), _any()), st.just({})),
    "subsample": st.tuples(st.tuples(_t(), _any()), st.just({})),
    "pad2d": st.tuples(st.tuples(_t(), _any()), st.fixed_dictionaries({"layout": st.one_of(st.sampled_from(["hwc", "chw", "x"]), junk_values())})),
    "concat": st.tuples(st.tuples(st.lists(_t(), min_size=0, max_size=3), _any()), st.just({})),
    "avepool": st.tuples(st.tuples(_t(), _any()), st.fixed_dictionaries({"stride": _any(), "padding": _any()})),
    "maxpool": st.tuples(st.tuples(_t(), _any()), st.fixed_dictionaries({"stride": _any(), "padding": _any()})),
    "pool_cfg": st.tuples(st.tuples(st.tuples(_any(), _any()), _any()), st.fixed_dictionaries({"stride": _any(), "padding": _any()})),
    "rnn_dense": st.tuples(st.tuples(st.lists(_t(), min_size=0, max_size=2), st.lists(_t(), min_size=0, max_size=2), _t()),
                           st.fixed_dictionaries({"out_quant": _quant()})),
    "lstm": st.tuples(st.tuples(_t(), _t(), _t(), _t()), st.fixed_dictionaries({"out_quant": _quant(), "direction": _any()})),
    "gru": st.tuples(st.tuples(_t(), _t(), _t(), _t()), st.fixed_dictionaries({"out_quant": _quant(), "results": _any()})),
}


def _snap(args: tuple) -> list[bytes]:
    res = []
    for a in args:
        for t in (a if isinstance(a, list) else [a]):
            p = getattr(t, "_fuzz_base", None)
            if p is not None:
                res.append(p.base.tobytes())
    return res


def _call(name: str, args: tuple, kwargs: dict) -> tuple[str, object]:
    return outcome(getattr(ops, name), args, kwargs)


def test_specs_cover_ops() -> None:
    """Every public name of ``pymli.ops`` that is a function has a fuzz spec."""
    fns = {n for n in ops.__all__ if callable(getattr(ops, n)) and not isinstance(getattr(ops, n), type)}
    assert fns - set(SPECS) == set(), sorted(fns - set(SPECS))


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.xfail(strict=True, reason=KNOWN_OPS[n])]
                                               if n in KNOWN_OPS else []) for n in sorted(SPECS)])
@FUZZ
@seed(20261125)
@given(data=st.data())
def test_op(name: str, data: st.DataObject) -> None:
    args, kwargs = data.draw(SPECS[name], label="call")
    _check(name, args, kwargs)


def _check(name: str, args: tuple, kwargs: dict) -> None:
    # The second call takes the same structs (the first must not have written them): a dense copy
    # would not be the same call (argmax returns offsets into the input's memory; strides matter).
    before = _snap(args)
    status, res = _call(name, args, kwargs)
    probs = []
    if status not in ("OK",) and not status.isupper():
        probs.append(f"non-MliError escaped: {status}")
    if _snap(args) != before:
        probs.append("an input buffer was written")
    status2, res2 = _call(name, args, kwargs)
    if status.split(":")[0] != status2.split(":")[0] or res != res2:
        probs.append(f"not deterministic: {status} then {status2}")
    assert not probs, f"ops.{name}: " + "; ".join(probs)


_JUNK_OPERANDS = [None, [1, 2, 3], np.zeros(4, np.int8), {"a": 1}, "x", 3, 1.5, b"\x01", object()]


@pytest.mark.parametrize("name", sorted(SPECS))
@FUZZ
@seed(20261125)
@given(data=st.data())
def test_op_junk_operand(name: str, data: st.DataObject) -> None:
    """One positional argument (a tensor, a list of tensors, or a number) replaced by a non-tensor."""
    args, kwargs = data.draw(SPECS[name], label="call")
    i = data.draw(st.integers(0, len(args) - 1), label="position")
    junk = data.draw(st.sampled_from(_JUNK_OPERANDS), label="junk")
    if isinstance(args[i], list) and data.draw(st.booleans(), label="inside the list"):
        args = args[:i] + ([*args[i][:1], junk],) + args[i + 1:]
    else:
        args = args[:i] + (junk,) + args[i + 1:]
    _check(name, args, kwargs)
