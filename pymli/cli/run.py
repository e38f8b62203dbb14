"""``pymli run``: a quantised int8 TFLite model on pymli's MLI kernels."""

from __future__ import annotations

import click
import numpy as np
from rich.console import Console

from ._common import PLATFORM, check_model_input, check_out_path, load_model, load_npy

__all__ = ["run"]


@click.command()
@click.argument("model", type=click.Path(exists=True, dir_okay=False))
@click.option("--input", "input_path", required=True, type=click.Path(dir_okay=False),
              help="Input .npy: one sample or a batch (int8, or float for a model starting with QUANTIZE).")
@click.option("--platform", type=PLATFORM, default=None, help="Rounding preset of the MLI kernels (default vpx).")
@click.option("--output", "output_path", type=click.Path(dir_okay=False), default=None, callback=check_out_path,
              help="Save the output .npy.")
@click.option("--quantize", is_flag=True,
              help="Accept float input for an int8 model, quantised with the model's input scale and zero point.")
def run(model: str, input_path: str, platform: str | None, output_path: str | None, quantize: bool) -> None:
    """Run a quantised int8 TFLite MODEL on pymli's MLI kernels."""
    x = load_npy(input_path)
    m = load_model(model)
    x = check_model_input(m, x, quantize=quantize)
    try:
        y = m.run(x, platform=platform)
    except ValueError as e:  # MliError is a ValueError; the group guard would say the same
        raise click.ClickException(str(e)) from e
    con = Console(width=max(Console().width, 160))
    con.print(f"{model}: input {x.shape} {x.dtype} -> output {y.shape} {y.dtype} "
              f"({platform or 'current'} platform)")
    flat = y.reshape(y.shape[0], -1)
    for n in range(min(flat.shape[0], 8)):
        vals = np.array2string(flat[n][:16], precision=4, separator=", ")
        more = " ..." if flat.shape[1] > 16 else ""
        top = f"  arg-max {int(np.argmax(flat[n]))}" if flat.shape[1] > 1 else ""
        con.print(f"  sample {n}: {vals}{more}{top}")
    if output_path:
        np.save(output_path, y)
        con.print(f"saved {output_path}")
