"""What the ``pymli`` commands share: option types, early path checks, safe ``.npy`` loading, the error guard.

Every user mistake ends in one line naming the problem and the expected value: a
:class:`click.UsageError` / :class:`click.BadParameter` (exit code 2) when an argument is wrong, a
:class:`click.ClickException` (exit code 1) when the run itself fails on the user's data or model.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click
import numpy as np

from ..config import PRESETS
from ..errors import MliError

__all__ = ["Group", "PLATFORM", "check_out_path", "check_regex", "load_npy", "load_model", "check_model_input",
           "positive", "non_negative"]

PLATFORM = click.Choice(sorted(PRESETS), case_sensitive=False)
"""A platform preset name (``vpx``, ``vpx-full-accu``, ``em``), in any letter case."""


class Group(click.Group):
    """The ``pymli`` group: a pymli error escaping a command becomes one ``Error: ...`` line (exit 1)."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; turn :class:`MliError` and OS errors on the user's files into one line.

        Args:
            ctx: the click context.

        Returns:
            What the command returns.

        Raises:
            click.ClickException: a :class:`MliError` (including the TFLite errors) or an
                :class:`OSError` escaped the command.
        """
        try:
            return super().invoke(ctx)
        except MliError as e:
            raise click.ClickException(str(e)) from e
        except OSError as e:
            where = f"{e.filename}: " if getattr(e, "filename", None) else ""
            raise click.ClickException(f"{where}{e.strerror or e}") from e


def check_out_path(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """click callback: an output file path whose folder exists and which is not a folder itself.

    Checked while parsing the command line, so a bad path stops the command before any work.

    Args:
        ctx: the click context.
        param: the option.
        value: the path given, or ``None``.

    Returns:
        ``value`` unchanged.

    Raises:
        click.BadParameter: the folder does not exist, or the path is a folder.
    """
    if value is None:
        return None
    p = Path(value)
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise click.BadParameter(f"folder {str(parent)!r} does not exist (expected a file path in an existing folder)",
                                 ctx=ctx, param=param)
    if p.is_dir():
        raise click.BadParameter(f"{value!r} is a folder (expected a file path)", ctx=ctx, param=param)
    return value


def check_regex(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """click callback: a valid Python regular expression (or ``None``).

    Raises:
        click.BadParameter: ``value`` does not compile.
    """
    if value is None:
        return None
    try:
        re.compile(value)
    except re.error as e:
        raise click.BadParameter(f"{value!r} is not a valid regular expression ({e})", ctx=ctx, param=param) from e
    return value


def positive(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    """click callback: an integer >= 1 (or ``None``).

    Raises:
        click.BadParameter: ``value`` <= 0.
    """
    if value is not None and value <= 0:
        raise click.BadParameter(f"{value} is not a positive count (expected an integer >= 1)", ctx=ctx, param=param)
    return value


def non_negative(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    """click callback: an integer >= 0 (a random seed) or ``None``.

    Raises:
        click.BadParameter: ``value`` < 0.
    """
    if value is not None and value < 0:
        raise click.BadParameter(f"{value} is negative (expected an integer >= 0)", ctx=ctx, param=param)
    return value


def load_npy(path: str, option: str = "--input") -> np.ndarray:
    """Load one NumPy array from a ``.npy`` file, never unpickling anything.

    Args:
        path: the file.
        option: the option name used in error messages.

    Returns:
        The array (numeric or bool dtype).

    Raises:
        click.BadParameter: the file is missing, unreadable, not a ``.npy`` file, an ``.npz``
            archive, holds Python objects (pickled data), or is not numeric.
    """
    def bad(why: str) -> click.BadParameter:
        return click.BadParameter(f"{path}: {why}", param_hint=f"'{option}'")

    p = Path(path)
    if not p.is_file():
        raise bad("no such file (expected a .npy file saved with numpy.save)")
    try:
        with p.open("rb") as f:
            magic = f.read(6)
    except OSError as e:
        raise bad(f"cannot be read ({e.strerror or e})") from e
    if magic[:4] == b"PK\x03\x04":
        raise bad("is an .npz archive (expected one array in a .npy file)")
    if magic != b"\x93NUMPY":
        raise bad("not a .npy file (no NumPy header; expected an array saved with numpy.save)")
    try:
        x = np.load(p, allow_pickle=False)
    except ValueError as e:
        if "pickle" in str(e):
            raise bad("holds Python objects (pickled data), which pymli never loads; expected a numeric array") from e
        raise bad(f"corrupt .npy file ({e})") from e
    except (OSError, EOFError) as e:
        raise bad(f"corrupt .npy file ({type(e).__name__}: {e})") from e
    if x.dtype.kind not in "biuf":
        raise bad(f"dtype {x.dtype} is not numeric (expected int8, or float32 for a float model)")
    return x


def load_model(path: str, mapping: str = "mli") -> Any:
    """Load a TFLite model for a command; a model pymli cannot read becomes one ``Error:`` line.

    Args:
        path: the ``.tflite`` file.
        mapping: ``"mli"`` (a :class:`pymli.tflite.TfliteModel`) or ``"tflm"`` (a
            :class:`pymli.tflite.TflmModel`, TFLM + arc_mli as the device computes).

    Returns:
        The loaded model.

    Raises:
        click.ClickException: the ``tflite`` package is missing, or the model is malformed or unsupported.
    """
    try:
        # Imported here, not at module level: the CLI (and its other commands) must load without the
        # ``tflite`` / ``flatbuffers`` packages; the TFLite commands then say what to install.
        from ..tflite import load
        from ..tflite.errors import TfliteError
    except ImportError as e:
        raise click.ClickException(f"{e} (pip install 'tflite>=2.18' 'flatbuffers>=23')") from e
    try:
        return load(path, mapping=mapping)
    except TfliteError as e:
        raise click.ClickException(f"{path}: {e}") from e


def check_model_input(model: Any, x: np.ndarray, *, quantize: bool, option: str = "--input") -> np.ndarray:
    """Check an input batch against a TFLite model's graph input before running anything.

    Args:
        model: a :class:`pymli.tflite.TfliteModel`.
        x: the loaded array: one sample (the input shape without batch) or a batch ``[N, ...]``.
        quantize: the user asked to quantise float input for an int8 model (``--quantize``).
        option: the option name used in error messages.

    Returns:
        ``x`` as a batch (batch axis first).

    Raises:
        click.BadParameter: wrong shape, an empty batch, a dtype the model does not take, float
            input to an int8 model without ``--quantize``, non-finite floats, integers outside int8.
    """
    def bad(why: str) -> click.BadParameter:
        return click.BadParameter(why, param_hint=f"'{option}'")

    shape = tuple(int(s) for s in model.input_shape)
    one = shape[1:]
    if x.shape == one or (x.ndim == len(shape) - 1 and x.size == int(np.prod(one))):
        x = x.reshape((1,) + one)
    elif x.ndim != len(shape) or tuple(x.shape[1:]) != one:
        batch = "(N, " + ", ".join(map(str, one)) + ")"
        raise bad(f"shape {tuple(x.shape)} does not fit the model input: expected {one} or {batch}"
                  if one else f"shape {tuple(x.shape)} does not fit the model input {shape}")
    if x.shape[0] == 0:
        raise bad("the batch is empty (expected at least one sample)")
    if model.float_input:
        if x.dtype.kind != "f":
            raise bad(f"dtype {x.dtype}: the model starts with QUANTIZE and takes float input (expected float32)")
    elif x.dtype.kind == "f":
        if not quantize:
            raise bad(f"dtype {x.dtype}: the model takes int8 input (expected int8; pass --quantize to quantise "
                      "float input with the model's input scale and zero point)")
    elif x.dtype.kind == "b" or x.min(initial=0) < -128 or x.max(initial=0) > 127:
        raise bad(f"dtype {x.dtype} with values outside int8 (expected int8 values in [-128, 127])")
    if x.dtype.kind == "f" and not np.all(np.isfinite(x)):
        raise bad("holds NaN or infinite values (expected finite floats)")
    return x
