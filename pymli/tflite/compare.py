"""Run a TFLite model on pymli's MLI kernels and on the TFLite Micro reference interpreter, tensor by tensor.

TFLite Micro comes from the optional ``tflite-micro`` PyPI package (``pip install tflite-micro``);
:func:`tflm_available` tells whether it can be imported. The interpreter runs with all tensors
preserved, so every intermediate is compared, not only the output.

Per TFLite tensor the report gives the largest and the mean absolute difference in LSB of the
int8 values, the share of differing elements, and the SNR of both results against the float64
run of the same network (:meth:`pymli.models.Network.run_float`, dequantised constants).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from ..models.report import by_name, snr_db
from .importer import TfliteModel
from .loader import load
from .tflm_model import TflmModel, TflmRun, resolve_platform

__all__ = ["tflm_available", "TFLM_MISSING", "run_tflm", "run_tflm_inputs", "TensorDiff", "CompareReport", "compare",
           "random_input", "random_inputs", "compare_inputs"]

TFLM_MISSING = "the TFLite Micro reference interpreter needs the optional package: pip install tflite-micro"


def tflm_available() -> bool:
    """Whether ``tflite_micro`` (the TFLite Micro Python interpreter) can be imported."""
    try:
        from tflite_micro.python.tflite_micro import runtime  # noqa: F401  (optional dependency)
    except Exception:  # noqa: BLE001 - any import problem means "not available"
        return False
    return True


def _arena(model: TfliteModel) -> int:
    total = sum(int(np.prod(t.shape, dtype=np.int64)) * 8 for t in model.info.tensors)
    return (1 << 20) + 4 * total + 4 * len(model.data)


def run_tflm(model: TfliteModel, x: np.ndarray, tensors: list[int] | None = None) -> dict[int, np.ndarray]:
    """Run the model on TFLite Micro for a batch of graph inputs (TFLite dtype and shape, batch first).

    Returns TFLite tensor index -> stacked values of every asked tensor (default: every operator
    output), batch first.
    """
    try:
        from tflite_micro.python.tflite_micro import runtime  # optional dependency
    except Exception as e:
        raise ImportError(TFLM_MISSING) from e
    if tensors is None:
        tensors = sorted({o for op in model.info.ops for o in op.outputs if o >= 0})
    it = runtime.Interpreter.from_bytes(model.data, arena_size=_arena(model),
                                        intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors)
    tin = model.info.tensors[model.input_index]
    dt = np.float32 if tin.type == "FLOAT32" else np.int8
    tensors = sorted(set(tensors))
    out: dict[int, list[np.ndarray]] = {i: [] for i in tensors}
    for n in range(x.shape[0]):
        it.set_input(np.ascontiguousarray(x[n:n + 1].reshape(tin.shape).astype(dt)), 0)
        it.invoke()
        for i in tensors:
            out[i].append(np.array(it.GetTensor(i, 0)["tensor_data"]).reshape(model.info.tensors[i].shape)[0])
    return {i: np.stack(v) for i, v in out.items()}


def random_input(model: TfliteModel, n: int = 8, seed: int = 0) -> np.ndarray:
    """``n`` random graph inputs covering the whole int8 range (dequantised for a float input)."""
    rng = np.random.default_rng(seed)
    tq = model.info.tensors[model.q_input_index]
    q = rng.integers(-128, 128, (n,) + tuple(tq.shape[1:])).astype(np.int8)
    if model.float_input:
        s, z = model.in_quant
        return ((q.astype(np.float32) - z) * np.float32(s)).astype(np.float32)
    return q


@dataclasses.dataclass
class TensorDiff:
    """Differences of one TFLite tensor between pymli and TFLite Micro."""

    index: int
    name: str
    op: str
    functions: str
    shape: tuple[int, ...]
    max_lsb: int
    mean_lsb: float
    differing: float
    snr_pymli_db: float | None
    snr_tflm_db: float | None
    #: largest difference when pymli runs this operator alone on TFLite Micro's inputs (own error, no propagation)
    own_max_lsb: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form of the tensor's figures."""
        return dataclasses.asdict(self)


