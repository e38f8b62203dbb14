"""``pymli inspect``: what pymli makes of a TFLite model."""

from __future__ import annotations

import click
from rich.console import Console

from ._common import load_model

__all__ = ["inspect"]


@click.command()
@click.argument("model", type=click.Path(exists=True, dir_okay=False))
@click.option("--mapping", type=click.Choice(["tflm", "mli"], case_sensitive=False), default="tflm", show_default=True,
              help="tflm: as TFLite Micro with the ARC MLI kernels runs it (MLI or reference kernel per operator, "
                   "glue defects); mli: every operator MLI has a kernel for on MLI (headroom per layer).")
def inspect(model: str, mapping: str) -> None:
    """Operators, tensors, quantisation and where each operator runs (MLI function or TFLM reference kernel) of
    MODEL; with --mapping mli the MLI functions and accumulator headroom of pymli's MLI network."""
    m = load_model(model, mapping.lower())
    # After load_model: the tflite package is optional for the rest of the CLI (see load_model).
    from ..tflite.inspect import print_inspect

    print_inspect(m, Console(width=max(Console().width, 160)))
