"""``export_c`` as a method of networks and loaded TFLite models: the same files as the function."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pymli.export import FILES, export_c
from pymli.models import Conv2D, FullyConnected, MaxPool, Network
from pymli.models.quantize import quantize_network
from pymli.tflite import load
from pymli.tflite.examples import cnn10


def _files(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.iterdir())}


def _small_network() -> Network:
    rng = np.random.default_rng(5)
    net = Network((6, 6, 2), [
        Conv2D(rng.normal(0, 0.3, (3, 3, 2, 4)), rng.normal(0, 0.1, 4), padding=1, relu="gen", name="c"),
        MaxPool(2, stride=2, name="p"),
        FullyConnected(rng.normal(0, 0.2, (36, 5)), np.zeros(5), name="f"),
    ], name="small")
    return quantize_network(net, rng.uniform(-1, 1, (8, 6, 6, 2)), "sa8")


def test_network_method_equals_function(tmp_path: Path) -> None:
    q = _small_network()
    res = q.export_c(tmp_path / "m", n_default=2)
    export_c(q, tmp_path / "f", n_default=2)
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == sorted(FILES)
    assert _files(tmp_path / "m") == _files(tmp_path / "f")
    assert res.plan.peak > 0


def test_tflite_model_method_equals_function(tmp_path: Path) -> None:
    m = load(cnn10(), mapping="mli")
    m.export_c(tmp_path / "m", n_default=2, platform="em")
    export_c(m, tmp_path / "f", n_default=2, platform="em")
    assert _files(tmp_path / "m") == _files(tmp_path / "f")
    assert "model_run" in (tmp_path / "m" / "model.h").read_text()
