"""Mutated and truncated model bytes raise only pymli errors (never crash, hang or leak another exception)."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymli.errors import MliError
from pymli.tflite import TfliteError, load
from pymli.tflite.examples import OP_CASES, cnn10

SEEDS = [cnn10(), OP_CASES["concat_equal"][0](0), OP_CASES["tconv_same_s2"][0](0), OP_CASES["prelu"][0](0),
         OP_CASES["quant_dequant"][0](0)]


def _try(data: bytes) -> None:
    try:
        m = load(data, mapping="mli")
    except TfliteError:
        return
    # a mutation that still loads must run or fail with an MLI status (small graphs only: speed)
    if sum(int(np.prod(s)) for s in m.network.shapes().values()) > 100_000:
        return
    x = np.zeros((1,) + m.network.input_shape, np.int8)
    try:
        m.network.run(x)
    except MliError:
        pass


@settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(SEEDS))), st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)),
                                                   min_size=1, max_size=8))
def test_mutated_bytes(which, edits):
    data = bytearray(SEEDS[which])
    for pos, val in edits:
        data[pos % len(data)] = val
    _try(bytes(data))


@settings(max_examples=100, deadline=2000)
@given(st.sampled_from(range(len(SEEDS))), st.floats(0, 1, exclude_max=True))
def test_truncated_bytes(which, frac):
    data = SEEDS[which]
    _try(data[: int(len(data) * frac)])


@settings(max_examples=60, deadline=2000)
@given(st.sampled_from(range(len(SEEDS))), st.integers(0, 1 << 16), st.binary(min_size=1, max_size=16))
def test_inserted_bytes(which, pos, blob):
    data = SEEDS[which]
    pos %= len(data)
    _try(data[:pos] + blob + data[pos:])