@dataclasses.dataclass
class CompareReport:
    """Per-tensor comparison; ``rows`` in operator order (the graph output last)."""

    model_name: str
    samples: int
    rows: list[TensorDiff]
    output_equal: bool

    @property
    def max_lsb(self) -> int:
        """Largest difference in LSB over all compared tensors."""
        return max((r.max_lsb for r in self.rows), default=0)

    def __getitem__(self, name: str) -> TensorDiff:
        return by_name(self.rows, name)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form of the report."""
        return {"model": self.model_name, "samples": self.samples, "output_equal": self.output_equal,
                "max_lsb": self.max_lsb, "tensors": [r.to_dict() for r in self.rows]}

    def to_json(self, path: str | Path | None = None) -> str:
        """The report as JSON, written to ``path`` when given; returns the text."""

        def clean(v: Any) -> Any:
            if isinstance(v, float) and not np.isfinite(v):
                return None if np.isnan(v) else ("inf" if v > 0 else "-inf")
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items()}
            if isinstance(v, (list, tuple)):
                return [clean(x) for x in v]
            return v

        text = json.dumps(clean(self.to_dict()), indent=1)
        if path is not None:
            Path(path).write_text(text)
        return text

    def table(self) -> Any:
        """The report as a ``rich`` table."""
        t = Table(title=f"{self.model_name}: pymli vs TFLite Micro, {self.samples} samples")
        for col, just in (("tensor", "left"), ("op", "left"), ("MLI function", "left"), ("shape", "left"),
                          ("max |d| LSB", "right"), ("own max LSB", "right"), ("mean |d| LSB", "right"), ("differing %", "right"),
                          ("SNR pymli dB", "right"), ("SNR TFLM dB", "right")):
            t.add_column(col, justify=just)  # type: ignore[arg-type]
        for r in self.rows:
            t.add_row(r.name, r.op, r.functions, "x".join(map(str, r.shape)), str(r.max_lsb),
                      "-" if r.own_max_lsb is None else str(r.own_max_lsb), f"{r.mean_lsb:.4f}",
                      f"{100 * r.differing:.2f}", _db(r.snr_pymli_db), _db(r.snr_tflm_db))
        return t

    def print(self, console: Any = None) -> None:
        """Print the table to ``console`` (default: stdout)."""
        (console or Console()).print(self.table())

    def markdown(self) -> str:
        """The report as a Markdown table."""
        lines = ["| tensor | op | max LSB | own max LSB | mean LSB | differing % | SNR pymli dB | SNR TFLM dB |",
                 "|---|---|---:|---:|---:|---:|---:|---:|"]
        for r in self.rows:
            own = "-" if r.own_max_lsb is None else r.own_max_lsb
            lines.append(f"| {r.name} | {r.op} | {r.max_lsb} | {own} | {r.mean_lsb:.4f} | {100 * r.differing:.2f} | "
                         f"{_db(r.snr_pymli_db)} | {_db(r.snr_tflm_db)} |")
        return "\n".join(lines)

    def plot(self, path: str | Path | None = None) -> Any:
        """Bar chart of the SNR of both runs per tensor and the largest difference (matplotlib)."""
        import matplotlib  # optional dependency (pip install pymli[plot])

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (a1, a2) = plt.subplots(2, 1, figsize=(max(6, 0.6 * len(self.rows)), 6), sharex=True)
        xs = np.arange(len(self.rows))
        nan = float("nan")
        a1.bar(xs - 0.2, [r.snr_pymli_db if r.snr_pymli_db is not None else nan for r in self.rows], 0.4,
               label="pymli")
        a1.bar(xs + 0.2, [r.snr_tflm_db if r.snr_tflm_db is not None else nan for r in self.rows], 0.4,
               label="TFLite Micro")
        a1.set_ylabel("SNR vs float (dB)")
        a1.legend()
        a2.bar(xs, [r.max_lsb for r in self.rows])
        a2.set_ylabel("max |diff| (LSB)")
        a2.set_xticks(xs, [r.name for r in self.rows], rotation=60, ha="right")
        fig.suptitle(f"{self.model_name}: pymli vs TFLite Micro")
        fig.tight_layout()
        if path is not None:
            fig.savefig(path)
            plt.close(fig)
        return fig


def _db(v: float | None) -> str:
    if v is None:
        return "-"
    return "inf" if v == float("inf") else f"{v:.1f}"


def _own_error(m: TfliteModel, op_index: int, out_index: int, ref: dict[int, np.ndarray], platform: Any
               ) -> int | None:
    """Largest difference of operator ``op_index`` run by pymli on TFLite Micro's input values."""
    layers = m.op_layers.get(op_index, [])
    if not layers or m.tensor_layer.get(out_index) != layers[-1]:
        return None
    net = m.network
    qs = net.expected_qparams()
    by_name = {v: k for k, v in m.tensor_layer.items()}
    env: dict[str, np.ndarray] = {}
    for name in layers:
        la = net[name]
        xs = []
        for src in la.inputs:
            if src in env:
                xs.append(env[src])
                continue
            idx = by_name.get(src)
            if idx is None or idx not in ref:
                return None
            shape = net.shapes()[src]
            xs.append(ref[idx].reshape((ref[idx].shape[0],) + tuple(shape)))
        y, _ = net.run_layer(name, xs, [qs[src] for src in la.inputs], platform=platform)
        env[name] = y
    mine = env[layers[-1]].reshape(ref[out_index].shape)
    return int(np.abs(mine.astype(np.int64) - ref[out_index].astype(np.int64)).max(initial=0))


