"""CheckCache: a memoised check re-raises the same status and runs once per key."""

from __future__ import annotations

import pytest

from pymli import MliError, Status
from pymli.checks import CheckCache


def test_outcome_is_memoised_per_key() -> None:
    calls = []
    cache = CheckCache(size=4)

    def bad() -> None:
        calls.append(1)
        raise MliError(Status.SHAPE_MISMATCH, "shapes differ")

    for _ in range(3):
        with pytest.raises(MliError) as e:
            cache.run("k", bad)
        assert e.value.status is Status.SHAPE_MISMATCH and e.value.message == "shapes differ"
    assert len(calls) == 1
    cache.run("ok", lambda: None)
    cache.run("ok", bad)  # a passing key stays passing: the check is not run again
    assert len(calls) == 1


def test_cache_is_bounded() -> None:
    cache = CheckCache(size=2)
    seen = []
    for k in range(5):
        cache.run(k, lambda k=k: seen.append(k))
    cache.run(0, lambda: seen.append("again"))
    assert seen[-1] == "again"
