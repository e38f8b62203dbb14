"""Every operator of every shared/tflite_golden model, on its recorded `ref` inputs, equals its
recorded `ref` output (np.array_equal), through pymli.tflm's handlers."""

from __future__ import annotations

from pathlib import Path

import pytest

from pymli.tflm import handlers
from pymli.testing import tflm_golden as _golden

pytestmark = pytest.mark.usefixtures("shared")


def _cases() -> list[tuple[str, str]]:
    try:
        man = _golden.manifest()
    except OSError:
        return []
    return [(name, op) for name, spec in man["models"].items()
            for op in sorted({o["op"] for o in spec["ops"]})]


@pytest.fixture(scope="module")
def results() -> dict[str, list[_golden.OpResult]]:
    return {}


@pytest.mark.parametrize("model,opname", _cases())
def test_operator_exact_on_ref(model: str, opname: str, results: dict, shared: Path) -> None:
    if opname not in handlers.HANDLERS:
        pytest.xfail(f"{opname}: no pymli.tflm handler yet")
    if model not in results:
        results[model] = _golden.check_model(model, "ref")
    rows = [r for r in results[model] if r.op == opname]
    assert rows
    for r in rows:
        assert r.error == "", f"op{r.index}: {r.error}"
        assert r.exact == r.total, f"op{r.index} {r.types}: {r.exact}/{r.total}, max diff {r.max_diff}"