def compare(model: TfliteModel | str | Path | bytes, x: np.ndarray | None = None, *, samples: int = 8,
            seed: int = 0, platform: Any = None) -> CompareReport:
    """Run ``model`` on pymli and TFLite Micro and compare every mapped tensor.

    A :class:`~pymli.tflite.tflm_model.TflmModel` (the default mapping of a path or bytes) is compared
    tensor by tensor with TFLite Micro's reference kernels: its reference operators are exact, its
    offloaded operators differ by MLI's rounding (:func:`compare_inputs` takes several inputs).

    Args:
        model: a loaded model (either mapping), a path or bytes.
        x: graph inputs (batch first, TFLite dtype); default: ``samples`` random inputs.
        platform: pymli platform (rounding) for the MLI kernels; default: the current one.

    Raises:
        ImportError: ``tflite-micro`` is not installed.
    """
    m = model if isinstance(model, (TfliteModel, TflmModel)) else load(model)
    if isinstance(m, TflmModel):
        return _compare_tflm(m, None if x is None else [x], samples=samples, seed=seed, platform=platform)
    if x is None:
        x = random_input(m, samples, seed)
    x = np.asarray(x)
    if x.shape == tuple(m.input_shape[1:]):
        x = x[None]
    xq = m.prepare_input(x)
    res = m.network.run(xq, capture=True, platform=platform)
    flt = m.network.run_float(xq)
    idx = [i for op in m.info.ops for i in op.outputs if i in m.tensor_layer and i != m.q_input_index]
    every = {j for op in m.info.ops for j in op.inputs + op.outputs if j >= 0 and not m.info.tensors[j].is_const}
    ref = run_tflm(m, x.reshape((x.shape[0],) + tuple(m.input_shape[1:])), sorted(every | {m.output_index}))
    if m.q_input_index not in ref:
        ref[m.q_input_index] = xq.reshape((xq.shape[0],) + tuple(m.info.tensors[m.q_input_index].shape[1:]))
    fns = m.network.function_names()
    producer = {o: op for op in m.info.ops for o in op.outputs}
    rows = []
    for i in idx:
        t = m.info.tensors[i]
        mine = m.tensor_values(res, i)
        theirs = ref[i]
        assert mine is not None
        d = np.abs(mine.astype(np.int64) - theirs.astype(np.int64))
        snr_p = snr_t = None
        if t.type == "INT8" and t.quantized:
            f = flt[m.tensor_layer[i]].reshape(mine.shape)
            s, z = float(t.scale[0]), int(t.zero_point[0]) if t.zero_point.size else 0
            snr_p = float(snr_db(f, (mine.astype(np.float64) - z) * s))
            snr_t = float(snr_db(f, (theirs.astype(np.float64) - z) * s))
        op = producer[i]
        own = _own_error(m, op.index, i, ref, platform)
        rows.append(TensorDiff(i, t.name, op.name, " + ".join(fns[n] for n in m.op_layers.get(op.index, [])),
                               tuple(t.shape), int(d.max(initial=0)), float(d.mean()) if d.size else 0.0,
                               float(np.mean(d > 0)) if d.size else 0.0, snr_p, snr_t, own))
    out_mine = m.output_from(res)
    out_equal = bool(np.array_equal(out_mine.reshape(ref[m.output_index].shape), ref[m.output_index]))
    return CompareReport(m.info.description or "model", int(x.shape[0]), rows, out_equal)


