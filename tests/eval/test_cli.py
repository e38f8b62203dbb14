"""``pymli eval`` through click's CliRunner, and Ctrl-C on a real process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from pymli.cli import main

NET_FILE = '''
from pymli.models.digits import digits_network, load_split
from pymli.models.quantize import quantize_network


def build():
    xtr = load_split()[0]
    return quantize_network(digits_network(), xtr[:64], "sa8")
'''


def _run(*args: str) -> object:
    return CliRunner().invoke(main, ["eval", "--mapping", "mli", *args])


def test_cli_outputs_json_plot(cnn10_path, dataset, reference, tmp_path) -> None:  # noqa: ANN001
    path, x, y = dataset
    out, js, pics = tmp_path / "p.npz", tmp_path / "r.json", tmp_path / "pics"
    r = _run(str(cnn10_path), str(path), "--workers", "2", "--batch", "6", "--out", str(out), "--json", str(js),
             "--plot", str(pics), "--no-progress")
    assert r.exit_code == 0, r.output
    z = np.load(out)
    assert sorted(z.files) == ["outputs", "pred"]
    assert np.array_equal(z["outputs"], reference)
    d = json.loads(js.read_text())
    assert d["samples"] == len(x) and d["accuracy"] == pytest.approx(float(np.mean(z["pred"] == y)))
    assert f"accuracy {100 * d['accuracy']:.2f} %" in r.output
    assert "confusion" in r.output and "per layer" in r.output
    if (pics / "confusion.png").exists():  # matplotlib present
        assert (pics / "layers.png").stat().st_size > 0
    assert not (tmp_path / "p.npz.chunks").exists()


def test_cli_network_from_python_file(digits_sa8, tmp_path) -> None:  # noqa: ANN001
    net, x, y = digits_sa8
    (tmp_path / "net.py").write_text(NET_FILE)
    np.savez(tmp_path / "d.npz", images=x, labels=y)
    out = tmp_path / "p.npz"
    r = _run(f"{tmp_path / 'net.py'}:build", str(tmp_path / "d.npz"), "--input-key", "images", "--label-key",
             "labels", "--workers", "1", "--limit", "12", "--out", str(out), "--against", "float")
    assert r.exit_code == 0, r.output
    assert np.array_equal(np.load(out)["outputs"], net.run(x[:12]).output)
    assert "against float" in r.output


@pytest.mark.parametrize("make,args,code,match", [
    (lambda d, x, y: np.savez(d / "a.npz", images=x), [], 1, "no array 'x'"),
    (lambda d, x, y: np.savez(d / "a.npz", x=x, y=y[:3]), [], 1, "3 labels for 22 samples"),
    (lambda d, x, y: np.savez(d / "a.npz", x=x.astype(np.int32)), [], 1, "dtype int32"),
    (lambda d, x, y: np.savez(d / "a.npz", x=x[:, :8]), [], 1, "shape [8, 16, 3]"),
    (lambda d, x, y: np.savez(d / "a.npz", x=x), ["--resume"], 2, "--resume needs --out"),
    (lambda d, x, y: np.savez(d / "a.npz", x=x), ["--scheduler", "nowhere"], 2, "tcp://"),
    (lambda d, x, y: np.savez(d / "a.npz", x=x), ["--batch", "0"], 2, "--batch"),
    (lambda d, x, y: np.savez(d / "a.npz", x=x), ["--mapping", "cmsis"], 2, "--mapping"),
])
def test_cli_bad_input_one_line(make, args, code, match, cnn10_path, dataset, tmp_path) -> None:  # noqa: ANN001
    _, x, y = dataset
    make(tmp_path, x, y)
    r = _run(str(cnn10_path), str(tmp_path / "a.npz"), "--workers", "1", *args)
    assert r.exit_code == code, r.output
    assert match in r.output
    assert "Traceback" not in r.output
    if code == 1:
        assert len(r.output.strip().splitlines()) == 1


def test_cli_bad_model(tmp_path, dataset) -> None:  # noqa: ANN001
    path, _, _ = dataset
    (tmp_path / "m.tflite").write_bytes(b"garbage that is no flatbuffer")
    for model, match in ((str(tmp_path / "m.tflite"), "malformed"), ("nomodule_xyz:build", "cannot import"),
                         (str(tmp_path / "none.tflite"), "no such model")):
        r = _run(model, str(path), "--workers", "1")
        assert r.exit_code == 1 and match in r.output, r.output
        assert len(r.output.strip().splitlines()) == 1


def _cli_process(args: list[str], cwd: Path) -> subprocess.Popen:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2]) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.Popen([sys.executable, "-c", "from pymli.cli import main; main()", "eval", "--mapping", "mli", *args], cwd=cwd,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_stops_cleanly_then_resume(workers, cnn10_path, cnn10_model, tmp_path) -> None:  # noqa: ANN001
    # long enough (several seconds) that the signal always lands mid-run
    x = np.random.default_rng(5).integers(-128, 128, (160, 16, 16, 3)).astype(np.int8)
    path = tmp_path / "big.npz"
    np.savez(path, x=x)
    out = tmp_path / "p.npz"
    args = [str(cnn10_path), str(path), "--workers", workers, "--batch", "1", "--out", str(out), "--no-layers"]
    proc = _cli_process(args, tmp_path)
    chunks = tmp_path / "p.npz.chunks"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(chunks.glob("chunk-*.npz")) and proc.poll() is None:
        time.sleep(0.05)
    if proc.poll() is not None:
        pytest.fail(f"the run ended before it could be interrupted: {proc.communicate()}")
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, (stdout, stderr)
    assert "interrupted:" in stdout and "--resume" in stdout
    assert "Traceback" not in stderr
    assert not out.exists()
    done = len(list(chunks.glob("chunk-*.npz")))
    assert 1 <= done < len(x)
    r = _run(*args, "--resume", "--workers", "1")
    assert r.exit_code == 0, r.output
    assert np.array_equal(np.load(out)["outputs"], cnn10_model.run(x))


def test_cli_image_folder_with_classes(cnn10_path, cnn10_model, tmp_path) -> None:  # noqa: ANN001
    Image = pytest.importorskip("PIL.Image", reason="image folders are the optional Pillow extra")
    from pymli.tflite.importer import quantize_input

    rng = np.random.default_rng(2)
    px = rng.integers(0, 256, (4, 16, 16, 3)).astype(np.uint8)
    for i, cls in enumerate(("ant", "ant", "bee", "cow")):
        (tmp_path / "im" / cls).mkdir(parents=True, exist_ok=True)
        Image.fromarray(px[i]).save(tmp_path / "im" / cls / f"{i}.png")
    js = tmp_path / "r.json"
    r = _run(str(cnn10_path), str(tmp_path / "im"), "--preprocess", "mobilenet", "--workers", "1", "--json", str(js),
             "--out", str(tmp_path / "p.npz"))
    assert r.exit_code == 0, r.output
    d = json.loads(js.read_text())
    assert d["classes"] == ["ant", "bee", "cow"] and d["samples"] == 4
    s, z = cnn10_model.in_quant
    want = cnn10_model.run(quantize_input(px.astype(np.float32) / np.float32(127.5) - np.float32(1), s, z))
    assert np.array_equal(np.load(tmp_path / "p.npz")["outputs"], want)
    (tmp_path / "im" / "bee" / "broken.png").write_bytes(b"not an image")
    r = _run(str(cnn10_path), str(tmp_path / "im"), "--workers", "1")
    assert r.exit_code == 1 and "broken.png: unreadable image" in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_progress_bar_on_a_terminal(cnn10_path, dataset) -> None:  # noqa: ANN001
    import io

    from rich.console import Console

    from pymli.eval import evaluate

    path, _, _ = dataset
    buf = io.StringIO()
    evaluate(cnn10_path, path, workers=1, batch=4, console=Console(file=buf, force_terminal=True, width=100), mapping="mli")
    assert "samples/s" in buf.getvalue() and "22/22" in buf.getvalue()
    quiet = io.StringIO()
    evaluate(cnn10_path, path, workers=1, batch=4, console=Console(file=quiet, force_terminal=False), mapping="mli")
    assert quiet.getvalue() == ""


def test_cli_saved_network_file(digits_sa8, tmp_path) -> None:  # noqa: ANN001
    net, x, y = digits_sa8
    net.save(tmp_path / "net.npz")
    np.savez(tmp_path / "d.npz", x=x, y=y)
    out = tmp_path / "p.npz"
    r = _run(str(tmp_path / "net.npz"), str(tmp_path / "d.npz"), "--workers", "1", "--limit", "12", "--out", str(out),
             "--no-progress")
    assert r.exit_code == 0, r.output
    assert np.array_equal(np.load(out)["outputs"], net.run(x[:12]).output)
    (tmp_path / "bad.npz").write_bytes((tmp_path / "net.npz").read_bytes()[:300])
    r = _run(str(tmp_path / "bad.npz"), str(tmp_path / "d.npz"), "--workers", "1")
    assert r.exit_code == 1 and "bad.npz: not a saved pymli network" in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1
