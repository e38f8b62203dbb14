"""Datasets for :func:`pymli.eval.evaluate`: an ``.npz``, a ``.npy``, a folder of ``.npy`` files or of images.

:func:`open_data` checks everything it can before a single sample runs (keys, shapes, dtypes, labels,
every file header, every image) and raises :class:`EvalError` with one clear sentence otherwise.
The resulting :class:`DataSource` is a small picklable description: workers (local processes or Dask
workers) read their own slices by path with :meth:`DataSource.read`, so the data never passes through
the main process twice. Files are always read with ``allow_pickle=False``.

Folders: the sample files are taken in sorted name order. A folder that holds only sub-folders is a
labelled set, one class per sub-folder (sorted names, label = index), as torchvision's ``ImageFolder``.

Images (the optional ``images`` extra, Pillow) are converted to the model's channels (RGB or grey),
resized to the model's height and width with Pillow's bilinear filter where they differ, and turned
into the model input by :class:`ImagePrep`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MliError, Status
from ..tflite.importer import quantize_input

__all__ = ["EvalError", "ImagePrep", "DataSource", "InputSpec", "open_data", "parse_preprocess", "IMAGE_EXTENSIONS"]

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".ppm", ".pgm", ".tif", ".tiff", ".webp")
#: named pixel conventions of ``--preprocess`` (pixel p in 0..255 -> real value)
CONVENTIONS = ("unit", "mobilenet", "float")
#: labels array of an ``.npz`` used when present and no other was named
DEFAULT_LABEL_KEY = "y"


class EvalError(MliError):
    """A dataset, option or model that :func:`pymli.eval.evaluate` cannot use; the message is one sentence."""

    def __init__(self, message: str) -> None:
        super().__init__(Status.BAD_TENSOR, message)

    def __reduce__(self) -> tuple[type, tuple[str]]:  # crosses process boundaries (workers) intact
        return (EvalError, (self.message,))


@dataclasses.dataclass(frozen=True)
class InputSpec:
    """What the model takes per sample.

    Attributes:
        shape: shape of one sample (no batch axis).
        dtype: the integer dtype of the quantised input (int8, int16).
        float_ok: float samples are accepted (quantised by the model's own input conversion).
        scale, zero_point: real value of one input LSB and the zero point (None for FX inputs).
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    float_ok: bool = True
    scale: float | None = None
    zero_point: int = 0


@dataclasses.dataclass(frozen=True)
class ImagePrep:
    """Pixel -> model input conversion of an image folder.

    ``mode`` ``"affine"``: real = p / 255, then ``int8(round(real / scale) + zero_point)`` (ties away from
    zero, saturated: TFLite's QUANTIZE formula); ``"mobilenet"``: real = p / 127.5 - 1, then the same with
    the model input's scale and zero point (the MLI MobileNet examples); ``"float"``: real = p / 255 given
    to the model as float32 (it quantises with its own input parameters).

    Attributes:
        mode: ``"affine"``, ``"mobilenet"`` or ``"float"``.
        scale, zero_point: int8 input quantisation (unused for ``"float"``).
        height, width, channels: the model input size (HWC).
    """

    mode: str
    scale: float
    zero_point: int
    height: int
    width: int
    channels: int

    def convert(self, pixels: np.ndarray) -> np.ndarray:
        """uint8 pixels -> model input.

        Args:
            pixels: uint8 pixels ``[..., H, W, C]``.

        Returns:
            int8 model input (TFLite's QUANTIZE of the real values), or float32 for ``"float"``; shape of
            ``pixels``.
        """
        p = np.asarray(pixels, np.float32)
        if self.mode == "mobilenet":
            real = p / np.float32(127.5) - np.float32(1.0)
        else:
            real = p / np.float32(255.0)
        if self.mode == "float":
            return real.astype(np.float32)
        return quantize_input(real, self.scale, self.zero_point)


def parse_preprocess(spec: str | None, model_in: InputSpec) -> ImagePrep:
    """``--preprocess`` text -> :class:`ImagePrep` for a model input.

    Args:
        spec: ``"SCALE,ZERO_POINT"``, ``"unit"`` (p / 255 with the model's input quantisation),
            ``"mobilenet"`` (p / 127.5 - 1 with the model's input quantisation), ``"float"``, or None
            (``"unit"`` for an int8 model, ``"float"`` otherwise).
        model_in: the model input description; its shape must be HWC with 1 or 3 channels.

    Returns:
        The conversion.

    Raises:
        EvalError: unknown convention, bad numbers, or a model input images cannot feed.
    """
    if len(model_in.shape) != 3 or model_in.shape[2] not in (1, 3):
        raise EvalError(f"images need a model input of shape [H, W, 1 or 3]; this model takes {model_in.shape}")
    h, w, c = model_in.shape
    int8 = np.dtype(model_in.dtype) == np.int8 and model_in.scale is not None
    if spec is None:
        spec = "unit" if int8 else "float"
    spec = spec.strip().lower()
    if spec == "float":
        if not model_in.float_ok:
            raise EvalError("--preprocess float: this model takes no float input")
        return ImagePrep("float", 1.0, 0, h, w, c)
    if spec in ("unit", "mobilenet"):
        if not int8:
            raise EvalError(f"--preprocess {spec} needs an sa8 / int8 model input; use --preprocess float")
        assert model_in.scale is not None
        return ImagePrep("mobilenet" if spec == "mobilenet" else "affine", float(model_in.scale),
                         int(model_in.zero_point), h, w, c)
    parts = spec.split(",")
    try:
        if len(parts) != 2:
            raise ValueError
        scale, zp = float(parts[0]), int(parts[1])
    except ValueError:
        raise EvalError(f"--preprocess {spec!r}: expected 'SCALE,ZERO_POINT' or one of "
                        f"{', '.join(CONVENTIONS)}") from None
    if not np.isfinite(scale) or scale <= 0 or not -128 <= zp <= 127:
        raise EvalError(f"--preprocess {spec!r}: scale must be > 0 and the zero point in [-128, 127]")
    if np.dtype(model_in.dtype) != np.int8:
        raise EvalError(f"--preprocess {spec!r} makes int8 input; this model takes {np.dtype(model_in.dtype)}")
    return ImagePrep("affine", scale, zp, h, w, c)


# Arrays opened by a worker process, kept for its later chunks: (path, key, mtime) -> array.
_OPEN: dict[tuple[str, str, float], np.ndarray] = {}


def _npz_array(path: str, key: str) -> np.ndarray:
    k = (path, key, os.path.getmtime(path))
    if k not in _OPEN:
        _OPEN.clear()  # one data set per worker at a time
        with np.load(path, allow_pickle=False) as z:
            _OPEN[k] = z[key]
    return _OPEN[k]


def _read_image(path: str, prep: ImagePrep) -> np.ndarray:
    from PIL import Image  # optional extra "images"

    with Image.open(path) as im:
        im = im.convert("RGB" if prep.channels == 3 else "L")
        if im.size != (prep.width, prep.height):
            im = im.resize((prep.width, prep.height), Image.BILINEAR)
        a = np.asarray(im, np.uint8)
    return a.reshape(prep.height, prep.width, prep.channels)


@dataclasses.dataclass(frozen=True)
class DataSource:
    """A validated dataset, readable by slices in any process.

    Attributes:
        kind: ``"npz"``, ``"npy"``, ``"npy_dir"``, ``"image_dir"`` or ``"array"``.
        path: the file or folder (None for in-memory arrays).
        size: number of samples.
        sample_shape, dtype: shape and dtype of one sample as read (before image conversion).
        key: the array name inside an ``.npz``.
        files: the sample files of a folder, in dataset order.
        prep: the pixel conversion of an image folder.
        array: the samples of an in-memory source.
        labels: int64 labels ``[size]``, or None.
        classes: class names (sub-folder names), if any.
        fingerprint: text identifying the data for ``--resume``.
        offset: first row of the file that is sample 0 (a :meth:`part`).
    """

    kind: str
    path: str | None
    size: int
    sample_shape: tuple[int, ...]
    dtype: str
    key: str | None = None
    files: tuple[str, ...] = ()
    prep: ImagePrep | None = None
    array: np.ndarray | None = dataclasses.field(default=None, repr=False, compare=False)
    labels: np.ndarray | None = dataclasses.field(default=None, repr=False, compare=False)
    classes: tuple[str, ...] = ()
    fingerprint: str = ""
    offset: int = 0

    def for_workers(self) -> DataSource:
        """The same source without the labels (workers only read inputs).

        Returns:
            A copy with ``labels=None``.
        """
        return dataclasses.replace(self, labels=None)

    def limited(self, limit: int | None) -> DataSource:
        """The first ``limit`` samples (all when None or larger than the set).

        Args:
            limit: the number of samples to keep, or None.

        Returns:
            This source or a shortened copy.
        """
        if limit is None or limit >= self.size:
            return self
        labels = None if self.labels is None else self.labels[:limit]
        files = self.files[:limit] if self.files else ()
        return dataclasses.replace(self, size=int(limit), labels=labels, files=files)

    def part(self, start: int, stop: int) -> DataSource:
        """Samples ``start:stop`` as a source of their own (what one chunk ships to a worker).

        Args:
            start, stop: the sample range, ``0 <= start <= stop <= size``.

        Returns:
            A source without labels holding only the files or rows of the part.

        Raises:
            EvalError: a range outside the data set.
        """
        if not 0 <= start <= stop <= self.size:
            raise EvalError(f"samples {start}:{stop} outside the data set of {self.size}")
        kw: dict[str, Any] = {"size": stop - start, "labels": None}
        if self.kind == "array":
            assert self.array is not None
            kw["array"] = np.ascontiguousarray(self.array[start:stop])
        elif self.files:
            kw["files"] = self.files[start:stop]
        else:
            kw["offset"] = self.offset + start
        return dataclasses.replace(self, **kw)

    def read(self, start: int, stop: int) -> np.ndarray:
        """Samples ``start:stop`` as the model input batch.

        Args:
            start, stop: the sample range, ``0 <= start <= stop <= size``.

        Returns:
            The batch ``[stop - start, *sample shape]``: int of the model's input dtype, or float.

        Raises:
            EvalError: a range outside the data set, or a file changed or became unreadable since
                :func:`open_data` checked it.
        """
        if not 0 <= start <= stop <= self.size:
            raise EvalError(f"samples {start}:{stop} outside the data set of {self.size}")
        try:
            if self.kind == "array":
                assert self.array is not None
                x = np.asarray(self.array[start:stop])
            elif self.kind == "npz":
                assert self.path is not None and self.key is not None
                x = np.asarray(_npz_array(self.path, self.key)[self.offset + start:self.offset + stop])
            elif self.kind == "npy":
                assert self.path is not None
                rows = np.load(self.path, mmap_mode="r", allow_pickle=False)
                x = np.array(rows[self.offset + start:self.offset + stop])
            elif self.kind == "npy_dir":
                x = np.stack([np.load(f, allow_pickle=False) for f in self.files[start:stop]]) if stop > start \
                    else np.zeros((0,) + self.sample_shape, self.dtype)
            else:
                assert self.prep is not None
                if stop == start:
                    px = np.zeros((0, self.prep.height, self.prep.width, self.prep.channels), np.uint8)
                else:
                    px = np.stack([_read_image(f, self.prep) for f in self.files[start:stop]])
                return self.prep.convert(px)
        except EvalError:
            raise
        except Exception as e:  # noqa: BLE001 - any read problem is reported as a data error
            raise EvalError(f"{self.path}: cannot read samples {start}:{stop}: {type(e).__name__}: {e}") from None
        if x.shape[1:] != self.sample_shape or str(x.dtype) != self.dtype:
            raise EvalError(f"{self.path}: samples {start}:{stop} changed since they were checked "
                            f"({x.dtype}{list(x.shape[1:])}, expected {self.dtype}{list(self.sample_shape)})")
        return x


# ---------------------------------------------------------------------------------------------- opening
def _check_samples(where: str, shape: tuple[int, ...], dtype: np.dtype, model_in: InputSpec) -> None:
    """Shape and dtype of one sample against the model input."""
    if tuple(shape) != tuple(model_in.shape):
        raise EvalError(f"{where}: samples of shape {list(shape)}, the model takes {list(model_in.shape)}")
    dt = np.dtype(dtype)
    if dt.kind == "f":
        if not model_in.float_ok:
            raise EvalError(f"{where}: float samples, the model takes {np.dtype(model_in.dtype)} only")
        return
    if dt.kind in "iu" and dt == np.dtype(model_in.dtype):
        return
    raise EvalError(f"{where}: samples of dtype {dt}, the model takes {np.dtype(model_in.dtype)}"
                    + (" or float" if model_in.float_ok else ""))


def _check_labels(where: str, labels: Any, n: int) -> np.ndarray:
    y = np.asarray(labels)
    if y.ndim != 1:
        raise EvalError(f"{where}: labels must be one integer per sample, got shape {list(y.shape)}")
    if y.shape[0] != n:
        raise EvalError(f"{where}: {y.shape[0]} labels for {n} samples")
    if y.dtype.kind not in "iu":
        if y.dtype.kind == "f" and y.size and np.all(np.isfinite(y)) and np.all(y == np.round(y)):
            y = y.astype(np.int64)
        else:
            raise EvalError(f"{where}: labels of dtype {y.dtype}, expected integers")
    if y.size and int(y.min()) < 0:
        raise EvalError(f"{where}: negative label {int(y.min())}")
    return y.astype(np.int64)


def _load_npz(path: str, input_key: str, label_key: str | None) -> tuple[np.ndarray, np.ndarray | None]:
    try:
        with np.load(path, allow_pickle=False) as z:
            keys = list(z.files)
            if input_key not in keys:
                raise EvalError(f"{path}: no array {input_key!r} (arrays: {', '.join(keys) or 'none'}); "
                                "choose one with --input-key")
            x = z[input_key]
            if label_key is not None and label_key not in keys:
                raise EvalError(f"{path}: no labels {label_key!r} (arrays: {', '.join(keys)}); "
                                "choose them with --label-key")
            lk = DEFAULT_LABEL_KEY if label_key is None else label_key
            y = z[lk] if lk in keys else None
    except EvalError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError) as e:
        raise EvalError(f"{path}: not a readable .npz ({type(e).__name__}: {e})") from None
    return x, y


