"""``pymli export``: a .tflite model, a saved network or an MLI example pack as a plain C program on MLI 2.0
(:mod:`pymli.export`)."""

from __future__ import annotations

from pathlib import Path

import click

from ..config import PRESETS
from ..export import DEFAULT_BUDGET, FILES, ExportError, export_c, plan_text
from ..models import load_network, load_pack
from ..models.io import is_network_file
from ..tflite import load
from ._common import PLATFORM, load_npy, positive

__all__ = ["export_command"]


def _load(model: str):  # type: ignore[no-untyped-def]
    path = Path(model)
    if path.is_dir():
        return load_pack(path)
    if is_network_file(path):
        return load_network(path)
    return load(path, mapping="mli")  # the C program is the MLI mapping's network


@click.command(name="export")
@click.argument("model", type=click.Path(exists=True))
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--test-input", "test_input", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Test vectors (.npy): a batch of float inputs (quantised with the model's input "
                   "parameters) or of quantised integers. Default: 4 random inputs.")
@click.option("--platform", "platform", type=PLATFORM, default="vpx", show_default=True,
              help="Platform the program is built for (ROUND_MODE, FULL_ACCU, AVEPOOL_16BIT_MUL).")
@click.option("--plan", "show_plan", is_flag=True, help="Print each activation buffer, the tensors sharing it "
                                                       "and the peak.")
@click.option("--budget", type=int, default=DEFAULT_BUDGET, show_default=True, callback=positive,
              help="Limit in bytes on constants + arena + test vectors, checked before writing.")
def export_command(model: str, out_dir: str, test_input: str | None, platform: str, show_plan: bool,
                   budget: int) -> None:
    """Write MODEL (a .tflite file, a saved network .npz, or an MLI example pack folder) as a C program in OUT_DIR.

    OUT_DIR receives model.h, model.c, model_check.c, CMakeLists.txt and README.md; build with
    cmake -S OUT_DIR -B build -DMLI_SRC=<embarc_mli> and run build/model_check.
    """
    x = load_npy(test_input, "--test-input") if test_input else None
    try:
        m = _load(model)
        res = export_c(m, out_dir, x, PRESETS[platform], budget=budget)
    except (ExportError, ValueError, OSError) as e:
        raise click.ClickException(str(e)) from e
    prog, plan = res.program, res.plan
    click.echo(f"wrote {', '.join(FILES)} to {out_dir}")
    click.echo(f"{len(prog.calls)} MLI calls, {len(res.inputs)} test vectors, platform {platform}")
    click.echo(f"peak activation memory: {plan.peak} bytes (liveness lower bound {plan.lower_bound}); "
               f"constant memory: {prog.const_bytes} bytes")
    if show_plan:
        click.echo(plan_text(prog, plan))
