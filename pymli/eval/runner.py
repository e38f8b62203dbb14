""":func:`evaluate`: a model over a whole dataset, in chunks, on every core or on a Dask cluster.

The dataset is cut into chunks of ``batch`` samples. Each chunk is read and run by a worker that
prepared the model once (the main process with one worker; a ``ProcessPoolExecutor`` of spawned /
forkserver processes with several; Dask workers with ``scheduler``). Chunk results come back in any
order and are put back in dataset order. A chunk goes through the network as a batch (its prepared
plan runs every layer once over the batch); since :meth:`pymli.models.Network.run` gives every sample
the bits it has alone and every statistic is an integer sum or maximum, the outputs and the report are
identical, bit for bit, whatever the number of workers, the chunk size or the scheduler.

With ``out``, every finished chunk is also written to ``<out>.chunks/`` so that an interrupted run can
be resumed (``resume=True``); the folder is removed once the whole run is written to ``out``.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import logging
import multiprocessing
import os
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from ..config import PRESETS, Platform, get_platform
from ..kernels._parallel import set_threads
from .data import DataSource, EvalError, open_data
from .model import ChunkResult, ModelRef, Prepared, check_against, model_ref, prepare
from .report import AgainstEval, EvalReport, LayerEval, peak_bits, top_k_hits

__all__ = ["evaluate", "DEFAULT_BATCH", "chunk_dir"]

#: samples per chunk unless ``batch`` says otherwise; a chunk is one batch through the network's
#: prepared plan (:meth:`pymli.models.Network.prepare`), so larger chunks amortise the per-layer cost
DEFAULT_BATCH = 64
#: how long to wait for a Dask scheduler given by address
CONNECT_TIMEOUT = "20s"

ProgressFn = Callable[[int, int], None]


def chunk_dir(out: str | os.PathLike[str]) -> Path:
    """The folder holding the finished chunks of a run writing ``out`` (``preds.npz`` -> ``preds.npz.chunks``).

    Args:
        out: the ``--out`` path.

    Returns:
        The chunk folder's path.
    """
    return Path(str(out) + ".chunks")


# --------------------------------------------------------------------------------------------- workers
_LIMITED: list[Any] = []


def _one_blas_thread() -> None:
    """One BLAS thread per worker process: the workers are the parallelism (results do not depend on it)."""
    if _LIMITED:
        return
    set_threads(1)  # nor the kernels' own thread pool (pymli.kernels._parallel)
    try:
        from threadpoolctl import threadpool_limits  # optional (comes with scikit-learn)
    except ImportError:
        _LIMITED.append(None)
        return
    _LIMITED.append(threadpool_limits(1))


def _init_worker(ref: ModelRef) -> None:
    """Process-pool initializer: Ctrl-C is the main process's business; prepare the model once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _one_blas_thread()
    prepare(ref)


def _run_part(p: Prepared, part: DataSource, start: int, platform: Any, against: str | None,
              layers: bool) -> ChunkResult:
    try:
        x = part.read(0, part.size)
        return p.run_chunk(x, start, platform=platform, against=against, layers=layers)
    except EvalError:
        raise
    except Exception as e:  # noqa: BLE001 - reported with the samples it happened on, as one line
        raise EvalError(f"samples {start}:{start + part.size}: {type(e).__name__}: {e}") from None


def _pool_task(ref: ModelRef, part: DataSource, start: int, platform: Any, against: str | None,
               layers: bool) -> ChunkResult:
    return _run_part(prepare(ref), part, start, platform, against, layers)


# --------------------------------------------------------------------------------------------- backends
Chunks = list[tuple[int, int]]


def _inline(p: Prepared, src: DataSource, chunks: Chunks, opts: dict[str, Any]) -> Iterator[ChunkResult]:
    for s, e in chunks:
        yield _run_part(p, src.part(s, e), s, **opts)


