"""``pymli demo``: the digits CNN quantised for fx16, fx16_fx8_fx8 and sa8 and run on the MLI kernels."""

from __future__ import annotations

import click

from ..models.demo import run_demo
from ..models.digits import load_split
from ._common import PLATFORM, check_out_path, positive

__all__ = ["demo"]


@click.command()
@click.option("--samples", type=int, default=None, callback=positive,
              help="Test digits to run (default: the whole test split, 360).")
@click.option("--platform", "platform", type=PLATFORM, default=None, help="Platform preset (default: vpx).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None, callback=check_out_path,
              help="Write the reports as JSON.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None, callback=check_out_path,
              help="Save a per-layer SNR chart (needs matplotlib: pip install 'pymli-arc[plot]').")
@click.option("--save", "save_dir", type=click.Path(file_okay=False), default=None,
              help="Save the three quantised networks (digits_<build>.npz, for pymli eval / run / export) and the "
                   "test digits (digits_test.npz) in this folder.")
def demo(samples: int | None, platform: str | None, json_path: str | None, plot_path: str | None,
         save_dir: str | None) -> None:
    """Quantise a small CNN for the 8x8 digits (fx16, fx16_fx8_fx8, sa8) and run it on pymli's MLI kernels."""
    n_test = len(load_split()[1])
    if samples is not None and samples > n_test:
        raise click.BadParameter(f"{samples} is more than the {n_test} test digits (expected 1 to {n_test})",
                                 param_hint="'--samples'")
    if plot_path is not None:
        try:
            import matplotlib  # noqa: F401  (optional dependency, checked before the run)
        except ImportError as e:
            raise click.ClickException(f"--plot needs matplotlib (pip install 'pymli-arc[plot]'): {e}") from e
    run_demo(samples=samples, platform=platform, json_path=json_path, plot_path=plot_path, save_dir=save_dir)
