"""Per-operator check of :mod:`pymli.tflm` against ``shared/tflite_golden`` recordings.

Reads a ``.tflite`` (with the ``tflite`` flatbuffer package), derives each operator's TFLM
parameters from its tensors' quantisation and builtin options, runs the :mod:`pymli.tflm` kernel on
the recorded input tensors of that operator and compares with the recorded output (``np.array_equal``).
The ``HANDLERS`` table is the reference wiring for the importer's registry: one function per
builtin operator, ``handler(graph, op, inputs) -> list of outputs``.

    python -m pymli.testing.tflm_golden [MODEL ...] [--variant ref]
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..tflite.tgraph import TGraph, TOp, TTensor, read_graph, reset_value
from ..tflm import handlers
from .paths import shared_dir

__all__ = ["TTensor", "TOp", "TGraph", "read_graph", "recorded", "check_model", "OpResult",
           "reset_value", "run_graph"]

# TTensor, TOp, TGraph, read_graph and reset_value live in pymli.tflite.tgraph (the tflm mapping uses
# them); they stay importable from here for the per-operator checks.


def golden_dir() -> Path:
    """``shared/tflite_golden``."""
    return shared_dir() / "tflite_golden"


def manifest() -> dict:
    """The golden set's manifest."""
    return json.loads((golden_dir() / "manifest.json").read_text())


def recorded(model: str, variant: str, k: int, graph: TGraph) -> dict[int, np.ndarray]:
    """Every recorded tensor of sample ``k`` by tensor index (graph inputs and outputs included).

    Args:
        model: model name in the manifest.
        variant: ``ref``, ``arc_up``, ... (``same_as`` is followed).
        k: sample number.
        graph: the parsed model (for the output and input indices).

    Returns:
        ``{tensor index: array in the tensor's shape}``.
    """
    spec = manifest()["models"][model]
    while "same_as" in spec["variants"].get(variant, {}):
        variant = spec["variants"][variant]["same_as"]
    z = np.load(golden_dir() / "expected" / model / variant / f"{k}.npz")
    x = np.load(golden_dir() / "inputs" / f"{model}.npz")
    vals: dict[int, np.ndarray] = {}
    for j, ti in enumerate(graph.inputs):
        vals[ti] = x[f"x{j}"][k].reshape(graph.tensors[ti].shape)
    for key in z.files:
        if key.startswith("t"):
            ti = int(key[1:])
            vals[ti] = z[key].reshape(graph.tensors[ti].shape)
        elif key.startswith("out"):
            ti = graph.outputs[int(key[3:])]
            vals[ti] = z[key].reshape(graph.tensors[ti].shape)
    return vals


@dataclass(frozen=True)
class OpResult:
    """Exactness of one operator over the samples."""

    index: int
    op: str
    types: str
    exact: int
    total: int
    max_diff: float | None
    error: str = ""


def _inputs_for(graph: TGraph, op: TOp, vals: dict[int, np.ndarray]) -> list[np.ndarray | None]:
    out: list[np.ndarray | None] = []
    for i in op.inputs:
        if i < 0:
            out.append(None)
            continue
        t = graph.tensors[i]
        if t.data is not None:
            out.append(t.data)
        elif t.variable:
            out.append(reset_value(t))  # every sample starts from a reset state
        else:
            out.append(vals[i])
    return out


