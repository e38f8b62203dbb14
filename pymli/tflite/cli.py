"""``pymli run / compare / inspect`` for TFLite models (registered on the main ``pymli`` group).

Importing this module needs only click; the ``tflite`` packages are imported when a command runs.
"""

from __future__ import annotations

from typing import Any

import click

__all__ = ["run", "compare", "inspect", "register"]

_PLATFORMS = click.Choice(["vpx", "vpx-full-accu", "em"], case_sensitive=False)


def _load(path: str) -> Any:
    try:
        from . import load
        from .errors import TfliteError
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise click.ClickException(f"{e} (pip install 'tflite>=2.18' 'flatbuffers>=23')") from e
    try:
        return load(path)
    except TfliteError as e:
        raise click.ClickException(f"{path}: {e}") from e


@click.command()
@click.argument("model", type=click.Path(exists=True, dir_okay=False))
@click.option("--input", "input_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Input .npy: one sample or a batch (int8, or float for a model starting with QUANTIZE).")
@click.option("--platform", type=_PLATFORMS, default=None, help="Rounding preset of the MLI kernels (default vpx).")
@click.option("--output", "output_path", type=click.Path(dir_okay=False), default=None, help="Save the output .npy.")
def run(model: str, input_path: str, platform: str | None, output_path: str | None) -> None:
    """Run a quantised int8 TFLite MODEL on pymli's MLI kernels."""
    import numpy as np
    from rich.console import Console

    m = _load(model)
    x = np.load(input_path)
    try:
        y = m.run(x, platform=platform)
    except ValueError as e:
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


@click.command()
@click.argument("model", type=click.Path(exists=True, dir_okay=False))
@click.option("--input", "input_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Input .npy (default: random inputs over the whole int8 range).")
@click.option("--samples", type=int, default=8, show_default=True, help="Random inputs when --input is not given.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--platform", type=_PLATFORMS, default=None, help="Rounding preset of the MLI kernels.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None, help="Save a chart (matplotlib).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None, help="Save the report as JSON.")
def compare(model: str, input_path: str | None, samples: int, seed: int, platform: str | None,
            plot_path: str | None, json_path: str | None) -> None:
    """Compare pymli with the TFLite Micro reference interpreter, tensor by tensor."""
    import numpy as np
    from rich.console import Console

    m = _load(model)
    from .compare import TFLM_MISSING, tflm_available
    from .compare import compare as do_compare

    if not tflm_available():
        raise click.ClickException(TFLM_MISSING)
    x = np.load(input_path) if input_path else None
    rep = do_compare(m, x, samples=samples, seed=seed, platform=platform)
    con = Console(width=max(Console().width, 160))
    rep.print(con)
    con.print(f"graph output identical: {rep.output_equal}; largest difference {rep.max_lsb} LSB "
              "('own': the operator alone on TFLite Micro's inputs)")
    if json_path:
        rep.to_json(json_path)
    if plot_path:
        rep.plot(plot_path)
        con.print(f"saved {plot_path}")


@click.command()
@click.argument("model", type=click.Path(exists=True, dir_okay=False))
def inspect(model: str) -> None:
    """Operators, tensors, quantisation, MLI function per operator and accumulator headroom of MODEL."""
    from rich.console import Console

    m = _load(model)
    from .inspect import print_inspect

    print_inspect(m, Console(width=max(Console().width, 160)))


def register(group: click.Group) -> None:
    """Add ``run``, ``compare`` and ``inspect`` to the ``pymli`` command group."""
    for cmd in (run, compare, inspect):
        group.add_command(cmd)
