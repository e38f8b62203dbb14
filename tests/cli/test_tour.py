"""The walk-through runs and reports what it did."""

from __future__ import annotations

import io

from rich.console import Console

from pymli.cli.tour import run


def test_walkthrough_runs() -> None:
    buf = io.StringIO()
    run(Console(file=buf, width=200))
    out = buf.getvalue()
    for text in ("FX16", "per axis", "MLI_STATUS_SHAPE_MISMATCH", "shares memory with the input: True",
                 "at most 1 LSB apart", "ROUND_MODE=UP"):
        assert text in out, text
