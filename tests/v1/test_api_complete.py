"""The 1.x C API is complete: every one of the 320 functions of MLI 1.0's headers has a callable."""

from __future__ import annotations

import re
import tarfile

import pytest

from pymli.v1 import capi
from pymli.v1.capi._names import API_FUNCTIONS

from ..conftest import shared_dir


def test_320_functions_callable() -> None:
    assert len(API_FUNCTIONS) == 320 == len(set(API_FUNCTIONS))
    missing = [n for n in API_FUNCTIONS if not callable(getattr(capi, n, None))]
    assert not missing, f"missing 1.x functions: {missing}"
    assert len(capi.SPECIALISATIONS) + 58 == 320


def test_every_callable_documented() -> None:
    for n in API_FUNCTIONS:
        f = getattr(capi, n)
        assert f.__name__ == n
        assert f.__doc__ and n in f.__doc__


def test_names_match_the_headers() -> None:
    tar = shared_dir() / "mli1" / "embarc_mli-Release_1.0.tar.gz"
    if not tar.exists():
        pytest.skip(f"{tar} is absent: the header list cannot be re-read")
    names = set()
    with tarfile.open(tar) as tf:
        for m in tf.getmembers():
            if re.search(r"include/api/.*\.h$", m.name):
                txt = tf.extractfile(m).read().decode("latin-1")
                names |= set(re.findall(r"^(?:mli_status|uint32_t)\s+(mli_\w+)\s*\(", txt, re.M))
    assert names == set(API_FUNCTIONS)


def test_golden_index_lists_the_same_functions() -> None:
    idx = shared_dir() / "golden_v1" / "INDEX.md"
    if not idx.exists():
        pytest.skip(f"{idx} is absent")
    names = set(re.findall(r"^\| `(mli_\w+)` \|", idx.read_text(), re.M))
    assert names == set(API_FUNCTIONS)
