"""pymli.kernels._blas: kernels pin BLAS to one thread for their products and restore it after."""

from __future__ import annotations

import numpy as np

from pymli.kernels import _blas
from pymli.kernels import convolution as KC


class _FakeLib:
    """A threadpoolctl library controller that records the thread counts it is given."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.seen: list[int] = []

    def get_num_threads(self) -> int:
        return self.n

    def set_num_threads(self, n: int) -> None:
        self.n = n
        self.seen.append(n)


def _with_fake(lib: _FakeLib):  # type: ignore[no-untyped-def]
    saved = _blas._STATE.get("libs")
    _blas._STATE["libs"] = [lib]
    return saved


def test_large_product_runs_on_one_thread_and_restores() -> None:
    lib = _FakeLib(2)
    saved = _with_fake(lib)
    inside: list[int] = []
    try:
        with _blas.blas_single_thread(1 << 20):
            inside.append(lib.get_num_threads())
        a = np.ones((64, 64), np.int8)
        KC.exact_matmul(a, a)
    finally:
        _blas._STATE["libs"] = saved
    assert inside == [1]
    assert lib.n == 2 and lib.seen == [1, 2, 1, 2]


def test_small_product_and_single_thread_leave_blas_alone() -> None:
    lib = _FakeLib(2)
    one = _FakeLib(1)
    saved = _with_fake(lib)
    try:
        with _blas.blas_single_thread(_blas.SMALL_PRODUCT - 1):
            pass
        _blas._STATE["libs"] = [one]
        with _blas.blas_single_thread(1 << 20):
            pass
    finally:
        _blas._STATE["libs"] = saved
    assert lib.seen == [] and one.seen == []


def test_restored_after_an_exception() -> None:
    lib = _FakeLib(3)
    saved = _with_fake(lib)
    try:
        try:
            with _blas.blas_single_thread():
                raise RuntimeError("inside")
        except RuntimeError:
            pass
    finally:
        _blas._STATE["libs"] = saved
    assert lib.n == 3
