"""The ``pymli`` command line."""

from __future__ import annotations

import sys

import click

from . import __version__

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pymli")
def main() -> None:
    """pymli: the embARC MLI 2.0 library in NumPy, bit-exact with the C library."""


@main.command()
def tour() -> None:
    """A short walk-through: tensors, fp32 <-> fx16/sa8 conversions, helpers, rounding modes."""
    from .walkthrough import run

    run()


@main.command()
def info() -> None:
    """Version, platform presets and the MLI functions pymli provides."""
    from rich.console import Console
    from rich.table import Table

    from . import capi
    from .config import PRESETS

    con = Console()
    con.print(f"[bold]pymli {__version__}[/bold]: embARC MLI 2.0.2 kernels in NumPy, bit for bit")
    t = Table(title="Platform presets")
    for col in ("name", "round mode", "FULL_ACCU", "AVEPOOL_16BIT_MUL"):
        t.add_column(col)
    for p in PRESETS.values():
        t.add_row(p.name, p.round_mode.value, str(p.full_accu), str(p.avepool_16bit_mul))
    con.print(t)
    con.print(f"{len(capi.FUNCTIONS)} MLI functions implemented; {len(capi.UNSUPPORTED)} listed as unsupported.")
    for name in sorted(capi.FUNCTIONS):
        con.print(f"  {name}")
    for name, why in sorted(capi.UNSUPPORTED.items()):
        con.print(f"  [dim]{name}: unsupported ({why})[/dim]")


@main.command()
@click.argument("dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--only", help="Regular expression on the function name.")
@click.option("--summary", is_flag=True, help="Per-function lines only.")
def verify(dirs: tuple[str, ...], only: str | None, summary: bool) -> None:
    """Replay golden C-library cases in DIRS; exit 1 if any case fails."""
    from .verify import run_dirs

    sys.exit(run_dirs(list(dirs), only, summary))


@main.command()
@click.option("--samples", type=int, default=None, help="Test digits to run (default: the whole test split, 360).")
@click.option("--platform", "platform", default=None, help="Platform preset (vpx, vpx-full-accu, em).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None, help="Write the reports as JSON.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="Save a per-layer SNR chart (matplotlib).")
def demo(samples: int | None, platform: str | None, json_path: str | None, plot_path: str | None) -> None:
    """Quantise a small CNN for the 8x8 digits (fx16, fx16_fx8_fx8, sa8) and run it on pymli's MLI kernels."""
    try:
        from .models.demo import run_demo
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise click.ClickException(f"the demo needs scikit-learn: {e}") from e
    try:
        run_demo(samples=samples, platform=platform, json_path=json_path, plot_path=plot_path)
    except ImportError as e:
        raise click.ClickException(f"the demo needs scikit-learn (and matplotlib for --plot): {e}") from e


# TFLite commands: run, compare, inspect.
from .tflite.cli import register as _register_tflite  # noqa: E402

_register_tflite(main)


# C export (pymli/export); the lead moves this into pymli/cli/ at merge.
from .export.cli import export_command  # noqa: E402

main.add_command(export_command, name="export")

if __name__ == "__main__":
    main()
