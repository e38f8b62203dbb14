"""The real MLI 2.0.2 C library as a test oracle: build it once (cached), compile exported programs.

``../shared/mli/build.sh`` builds the library for this machine into a cache folder outside the
project: ``$PYMLI_MLI_CACHE`` or ``$XDG_CACHE_HOME/pymli`` (default ``~/.cache/pymli``), one
sub-folder per set of build options, guarded by a file lock so parallel test workers build once.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pymli.config import Platform
from pymli.formats import RoundMode

CFLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-O1"]


def tools_missing() -> str | None:
    """Why C tests cannot run here (None when gcc, g++ and cmake are present)."""
    for tool in ("gcc", "g++", "cmake", "make"):
        if shutil.which(tool) is None:
            return f"no {tool} on this machine: the MLI C library cannot be built"
    return None


def cache_root() -> Path:
    env = os.environ.get("PYMLI_MLI_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pymli"


def options(platform: Platform) -> tuple[str, str, str]:
    return ("UP" if platform.round_mode is RoundMode.UP else "CONVERGENT",
            "ON" if platform.full_accu else "OFF", "ON" if platform.avepool_16bit_mul else "OFF")


def build_mli(shared: Path, platform: Platform, debug: str = "RELEASE") -> Path:
    """Build (or reuse) MLI 2.0.2 for ``platform``; returns the folder with ``src/`` and ``lib/``."""
    why = tools_missing()
    if why:
        pytest.skip(why)
    script = shared / "mli" / "build.sh"
    if not script.is_file():
        pytest.skip(f"{script} is absent: the MLI 2.0.2 source is needed")
    opts = options(platform)
    out = cache_root() / f"mli-2.0.2-{'-'.join(opts)}-{debug}"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run(["bash", str(script), str(out), *opts, debug], check=True, capture_output=True, timeout=1200)
    return out


def compile_check(mli: Path, folder: Path) -> Path:
    """Compile ``folder``'s model.c + model_check.c against the built library (warnings are errors)."""
    exe = folder / "model_check"
    inc = mli / "src" / "include"
    cmd = ["gcc", *CFLAGS, f"-I{inc}", f"-I{inc / 'api'}", str(folder / "model.c"), str(folder / "model_check.c"),
           str(mli / "lib" / "libmli.a"), "-lstdc++", "-lm", "-o", str(exe)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"compilation failed:\n{p.stdout}\n{p.stderr[:4000]}"
    return exe


def run_check(exe: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=600)