def _npy_header(path: str) -> tuple[tuple[int, ...], np.dtype]:
    try:
        a = np.load(path, mmap_mode="r", allow_pickle=False)  # header only: the data stay on disk
        shape, dtype = tuple(a.shape), a.dtype
        del a
    except ValueError as e:
        if "pickle" in str(e).lower() or "object" in str(e).lower():
            raise EvalError(f"{path}: holds Python objects; pymli never loads pickled data") from None
        raise EvalError(f"{path}: not a readable .npy ({type(e).__name__}: {e})") from None
    except Exception as e:  # noqa: BLE001 - any problem: not a usable .npy
        raise EvalError(f"{path}: not a readable .npy ({type(e).__name__}: {e})") from None
    return tuple(shape), dtype


def _load_label_file(path: str) -> np.ndarray:
    try:
        if path.endswith(".npy"):
            return np.load(path, allow_pickle=False)
        return np.loadtxt(path, dtype=np.int64, ndmin=1)
    except Exception as e:  # noqa: BLE001
        raise EvalError(f"{path}: cannot read labels ({type(e).__name__}: {e})") from None


def _folder_files(folder: Path) -> tuple[list[str], list[int] | None, tuple[str, ...]]:
    """Sample files of a folder in dataset order, with class labels when it is made of class sub-folders."""
    def samples(d: Path) -> list[str]:
        return sorted(str(p) for p in d.iterdir()
                      if p.is_file() and p.suffix.lower() in (".npy",) + IMAGE_EXTENSIONS)

    files = samples(folder)
    if files:
        return files, None, ()
    subdirs = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    out: list[str] = []
    labels: list[int] = []
    for k, d in enumerate(subdirs):
        fs = samples(d)
        out += fs
        labels += [k] * len(fs)
    if not out:
        raise EvalError(f"{folder}: empty folder (no .npy or image files, no class sub-folders with any)")
    return out, labels, tuple(d.name for d in subdirs)