def random_inputs(model: TflmModel, n: int = 8, seed: int = 0) -> list[np.ndarray]:
    """``n`` random samples of every graph input of a tflm-mapping model, stacked on a leading axis:
    integers over the whole range of the input's type; float inputs uniform over the range of the
    QUANTIZE that follows them (or [-1, 1])."""
    rng = np.random.default_rng(seed)
    out = []
    for t in model.inputs:
        shape = (n,) + tuple(t.shape)
        if t.dtype.kind == "f":
            q = next((model.graph.tensors[op.outputs[0]] for op in model.graph.ops
                      if op.name == "QUANTIZE" and op.inputs[0] == t.index), None)
            if q is not None and q.scale.size and q.dtype.kind == "i":
                info = np.iinfo(q.dtype)
                lo, hi = (info.min - q.zp) * q.s, (info.max - q.zp) * q.s
            else:
                lo, hi = -1.0, 1.0
            out.append(rng.uniform(lo, hi, shape).astype(np.float32))
        elif t.dtype == np.bool_:
            out.append(rng.integers(0, 2, shape).astype(np.bool_))
        else:
            info = np.iinfo(t.dtype)
            lo, hi = max(int(info.min), -(2**15)), min(int(info.max), 2**15 - 1)
            out.append(rng.integers(lo, hi + 1, shape).astype(t.dtype))
    return out


def run_tflm_inputs(model: TflmModel, xs: list[np.ndarray], tensors: list[int]) -> dict[int, np.ndarray]:
    """Run a tflm-mapping model on the TFLite Micro interpreter, one freshly reset Invoke per sample.

    Args:
        model: the model.
        xs: one array per graph input, samples stacked on a leading axis (each sample in the input's shape).
        tensors: TFLite tensor indices to record.

    Returns:
        tensor index -> stacked values (samples first).

    Raises:
        ImportError: ``tflite-micro`` is not installed.
    """
    try:
        from tflite_micro.python.tflite_micro import runtime  # optional dependency
    except Exception as e:
        raise ImportError(TFLM_MISSING) from e
    total = sum(int(np.prod(t.shape, dtype=np.int64)) * 8 for t in model.graph.tensors)
    it = runtime.Interpreter.from_bytes(model.data, arena_size=(1 << 20) + 4 * total + 4 * len(model.data),
                                        intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors)
    out: dict[int, list[np.ndarray]] = {i: [] for i in tensors}
    for n in range(xs[0].shape[0]):
        it.reset()
        for j, (x, t) in enumerate(zip(xs, model.inputs)):
            it.set_input(np.ascontiguousarray(x[n].reshape(t.shape).astype(t.dtype)), j)
        it.invoke()
        for i in tensors:
            t = model.graph.tensors[i]
            out[i].append(np.array(it.GetTensor(i, 0)["tensor_data"]).reshape(t.shape).astype(t.dtype))
    return {i: np.stack(v) for i, v in out.items()}


