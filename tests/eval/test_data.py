"""Datasets: every source reads the same samples; every bad dataset is refused before anything runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pymli.eval import EvalError, InputSpec, evaluate, open_data, parse_preprocess
from pymli.tflite.importer import quantize_input

SPEC = InputSpec((16, 16, 3), np.dtype(np.int8), True, 0.02, -3)


def _npy_folder(d: Path, x: np.ndarray) -> Path:
    d.mkdir()
    for i, s in enumerate(x):
        np.save(d / f"s{i:03d}.npy", s)
    return d


def test_sources_read_the_same_samples(dataset, tmp_path) -> None:  # noqa: ANN001
    path, x, y = dataset
    np.save(tmp_path / "x.npy", x)
    folder = _npy_folder(tmp_path / "f", x)
    for src in (open_data(path, SPEC), open_data(x, SPEC), open_data(tmp_path / "x.npy", SPEC),
                open_data(folder, SPEC)):
        assert src.size == len(x)
        assert np.array_equal(src.read(0, src.size), x)
        assert np.array_equal(src.part(3, 9).read(0, 6), x[3:9])
        assert np.array_equal(src.limited(5).read(0, 5), x[:5])
    assert np.array_equal(open_data(path, SPEC).labels, y)


def test_npy_folder_order_is_sorted_names(tmp_path, cnn10_path, cnn10_model) -> None:  # noqa: ANN001
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (3, 16, 16, 3)).astype(np.int8)
    d = tmp_path / "f"
    d.mkdir()
    for name, s in zip(("b.npy", "c.npy", "a.npy"), x):
        np.save(d / name, s)
    rep = evaluate(cnn10_path, d, workers=1, progress=False)
    assert np.array_equal(rep.outputs, cnn10_model.run(x[[2, 0, 1]]))


def test_class_subfolders_give_labels(tmp_path, dataset) -> None:  # noqa: ANN001
    _, x, _ = dataset
    for k, cls in enumerate(("cat", "dog")):
        (tmp_path / "d" / cls).mkdir(parents=True)
        for i in range(2 + k):
            np.save(tmp_path / "d" / cls / f"{i}.npy", x[i])
    src = open_data(tmp_path / "d", SPEC)
    assert src.classes == ("cat", "dog")
    assert src.labels.tolist() == [0, 0, 1, 1, 1]


def test_labels_file_overrides(dataset, tmp_path) -> None:  # noqa: ANN001
    path, x, _ = dataset
    lab = np.arange(len(x)) % 3
    np.save(tmp_path / "l.npy", lab)
    np.savetxt(tmp_path / "l.txt", lab, fmt="%d")
    assert np.array_equal(open_data(path, SPEC, labels=tmp_path / "l.npy").labels, lab)
    assert np.array_equal(open_data(path, SPEC, labels=str(tmp_path / "l.txt")).labels, lab)


@pytest.mark.parametrize("case,match", [
    ("missing_key", "no array 'x'"),
    ("wrong_shape", r"shape \[16, 16, 4\], the model takes \[16, 16, 3\]"),
    ("wrong_dtype", "dtype int16, the model takes int8"),
    ("bool_dtype", "dtype bool"),
    ("no_samples", "holds no samples"),
    ("labels_length", "21 labels for 22 samples"),
    ("labels_float", "labels of dtype float64"),
    ("labels_2d", "one integer per sample"),
    ("labels_negative", "negative label"),
    ("objects", "not a readable .npz"),
    ("not_npz", "not a readable .npz"),
    ("empty_folder", "empty folder"),
    ("mixed_folder", "mixes .npy files and images"),
    ("folder_shapes", "unlike"),
    ("npy_objects", "Python objects"),
    ("bad_suffix", "expected a .npz"),
    ("missing", "no such file"),
])
def test_bad_data(case, match, tmp_path, dataset) -> None:  # noqa: ANN001
    _, x, y = dataset
    p = tmp_path / "d.npz"
    if case == "missing_key":
        np.savez(p, images=x, y=y)
    elif case == "wrong_shape":
        np.savez(p, x=np.zeros((4, 16, 16, 4), np.int8))
    elif case == "wrong_dtype":
        np.savez(p, x=x.astype(np.int16))
    elif case == "bool_dtype":
        np.savez(p, x=x > 0)
    elif case == "no_samples":
        np.savez(p, x=x[:0])
    elif case == "labels_length":
        np.savez(p, x=x, y=y[:-1])
    elif case == "labels_float":
        np.savez(p, x=x, y=y + 0.5)
    elif case == "labels_2d":
        np.savez(p, x=x, y=y[:, None])
    elif case == "labels_negative":
        np.savez(p, x=x, y=y - 20)
    elif case == "objects":
        np.savez(p, x=np.array([None] * 3, dtype=object))
    elif case == "not_npz":
        p.write_bytes(b"not a zip file at all")
    elif case == "empty_folder":
        p = tmp_path / "empty"
        p.mkdir()
        (p / "notes.txt").write_text("no samples here")
    elif case == "mixed_folder":
        p = _npy_folder(tmp_path / "f", x[:2])
        (p / "z.png").write_bytes(b"")
    elif case == "folder_shapes":
        p = _npy_folder(tmp_path / "f", x[:2])
        np.save(p / "s999.npy", x[0, :8])
    elif case == "npy_objects":
        p = tmp_path / "o.npy"
        np.save(p, np.array([{"a": 1}] * 2, dtype=object), allow_pickle=True)
    elif case == "bad_suffix":
        p = tmp_path / "d.csv"
        p.write_text("1,2,3")
    else:
        p = tmp_path / "nothing.npz"
    with pytest.raises(EvalError, match=match) as e:
        open_data(p, SPEC)
    assert "\n" not in e.value.message


def test_named_label_key_must_exist(dataset, tmp_path) -> None:  # noqa: ANN001
    _, x, y = dataset
    np.savez(tmp_path / "d.npz", x=x)
    assert open_data(tmp_path / "d.npz", SPEC).labels is None  # "y" is optional
    with pytest.raises(EvalError, match="no labels 'target'"):
        open_data(tmp_path / "d.npz", SPEC, label_key="target")


def test_float_input_needs_model_to_accept_it(dataset) -> None:  # noqa: ANN001
    _, x, _ = dataset
    spec = InputSpec((16, 16, 3), np.dtype(np.int8), False)
    with pytest.raises(EvalError, match="float samples"):
        open_data(x.astype(np.float32), spec)


# ----------------------------------------------------------------------------------------------- images
PIL = pytest.importorskip("PIL", reason="image folders are the optional Pillow extra")


def _images(d: Path, n: int, size: tuple[int, int] = (16, 16)) -> np.ndarray:
    from PIL import Image

    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(3)
    px = rng.integers(0, 256, (n, size[1], size[0], 3)).astype(np.uint8)
    for i in range(n):
        Image.fromarray(px[i]).save(d / f"img{i:02d}.png")
    return px


def test_preprocess_conventions() -> None:
    p = np.array([0, 1, 127, 128, 200, 255], np.uint8).reshape(1, 1, 6, 1)
    mob = parse_preprocess("mobilenet", SPEC)
    want = quantize_input(p.astype(np.float32) / np.float32(127.5) - np.float32(1), 0.02, -3)
    assert np.array_equal(mob.convert(p), want)
    aff = parse_preprocess(f"{1 / 255!r},-128", SPEC)  # real p / 255 in steps of 1 / 255: q = p - 128
    assert np.array_equal(aff.convert(p).reshape(-1), p.astype(np.int64).reshape(-1) - 128)
    assert parse_preprocess(None, SPEC).mode == "affine"
    assert parse_preprocess("float", SPEC).convert(p).dtype == np.float32
    for bad in ("mobilnet", "1,2,3", "0,0", "-1,0", "0.1,300"):
        with pytest.raises(EvalError, match="--preprocess"):
            parse_preprocess(bad, SPEC)
    with pytest.raises(EvalError, match=r"\[H, W, 1 or 3\]"):
        parse_preprocess("unit", InputSpec((10,), np.dtype(np.int8), True, 0.1, 0))


def test_image_folder_mobilenet(tmp_path, cnn10_path, cnn10_model) -> None:  # noqa: ANN001
    px = _images(tmp_path / "im", 5)
    rep = evaluate(cnn10_path, tmp_path / "im", preprocess="mobilenet", workers=1, progress=False)
    s, z = cnn10_model.in_quant
    xq = quantize_input(px.astype(np.float32) / np.float32(127.5) - np.float32(1), s, z)
    assert np.array_equal(rep.outputs, cnn10_model.run(xq))


def test_image_folder_resized_and_grey(tmp_path) -> None:  # noqa: ANN001
    from PIL import Image

    _images(tmp_path / "im", 2, size=(20, 12))
    spec = InputSpec((8, 8, 1), np.dtype(np.int8), True, 1 / 255, -128)
    src = open_data(tmp_path / "im", spec, preprocess="unit")
    got = src.read(0, 2)
    with Image.open(tmp_path / "im" / "img01.png") as im:
        want = np.asarray(im.convert("L").resize((8, 8), Image.BILINEAR), np.uint8)
    assert got.shape == (2, 8, 8, 1)
    assert np.array_equal(got[1, :, :, 0].astype(np.int64), want.astype(np.int64) - 128)


def test_unreadable_image(tmp_path) -> None:  # noqa: ANN001
    _images(tmp_path / "im", 2)
    (tmp_path / "im" / "img05.png").write_bytes(b"\x89PNG\r\n\x1a\n broken")
    with pytest.raises(EvalError, match="img05.png: unreadable image"):
        open_data(tmp_path / "im", SPEC)