def open_data(data: str | os.PathLike[str] | np.ndarray | DataSource, model_in: InputSpec, *,
              labels: Any = None, input_key: str = "x", label_key: str | None = None,
              preprocess: str | None = None) -> DataSource:
    """Open and check a dataset against the model input.

    Args:
        data: a path (``.npz``, ``.npy``, folder of ``.npy`` files or images), an array ``[N, *shape]``,
            or an already opened :class:`DataSource`.
        model_in: what the model takes (shape, dtype).
        labels: int labels ``[N]`` or a ``.npy`` / text file of them; overrides labels found in the data.
        input_key: the array of samples inside an ``.npz``.
        label_key: the array of labels inside an ``.npz``, which must then exist; None: ``"y"`` if present.
        preprocess: pixel conversion for image folders (see :func:`parse_preprocess`).

    Returns:
        a :class:`DataSource` whose samples match the model input.

    Raises:
        EvalError: missing file or key, wrong shape or dtype, empty folder, unreadable file or image,
            labels of the wrong length or type.
    """
    if isinstance(data, DataSource):
        src = data
    elif isinstance(data, np.ndarray):
        x = data
        if x.ndim < 1 or x.shape[0] == 0:
            raise EvalError("the data array holds no samples")
        if x.dtype.hasobject:
            raise EvalError("the data array holds Python objects")
        _check_samples("data", x.shape[1:], x.dtype, model_in)
        src = DataSource("array", None, int(x.shape[0]), tuple(x.shape[1:]), str(x.dtype), array=x,
                         fingerprint=f"array:{x.shape}:{x.dtype}:{_digest(x)}")
    else:
        src = _open_path(Path(data), model_in, input_key, label_key, preprocess)
    if labels is not None:
        where = str(labels) if isinstance(labels, (str, os.PathLike)) else "labels"
        y = _load_label_file(str(labels)) if isinstance(labels, (str, os.PathLike)) else labels
        src = dataclasses.replace(src, labels=_check_labels(where, y, src.size))
    return src


