#!/usr/bin/env python3
"""Whole models through ``pymli.tflite.load`` (TFLM + arc_mli mapping): pymli against the TFLite Micro
interpreter and LiteRT, per inference.

usage: python benchmarks/bench_models_tflm.py [--repeat 10] [--batch 64] [--only mobilenet,golden] [--blocks]
       [--profile NAME]

Models: MobileNet v1 0.5 128x128, MobileNet v2 0.35 96x96 (residual ADDs), MobileNet v1 0.25 96x96 (random
weights, calibrated by pymli.tflite.examples.GraphMaker; builders in bench_eval.py), a three-FULLY_CONNECTED
model (64 -> 32 -> 32 -> 10), and the nine models of shared/tflite_golden. Columns: MACs per inference, pymli's
time per inference (best of N after WARMUP warm-up runs: the first Invoke of a step goes through the capi
function, the JIT compiles, caches fill - a dataset's steady state), pymli's time per sample in a batch of
``--batch`` samples (one ``run`` call), the TFLite Micro Python interpreter's ``invoke`` (the ``tflite_micro``
package; its reference kernels), LiteRT's ``invoke`` on one thread (``ai_edge_litert``; the column is left
empty when the package is absent), and the ratios TFLM / pymli and pymli / LiteRT, of the wall times and (in
brackets) of the process CPU times, which a loaded machine disturbs less (every side runs on one thread,
except pymli's parallel row blocks of large convolutions, whose CPU time is counted whole). Only the invoke is
timed on every side (inputs set beforehand); pymli's time includes its input checks. The sides take turns call
by call (a TFLM invoke of tens of ms then evicts the others' caches before each of their calls); ``--blocks``
times each side in blocks of consecutive calls instead (a dataset's steady state), the blocks taking turns.

``--profile NAME`` prints pymli's time per operator of one model (each step alone as a run calls it, on the
values of a captured run) beside LiteRT's (each operator alone as a one-operator model), with MACs and MAC rates:
where the time goes and where LiteRT wins.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from _timing import ROOT, best_of, fmt_time
from bench_eval import mobilenet_v1, mobilenet_v2

from pymli.tflite import load
from pymli.tflite.examples import GraphMaker
from pymli.tflite.errors import TfliteWarning

GOLDEN = Path(os.environ.get("PYMLI_SHARED", ROOT.parent / "shared")) / "tflite_golden" / "models"


def three_fc() -> bytes:
    """A three-FULLY_CONNECTED int8 model: 64 -> 32 (ReLU) -> 32 (ReLU) -> 10."""
    g = GraphMaker((64,), 0, description="three fully connected layers")
    g.fc(32, act="RELU").fc(32, act="RELU").fc(10)
    return g.finish()


def models(only: str = "") -> list[tuple[str, bytes]]:
    """(name, .tflite bytes) of the benchmarked models whose name contains one of the comma-separated
    fragments of ``only`` (``golden``: the golden models; empty: all)."""
    keys = [k for k in only.split(",") if k]
    built = [("mobilenet_v1 0.5 128x128", lambda: mobilenet_v1(128, 0.5)[0]),
             ("mobilenet_v2 0.35 96x96", lambda: mobilenet_v2(96, 0.35)[0]),
             ("mobilenet_v1 0.25 96x96", lambda: mobilenet_v1(96, 0.25)[0]),
             ("three FC 64-32-32-10", three_fc)]
    golden = [(p.stem, p.read_bytes) for p in sorted(GOLDEN.glob("*.tflite"))]

    def want(name: str, is_golden: bool) -> bool:
        return not keys or any(k in name or (k == "golden" and is_golden) for k in keys)
    return [(n, f()) for n, f in built if want(n, False)] + [(n, f()) for n, f in golden if want(n, True)]


def random_inputs(m, n: int | None = None, seed: int = 0) -> list[np.ndarray]:  # noqa: ANN001
    """One random array per model input (int8 / int16 over their whole range, float32 standard normal);
    with ``n``, a batch of n samples."""
    rng = np.random.default_rng(seed)
    xs = []
    for t in m.inputs:
        shape = tuple(t.shape) if n is None else (n,) + tuple(t.shape)
        if t.dtype.kind == "f":
            xs.append(rng.standard_normal(shape).astype(t.dtype))
        else:
            info = np.iinfo(t.dtype)
            lo, hi = max(int(info.min), -(1 << 15)), min(int(info.max), (1 << 15) - 1)
            xs.append(rng.integers(lo, hi + 1, shape).astype(t.dtype))
    return xs


def tflm_invoke(data: bytes, xs: list[np.ndarray]):  # noqa: ANN201
    """A zero-argument callable running one TFLite Micro Invoke on ``xs`` (None without tflite_micro)."""
    try:
        from tflite_micro.python.tflite_micro import runtime  # optional dependency
    except Exception:  # noqa: BLE001 - any import problem: no column
        return None
    it = runtime.Interpreter.from_bytes(data, arena_size=(16 << 20) + 8 * len(data))
    for j, x in enumerate(xs):
        it.set_input(np.ascontiguousarray(x), j)
    return it.invoke


def litert_invoke(data: bytes, xs: list[np.ndarray]):  # noqa: ANN201
    """A zero-argument callable running one single-threaded LiteRT invoke (None without ai_edge_litert)."""
    try:
        from ai_edge_litert.interpreter import Interpreter  # optional dependency
    except Exception:  # noqa: BLE001 - any import problem: no column
        return None
    it = Interpreter(model_content=data, num_threads=1)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), xs):
        it.set_tensor(d["index"], np.ascontiguousarray(x))
    return it.invoke


WARMUP = 3
"""Untimed calls of each callable before the timed ones."""


def _interleaved(fns: dict, repeat: int) -> dict:
    """Best wall time of each callable (key) and best process CPU time (key + ``"_cpu"``), the callables
    taking turns (a busy machine slows them alike)."""
    best = {k: float("inf") for k, f in fns.items() if f is not None}
    cpu = dict(best)
    for _ in range(WARMUP):
        for k in best:
            fns[k]()
    for _ in range(max(repeat, 1)):
        for k in best:
            _time_call(fns[k], k, best, cpu)
    return _figures(fns, best, cpu)


def _time_call(fn, key, best: dict, cpu: dict) -> None:  # type: ignore[no-untyped-def]
    """One timed call of ``fn``: keeps its wall and process CPU time in ``best`` / ``cpu`` under ``key``
    where they are the lowest so far."""
    c0, t0 = time.process_time(), time.perf_counter()
    fn()
    t1, c1 = time.perf_counter(), time.process_time()
    best[key] = min(best[key], t1 - t0)
    cpu[key] = min(cpu[key], c1 - c0)


def _figures(fns: dict, best: dict, cpu: dict) -> dict:
    """The timing functions' result: best wall time per key, best CPU time per key + ``"_cpu"``."""
    return {k: best.get(k) for k in fns} | {k + "_cpu": cpu.get(k) for k in fns}


