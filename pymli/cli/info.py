"""``pymli info``: version, platform presets and the MLI functions pymli provides."""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table

from .. import __version__
from ..capi import FUNCTIONS, UNSUPPORTED
from ..config import PRESETS

__all__ = ["info"]


@click.command()
def info() -> None:
    """Version, platform presets and the MLI functions pymli provides."""
    con = Console()
    con.print(f"[bold]pymli {__version__}[/bold]: embARC MLI 2.0.2 kernels in NumPy, bit for bit")
    t = Table(title="Platform presets")
    for col in ("name", "round mode", "FULL_ACCU", "AVEPOOL_16BIT_MUL"):
        t.add_column(col)
    for p in PRESETS.values():
        t.add_row(p.name, p.round_mode.value, str(p.full_accu), str(p.avepool_16bit_mul))
    con.print(t)
    con.print(f"{len(FUNCTIONS)} MLI functions implemented; {len(UNSUPPORTED)} listed as unsupported.")
    for name in sorted(FUNCTIONS):
        con.print(f"  {name}")
    for name, why in sorted(UNSUPPORTED.items()):
        con.print(f"  [dim]{name}: unsupported ({why})[/dim]")
