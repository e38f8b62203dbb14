"""``pymli eval MODEL DATA``: the click command over :func:`pymli.eval.evaluate`.

Every problem with the data, the model or the options ends in one line and exit status 1
(2 for a malformed option); Ctrl-C prints what was done and exits with 130.
"""

from __future__ import annotations

import sys

import click
from rich.console import Console
from rich.markup import escape

__all__ = ["eval_command"]

_PLATFORMS = click.Choice(["vpx", "vpx-full-accu", "em"], case_sensitive=False)


@click.command("eval")
@click.argument("model")
@click.argument("data", type=click.Path(exists=True))
@click.option("--input-key", default="x", show_default=True, help="Array of the samples in an .npz.")
@click.option("--label-key", default=None, help="Array of the labels in an .npz (default: y, if present).")
@click.option("--labels", "labels_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Labels file (.npy or text, one integer per sample); overrides labels in DATA.")
@click.option("--preprocess", default=None,
              help="Images -> model input: 'SCALE,ZERO_POINT' (int8(round(p/255/SCALE) + ZP)), 'unit' "
                   "(p/255 with the model's input quantisation), 'mobilenet' (int8((p/127.5-1)/scale + zp) "
                   "with the model's), or 'float'.")
@click.option("--platform", type=_PLATFORMS, default=None, help="MLI platform preset (default vpx).")
@click.option("--mapping", type=click.Choice(["tflm", "mli"], case_sensitive=False), default="tflm", show_default=True,
              help="TFLite operator mapping: tflm (TFLite Micro + arc_mli, as the device computes) or mli "
                   "(pymli's MLI network: accumulator figures, --against float).")
@click.option("--batch", type=click.IntRange(min=1), default=64, show_default=True,
              help="Samples per chunk (the unit of work and of --resume).")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Worker processes, or LocalCluster workers with --scheduler local (default: all cores).")
@click.option("--scheduler", default=None, help="Run on Dask: 'local' (a LocalCluster) or tcp://HOST:PORT.")
@click.option("--ship-data", is_flag=True,
              help="With --scheduler: send the samples with the tasks (workers without the data files).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Evaluate the first N samples only.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None,
              help="Write outputs and pred (.npz, dataset order); chunks are kept in OUT.chunks/ while running.")
@click.option("--resume", is_flag=True, help="Reuse the finished chunks of an interrupted run (needs --out).")
@click.option("--keep-chunks", is_flag=True, help="Keep OUT.chunks/ after a complete run.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None, help="Write the report as JSON.")
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), default=None,
              help="Save confusion.png and layers.png in this folder (matplotlib).")
@click.option("--against", type=click.Choice(["float", "tflm"]), default=None,
              help="Compare with the float twin or with TFLite Micro (.tflite, tflite-micro installed).")
@click.option("--no-layers", is_flag=True, help="Skip the per-layer figures (faster: no intermediates kept).")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: on a terminal).")
def eval_command(model: str, data: str, input_key: str, label_key: str | None, labels_path: str | None,
                 preprocess: str | None, platform: str | None, mapping: str, batch: int, workers: int | None,
                 scheduler: str | None, ship_data: bool, limit: int | None, out_path: str | None, resume: bool,
                 keep_chunks: bool, json_path: str | None, plot_dir: str | None, against: str | None,
                 no_layers: bool, progress: bool | None) -> None:
    """Evaluate MODEL (.tflite, a saved pymli.models network .npz, or FILE.py:NAME) over the dataset DATA.

    DATA is an .npz (--input-key / --label-key), a .npy [N, ...], a folder of .npy samples or a folder of
    images (--preprocess), optionally one sub-folder per class. Prints accuracy, top-5, the confusion
    matrix, throughput and per-layer saturation and accumulator headroom.
    \f

    Args:
        model, data, input_key, label_key, labels_path, preprocess, platform, mapping, batch, workers,
            scheduler, ship_data, limit, out_path, resume, keep_chunks, json_path, plot_dir, against,
            no_layers, progress: the command's arguments and options (see ``pymli eval --help``).

    Raises:
        click.UsageError: options that do not go together (exit status 2).
        click.ClickException: a problem with the model, the data or the run, as one line (exit status 1).
    """
    # Imported when the command runs, not with the CLI: the evaluation stack loads the TFLite importer
    # (the ``tflite`` / ``flatbuffers`` packages), and ``pymli --help`` must work without them.
    from .data import EvalError
    from .runner import evaluate

    if resume and out_path is None:
        raise click.UsageError("--resume needs --out (the finished chunks are kept next to it)")
    if ship_data and scheduler is None:
        raise click.UsageError("--ship-data only applies with --scheduler")
    if scheduler is not None and scheduler != "local" and "://" not in scheduler:
        raise click.BadParameter(f"{scheduler!r}: give 'local' or an address such as tcp://host:8786",
                                 param_hint="--scheduler")
    con = Console()
    try:
        rep = evaluate(model, data, labels=labels_path, input_key=input_key, label_key=label_key,
                       preprocess=preprocess, platform=platform, batch=batch, workers=workers, scheduler=scheduler,
                       limit=limit, out=out_path, resume=resume, keep_chunks=keep_chunks, against=against,
                       layers=not no_layers, ship_data=ship_data, progress=progress,
                       console=Console(stderr=True), mapping=mapping.lower())
    except KeyboardInterrupt:  # before the first chunk (checking the data, starting workers)
        con.print("interrupted before any sample ran")
        sys.exit(130)
    except EvalError as e:
        raise click.ClickException(e.message) from None
    except ValueError as e:  # other MliError from the model or the kernels
        raise click.ClickException(getattr(e, "message", None) or str(e)) from None
    rep.print(con)
    if json_path:
        rep.to_json(json_path)
        con.print(f"saved {escape(json_path)}")
    if plot_dir:
        try:
            files = rep.plot(plot_dir)
        except ImportError:
            raise click.ClickException("--plot needs matplotlib: pip install 'pymli[plot]'") from None
        for f in files:
            con.print(f"saved {escape(str(f))}")
    if rep.interrupted:
        hint = f"; rerun with --resume to continue from {out_path}.chunks/" if out_path else ""
        con.print(f"interrupted: {rep.samples} of {rep.total} samples done{escape(hint)}")
        sys.exit(130)
    if out_path:
        con.print(f"saved {escape(out_path)} (outputs, pred)")
