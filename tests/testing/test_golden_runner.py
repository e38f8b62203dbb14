"""The golden runner tells the truth: nothing to check is an error, a bad case file is one failure,
cases replay under the build they were recorded with, and a NULL cfg pointer stays NULL.

Cases are copies of real recordings (``$PYMLI_SHARED/golden``) with one field changed, written to a
temporary folder; the function under test is wrapped to see what the runner passes to it.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pymli import capi
from pymli.config import get_platform
from pymli.testing import golden as G
from pymli.testing.paths import shared_dir

RELU = "mli_krn_relu_sa8"
POOL = "mli_krn_avepool_hwc_sa8"


def _source(function: str) -> Path:
    p = shared_dir() / "golden" / function / "0.npz"
    if not p.is_file():
        pytest.skip(f"{p} is absent: needs the shared golden recordings (PYMLI_SHARED)")
    return p


def _copy(tmp: Path, function: str, seed: int = 0, edit: Any = None) -> Path:
    """Copy recording ``function/0.npz`` to ``tmp/function/seed.npz``, letting ``edit(meta)`` change its meta."""
    dst = tmp / function / f"{seed}.npz"
    dst.parent.mkdir(parents=True, exist_ok=True)
    if edit is None:
        shutil.copy(_source(function), dst)
        return dst
    with np.load(_source(function), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["meta"]))
    edit(meta)
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez(dst, **arrays)
    return dst


def _run(dirs: list[Path], only: str | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = G.run_dirs([str(d) for d in dirs], only, out=out)
    return code, out.getvalue(), err.getvalue()


def test_a_real_case_passes(tmp_path: Path) -> None:
    _copy(tmp_path, RELU)
    code, out, _ = _run([tmp_path])
    assert code == 0 and out.strip().endswith("1 passed, 0 failed")


def test_empty_folder_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "mli_krn_relu_sa8").mkdir()
    code, out, err = _run([tmp_path])
    assert code == 1 and "no case files" in err and "nothing was checked" in err


def test_missing_folder_is_an_error(tmp_path: Path) -> None:
    code, _, err = _run([tmp_path / "nope"])
    assert code == 2 and "no such folder" in err and "nope" in err


def test_every_case_filtered_out_is_an_error(tmp_path: Path) -> None:
    _copy(tmp_path, RELU)
    code, _, err = _run([tmp_path], only="^conv")
    assert code == 1 and "matched no function" in err


def test_bad_regex_is_an_error(tmp_path: Path) -> None:
    _copy(tmp_path, RELU)
    code, _, err = _run([tmp_path], only="relu(")
    assert code == 2 and "not a valid regular expression" in err


@pytest.mark.parametrize("content", [b"garbage", b"", b"PK\x03\x04truncated zip"])
def test_unreadable_case_is_one_failure_and_the_run_goes_on(tmp_path: Path, content: bytes) -> None:
    _copy(tmp_path, RELU, 0)
    bad = tmp_path / RELU / "1.npz"
    bad.write_bytes(content)
    code, out, _ = _run([tmp_path])
    assert code == 1
    assert f"{RELU}: 1 passed, 1 failed" in out and str(bad) in out and "unreadable case file" in out


@pytest.mark.parametrize("breakage", ["no meta", "meta not JSON", "meta without function"])
def test_malformed_case_is_one_failure(tmp_path: Path, breakage: str) -> None:
    _copy(tmp_path, RELU, 0)
    bad = tmp_path / RELU / "1.npz"
    if breakage == "no meta":
        np.savez(bad, x=np.zeros(3))
    elif breakage == "meta not JSON":
        np.savez(bad, meta=np.array("{not json"))
    else:
        np.savez(bad, meta=np.array(json.dumps({"args": []})))
    with pytest.raises(G.CaseError, match="malformed"):
        G.load_case(bad)
    code, out, _ = _run([tmp_path])
    assert code == 1 and "1 passed, 1 failed" in out and str(bad) in out


def _spy(monkeypatch: pytest.MonkeyPatch, function: str) -> list[tuple[tuple[Any, ...], Any]]:
    """Wrap ``capi.FUNCTIONS[function]``; record (args, platform at call time)."""
    seen: list[tuple[tuple[Any, ...], Any]] = []
    real = capi.FUNCTIONS[function]

    def spy(*args: Any) -> Any:
        seen.append((args, get_platform()))
        return real(*args)

    monkeypatch.setitem(capi.FUNCTIONS, function, spy)
    return seen


@pytest.mark.parametrize("flag", [False, True])
def test_avepool_16bit_mul_cases_replay_under_that_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         flag: bool) -> None:
    def edit(meta: dict[str, Any]) -> None:
        meta["platform"]["avepool_16bit_mul"] = flag

    case = G.load_case(_copy(tmp_path, POOL, edit=edit))
    assert case.platform().avepool_16bit_mul is flag
    seen = _spy(monkeypatch, POOL)
    G.run_case(case)
    assert len(seen) == 1 and seen[0][1].avepool_16bit_mul is flag
    assert seen[0][1].round_mode.value == case.meta["platform"]["round_mode"]


@pytest.mark.parametrize("how", ["null flag", "null value"])
def test_null_cfg_stays_null(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    def edit(meta: dict[str, Any]) -> None:
        if how == "null flag":
            next(a for a in meta["args"] if a["kind"] == "cfg")["null"] = True
        else:
            meta["cfg"]["cfg"] = None

    case = G.load_case(_copy(tmp_path, RELU, edit=edit))
    seen = _spy(monkeypatch, RELU)
    G.run_case(case)
    assert len(seen) == 1 and seen[0][0][1] is None


def test_recorded_cfg_is_passed_as_a_struct(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case = G.load_case(_copy(tmp_path, RELU))
    seen = _spy(monkeypatch, RELU)
    assert G.run_case(case) == []
    assert seen[0][0][1] is not None and seen[0][0][1].to_dict()["type"] == case.meta["cfg"]["cfg"]["type"]
