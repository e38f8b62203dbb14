"""The fuzz suites run the pure-NumPy kernels (the optional numba JIT switched off).

Every fuzzed call runs under a 5 s alarm (``harness.CALL_TIMEOUT``) that finds hangs; a JIT kernel's
first call in a process with an empty numba cache compiles for several seconds (a fresh clone, CI),
and an alarm that interrupts numba mid-compile leaves that function unusable for the process. What
the fuzzers check (the C status of every misuse, nothing written, no crash) is decided before any
kernel runs; the JIT kernels themselves are compared with the NumPy kernels, views, overlaps and
extremes included, in ``tests/kernels/test_jit.py`` and ``tests/kernels/test_jit_reduce.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pymli.kernels import _jit


@pytest.fixture(autouse=True)
def _numpy_kernels() -> Iterator[None]:
    # per test, not per session: a session-scoped fixture of this folder would stay active (JIT off)
    # for every test the same worker runs after the first fuzz test
    prev = _jit.set_enabled(False)
    yield
    _jit.set_enabled(prev)
