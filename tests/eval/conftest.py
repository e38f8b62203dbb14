"""Small models and datasets for the pymli.eval tests (cnn10 from pymli.tflite.examples, the digits CNN)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pymli.models.digits import digits_network, load_split
from pymli.models.quantize import quantize_network

N = 22  # samples of the main dataset: not a multiple of the chunk sizes used


@pytest.fixture(scope="session")
def cnn10_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pymli.tflite.examples import cnn10

    p = tmp_path_factory.mktemp("models") / "cnn10.tflite"
    p.write_bytes(cnn10())
    return p


@pytest.fixture(scope="session")
def cnn10_model(cnn10_path: Path):  # noqa: ANN201
    import pymli.tflite as tfl

    return tfl.load(cnn10_path, mapping="mli")


@pytest.fixture(scope="session")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray, np.ndarray]:
    """(npz path, x int8 [N, 16, 16, 3], y int [N]) covering the whole int8 range."""
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, (N, 16, 16, 3)).astype(np.int8)
    y = rng.integers(0, 10, N)
    p = tmp_path_factory.mktemp("data") / "set.npz"
    np.savez(p, x=x, y=y)
    return p, x, y


@pytest.fixture(scope="session")
def reference(cnn10_model, dataset) -> np.ndarray:  # noqa: ANN001
    """cnn10 outputs computed by TfliteModel.run one sample after the other."""
    _, x, _ = dataset
    return np.concatenate([cnn10_model.run(x[i:i + 1]) for i in range(x.shape[0])])


@pytest.fixture(scope="session")
def digits_sa8():  # noqa: ANN201
    """(quantised sa8 digits network, float test images [40, 8, 8, 1], labels [40])."""
    # the digits and their split ship in pymli/data/digits.npz (no scikit-learn)
    xtr, xte, _, yte = load_split()
    return quantize_network(digits_network(), xtr[:64], "sa8"), xte[:40], yte[:40]
