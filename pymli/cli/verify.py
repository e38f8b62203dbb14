"""``pymli verify``: replay golden C-library recordings (the runner is :mod:`pymli.testing.golden`)."""

from __future__ import annotations

import sys

import click

from ..testing.golden import run_dirs
from ._common import check_regex, positive

__all__ = ["verify"]


@click.command()
@click.argument("dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--only", callback=check_regex, help="Regular expression on the function name.")
@click.option("--summary", is_flag=True, help="Per-function lines only.")
@click.option("--failures", type=int, default=3, show_default=True, callback=positive,
              help="Failing cases to detail per function.")
def verify(dirs: tuple[str, ...], only: str | None, summary: bool, failures: int) -> None:
    """Replay golden C-library cases in DIRS; exit 1 if any case fails or none was found."""
    sys.exit(run_dirs(list(dirs), only, summary, failures))
