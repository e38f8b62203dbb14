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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import tflite

from .paths import shared_dir
from ..tflm import handlers

__all__ = ["TTensor", "TOp", "TGraph", "read_graph", "recorded", "check_model", "OpResult",
           "reset_value", "run_graph"]

_DT = {tflite.TensorType.INT8: np.int8, tflite.TensorType.INT16: np.int16,
       tflite.TensorType.INT32: np.int32, tflite.TensorType.INT64: np.int64,
       tflite.TensorType.FLOAT32: np.float32, tflite.TensorType.UINT8: np.uint8,
       tflite.TensorType.BOOL: np.bool_, tflite.TensorType.UINT32: np.uint32,
       tflite.TensorType.UINT64: np.uint64, tflite.TensorType.UINT16: np.uint16}
_OPNAMES = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
_OPTNAMES = {v: k for k, v in vars(tflite.BuiltinOptions).items() if not k.startswith("_")}


@dataclass(frozen=True)
class TTensor:
    """One tensor of the graph: static description and constant data (None if not constant)."""

    index: int
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    scale: np.ndarray  # float32, per tensor (1,) or per channel; empty if not quantised
    zero_point: np.ndarray  # int64
    qdim: int
    data: np.ndarray | None
    variable: bool

    @property
    def s(self) -> float:
        """The per-tensor scale (float32 value as a Python float)."""
        return float(self.scale[0]) if self.scale.size else 0.0

    @property
    def zp(self) -> int:
        """The per-tensor zero point."""
        return int(self.zero_point[0]) if self.zero_point.size else 0


@dataclass(frozen=True)
class TOp:
    """One operator: builtin name, tensor indices (-1 for an omitted input), options table."""

    index: int
    name: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options: Any
    intermediates: tuple[int, ...] = ()
    custom_options: bytes = b""  # a CUSTOM operator's options (flexbuffer), b"" for builtins


@dataclass
class TGraph:
    """Subgraph 0 of a model."""

    tensors: list[TTensor]
    ops: list[TOp]
    inputs: list[int]
    outputs: list[int]
    extra: dict = field(default_factory=dict)

    def t(self, i: int) -> TTensor | None:
        """Tensor ``i`` or None for -1."""
        return None if i < 0 else self.tensors[i]


def _options(op: Any) -> Any:
    typ = op.BuiltinOptionsType()
    if typ == 0:
        return None
    cls = getattr(tflite, _OPTNAMES[typ])
    o = cls()
    tab = op.BuiltinOptions()
    o.Init(tab.Bytes, tab.Pos)
    return o


def read_graph(path: str | Path | bytes) -> TGraph:
    """Parse subgraph 0 of a ``.tflite``.

    Args:
        path: the model file, or its bytes.

    Returns:
        the :class:`TGraph`.
    """
    buf = path if isinstance(path, bytes) else Path(path).read_bytes()
    m = tflite.Model.GetRootAsModel(buf, 0)
    g = m.Subgraphs(0)
    tensors = []
    for i in range(g.TensorsLength()):
        t = g.Tensors(i)
        dt = np.dtype(_DT[t.Type()])
        q = t.Quantization()
        scale = np.zeros(0, np.float32)
        zp = np.zeros(0, np.int64)
        qdim = 0
        if q is not None and q.ScaleLength():
            scale = q.ScaleAsNumpy().astype(np.float32)
            zp = q.ZeroPointAsNumpy().astype(np.int64)
            qdim = q.QuantizedDimension()
        shape = tuple(int(v) for v in t.ShapeAsNumpy()) if t.ShapeLength() else ()
        b = m.Buffers(t.Buffer())
        data = None
        if b is not None and b.DataLength():
            data = np.frombuffer(b.DataAsNumpy().tobytes(), dt).reshape(shape)
        tensors.append(TTensor(i, (t.Name() or b"").decode(), shape, dt, scale, zp, qdim, data,
                               bool(t.IsVariable())))
    ops = []
    for k in range(g.OperatorsLength()):
        op = g.Operators(k)
        oc = m.OperatorCodes(op.OpcodeIndex())
        code = max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
        name = _OPNAMES.get(code, str(code))
        if name == "CUSTOM":
            name = "CUSTOM:" + oc.CustomCode().decode()
        inter = tuple(int(v) for v in op.IntermediatesAsNumpy()) if op.IntermediatesLength() else ()
        copts = op.CustomOptionsAsNumpy().tobytes() if op.CustomOptionsLength() else b""
        ops.append(TOp(k, name, tuple(int(v) for v in op.InputsAsNumpy()),
                       tuple(int(v) for v in op.OutputsAsNumpy()), _options(op), inter, copts))
    return TGraph(tensors, ops, [int(v) for v in g.InputsAsNumpy()],
                  [int(v) for v in g.OutputsAsNumpy()])


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


def reset_value(t: TTensor) -> np.ndarray:
    """A variable tensor after TFLM's ``ResetVariableTensors``: its zero point for int8 (a byte
    ``memset``), zero for every other type.

    Args:
        t: the variable tensor.

    Returns:
        the reset array.
    """
    fill = t.zp if t.dtype == np.int8 else 0
    return np.full(t.shape, fill, t.dtype)


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