def _processes(ref: ModelRef, src: DataSource, chunks: Chunks, workers: int, opts: dict[str, Any]
               ) -> Iterator[ChunkResult]:
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    ex = cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_worker, initargs=(ref,))
    todo = list(chunks)
    running: set[cf.Future[ChunkResult]] = set()
    try:
        while todo or running:
            while todo and len(running) < 2 * workers:
                s, e = todo.pop(0)
                running.add(ex.submit(_pool_task, ref, src.part(s, e), s, **opts))
            done, running = cf.wait(running, return_when=cf.FIRST_COMPLETED)
            for f in done:
                yield _result(f)
    except KeyboardInterrupt:
        # Stop cleanly: drop the queued chunks, let the running ones finish (they are kept for
        # --resume); a second Ctrl-C abandons them.
        for f in running:
            f.cancel()
        try:
            for f in cf.as_completed([f for f in running if not f.cancelled()]):
                if f.exception() is None:
                    yield f.result()
        except KeyboardInterrupt:
            for proc in list(getattr(ex, "_processes", {}).values()):  # no public terminate before 3.14
                proc.terminate()
        raise
    except cf.process.BrokenProcessPool:
        raise EvalError("a worker process died (out of memory?); rerun with --resume to keep the finished "
                        "chunks") from None
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


def _result(f: Any) -> ChunkResult:
    try:
        return f.result()
    except EvalError:
        raise
    except cf.process.BrokenProcessPool:
        raise
    except Exception as e:  # noqa: BLE001
        raise EvalError(f"a worker failed: {type(e).__name__}: {e}") from None


def _dask_task(ref: ModelRef, part: DataSource, start: int, platform: Any, against: str | None,
               layers: bool) -> ChunkResult:
    """One chunk on a Dask worker (the model is prepared once per worker process and kept)."""
    _one_blas_thread()
    return _run_part(prepare(ref), part, start, platform, against, layers)


def _dask(ref: ModelRef, src: DataSource, chunks: Chunks, scheduler: str, workers: int, opts: dict[str, Any],
          ship_data: bool) -> Iterator[ChunkResult]:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise EvalError("--scheduler needs Dask: pip install 'pymli[cluster]'") from None
    cluster = None
    try:
        if scheduler == "local":
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                                   silence_logs=logging.ERROR)
            client = Client(cluster)
        else:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as e:
        if cluster is not None:
            cluster.close()
        raise EvalError(f"cannot reach the Dask scheduler {scheduler}: {e}") from None
    try:
        # The model goes to every worker once (scatter, broadcast); each task names its samples by path
        # and row range, so a task whose worker dies is simply run again elsewhere. In-memory data
        # (or ship_data) travels inside the task instead.
        mref = client.scatter(ref, broadcast=True, hash=False)
        tag = hashlib.sha256(f"{ref.digest}{src.fingerprint}{time.time_ns()}".encode()).hexdigest()[:12]
        futs = []
        for s, e in chunks:
            part = src.part(s, e)
            if ship_data and part.kind != "array":
                x = part.read(0, part.size)
                part = DataSource("array", None, part.size, tuple(x.shape[1:]), str(x.dtype), array=x,
                                  fingerprint=part.fingerprint)
            futs.append(client.submit(_dask_task, mref, part, s, **opts, key=f"pymli-eval-{tag}-{s}", pure=False))
        try:
            for f in as_completed(futs):
                try:
                    r = f.result()
                except EvalError:
                    raise
                except Exception as e:  # noqa: BLE001 - KilledWorker after repeated deaths, lost data, ...
                    raise EvalError(f"Dask task failed: {type(e).__name__}: {e}") from None
                yield r
        except KeyboardInterrupt:
            client.cancel(futs)
            raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


# --------------------------------------------------------------------------------------------- resume
def _fingerprint(ref: ModelRef, src: DataSource, platform: Any, against: str | None, layers: bool) -> str:
    text = json.dumps([ref.digest, src.fingerprint, str(platform), against, layers])
    return hashlib.sha256(text.encode()).hexdigest()


