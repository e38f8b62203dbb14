"""``pymli compare``: pymli against the TFLite Micro reference interpreter, tensor by tensor."""

from __future__ import annotations

import click
from rich.console import Console

from ._common import PLATFORM, check_model_input, check_out_path, load_model, load_npy, non_negative, positive
from .run import MAPPING, tflm_inputs

__all__ = ["compare"]


@click.command()
@click.argument("model", type=click.Path(exists=True, dir_okay=False))
@click.option("--input", "input_path", type=click.Path(dir_okay=False), default=None,
              help="Input .npy (default: random inputs over the whole int8 range).")
@click.option("--samples", type=int, default=None, callback=positive,
              help="Random inputs when --input is not given (default 8); with --input, the first SAMPLES of it.")
@click.option("--seed", type=int, default=0, show_default=True, callback=non_negative,
              help="Seed of the random inputs.")
@click.option("--platform", type=PLATFORM, default=None, help="Rounding preset of the MLI kernels.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None, callback=check_out_path,
              help="Save a chart (matplotlib).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None, callback=check_out_path,
              help="Save the report as JSON.")
@click.option("--quantize", is_flag=True,
              help="Accept float --input for an int8 model, quantised with the model's input scale and zero point.")
@click.option("--mapping", type=MAPPING, default="tflm", show_default=True,
              help="tflm: pymli as TFLite Micro with the ARC MLI kernels computes it (reference operators exact); "
                   "mli: pymli's MLI network.")
def compare(model: str, input_path: str | None, samples: int | None, seed: int, platform: str | None,
            plot_path: str | None, json_path: str | None, quantize: bool, mapping: str) -> None:
    """Compare pymli with the TFLite Micro reference interpreter, tensor by tensor."""
    if mapping.lower() == "tflm":
        _compare_tflm(model, input_path, samples, seed, platform, plot_path, json_path, quantize)
        return
    x = load_npy(input_path) if input_path else None
    m = load_model(model, "mli")
    if x is not None:
        x = check_model_input(m, x, quantize=quantize)
        if samples is not None:
            _check_samples(samples, x.shape[0], input_path)
            x = x[:samples]
        if x.dtype.kind == "f" and not m.float_input:
            # --quantize: the int8 graph input, quantised as TFLite would (both interpreters then get int8)
            x = m.prepare_input(x).reshape((x.shape[0],) + tuple(m.input_shape[1:]))
    # After load_model: tflite-micro is optional (``pip install 'pymli-arc[compare]'``).
    from ..tflite.compare import compare as do_compare

    _require_tools(plot_path)
    rep = do_compare(m, x, samples=8 if samples is None else samples, seed=seed, platform=platform)
    _report(rep, json_path, plot_path)


def _compare_tflm(model: str, input_path: str | None, samples: int | None, seed: int, platform: str | None,
                  plot_path: str | None, json_path: str | None, quantize: bool) -> None:
    m = load_model(model, "tflm")
    xs = None
    if input_path:
        xs = tflm_inputs(m, input_path, quantize=quantize)
        xs = [x[None] if x.shape == m.inputs[j].shape else x for j, x in enumerate(xs)]
        if samples is not None:
            _check_samples(samples, xs[0].shape[0], input_path)
            xs = [x[:samples] for x in xs]
    from ..tflite.compare import compare_inputs

    _require_tools(plot_path)
    try:
        rep = compare_inputs(m, xs, samples=8 if samples is None else samples, seed=seed, platform=platform)
    except ValueError as e:  # TfliteInputError: shapes of the .npz arrays
        raise click.ClickException(str(e)) from e
    _report(rep, json_path, plot_path)


def _check_samples(samples: int, have: int, input_path: str | None) -> None:
    """``--samples`` must not ask for more samples than the input file holds."""
    if samples > have:
        raise click.BadParameter(f"{samples} is more than the {have} samples of {input_path} "
                                 f"(expected 1 to {have})", param_hint="'--samples'")


def _require_tools(plot_path: str | None) -> None:
    """tflite-micro (always) and matplotlib (with ``--plot``) are there, checked before the run."""
    # tflite-micro is optional (``pip install 'pymli-arc[compare]'``): imported here, after load_model.
    from ..tflite.compare import TFLM_MISSING, tflm_available

    if not tflm_available():
        raise click.ClickException(TFLM_MISSING)
    if plot_path:
        try:
            import matplotlib  # noqa: F401  (optional dependency, checked before the run)
        except ImportError as e:
            raise click.ClickException(f"--plot needs matplotlib (pip install 'pymli-arc[plot]'): {e}") from e


def _report(rep, json_path: str | None, plot_path: str | None) -> None:  # type: ignore[no-untyped-def]
    con = Console(width=max(Console().width, 160))
    rep.print(con)
    con.print(f"graph output identical: {rep.output_equal}; largest difference {rep.max_lsb} LSB "
              "('own': the operator alone on TFLite Micro's inputs)")
    if json_path:
        rep.to_json(json_path)
    if plot_path:
        rep.plot(plot_path)
        con.print(f"saved {plot_path}")
