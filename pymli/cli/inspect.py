"""``pymli inspect``: what pymli makes of a TFLite model."""

from __future__ import annotations

import click
from rich.console import Console

from ._common import load_model

__all__ = ["inspect"]


@click.command()
@click.argument("model", type=click.Path(exists=True, dir_okay=False))
def inspect(model: str) -> None:
    """Operators, tensors, quantisation, MLI function per operator and accumulator headroom of MODEL."""
    m = load_model(model)
    # After load_model: the tflite package is optional for the rest of the CLI (see load_model).
    from ..tflite.inspect import print_inspect

    print_inspect(m, Console(width=max(Console().width, 160)))