def _chunk_file(d: Path, s: int, e: int) -> Path:
    return d / f"chunk-{s:010d}-{e:010d}.npz"


def _load_chunks(d: Path, fp: str, chunks: Chunks, resume: bool) -> dict[int, ChunkResult]:
    manifest = d / "manifest.json"
    if resume and manifest.is_file():
        try:
            old = json.loads(manifest.read_text()).get("fingerprint")
        except (OSError, ValueError):
            old = None
        if old != fp:
            raise EvalError(f"{d}: its chunks come from another model, data set, platform or --against; "
                            "remove the folder or run without --resume")
    elif d.exists() and not resume:
        shutil.rmtree(d)
    d.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps({"fingerprint": fp}))
    found: dict[int, ChunkResult] = {}
    if not resume:
        return found
    for s, e in chunks:
        f = _chunk_file(d, s, e)
        if not f.is_file():
            continue
        try:
            with np.load(f, allow_pickle=False) as z:
                r = ChunkResult.from_arrays(z)
        except Exception:  # noqa: BLE001 - a damaged chunk is computed again
            continue
        if (r.start, r.stop) == (s, e) and r.outputs.shape[0] == e - s and r.pred.shape[0] == e - s:
            found[s] = r
    return found


def _save_chunk(d: Path, r: ChunkResult) -> None:
    f = _chunk_file(d, r.start, r.stop)
    tmp = f.with_name(f.name + ".tmp.npz")
    np.savez(tmp, **r.to_arrays())
    os.replace(tmp, f)  # atomic: a chunk file is complete or absent


# --------------------------------------------------------------------------------------------- evaluate
def _platform_arg(platform: Platform | str | None) -> Platform | str:
    if platform is None:
        return get_platform().name
    if isinstance(platform, str):
        key = platform.lower()
        if key not in PRESETS:
            raise EvalError(f"unknown platform {platform!r}: choose {', '.join(PRESETS)}")
        return key
    return platform


