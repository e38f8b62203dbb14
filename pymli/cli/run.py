"""``pymli run``: a quantised int8 TFLite model, or a saved pymli.models network, on pymli's MLI kernels."""

from __future__ import annotations

import click
import numpy as np
from rich.console import Console

from ..models import Network, NetworkFileError, load_network
from ..models.io import is_network_file
from ._common import PLATFORM, check_model_input, check_out_path, load_model, load_npy

__all__ = ["run"]


def _network_input(net: Network, x: np.ndarray, quantize: bool) -> np.ndarray:
    """Check an input batch against a saved network's input before running anything.

    Args:
        net: the loaded network.
        x: one sample (``net.input_shape``) or a batch ``[N, *net.input_shape]``.
        quantize: quantise float input with the network's input parameters (``--quantize``).

    Returns:
        ``x`` as a batch, of the network's input dtype or float.

    Raises:
        click.BadParameter: a float network, a wrong shape, an empty batch, float input without
            ``--quantize``, non-finite floats, integers outside the input container.
    """
    def bad(why: str) -> click.BadParameter:
        return click.BadParameter(why, param_hint="'--input'")

    if net.input_q is None:
        raise click.ClickException(f"network {net.name!r} is not quantised: save one from "
                                   "pymli.models.quantize_network")
    one = tuple(net.input_shape)
    if x.shape == one:
        x = x[None]
    elif tuple(x.shape[1:]) != one:
        raise bad(f"shape {tuple(x.shape)} does not fit the network input: expected {one} or (N, {str(one)[1:]}")
    if x.shape[0] == 0:
        raise bad("the batch is empty (expected at least one sample)")
    dt = np.dtype(net.input_q.el_type.dtype)
    if x.dtype.kind == "f":
        if not quantize:
            raise bad(f"dtype {x.dtype}: the network takes {dt} input (pass --quantize to quantise float input "
                      "with the network's input parameters)")
        if not np.all(np.isfinite(x)):
            raise bad("holds NaN or infinite values (expected finite floats)")
        return x
    info = np.iinfo(dt)
    if x.dtype.kind == "b" or x.min(initial=0) < info.min or x.max(initial=0) > info.max:
        raise bad(f"dtype {x.dtype} with values outside {dt} (expected {dt} values in [{info.min}, {info.max}])")
    return x.astype(dt)


@click.command()
@click.argument("model", type=click.Path(exists=True, dir_okay=False))
@click.option("--input", "input_path", required=True, type=click.Path(dir_okay=False),
              help="Input .npy: one sample or a batch (the model's integer input type, or float for a model starting "
                   "with QUANTIZE).")
@click.option("--platform", type=PLATFORM, default=None, help="Rounding preset of the MLI kernels (default vpx).")
@click.option("--output", "output_path", type=click.Path(dir_okay=False), default=None, callback=check_out_path,
              help="Save the output .npy.")
@click.option("--quantize", is_flag=True,
              help="Accept float input for an int8 model, quantised with the model's input scale and zero point.")
def run(model: str, input_path: str, platform: str | None, output_path: str | None, quantize: bool) -> None:
    """Run a quantised int8 TFLite MODEL, or a saved pymli.models network (.npz), on pymli's MLI kernels."""
    x = load_npy(input_path)
    try:
        if is_network_file(model):
            net = load_network(model)
            x = _network_input(net, x, quantize)
            y = net.run(x, platform=platform, capture=False).output
        else:
            m = load_model(model)
            x = check_model_input(m, x, quantize=quantize)
            y = m.run(x, platform=platform)
    except ValueError as e:  # MliError is a ValueError; the group guard would say the same
        raise click.ClickException(e.message if isinstance(e, NetworkFileError) else str(e)) from e
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
