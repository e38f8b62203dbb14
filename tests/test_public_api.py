"""The top-level surface: lazy subpackages and the Pythonic ops as ``pymli.<op>``."""

from __future__ import annotations

import numpy as np
import pytest

import pymli


def test_ops_reachable_from_top_level() -> None:
    for name in pymli.ops.__all__:
        assert getattr(pymli, name) is getattr(pymli.ops, name)


def test_unknown_attribute_raises() -> None:
    with pytest.raises(AttributeError):
        pymli.no_such_thing  # noqa: B018


def test_conv2d_from_top_level_close_to_float() -> None:
    rng = np.random.default_rng(1)
    x = pymli.quantize(rng.normal(size=(6, 6, 3)), "SA_8")
    w = pymli.quantize(rng.normal(0, 0.3, size=(3, 3, 3, 4)), "SA_8", dim=3, symmetric=True)
    y = pymli.conv2d(x, w, None, stride=1, padding="same", relu="relu6")
    assert y.shape == [6, 6, 4]
    xf, wf = np.pad(x.to_float(), ((1, 1), (1, 1), (0, 0))), w.to_float()
    ref = np.zeros((6, 6, 4))
    for i in range(3):
        for j in range(3):
            ref += xf[i:i + 6, j:j + 6, :] @ wf[i, j]
    ref = np.clip(ref, 0, 6)
    step = float(np.asarray(y.scale)) * 2.0 ** -float(np.asarray(y.scale_frac_bits))
    assert np.abs(y.to_float() - ref).max() <= 2 * step


def test_symmetric_weights_have_zero_points_zero() -> None:
    w = pymli.quantize(np.linspace(-1, 3, 24).reshape(2, 3, 4), "SA_8", dim=2, symmetric=True)
    assert np.all(np.asarray(w.zero_point) == 0)
    assert np.abs(w.to_float() - np.linspace(-1, 3, 24).reshape(2, 3, 4)).max() <= 3 / 127