ROUNDS = 3
"""Rounds of :func:`_in_blocks`: each side's calls run in a block of ``repeat // ROUNDS`` per round."""


def _in_blocks(fns: dict, repeat: int) -> dict:
    """:func:`_interleaved`'s figures with each callable timed in blocks of consecutive calls (its steady
    state over a dataset: its caches stay warm from call to call), the blocks taking turns over
    :data:`ROUNDS` rounds (a changing load slows them alike)."""
    best = {k: float("inf") for k, f in fns.items() if f is not None}
    cpu = dict(best)
    for _ in range(ROUNDS):
        for k in best:
            for _ in range(WARMUP):
                fns[k]()
            for _ in range(max(repeat // ROUNDS, 1)):
                _time_call(fns[k], k, best, cpu)
    return _figures(fns, best, cpu)


def run(repeat: int = 10, batch: int = 64, only: str = "", blocks: bool = False) -> list[dict]:
    """Time every model; returns one dict per model (name, macs, ops, and seconds per inference for pymli,
    pymli in a batch, tflm, litert). The single-sample columns are timed in turns (:func:`_interleaved`),
    or with ``blocks`` in blocks of consecutive calls (:func:`_in_blocks`)."""
    rows = []
    for name, data in models(only):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TfliteWarning)
            m = load(data)
        xs = random_inputs(m)
        row: dict = {"name": name, "macs": m.macs(), "ops": len(m.steps)}
        fns: dict = {"pymli": lambda m=m, xs=xs: m.run(*xs)}
        for key, make in (("tflm", tflm_invoke), ("litert", litert_invoke)):
            try:
                fns[key] = make(data, xs)
            except Exception as e:  # noqa: BLE001 - a runtime that cannot load the model: no figure
                print(f"({name}: {key} cannot run it: {type(e).__name__}: {str(e).splitlines()[0][:80]})",
                      file=sys.stderr)
                fns[key] = None
        row.update((_in_blocks if blocks else _interleaved)(fns, repeat))
        if batch > 1 and m.inputs and all(t.shape and t.shape[0] == 1 for t in m.inputs):
            xb = random_inputs(m, batch, seed=1)
            row["batch"] = best_of(lambda: m.run(*xb), max(3, repeat // 3)) / batch
        rows.append(row)
        print_rows([row], header=len(rows) == 1)
    return rows


def print_rows(rows: list[dict], header: bool = True) -> None:
    """Print rows as an aligned table."""
    def t(v: float | None) -> str:
        return fmt_time(v) if v else "-"

    def r(x: dict, a: str, b: str) -> str:
        wall = f"{x[a] / x[b]:.2f}x" if x.get(a) and x.get(b) else "-"
        ca, cb = x.get(a + "_cpu"), x.get(b + "_cpu")
        return f"{wall} ({ca / cb:.2f}x)" if ca and cb else wall

    if header:
        print(f"{'model':30s} {'MACs':>10s} {'ops':>4s} {'pymli':>10s} {'pymli/batch':>11s} {'TFLM':>10s} "
              f"{'LiteRT 1t':>10s} {'TFLM/pymli (CPU)':>17s} {'pymli/LiteRT (CPU)':>19s}")
    for x in rows:
        print(f"{x['name']:30s} {x['macs']:>10,d} {x['ops']:>4d} {t(x['pymli']):>10s} {t(x.get('batch')):>11s} "
              f"{t(x['tflm']):>10s} {t(x['litert']):>10s} {r(x, 'tflm', 'pymli'):>17s} "
              f"{r(x, 'pymli', 'litert'):>19s}", flush=True)


def litert_op_models(data: bytes) -> list[bytes] | None:
    """One single-operator model per operator of ``data`` (its constants kept, its activation inputs the
    sub-model's inputs, its outputs the sub-model's outputs), for LiteRT's time per operator; None without
    ai_edge_litert. LiteRT has no per-operator profiler in its Python API: each sub-model's invoke adds
    LiteRT's fixed cost per invoke (~1 us, the time of a RESHAPE alone) to its operator's time."""
    try:
        from ai_edge_litert.tools import flatbuffer_utils as fu  # optional dependency
    except Exception:  # noqa: BLE001 - any import problem: no column
        return None
    base = fu.read_model_from_bytearray(bytearray(data))
    sg = base.subgraphs[0]
    ops, outs = sg.operators, sg.outputs
    consts = {i for i, t in enumerate(sg.tensors) if t.buffer and base.buffers[t.buffer].data is not None
              and len(base.buffers[t.buffer].data)}
    subs = []
    for op in ops:
        sg.operators = [op]
        sg.inputs = [i for i in op.inputs if i >= 0 and i not in consts]
        sg.outputs = [i for i in op.outputs if i >= 0]
        subs.append(bytes(fu.convert_object_to_bytearray(base)))
    sg.operators, sg.outputs = ops, outs
    return subs


def profile(name: str, repeat: int = 10) -> None:
    """pymli's time per operator of one model (each step alone on a captured run's values, called as a
    single-sample run calls it: no platform context, BLAS pinned once), beside LiteRT's (the operator
    alone as a one-operator model, one thread; :func:`litert_op_models`): best of ``repeat`` wall times,
    the two sides taking turns."""
    from pymli.tflite.tflm_model import _macs

    hits = [(n, b) for n, b in models() if name in n]
    if not hits:
        raise SystemExit(f"no model named like {name!r}")
    n, data = hits[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TfliteWarning)
        m = load(data)
    xs = random_inputs(m)
    _, run_ = m.run(*xs, capture=True)
    for _ in range(WARMUP):
        m.run(*xs)  # a run's calls: each offloaded step's kernel called directly once its first Invoke is done
    g = m.graph
    subs = litert_op_models(data)
    tot = {"pymli": 0.0, "litert": 0.0}
    by_kind: dict[str, list] = {}
    print(f"{n}: per operator (best of {repeat}); LiteRT: the operator alone as a model, one thread")
    print(f"  {'op':>3s} {'type':28s} {'output':20s} {'pymli':>10s} {'LiteRT':>10s} {'ratio':>7s} {'MACs':>11s} "
          f"{'pymli GMAC/s':>12s} {'LiteRT':>7s}")
    for k, s in enumerate(m.steps):
        args = [None if i < 0 else m.tensor_values(run_, i) for i in s.op.inputs]
        call = (lambda args, s=s: m.run_step(s, args)) if not m.batchable else m._calls[k]  # state: run_step
        fns: dict = {"pymli": lambda call=call, args=args: call(args), "litert": None}
        if subs is not None:
            try:
                fns["litert"] = litert_invoke(subs[k], [a for a, i in zip(args, s.op.inputs)
                                                        if i >= 0 and g.tensors[i].data is None])
            except Exception as e:  # noqa: BLE001 - an operator LiteRT cannot run alone: no figure
                print(f"  (operator {k}: LiteRT cannot run it alone: {type(e).__name__})", file=sys.stderr)
        with m._blas():  # BLAS pinned to one thread once, as a run does (not around every product)
            t = _interleaved(fns, repeat)
        macs = _macs(g, s.op)
        kind = by_kind.setdefault(s.op.name, [0, 0.0, 0.0, 0])
        kind[0] += 1
        kind[3] += macs
        for j, key in ((1, "pymli"), (2, "litert")):
            if t.get(key):
                kind[j] += t[key]
                tot[key] += t[key]

        def rate(sec: float | None) -> str:
            return f"{macs / sec / 1e9:.1f}" if macs and sec else ""
        ratio = f"{t['pymli'] / t['litert']:.1f}x" if t.get("litert") else "-"
        shape = g.tensors[s.op.outputs[0]].shape if s.op.outputs else ()
        print(f"  {s.op.index:3d} {s.op.name:28s} {str(shape):20s} {fmt_time(t['pymli']):>10s} "
              f"{fmt_time(t['litert']) if t.get('litert') else '-':>10s} {ratio:>7s} {macs:>11,d} "
              f"{rate(t['pymli']):>12s} {rate(t.get('litert')):>7s}")
    print(f"  sum: pymli {fmt_time(tot['pymli'])}, LiteRT {fmt_time(tot['litert']) if tot['litert'] else '-'}")
    print("per operator type: count, pymli time, share, LiteRT time, ratio, MACs")
    for name, (cnt, sec, lsec, macs) in sorted(by_kind.items(), key=lambda kv: -kv[1][1]):
        lr = f"{fmt_time(lsec):>10s} {sec / lsec:6.1f}x" if lsec else f"{'-':>10s} {'-':>7s}"
        print(f"  {name:28s} {cnt:4d} {fmt_time(sec):>10s} {sec / tot['pymli']:6.1%} {lr} {macs:>12,d}")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--only", default="", help="comma-separated name fragments (golden: the golden models)")
    ap.add_argument("--profile", default="", help="per-operator times of the first model named like this")
    ap.add_argument("--blocks", action="store_true",
                    help="time each side in blocks of consecutive calls (steady state), not call by call in turns")
    a = ap.parse_args()
    if a.profile:
        profile(a.profile, a.repeat)
    else:
        run(a.repeat, a.batch, a.only, a.blocks)


if __name__ == "__main__":
    main()
