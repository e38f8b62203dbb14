"""Whole golden models, one Invoke per sample from the graph inputs: with every operator on TFLM's
reference kernel every recorded `ref` tensor is reproduced; with the offloaded operators through
pymli.capi and arc_mli's parameters (arcfix where a glue defect changes the result) every output
and every
recorded intermediate equal what `expect` names for vpx and em."""

from __future__ import annotations

import numpy as np
import pytest

from pymli.tflm import handlers
from pymli.testing import tflm_golden as _golden

from ._mli_runner import run_offloaded

pytestmark = pytest.mark.usefixtures("shared")


def _models() -> list[str]:
    try:
        return list(_golden.manifest()["models"])
    except OSError:
        return []


@pytest.mark.parametrize("model", _models())
def test_graph_ref_every_tensor(model: str) -> None:
    spec = _golden.manifest()["models"][model]
    g = _golden.read_graph(_golden.golden_dir() / spec["file"])
    x = np.load(_golden.golden_dir() / "inputs" / f"{model}.npz")
    for k in range(spec["n_samples"]):
        want = _golden.recorded(model, "ref", k, g)
        got = _golden.run_graph(g, [x[f"x{i}"][k] for i in range(len(g.inputs))])
        for ti, w in want.items():
            assert np.array_equal(got[ti].reshape(w.shape), w), f"sample {k} tensor {ti}"


def _arc_cases() -> list[tuple[str, str]]:
    return [(m, p) for m in _models() for p in ("vpx", "em")
            if _golden.manifest()["models"][m]["expect"][p][0] != "ref"]


@pytest.mark.parametrize("model,platform", _arc_cases())
def test_graph_arc_outputs(model: str, platform: str) -> None:
    spec = _golden.manifest()["models"][model]
    variant = spec["expect"][platform][0]
    fix = variant.startswith("arcfix")
    g = _golden.read_graph(_golden.golden_dir() / spec["file"])
    offloaded = {o["index"] for o in spec["ops"] if o["arc_mli"].startswith("MLI")}

    def run(graph, op, ins):  # noqa: ANN001, ANN202
        if op.index in offloaded:
            return [run_offloaded(graph, op, ins, fix=fix, platform=platform)]
        return handlers.run_op(graph, op, ins)

    x = np.load(_golden.golden_dir() / "inputs" / f"{model}.npz")
    for k in range(spec["n_samples"]):
        want = _golden.recorded(model, variant, k, g)
        got = _golden.run_graph(g, [x[f"x{i}"][k] for i in range(len(g.inputs))], run=run)
        assert set(g.outputs) <= set(want)
        for ti, w in want.items():  # every recorded tensor, outputs included
            assert np.array_equal(got[ti].reshape(w.shape), w), f"sample {k} tensor {ti}"
