"""``pymli verify`` and ``python -m pymli.verify`` exit non-zero with a message when nothing was checked."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pymli.cli import main
from pymli.testing.paths import shared_dir

CASE = "mli_krn_relu_sa8"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def one_case(tmp_path: Path) -> Path:
    src = shared_dir() / "golden" / CASE / "0.npz"
    if not src.is_file():
        pytest.skip(f"{src} is absent: needs the shared golden recordings (PYMLI_SHARED)")
    (tmp_path / "g" / CASE).mkdir(parents=True)
    shutil.copy(src, tmp_path / "g" / CASE / "0.npz")
    return tmp_path / "g"


def _cli(args: list[str]) -> tuple[int, str]:
    r = CliRunner().invoke(main, ["verify", *args])
    assert isinstance(r.exception, (SystemExit, type(None))), repr(r.exception)
    return r.exit_code, r.output


def _module(args: list[str]) -> tuple[int, str]:
    r = subprocess.run([sys.executable, "-m", "pymli.verify", *args], capture_output=True, text=True, cwd=ROOT,
                       timeout=300)
    assert "Traceback" not in r.stderr, r.stderr
    return r.returncode, r.stdout + r.stderr


@pytest.mark.parametrize("run", [_cli, _module], ids=["pymli verify", "python -m pymli.verify"])
def test_verify_truth(run, one_case: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    code, out = run([str(one_case)])
    assert code == 0 and "1 passed, 0 failed" in out
    code, out = run([str(tmp_path / "missing")])
    assert code == 2 and "missing" in out
    (tmp_path / "empty").mkdir()
    code, out = run([str(tmp_path / "empty")])
    assert code == 1 and "nothing was checked" in out
    code, out = run([str(one_case), "--only", "^mli_krn_conv"])
    assert code == 1 and "matched no function" in out
    code, out = run([str(one_case), "--only", "relu("])
    assert code == 2 and "regular expression" in out
    (one_case / CASE / "1.npz").write_bytes(b"not an npz")
    code, out = run([str(one_case)])
    assert code == 1 and "1 passed, 1 failed" in out and "1.npz" in out