def run_graph(graph: TGraph, inputs: list[np.ndarray], state: dict[int, np.ndarray] | None = None,
              run: Callable[[TGraph, TOp, list], list] | None = None) -> dict[int, np.ndarray]:
    """One Invoke of the whole graph: every operator in order through ``run``.

    Args:
        graph: the parsed graph.
        inputs: one array per graph input, in its own dtype and shape.
        state: variable tensor values to start from (default: :func:`reset_value`); updated in place
            with the values after the Invoke (a stream passes the same dict again). It also holds the
            operators' internal state (keys ``("signal", op index)``: the signal library's noise
            estimate, delay lines, ...), handed to the handlers as ``graph.extra["op_state"]``.
        run: handler dispatcher (default :func:`pymli.tflm.handlers.run_op`).

    Returns:
        every computed tensor by index (graph inputs included).
    """
    run = run or handlers.run_op
    if state is None:
        state = {}
    vals: dict[int, np.ndarray] = {}
    for ti, x in zip(graph.inputs, inputs):
        vals[ti] = np.asarray(x).reshape(graph.tensors[ti].shape)
    for t in graph.tensors:
        if t.variable and t.index not in state:
            state[t.index] = reset_value(t)
    graph.extra["op_state"] = state  # operators' internal state (signal ops), carried like variables
    for op in graph.ops:
        args = []
        for i in op.inputs:
            if i < 0:
                args.append(None)
            elif graph.tensors[i].data is not None:
                args.append(graph.tensors[i].data)
            elif graph.tensors[i].variable:
                args.append(state[i])
            else:
                args.append(vals[i])
        graph.extra.pop("state", None)
        outs = run(graph, op, args)
        for ti, v in zip(op.outputs, outs):
            vals[ti] = np.asarray(v).reshape(graph.tensors[ti].shape)
        for ti, v in graph.extra.get("state", {}).items():
            state[ti] = v
            vals[ti] = v
    return vals


def check_model(model: str, variant: str = "ref",
                run: Callable[[TGraph, TOp, list], list] | None = None) -> list[OpResult]:
    """Run every operator of ``model`` on its recorded inputs and compare with its recorded outputs.

    Args:
        model: model name in the manifest.
        variant: recorded variant providing inputs and expected outputs.
        run: handler dispatcher (default :func:`pymli.tflm.handlers.run_op`).

    Returns:
        one :class:`OpResult` per operator.
    """
    run = run or handlers.run_op
    spec = manifest()["models"][model]
    graph = read_graph(golden_dir() / spec["file"])
    samples = [recorded(model, variant, k, graph) for k in range(spec["n_samples"])]
    res = []
    for op in graph.ops:
        types = ",".join(graph.tensors[i].dtype.name if i >= 0 else "-" for i in op.inputs
                         if i < 0 or graph.tensors[i].data is None) + "->" + ",".join(
            graph.tensors[i].dtype.name for i in op.outputs)
        exact, worst, err = 0, 0.0, ""
        for vals in samples:
            graph.extra.pop("state", None)
            try:
                got = run(graph, op, _inputs_for(graph, op, vals))
            except Exception as e:  # noqa: BLE001 - reported per operator
                err = f"{type(e).__name__}: {e}"
                break
            ok = True
            pairs = list(zip(op.outputs, got)) + list(graph.extra.get("state", {}).items())
            for ti, g in pairs:
                want = vals.get(ti)
                if want is None:
                    continue
                g = np.asarray(g).reshape(want.shape)
                if not np.array_equal(g, want):
                    ok = False
                    worst = max(worst, float(np.max(np.abs(g.astype(np.float64)
                                                           - want.astype(np.float64)))))
            exact += ok
        res.append(OpResult(op.index, op.name, types, exact, len(samples),
                            None if err else worst, err))
    return res


def main(argv: list[str] | None = None) -> int:
    """Command line: print per-operator exactness for the given (default: all) models."""
    args = list(sys.argv[1:] if argv is None else argv)
    variant = "ref"
    if "--variant" in args:
        i = args.index("--variant")
        variant = args[i + 1]
        del args[i:i + 2]
    names = args or list(manifest()["models"])
    bad = 0
    for name in names:
        for r in check_model(name, variant):
            flag = "ok " if r.exact == r.total else "BAD"
            bad += r.exact != r.total
            print(f"{flag} {name} op{r.index} {r.op} {r.types} {r.exact}/{r.total}"
                  + (f" maxdiff {r.max_diff}" if r.max_diff else "") + (f" {r.error}" if r.error else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
