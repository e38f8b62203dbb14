"""``pymli run``: a TFLite model as TFLite Micro with the ARC MLI kernels computes it (``--mapping tflm``,
the default), on pymli's MLI network (``--mapping mli``), or a saved pymli.models network."""

from __future__ import annotations

from typing import Any

import click
import numpy as np
from rich.console import Console

from ..models import Network, NetworkFileError, load_network
from ..models.io import is_network_file
from ._common import PLATFORM, check_model_input, check_out_path, load_model, load_npy

__all__ = ["run"]

MAPPING = click.Choice(["tflm", "mli"], case_sensitive=False)


def tflm_inputs(m: Any, input_path: str, *, quantize: bool, option: str = "--input") -> list[np.ndarray]:
    """The graph inputs of a tflm-mapping model from ``--input``: a ``.npy`` (one input) or a ``.npz`` with
    ``x0``, ``x1``, ... (or its arrays in order), each one sample or a batch.

    Args:
        m: the :class:`pymli.tflite.TflmModel`.
        input_path: the file.
        quantize: quantise float data for an integer input with its scale and zero point.
        option: the option name for messages.

    Returns:
        one array per graph input.

    Raises:
        click.BadParameter: wrong count, shape or dtype.
    """
    def bad(why: str) -> click.BadParameter:
        return click.BadParameter(why, param_hint=f"'{option}'")

    if len(m.inputs) == 1 and m.inputs[0].dtype in (np.int8, np.float32):
        # one int8 / float input: the same checks and messages as the MLI mapping
        x = check_model_input(m, load_npy(input_path), quantize=quantize, option=option)
        if x.dtype.kind == "f" and not m.float_input:
            from ..tflite.quant import quantize_input  # after load_model: the tflite package is there

            x = quantize_input(x, m.inputs[0].s, m.inputs[0].zp)
        return [x]
    if input_path.lower().endswith(".npz") and len(m.inputs) > 1:
        try:
            z = np.load(input_path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise bad(f"cannot read {input_path}: {e}") from e
        keys = [f"x{j}" for j in range(len(m.inputs))]
        xs = [z[k] for k in keys] if all(k in z.files for k in keys) else [z[k] for k in z.files]
    else:
        xs = [load_npy(input_path)]
    if len(xs) != len(m.inputs):
        raise bad(f"{len(xs)} array(s) for a model with {len(m.inputs)} inputs (give a .npz with "
                  + ", ".join(f"x{j}" for j in range(len(m.inputs))) + ")")
    out = []
    for j, (x, t) in enumerate(zip(xs, m.inputs)):
        if t.shape and t.shape[0] == 1 and x.shape == tuple(t.shape[1:]):
            x = x.reshape(t.shape)  # one sample without its batch of 1
        if x.dtype.kind == "f" and t.dtype.kind in "iu":
            if not quantize:
                raise bad(f"input {j}: dtype {x.dtype}, the model takes {t.dtype.name} (pass --quantize to quantise "
                          "float input with the input's scale and zero point)")
            if not np.all(np.isfinite(x)):
                raise bad(f"input {j}: holds NaN or infinite values")
            if t.dtype != np.int8:
                raise bad(f"input {j}: --quantize handles int8 inputs; the model takes {t.dtype.name}")
            from ..tflite.quant import quantize_input  # after load_model: the tflite package is there

            x = quantize_input(x, t.s, t.zp)
        out.append(x)
    return out


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
                   "with QUANTIZE); with --mapping tflm a .npz with x0, x1, ... for a model with several inputs.")
@click.option("--platform", type=PLATFORM, default=None, help="Rounding preset of the MLI kernels (default vpx).")
@click.option("--mapping", type=MAPPING, default="tflm", show_default=True,
              help="tflm: as TFLite Micro with the ARC MLI kernels computes it; mli: every operator MLI has a "
                   "kernel for on MLI.")
@click.option("--output", "output_path", type=click.Path(dir_okay=False), default=None, callback=check_out_path,
              help="Save the output .npy (.npz with out0, out1, ... for several outputs).")
@click.option("--quantize", is_flag=True,
              help="Accept float input for an int8 model, quantised with the model's input scale and zero point.")
def run(model: str, input_path: str, platform: str | None, mapping: str, output_path: str | None,
        quantize: bool) -> None:
    """Run a quantised TFLite MODEL (as the ARC device computes it with TFLite Micro + arc_mli by default), or a
    saved pymli.models network (.npz)."""
    con = Console(width=max(Console().width, 160))
    if mapping.lower() == "tflm" and not is_network_file(model):
        m = load_model(model, "tflm")
        xs = tflm_inputs(m, input_path, quantize=quantize)
        try:
            y = m.run(*xs, platform=platform)
        except ValueError as e:  # MliError / TfliteInputError are ValueErrors
            raise click.ClickException(str(e)) from e
        ys = list(y) if isinstance(y, tuple) else [y]
        con.print(f"{model}: inputs " + ", ".join(f"{x.shape} {x.dtype}" for x in xs) + " -> outputs "
                  + ", ".join(f"{v.shape} {v.dtype}" for v in ys) + f" ({platform or 'current'} platform, tflm mapping)")
        for j, v in enumerate(ys):
            flat = np.asarray(v).reshape(-1)
            more = " ..." if flat.size > 16 else ""
            con.print(f"  output {j}: {np.array2string(flat[:16], precision=4, separator=', ')}{more}")
        if output_path:
            if len(ys) == 1:
                np.save(output_path, ys[0])
            else:
                np.savez(output_path, **{f"out{j}": v for j, v in enumerate(ys)})
            con.print(f"saved {output_path}")
        return
    x = load_npy(input_path)
    try:
        if is_network_file(model):
            net = load_network(model)
            x = _network_input(net, x, quantize)
            y = net.run(x, platform=platform, capture=False).output
        else:
            m = load_model(model, "mli")
            x = check_model_input(m, x, quantize=quantize)
            y = m.run(x, platform=platform)
    except ValueError as e:  # MliError is a ValueError; the group guard would say the same
        raise click.ClickException(e.message if isinstance(e, NetworkFileError) else str(e)) from e
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
