"""The Dask backend: a LocalCluster gives the same outputs; a worker killed mid-run has its chunks re-run."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from pymli.eval import EvalError, evaluate

distributed = pytest.importorskip("distributed", reason="the Dask backend is the optional 'cluster' extra")


def test_local_cluster_identical(cnn10_path, dataset, reference) -> None:  # noqa: ANN001
    path, x, y = dataset
    rep = evaluate(cnn10_path, path, scheduler="local", workers=2, batch=4, progress=False, mapping="mli")
    assert rep.backend == "dask"
    assert np.array_equal(rep.outputs, reference)
    inline = evaluate(cnn10_path, path, workers=1, batch=22, progress=False, mapping="mli")
    da, db = rep.to_dict(), inline.to_dict()
    for k in ("samples", "accuracy", "top5", "confusion", "layers"):
        assert da[k] == db[k], k


def test_ship_data_and_in_memory_arrays(cnn10_path, dataset, reference) -> None:  # noqa: ANN001
    path, x, _ = dataset
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        a = evaluate(cnn10_path, path, scheduler=c.scheduler_address, ship_data=True, batch=5, progress=False, mapping="mli")
        b = evaluate(cnn10_path, x, scheduler=c.scheduler_address, batch=7, progress=False, layers=False, mapping="mli")
    assert np.array_equal(a.outputs, reference)
    assert np.array_equal(b.outputs, reference)


def test_worker_killed_mid_run(cnn10_path, cnn10_model) -> None:  # noqa: ANN001
    x = np.random.default_rng(11).integers(-128, 128, (48, 16, 16, 3)).astype(np.int8)
    want = cnn10_model.run(x)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        # one Client at a time in this process: evaluate() opens its own
        with distributed.Client(c) as client:
            victim = sorted(client.run(os.getpid).values())[0]
        killed = []

        def kill_after_first(done: int, total: int) -> None:
            if not killed:
                os.kill(victim, signal.SIGKILL)
                killed.append(done)

        rep = evaluate(cnn10_path, x, scheduler=c.scheduler_address, batch=2, progress=kill_after_first,
                       layers=False, mapping="mli")
        assert killed and killed[0] < len(x)
        with distributed.Client(c) as client:
            assert victim not in client.run(os.getpid).values()
    assert np.array_equal(rep.outputs, want)
    assert rep.samples == len(x)


def test_unreachable_scheduler(cnn10_path, dataset, monkeypatch) -> None:  # noqa: ANN001
    import pymli.eval.runner as runner

    monkeypatch.setattr(runner, "CONNECT_TIMEOUT", "2s")
    path, _, _ = dataset
    with pytest.raises(EvalError, match="cannot reach the Dask scheduler"):
        evaluate(cnn10_path, path, scheduler="tcp://127.0.0.1:9", progress=False, mapping="mli")