def _digest(x: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(x).view(np.uint8).reshape(-1)).hexdigest()[:16]


def _stat(p: Path) -> str:
    st = p.stat()
    return f"{p.resolve()}:{st.st_size}:{st.st_mtime_ns}"


def _open_path(p: Path, model_in: InputSpec, input_key: str, label_key: str | None,
               preprocess: str | None) -> DataSource:
    where = str(p)
    if not p.exists():
        raise EvalError(f"{where}: no such file or folder")
    if p.is_file():
        if p.suffix.lower() == ".npz":
            x, y = _load_npz(where, input_key, label_key)
            if x.ndim < 1 or x.shape[0] == 0:
                raise EvalError(f"{where}: array {input_key!r} holds no samples")
            _check_samples(f"{where}[{input_key!r}]", x.shape[1:], x.dtype, model_in)
            ys = None if y is None else _check_labels(f"{where}[{label_key or DEFAULT_LABEL_KEY!r}]", y,
                                                     int(x.shape[0]))
            return DataSource("npz", where, int(x.shape[0]), tuple(x.shape[1:]), str(x.dtype), key=input_key,
                              labels=ys, fingerprint=f"npz:{_stat(p)}:{input_key}")
        if p.suffix.lower() == ".npy":
            shape, dt = _npy_header(where)
            if len(shape) < 1 or shape[0] == 0:
                raise EvalError(f"{where}: holds no samples (shape {list(shape)})")
            _check_samples(where, shape[1:], dt, model_in)
            return DataSource("npy", where, int(shape[0]), tuple(shape[1:]), str(dt),
                              fingerprint=f"npy:{_stat(p)}")
        raise EvalError(f"{where}: expected a .npz, a .npy or a folder")
    files, ys, classes = _folder_files(p)
    npy = [f for f in files if f.lower().endswith(".npy")]
    if npy and len(npy) != len(files):
        raise EvalError(f"{where}: mixes .npy files and images; keep one kind per folder")
    labels = None if ys is None else np.asarray(ys, np.int64)
    fp = f"{p.resolve()}:{len(files)}:" + _digest(np.frombuffer("\n".join(
        _stat(Path(f)) for f in files).encode(), np.uint8))
    if npy:
        shape, dt = _npy_header(files[0])
        _check_samples(files[0], shape, dt, model_in)
        for f in files[1:]:
            s, d = _npy_header(f)
            if s != shape or d != dt:
                raise EvalError(f"{f}: {d}{list(s)}, unlike {files[0]} ({dt}{list(shape)})")
        return DataSource("npy_dir", where, len(files), tuple(shape), str(dt), files=tuple(files), labels=labels,
                          classes=classes, fingerprint=f"npy_dir:{fp}")
    prep = parse_preprocess(preprocess, model_in)
    _check_images(files)
    out_dt = "float32" if prep.mode == "float" else "int8"
    return DataSource("image_dir", where, len(files), tuple(model_in.shape), out_dt, files=tuple(files), prep=prep,
                      labels=labels, classes=classes, fingerprint=f"images:{fp}:{prep}")


def _check_images(files: Sequence[str]) -> None:
    try:
        from PIL import Image  # optional extra "images"
    except ImportError:
        raise EvalError("image folders need Pillow: pip install 'pymli[images]'") from None
    for f in files:
        try:
            with Image.open(f) as im:
                im.verify()
        except Exception as e:  # noqa: BLE001 - Pillow raises many kinds for a bad file
            raise EvalError(f"{f}: unreadable image ({type(e).__name__}: {e})") from None