def evaluate(model: Any, data: Any, *, labels: Any = None, input_key: str = "x", label_key: str | None = None,
             preprocess: str | None = None, platform: Platform | str | None = None, batch: int = DEFAULT_BATCH,
             workers: int | None = None, scheduler: str | None = None, limit: int | None = None,
             out: str | os.PathLike[str] | None = None, resume: bool = False, keep_chunks: bool = False,
             against: str | None = None, layers: bool = True, ship_data: bool = False,
             progress: bool | ProgressFn | None = None, console: Any = None, mapping: str = "tflm") -> EvalReport:
    """Run a quantised model over a whole dataset on pymli's MLI kernels and report how it does.

    Args:
        model: a ``.tflite`` path, ``FILE.py:NAME`` or ``module:NAME`` (a quantised
            :class:`pymli.models.Network` or a function returning one), tflite bytes, a
            :class:`pymli.tflite.TfliteModel` or a quantised Network.
        data: ``.npz`` (``input_key``, optional ``label_key``), ``.npy`` ``[N, ...]``, a folder of ``.npy``
            samples or of images (optionally one sub-folder per class), or an array ``[N, ...]``.
        labels: int labels ``[N]`` or a ``.npy`` / text file; overrides the labels found in ``data``.
        input_key: the array of samples inside an ``.npz``.
        label_key: the array of labels inside an ``.npz`` (then required); None: ``"y"`` if present.
        preprocess: pixel conversion of images: ``"SCALE,ZERO_POINT"``, ``"unit"``, ``"mobilenet"`` or
            ``"float"`` (see :func:`pymli.eval.data.parse_preprocess`).
        platform: MLI platform preset (``"vpx"``, ``"vpx-full-accu"``, ``"em"``) or Platform; default current.
        batch: samples per chunk (the unit of work and of ``resume``), >= 1.
        workers: worker processes (default: all cores); Dask LocalCluster workers with ``scheduler="local"``.
        scheduler: None (local processes), ``"local"`` (a Dask LocalCluster) or a Dask scheduler address
            ``tcp://HOST:PORT``.
        limit: evaluate the first ``limit`` samples only.
        out: write ``outputs`` and ``pred`` (dataset order) to this ``.npz``; finished chunks are kept in
            ``<out>.chunks/`` while running.
        resume: reuse the finished chunks of an earlier run with the same model, data and options.
        keep_chunks: keep ``<out>.chunks/`` after a complete run.
        against: ``"float"`` (the float64 twin of the network) or ``"tflm"`` (TFLite Micro, .tflite only).
        layers: collect per-layer saturation and accumulator headroom (captures every intermediate).
        ship_data: with Dask, send the samples inside the tasks instead of letting workers read the files
            by path (no shared file system).
        progress: None (a rich bar on a terminal), True, False, or a callable ``(done, total)``.
        console: the rich Console for the bar.
        mapping: a ``.tflite`` path or bytes as ``"tflm"`` (TFLite Micro + arc_mli, the default) or ``"mli"``
            (pymli's MLI network, with accumulator figures and ``against="float"``).

    Returns:
        the :class:`~pymli.eval.report.EvalReport` (``interrupted`` if Ctrl-C stopped the run).

    Raises:
        EvalError: bad data, options or model (before anything runs), or a sample the kernels reject.
    """
    if batch < 1:
        raise EvalError(f"batch must be >= 1, got {batch}")
    n_cpu = os.cpu_count() or 1
    workers = n_cpu if workers is None else int(workers)
    if workers < 1:
        raise EvalError(f"workers must be >= 1, got {workers}")
    if limit is not None and limit < 1:
        raise EvalError(f"limit must be >= 1, got {limit}")
    if resume and out is None:
        raise EvalError("resume needs out: finished chunks are kept next to the output file")
    plat = _platform_arg(platform)
    ref = model_ref(model, mapping)
    prep = prepare(ref)
    check_against(against, prep)
    src = open_data(data, prep.input_spec(), labels=labels, input_key=input_key, label_key=label_key,
                    preprocess=preprocess).limited(limit)
    n = src.size
    chunks = [(s, min(s + batch, n)) for s in range(0, n, batch)]
    opts = {"platform": plat, "against": against, "layers": layers}

    store = None
    results: dict[int, ChunkResult] = {}
    if out is not None:
        store = chunk_dir(out)
        results = _load_chunks(store, _fingerprint(ref, src, plat, against, layers), chunks, resume)
    pending = [c for c in chunks if c[0] not in results]

    if scheduler is not None:
        backend = "dask"
        it = _dask(ref, src.for_workers(), pending, scheduler, workers, opts, ship_data)
    elif workers == 1 or len(pending) <= 1:
        backend = "inline"
        it = _inline(prep, src.for_workers(), pending, opts)
    else:
        backend = "processes"
        it = _processes(ref, src.for_workers(), pending, min(workers, len(pending)), opts)

    bar, tick, close = _progress(progress, console, n, sum(r.stop - r.start for r in results.values()))
    interrupted = False
    computed = 0
    t0 = time.perf_counter()
    try:
        for r in it:
            results[r.start] = r
            computed += r.stop - r.start
            if store is not None:
                _save_chunk(store, r)
            tick(r.stop - r.start, computed, time.perf_counter() - t0)
    except KeyboardInterrupt:
        interrupted = True
        it.close()  # stop the backend now (pool shut down, Dask futures cancelled)
    finally:
        close()
    seconds = time.perf_counter() - t0
    rep = _report(prep, ref, src, data, plat, results, n, seconds, computed,
                  workers if backend != "inline" else 1, backend, against, interrupted)
    if out is not None and not interrupted:
        np.savez(out, outputs=rep.outputs, pred=rep.pred)
        if store is not None and not keep_chunks:
            shutil.rmtree(store, ignore_errors=True)
    return rep


