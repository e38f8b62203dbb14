"""``pymli demo`` and the CLI work on the minimal install: no scikit-learn, matplotlib or tflite-micro.

A fresh interpreter blocks those imports (as if they were not installed) and runs the commands.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_BLOCK = textwrap.dedent("""
    import sys

    class _Block:
        BLOCKED = ("sklearn", "matplotlib", "tflite_micro", "scipy", "hypothesis", "pytest")

        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in self.BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r} (blocked: minimal install)")
            return None

    sys.meta_path.insert(0, _Block())
    from pymli.cli import main
    main(sys.argv[1:], prog_name="pymli")
""")


def _pymli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _BLOCK, *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


def test_demo_on_the_minimal_install() -> None:
    r = _pymli("demo", "--samples", "20")
    assert r.returncode == 0, r.stderr
    assert "Accuracy on the test split" in r.stdout and "sa8" in r.stdout


def test_plot_without_matplotlib_is_one_line(tmp_path: Path) -> None:
    r = _pymli("demo", "--samples", "5", "--plot", str(tmp_path / "p.png"))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "pip install 'pymli-arc[plot]'" in r.stderr and not (tmp_path / "p.png").exists()


def test_info_and_tour_on_the_minimal_install() -> None:
    for cmd in ("info", "tour"):
        r = _pymli(cmd)
        assert r.returncode == 0, (cmd, r.stderr)