def compare_inputs(model: TflmModel | str | Path | bytes, xs: list[np.ndarray] | None = None, *, samples: int = 8,
                   seed: int = 0, platform: Any = None) -> CompareReport:
    """Compare a tflm-mapping model with TFLite Micro's reference kernels on every tensor, for several inputs.

    Args:
        model: a :class:`~pymli.tflite.tflm_model.TflmModel`, a path or bytes.
        xs: one array per graph input, samples stacked first (a single sample in the input's shape is
            taken too); default: ``samples`` random inputs (:func:`random_inputs`).
        samples: number of random samples. seed: their seed.
        platform: pymli platform for the offloaded operators; default: the current one.

    Returns:
        the :class:`CompareReport` (``own_max_lsb``: the operator alone on TFLite Micro's inputs; SNR
        columns empty: the tflm mapping has no float twin).

    Raises:
        ImportError: ``tflite-micro`` is not installed.
        TfliteInputError: wrong inputs.
    """
    m = model if isinstance(model, TflmModel) else load(model, mapping="tflm")
    return _compare_tflm(m, xs, samples=samples, seed=seed, platform=platform)


def _compare_tflm(m: TflmModel, xs: list[np.ndarray] | None, *, samples: int, seed: int, platform: Any
                  ) -> CompareReport:
    plat = resolve_platform(platform)
    if xs is None:
        xs = random_inputs(m, samples, seed)
    xs = [np.asarray(x) for x in xs]
    for j, (x, t) in enumerate(zip(xs, m.inputs)):
        if x.shape == t.shape:
            xs[j] = x[None]
        elif t.shape and t.shape[0] == 1 and x.ndim == len(t.shape) and x.shape[1:] == t.shape[1:]:
            xs[j] = x.reshape((x.shape[0],) + t.shape)  # the batch axis replaced the batch of 1
    n = xs[0].shape[0]
    g = m.graph
    every = sorted({i for s in m.steps for i in s.op.outputs if i >= 0} | set(g.outputs))
    ref = run_tflm_inputs(m, xs, every)
    runs: list[TflmRun] = []
    for k in range(n):
        runs.append(m.run(*[x[k] for x in xs], platform=plat, capture=True)[1])
    producer = {o: s for s in m.steps for o in s.op.outputs}
    rows = []
    for i in every:
        t = g.tensors[i]
        mine = np.stack([m.tensor_values(r, i) for r in runs])
        theirs = ref[i]
        if t.dtype.kind == "f":
            d = np.abs(mine.astype(np.float64) - theirs.astype(np.float64))
            dmax = int(np.ceil(d.max(initial=0.0) / (float(t.s) if t.scale.size and t.s > 0 else 1.0)))
        else:
            d = np.abs(mine.astype(np.int64) - theirs.astype(np.int64))
            dmax = int(d.max(initial=0))
        s = producer.get(i)
        own = _own_error_tflm(m, s, i, ref, xs, plat) if s is not None else None
        rows.append(TensorDiff(i, t.name, s.op.name if s else "", (s.function or "reference (TFLM)") if s else "",
                               tuple(t.shape), dmax, float(d.mean()) if d.size else 0.0,
                               float(np.mean(d > 0)) if d.size else 0.0, None, None, own))
    out_equal = all(np.array_equal(np.stack([m.tensor_values(r, o) for r in runs]), ref[o]) for o in g.outputs)
    return CompareReport(f"{m.mapping} mapping", n, rows, out_equal)


def _own_error_tflm(m: TflmModel, step: Any, out_index: int, ref: dict[int, np.ndarray], xs: list[np.ndarray],
                    plat: Any) -> int | None:
    """Largest difference of one operator run by pymli on TFLite Micro's input values."""
    g = m.graph
    if any(g.tensors[i].variable for i in step.op.inputs if i >= 0):
        return None  # its state before the Invoke is not recorded
    given = dict(zip(g.inputs, xs))
    worst = 0
    for k in range(xs[0].shape[0]):
        args = []
        for i in step.op.inputs:
            if i < 0:
                args.append(None)
            elif g.tensors[i].data is not None:
                args.append(g.tensors[i].data)
            elif i in ref:
                args.append(ref[i][k])
            elif i in given:
                args.append(given[i][k].reshape(g.tensors[i].shape))
            else:
                return None
        outs = m.run_step(step, args, platform=plat)
        pos = list(step.op.outputs).index(out_index)
        mine, theirs = np.asarray(outs[pos]), ref[out_index][k]
        if mine.dtype.kind == "f":
            return None
        worst = max(worst, int(np.abs(mine.astype(np.int64).reshape(theirs.shape) - theirs.astype(np.int64)).max(initial=0)))
    return worst
