"""``pymli.tflite`` beyond mutated bytes (``tests/tflite/test_fuzz.py`` covers those): wrong argument
types to ``load``, wrong inputs to ``run``, and a model whose conv needs more than 2 GiB
(issue 13, items 2, 4 and 9).

Properties: only ``MliError`` (``TfliteError`` is one) escapes; a model that cannot run within the
memory budget is refused at ``load`` with ``TfliteUnsupported``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymli import MliError

from .known import KNOWN_TFLITE
from .strategies import FUZZ, junk_values

tfl = pytest.importorskip("pymli.tflite.importer", reason="reading .tflite needs the tflite package")
examples = pytest.importorskip("pymli.tflite.examples")
builder = pytest.importorskip("pymli.tflite.builder")


def _mark(n: str) -> list:
    return [pytest.mark.xfail(strict=True, reason=KNOWN_TFLITE[n])] if n in KNOWN_TFLITE else []


def _escapes(fn) -> str | None:
    try:
        fn()
    except MliError:
        return None
    except Exception as e:  # noqa: BLE001 - the finding
        return f"{type(e).__name__}: {str(e)[:120]}"
    return None


@pytest.mark.parametrize("arg", [pytest.param(a, id=i, marks=_mark(f"load-{i}")) for i, a in (
    ("none", None), ("int", 3), ("missing_path", "/nonexistent/model.tflite"), ("dir", "/"),
    ("empty", b""), ("text", "not a model"), ("ndarray", np.zeros(8, np.uint8)), ("list", [1, 2, 3]))])
def test_load_wrong_argument(arg) -> None:
    """``load`` of something that is not a model raises MliError (TfliteError); an unreadable path may
    raise OSError (documented in ``load``); nothing else."""
    err = _escapes(lambda: tfl.load(arg))
    assert err is None or (isinstance(arg, str) and err.split(":")[0] in (
        "FileNotFoundError", "IsADirectoryError", "PermissionError", "OSError")), err


@pytest.fixture(scope="module")
def model():
    return tfl.load(examples.cnn10())


def _inputs(shape: tuple[int, ...]) -> st.SearchStrategy:
    return st.one_of(
        st.sampled_from([np.int8, np.int16, np.int32, np.float32, np.float64, np.uint8, bool]).map(
            lambda d: np.ones((1,) + shape, d)),
        st.just(np.full((1,) + shape, 300)), st.just(np.full((1,) + shape, math.nan)), st.just(np.zeros(shape)),
        st.just(np.zeros((1,) + shape[:-1])), st.just(np.zeros((0,) + shape)), st.just(np.zeros((1,) + shape)[..., ::-1]),
        st.just(np.zeros((1,) + shape).tolist()), junk_values(),
    )


@pytest.mark.parametrize("case", [pytest.param("run", marks=_mark("run"))])
@FUZZ
@given(data=st.data())
def test_run_wrong_input(model, case, data) -> None:
    """``run`` with inputs of the wrong dtype, range, shape or type raises MliError, nothing else."""
    x = data.draw(_inputs(tuple(model.network.input_shape)), label="x")
    err = _escapes(lambda: model.run(x))
    assert err is None, err


def _dilated_conv(dilation: int) -> bytes:
    w = builder.ModelWriter()
    x = w.tensor("x", [1, 8, 8, 1], scale=0.1, zero_point=0)
    k = w.tensor("k", [1, 3, 3, 1], data=np.ones((1, 3, 3, 1)), scale=[0.1], zero_point=[0], qdim=0)
    b = w.tensor("b", [1], type="INT32", data=np.zeros(1), scale=[0.01], zero_point=[0])
    y = w.tensor("y", [1, 8, 8, 1], scale=0.1, zero_point=0)
    w.op("CONV_2D", [x, k, b], [y], Padding="SAME", StrideW=1, StrideH=1, DilationWFactor=dilation,
         DilationHFactor=dilation)
    return w.finish([x], [y])


def test_small_dilated_conv_loads() -> None:
    """The builder makes a loadable dilated conv (so the probe below tests the dilation, not the builder)."""
    tfl.load(_dilated_conv(2))


@pytest.mark.parametrize("dilation", [pytest.param(2**31 - 1, marks=_mark("dilation"))])
def test_huge_dilation_refused_at_load(dilation: int) -> None:
    """A conv whose padded input needs more than 2 GiB is refused at ``load`` (TfliteUnsupported), not at run."""
    from pymli.tflite import TfliteUnsupported

    with pytest.raises(TfliteUnsupported):
        tfl.load(_dilated_conv(dilation))


def test_int8_zero_point_out_of_range_refused_at_load() -> None:
    """An int8 tensor with zero point 1000 is refused when loading (issue 13, item 4)."""
    w = builder.ModelWriter()
    x = w.tensor("x", [1, 4], scale=0.1, zero_point=1000)
    y = w.tensor("y", [1, 4], scale=0.1, zero_point=0)
    w.op("RELU", [x], [y])
    data = w.finish([x], [y])
    if "zp" in KNOWN_TFLITE:
        pytest.xfail(KNOWN_TFLITE["zp"])
    with pytest.raises(MliError):
        tfl.load(data)
