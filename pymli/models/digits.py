"""The demo network: a small CNN for the 8x8 handwritten digits (UCI optdigits), trained once offline.

The float weights live in ``pymli/data/digits_cnn.npz`` (made by ``scripts/train_digits.py``) in MLI
layouts. :func:`digits_network` builds the float :class:`Network`; :func:`load_split` returns the
same train / test split as the training script, from ``pymli/data/digits.npz`` (NumPy only).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .layers import AvgPool, Conv2D, FullyConnected, MaxPool, Softmax
from .network import Network

__all__ = ["DATA_FILE", "SPLIT_FILE", "SEED", "TEST_SIZE", "digits_network", "load_split"]

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "digits_cnn.npz"
SPLIT_FILE = Path(__file__).resolve().parent.parent / "data" / "digits.npz"
SEED = 0
TEST_SIZE = 0.2


def load_split(path: str | Path = SPLIT_FILE) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, x_test, y_train, y_test): HWC float images ``[N, 8, 8, 1]`` scaled to [0, 1], int labels.

    The 8x8 digits and the training split ship in ``pymli/data/digits.npz`` (UCI optdigits test
    set, CC BY 4.0; see ``pymli/data/README.md``): NumPy only, nothing downloaded.

    Args:
        path: the ``.npz`` file with ``images``, ``labels``, ``train_index``, ``test_index``.
    """
    with np.load(path, allow_pickle=False) as z:
        x = (z["images"].astype(np.float64) / 16.0)[..., None]
        y = z["labels"].astype(np.int64)
        tr, te = z["train_index"].astype(np.intp), z["test_index"].astype(np.intp)
    return x[tr], x[te], y[tr], y[te]


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
