"""The micro_speech audio preprocessor (TFLM signal-library CUSTOM operators) through
``pymli.tflite.load``: a stream of frames equals the TFLM interpreter's Invokes, frame by frame."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pymli.tflite as tfl

runtime = pytest.importorskip("tflite_micro.python.tflite_micro.runtime",
                              reason="the TFLM Python interpreter (tflite_micro) is the oracle")
MODEL = Path(__file__).resolve().parents[1] / "data" / "audio" / "audio_preprocessor_int8.tflite"


@pytest.mark.parametrize("seed", [0, 1])
def test_preprocessor_stream_equals_interpreter(seed: int) -> None:
    m = tfl.load(MODEL)
    it = runtime.Interpreter.from_bytes(MODEL.read_bytes())
    rng = np.random.default_rng(seed)
    s = m.stream()
    shape = m.inputs[0].shape
    for i in range(6):
        t = np.arange(int(np.prod(shape)))
        x = (np.sin(t / (3 + i)) * 3000 + rng.normal(0, 300, t.size)).astype(np.int16).reshape(shape)
        got = s.run(x, platform="vpx")
        it.set_input(x, 0)
        it.invoke()
        assert np.array_equal(np.asarray(got).reshape(-1), it.get_output(0).reshape(-1)), f"frame {i}"


def test_preprocessor_reset_starts_again() -> None:
    m = tfl.load(MODEL)
    x = (np.sin(np.arange(480) / 5) * 3000).astype(np.int16).reshape(m.inputs[0].shape)
    first = m.run(x, keep_state=True)
    second = m.run(x, keep_state=True)
    assert not np.array_equal(first, second)  # the noise estimate moved
    m.reset()
    assert np.array_equal(m.run(x, keep_state=True), first)