def _progress(progress: bool | ProgressFn | None, console: Any, total: int, already: int
              ) -> tuple[Any, Callable[[int, int, float], None], Callable[[], None]]:
    """(bar, tick(n, computed, elapsed), close) for the chosen progress display."""
    if callable(progress):
        state = {"done": already}

        def tick_cb(k: int, computed: int, elapsed: float) -> None:
            state["done"] += k
            progress(state["done"], total)  # type: ignore[operator]

        return None, tick_cb, lambda: None
    con = console or Console(stderr=True)
    if progress is False or (progress is None and not con.is_terminal):
        return None, lambda k, c, e: None, lambda: None
    bar = Progress(TextColumn("eval"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                   TimeRemainingColumn(), console=con, transient=False)
    task = bar.add_task("eval", total=total, completed=already, rate="")
    bar.start()

    def tick(k: int, computed: int, elapsed: float) -> None:
        rate = f"{computed / elapsed:.1f} samples/s" if elapsed > 0 else ""
        bar.update(task, advance=k, rate=rate)

    return bar, tick, bar.stop


def _report(p: Prepared, ref: ModelRef, src: DataSource, data: Any, platform: Any, results: dict[int, ChunkResult],
            total: int, seconds: float, computed: int, workers: int, backend: str, against: str | None,
            interrupted: bool) -> EvalReport:
    order = [results[s] for s in sorted(results)]
    infos = p.layer_info()
    if order:
        outputs = np.concatenate([r.outputs for r in order])
        pred = np.concatenate([r.pred for r in order]).astype(np.int64)
    else:
        outputs = np.zeros((0,), np.int8)
        pred = np.zeros((0,), np.int64)
    n = int(pred.shape[0])
    layers: list[LayerEval] = []
    if order and order[0].elements.size == len(infos) and order[0].elements.sum() > 0:
        sat = np.sum([r.saturated for r in order], axis=0)
        tot = np.sum([r.elements for r in order], axis=0)
        peak = np.max([r.acc_peak for r in order], axis=0)
        for k, info in enumerate(infos):
            pb = peak_bits(int(peak[k])) if info.acc_bits is not None else None
            layers.append(LayerEval(info.name, info.kind, info.function,
                                    float(sat[k]) / float(tot[k]) if tot[k] else 0.0, int(tot[k]), info.acc_bits, pb,
                                    None if pb is None or info.acc_bits is None else info.acc_bits - pb))
    accuracy = top5 = None
    confusion = None
    if src.labels is not None and n:
        y = np.concatenate([src.labels[r.start:r.stop] for r in order])
        accuracy = float(np.mean(pred == y))
        scores = None if p.index_output else outputs.reshape(n, -1)
        n_cls = max(int(y.max()) + 1, int(pred.max()) + 1, 0 if scores is None else scores.shape[1])
        confusion = np.bincount(y * n_cls + pred, minlength=n_cls * n_cls).reshape(n_cls, n_cls).astype(np.int64)
        if scores is not None and scores.shape[1] > 5:
            top5 = float(np.mean(top_k_hits(scores, y, 5)))
    ag = None
    if against is not None and n:
        ref_pred = np.concatenate([r.ref_pred for r in order if r.ref_pred is not None])
        cnt = sum(r.diff_count for r in order)
        ag = AgainstEval(against, float(np.mean(ref_pred != pred)),
                         max(r.diff_max for r in order) if cnt else None,
                         sum(r.diff_sum for r in order) / cnt if cnt else None)
    data_name = str(data) if isinstance(data, (str, os.PathLike)) else f"array {src.size}x{list(src.sample_shape)}"
    return EvalReport(ref.name, data_name, platform if isinstance(platform, str) else platform.name, n, total,
                      seconds, computed, workers, backend, accuracy, top5, confusion, src.classes, layers, ag,
                      outputs, pred, [(r.start, r.stop) for r in order], interrupted)

