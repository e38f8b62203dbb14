"""The demo network: a small CNN for scikit-learn's bundled 8x8 digits, trained once offline.

The float weights live in ``pymli/data/digits_cnn.npz`` (made by ``scripts/train_digits.py``) in MLI
layouts. :func:`digits_network` builds the float :class:`Network`; :func:`load_split` returns the
same train / test split as the training script (scikit-learn needed, no download).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .layers import AvgPool, Conv2D, FullyConnected, MaxPool, Softmax
from .network import Network

__all__ = ["DATA_FILE", "SEED", "TEST_SIZE", "digits_network", "load_split"]

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "digits_cnn.npz"
SEED = 0
TEST_SIZE = 0.2


def load_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, x_test, y_train, y_test): HWC float images ``[N, 8, 8, 1]`` scaled to [0, 1], int labels.

    Raises:
        ImportError: scikit-learn is not installed.
    """
    # scikit-learn takes seconds to import: only this demo data set needs it
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    x = (d.images / 16.0).astype(np.float64)[..., None]
    return tuple(train_test_split(x, d.target, test_size=TEST_SIZE, random_state=SEED,  # type: ignore[return-value]
                                  stratify=d.target))


def digits_network(path: str | Path = DATA_FILE) -> Network:
    """The float digits CNN: conv 3x3x8 + ReLU, maxpool 2, conv 3x3x16 + ReLU, avgpool 2, fc 64->10, softmax."""
    w = np.load(path)
    return Network((8, 8, 1), [
        Conv2D(w["conv1_w"], w["conv1_b"], padding=1, relu="gen", name="conv1"),
        MaxPool(2, stride=2, name="pool1"),
        Conv2D(w["conv2_w"], w["conv2_b"], padding=1, relu="gen", name="conv2"),
        AvgPool(2, stride=2, name="pool2"),
        FullyConnected(w["fc_w"], w["fc_b"], name="fc"),
        Softmax(name="prob"),
    ], name="digits-cnn")
