"""pymli.models.io: Network.save / load_network round trips, bit for bit, and clear errors on bad files."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pymli import MliError
from pymli.formats import ElType
from pymli.models import (
    GRU,
    LSTM,
    Argmax,
    Concat,
    Const,
    Conv2D,
    Eltwise,
    FullyConnected,
    GroupConv2D,
    L2Normalize,
    Network,
    NetworkFileError,
    Pad2D,
    QParams,
    Tanh,
    TransposeConv2D,
    UnrolledLSTM,
    load_network,
    load_pack,
    save_network,
)
from pymli.models import io as mio
from pymli.models import netfile
from pymli.models.digits import digits_network, load_split
from pymli.models.layers import LAYER_TYPES
from pymli.models.quantize import SCHEMES, quantize_network
from pymli.tensor import Lut
from pymli.testing.paths import shared_dir

from .test_network import every_layer_net


# ----------------------------------------------------------------------------- networks of every kind
def image_net(seed: int = 0) -> Network:
    """Conv, depthwise, relu, eltwise, leaky / prelu, permute, LUT activations, pools, fc, softmax."""
    return every_layer_net(seed)


def extra_net(seed: int = 1) -> Network:
    """Group and transpose conv, padding, concat, eltwise with a constant, l2_normalize, argmax."""
    r = np.random.default_rng(seed)
    return Network((6, 6, 4), [
        GroupConv2D(r.normal(0, .3, (3, 3, 2, 6)), r.normal(0, .1, 6), padding=1, name="g"),
        TransposeConv2D(r.normal(0, .3, (3, 3, 4, 6)), r.normal(0, .1, 6), stride=1, padding=1, name="t",
                        inputs=["input"]),
        Eltwise("max", name="mx", inputs=["g", "t"]),
        Concat(axis=-1, inputs=["mx", "t"], name="cat"),
        Pad2D((1, 0, 0, 1), name="pad"),
        Eltwise("sub", const=r.normal(0, .2, (7, 7, 12)), name="sub"),
        L2Normalize(axis=2, name="l2"),
        Argmax(axis=-1, topk=3, name="am"),
    ], name="extra")


def rnn_net(seed: int = 2) -> Network:
    """Fully connected per step, LSTM forward / backward, GRU, last result."""
    r = np.random.default_rng(seed)
    return Network((5, 4), [
        FullyConnected(r.normal(0, .4, (4, 6)), r.normal(0, .1, 6), relu="gen", per_step=True, name="fc1"),
        LSTM(r.normal(0, .3, (4, 6, 5)), r.normal(0, .3, (4, 5, 5)), r.normal(0, .2, (4, 5)), name="lstm"),
        LSTM(r.normal(0, .3, (4, 5, 5)), r.normal(0, .3, (4, 5, 5)), r.normal(0, .2, (4, 5)), act="sigm",
             direction="backward", name="back"),
        GRU(r.normal(0, .3, (3, 5, 4)), r.normal(0, .3, (3, 4, 4)), r.normal(0, .2, (3, 4)), results="last",
            direction="backward", name="gru"),
        FullyConnected(r.normal(0, .4, (4, 3)), r.normal(0, .1, 3), name="fc2"),
    ], name="rnn")


def unrolled_net(seed: int = 3) -> Network:
    """An FX16 UnrolledLSTM with hand-set formats (the quantiser does not make these)."""
    r = np.random.default_rng(seed)
    fx = QParams.fx(16, 12)
    qs = {k: fx for k in ("dense_i", "dense_g", "dense_f", "dense_o", "mul_fc", "mul_ig", "add_c", "mul_out",
                          "c0", "h0")}

    def const(shape: tuple[int, ...], frac: int) -> Const:
        return Const.quantized(r.integers(-3000, 3000, shape).astype(np.int16), QParams.fx(16, frac))

    return Network((4, 3), [UnrolledLSTM(const((4, 3, 5), 14), const((4, 5, 5), 14), const((4, 5), 12), qs=qs,
                                         results="all", name="ul")], input_q=fx, name="unrolled")


NETS = {"image": image_net, "extra": extra_net, "rnn": rnn_net}


def _data(net: Network, n: int, seed: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, (n, *net.input_shape))


def _roundtrip(net: Network, **kw: Any) -> tuple[Network, bytes]:
    buf = io.BytesIO()
    net.save(buf, **kw)
    data = buf.getvalue()
    return load_network(data), data


def _same_runs(a: Network, b: Network, x: np.ndarray) -> None:
    ra, rb = a.run(x), b.run(x)
    assert sorted(ra.values) == sorted(rb.values)
    for k in ra.values:
        assert ra.values[k].dtype == rb.values[k].dtype and np.array_equal(ra.values[k], rb.values[k]), k
        assert ra.qparams[k] == rb.qparams[k], k
    assert ra.index_output == rb.index_output


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype \
            and np.array_equal(a, b)
    if isinstance(a, Const):
        return isinstance(b, Const) and all(_same_value(getattr(a, f), getattr(b, f))
                                            for f in ("q", "qp", "float_value"))
    if isinstance(a, Lut):
        return isinstance(b, Lut) and all(_same_value(getattr(a, f), getattr(b, f))
                                          for f in ("data", "capacity", "type", "length", "in_frac_bits",
                                                    "out_frac_bits", "input_offset", "output_offset"))
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _same_layers(a: Network, b: Network) -> None:
    assert (a.name, a.input_shape, a.input_q) == (b.name, b.input_shape, b.input_q)
    assert [type(la) for la in a] == [type(la) for la in b]
    for la, lb in zip(a, b):
        pub = {k: v for k, v in vars(la).items() if not k.startswith("_")}
        got = {k: v for k, v in vars(lb).items() if not k.startswith("_")}
        assert pub.keys() == got.keys(), la.name
        for k in pub:
            assert _same_value(pub[k], got[k]), f"{la.name}.{k}: {pub[k]!r} != {got[k]!r}"


# ----------------------------------------------------------------------------- round trips
def test_every_layer_kind_is_covered() -> None:
    kinds = {la.kind for f in (*NETS.values(), unrolled_net) for la in f()}
    assert kinds == set(LAYER_TYPES) | {"lstm", "gru", "unrolled_lstm"}
    assert set(mio._CLASSES) == kinds


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("name", sorted(NETS))
def test_quantised_roundtrip_is_bit_identical(name: str, scheme: str) -> None:
    net = NETS[name]()
    q = quantize_network(net, _data(net, 24), scheme)
    back, data = _roundtrip(q)
    _same_layers(q, back)
    assert back.is_quantized and back.function_names() == q.function_names()
    x = _data(net, 3, seed=9)
    _same_runs(q, back, x)
    # the float constants the network came from are kept: the float twin is the same
    fa, fb = q.run_float(x, original=True), back.run_float(x, original=True)
    assert all(np.array_equal(fa[k], fb[k]) for k in fa)
    # the same network gives the same bytes, before and after a run (LUTs made by prepare() are not saved)
    assert _roundtrip(back)[1] == data


def test_unrolled_lstm_roundtrip() -> None:
    net = unrolled_net()
    back, _ = _roundtrip(net)
    _same_layers(net, back)
    x = np.random.default_rng(4).integers(-4096, 4096, (2, 4, 3)).astype(np.int16)
    _same_runs(net, back, x)


@pytest.mark.parametrize("name", sorted(NETS))
def test_float_network_roundtrip(name: str) -> None:
    net = NETS[name]()
    back, _ = _roundtrip(net)
    assert back.input_q is None and not back.is_quantized
    _same_layers(net, back)
    x = _data(net, 4)
    fa, fb = net.run_float(x), back.run_float(x)
    assert all(np.array_equal(fa[k], fb[k]) for k in fa)
    # the loaded float network quantises to the same network as the original
    qa, qb = (quantize_network(n, _data(net, 16), "sa8") for n in (net, back))
    _same_runs(qa, qb, x[:2])


@pytest.mark.parametrize("scheme", SCHEMES)
def test_digits_demo_network_to_path(tmp_path: Path, scheme: str) -> None:
    xtr, xte, _, yte = load_split()
    q = quantize_network(digits_network(), xtr[:200], scheme)
    path = tmp_path / f"digits_{scheme}"        # written as given: no suffix added
    q.save(path)
    assert path.is_file() and not path.with_suffix(".npz").exists()
    back = load_network(path)
    _same_runs(q, back, xte[:40])
    assert np.array_equal(back.predict(xte[:40]), q.predict(xte[:40]))
    save_network(back, tmp_path / "again.npz", compress=True)
    assert (tmp_path / "again.npz").stat().st_size < path.stat().st_size
    _same_runs(q, load_network(tmp_path / "again.npz"), xte[:5])


def test_custom_lut_and_fn_are_kept() -> None:
    r = np.random.default_rng(6)
    net = Network((6, 6, 4), [Conv2D(r.normal(0, .3, (3, 3, 4, 3)), r.normal(0, .1, 3), padding=1, name="c"),
                              Tanh(name="t")])
    q = quantize_network(net, _data(net, 16), "fx16")
    q["c"].fn = q.function_names()["c"] + "_k3x3"
    q["t"].prepare()
    lut = q["t"].lut
    lut.data = lut.data.copy()
    lut.data[: lut.length // 2] += 7        # not MLI's table: it must travel with the file
    back, _ = _roundtrip(q)
    assert back["c"].fn == q["c"].fn and back["t"].lut is not None
    _same_layers(q, back)
    _same_runs(q, back, _data(net, 2))


def test_tflite_network_is_refused_before_writing(tmp_path: Path) -> None:
    tflite = pytest.importorskip("pymli.tflite")
    from pymli.tflite.examples import cnn10

    net = tflite.load(cnn10()).network
    if all(type(la) in netfile._KINDS for la in net):
        pytest.skip("this TFLite model maps to pymli.models layers only")
    with pytest.raises(NetworkFileError, match="save the .tflite file"):
        net.save(tmp_path / "t.npz")
    assert not (tmp_path / "t.npz").exists()
    with pytest.raises(NetworkFileError, match="expected a pymli.models.Network"):
        save_network("not a network", tmp_path / "t.npz")  # type: ignore[arg-type]


PACKS = shared_dir() / "models"


@pytest.mark.parametrize("pack", ["cifar10/sa8", "cifar10/fx16_fx8_fx8", "har_smartphone/sa8",
                                  "har_smartphone/fx16"])
def test_mli_example_packs_roundtrip(pack: str) -> None:
    path = PACKS / pack
    if not path.is_dir():
        pytest.skip(f"{path} is absent")
    p = load_pack(path)
    back, _ = _roundtrip(p.network)
    _same_layers(p.network, back)
    x = p.vectors[p.input_key][:2]
    _same_runs(p.network, back, x)
    out = back.run(x, capture=False).output
    assert np.array_equal(out, p.vectors[p.call_keys[back.output_name]][:2])


# ----------------------------------------------------------------------------- bad files
def _saved(tmp_path: Path) -> Path:
    path = tmp_path / "net.npz"
    quantize_network(image_net(), _data(image_net(), 8), "sa8").save(path)
    return path


def _rewrite(path: Path, edit: Any = None, drop: str | None = None, add: dict[str, np.ndarray] | None = None) -> Path:
    """A copy of the saved network with its graph edited, a member dropped or members added."""
    with np.load(path, allow_pickle=False) as z:
        members = {k: z[k] for k in z.files if k != drop}
    if edit is not None and "graph" in members:
        g = json.loads(str(members["graph"]))
        edit(g)
        members["graph"] = np.array(json.dumps(g))
    members.update(add or {})
    out = path.with_name("bad.npz")
    np.savez(out, **members)
    return out


def _set(*path: Any) -> Any:
    """An edit setting ``graph[path[0]]...[path[-2]] = path[-1]``."""
    keys, value = path[:-1], path[-1]

    def edit(g: dict[str, Any]) -> None:
        d = g
        for k in keys[:-1]:
            d = d[k]
        d[keys[-1]] = value
    return edit


def _del(*keys: Any) -> Any:
    def edit(g: dict[str, Any]) -> None:
        d = g
        for k in keys[:-1]:
            d = d[k]
        del d[keys[-1]]
    return edit


BAD_GRAPHS = {
    "newer version": (_set("version", 2), "format version 2 is newer"),
    "bad version": (_set("version", "1"), "bad format version"),
    "other format": (_set("format", "keras"), "not a saved pymli network"),
    "no layers": (_del("layers"), "key 'layers' is missing"),
    "bad input shape": (_set("input_shape", [6, 0, 3]), "bad input_shape"),
    "no kind": (_del("layers", 0, "kind"), "layer 0: key 'kind' is missing"),
    "unknown kind": (_set("layers", 0, "kind", "conv9d"), "unknown layer kind 'conv9d'"),
    "missing param": (_del("layers", 0, "params", "stride"), r"\['stride'\] are missing"),
    "unknown param": (_set("layers", 0, "params", "colour", 3), r"\['colour'\] are unknown"),
    "bad qparams": (_set("layers", 0, "out_q", {"$qparams": {"el_type": "MLI_EL_SA_9"}}),
                    "unknown element type 'MLI_EL_SA_9'"),
    "qparams lack a key": (_set("layers", 0, "out_q", {"$qparams": {"el_type": "MLI_EL_SA_8"}}), "lack 'zero_point'"),
    "float el_type": (_set("input_q", {"el_type": "MLI_EL_FP_32"}), "not a quantised MLI type"),
    "unknown tag": (_set("layers", 0, "params", "stride", {"$pickle": "x"}), "unknown value tag"),
    "bad stride": (_set("layers", 0, "params", "stride", [1, 2, 3]), "refuses its parameters"),
    "missing array": (_set("layers", 0, "params", "weights", "$const", "q", "nowhere"), "'nowhere' is missing"),
    "unknown input": (_set("layers", 1, "inputs", ["ghost"]), "does not fit the network"),
    "bad el_type": (_set("layers", 0, "out_q", {"$qparams": {"el_type": 8}}), "bad quantisation"),
}


@pytest.mark.parametrize("case", sorted(BAD_GRAPHS))
def test_bad_graph_is_one_clear_error(tmp_path: Path, case: str) -> None:
    edit, msg = BAD_GRAPHS[case]
    bad = _rewrite(_saved(tmp_path), edit)
    with pytest.raises(NetworkFileError, match=msg) as ei:
        load_network(bad)
    assert isinstance(ei.value, MliError) and str(bad) in ei.value.message


def test_bad_arrays_are_one_clear_error(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    with pytest.raises(NetworkFileError, match="'L000.weights.q' is missing"):
        load_network(_rewrite(path, drop="L000.weights.q"))
    with pytest.raises(NetworkFileError, match="has dtype int16, its type MLI_EL_SA_8 wants int8"):
        load_network(_rewrite(path, add={"L000.weights.q": np.zeros((3, 3, 3, 4), np.int16)}))
    with pytest.raises(NetworkFileError, match="does not fit"):
        load_network(_rewrite(path, add={"L000.weights.q": np.zeros((3, 3, 2, 4), np.int8)}))
    with pytest.raises(NetworkFileError, match="no 'graph' description"):
        load_network(_rewrite(path, drop="graph"))


def test_pickled_member_is_never_loaded(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    bad = _rewrite(path, add={"L000.weights.q": np.array([{"x": 1}], dtype=object)})
    with pytest.raises(NetworkFileError, match="unreadable"):
        load_network(bad)


def test_not_a_network_file(tmp_path: Path) -> None:
    with pytest.raises(NetworkFileError, match="no such file"):
        load_network(tmp_path / "nothing.npz")
    with pytest.raises(NetworkFileError, match="is a folder"):
        load_network(tmp_path)
    (tmp_path / "text.npz").write_text("hello")
    with pytest.raises(NetworkFileError, match="not an .npz archive"):
        load_network(tmp_path / "text.npz")
    np.save(tmp_path / "one.npy", np.zeros(3))
    with pytest.raises(NetworkFileError, match="single .npy array"):
        load_network(tmp_path / "one.npy")
    data = _saved(tmp_path).read_bytes()
    with pytest.raises(NetworkFileError, match="not an .npz archive"):
        load_network(data[: len(data) // 2])
    np.savez(tmp_path / "g.npz", graph=np.array("{not json"))
    with pytest.raises(NetworkFileError, match="unreadable graph"):
        load_network(tmp_path / "g.npz")


def test_file_layout_is_documented_form(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        assert all(i.date_time == (1980, 1, 1, 0, 0, 0) for i in zf.infolist())
    assert names[0] == "graph.npy" and "L000.weights.q.npy" in names and "L000.weights.float.npy" in names
    with np.load(path, allow_pickle=False) as z:
        g = json.loads(str(z["graph"]))
        assert z["L000.weights.q"].dtype == np.int8
    assert (g["format"], g["version"]) == ("pymli.network", 1) and g["name"].startswith("every-layer")
    c1 = g["layers"][0]
    assert c1["kind"] == "conv2d" and c1["inputs"] == ["input"] and c1["params"]["relu"] == "none"
    assert c1["params"]["stride"] == {"$tuple": [1, 1]}
    assert c1["params"]["weights"]["$const"]["qp"]["el_type"] == ElType.SA_8.c_name


# ----------------------------------------------------------------------------- the commands
def _cli(*args: str) -> Any:
    from click.testing import CliRunner

    from pymli.cli import main

    return CliRunner().invoke(main, list(args))


def test_cli_run_saved_network(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    net = load_network(path)
    x = _data(net, 3)
    np.save(tmp_path / "xf.npy", x)
    np.save(tmp_path / "xq.npy", net.quantize_input(x))
    want = net.run(x, capture=False).output
    for inp, extra in (("xq.npy", []), ("xf.npy", ["--quantize"])):
        r = _cli("run", str(path), "--input", str(tmp_path / inp), "--output", str(tmp_path / "y.npy"), *extra)
        assert r.exit_code == 0, r.output
        assert np.array_equal(np.load(tmp_path / "y.npy"), want)
    r = _cli("run", str(path), "--input", str(tmp_path / "xf.npy"))
    assert r.exit_code == 2 and "--quantize" in r.output
    np.save(tmp_path / "bad.npy", np.zeros((2, 5, 5, 3), np.int8))
    r = _cli("run", str(path), "--input", str(tmp_path / "bad.npy"))
    assert r.exit_code == 2 and "does not fit the network input" in r.output
    image_net().save(tmp_path / "float.npz")
    r = _cli("run", str(tmp_path / "float.npz"), "--input", str(tmp_path / "xq.npy"))
    assert r.exit_code == 1 and "is not quantised" in r.output
    (tmp_path / "broken.npz").write_bytes(path.read_bytes()[:200])
    r = _cli("run", str(tmp_path / "broken.npz"), "--input", str(tmp_path / "xq.npy"))
    assert r.exit_code == 1 and "broken.npz: not a saved pymli network" in r.output and "Traceback" not in r.output


def test_cli_export_saved_network(tmp_path: Path) -> None:
    from pymli.export import export_c

    path = _saved(tmp_path)
    r = _cli("export", str(path), str(tmp_path / "cli"))
    assert r.exit_code == 0, r.output
    export_c(load_network(path), tmp_path / "api")
    for f in (tmp_path / "api").iterdir():
        assert (tmp_path / "cli" / f.name).read_text() == f.read_text(), f.name


def test_cli_demo_save_then_eval(tmp_path: Path) -> None:
    r = _cli("demo", "--samples", "12", "--save", str(tmp_path / "nets"))
    assert r.exit_code == 0, r.output
    names = sorted(p.name for p in (tmp_path / "nets").iterdir())
    assert names == ["digits_fx16.npz", "digits_fx16_fx8_fx8.npz", "digits_sa8.npz", "digits_test.npz"]
    data = np.load(tmp_path / "nets" / "digits_test.npz")
    assert data["x"].shape == (12, 8, 8, 1) and data["y"].shape == (12,)
    net = load_network(tmp_path / "nets" / "digits_sa8.npz")
    r = _cli("eval", str(tmp_path / "nets" / "digits_sa8.npz"), str(tmp_path / "nets" / "digits_test.npz"),
             "--workers", "1", "--no-progress", "--out", str(tmp_path / "p.npz"))
    assert r.exit_code == 0, r.output
    res = net.run(data["x"], capture=False)
    assert np.array_equal(np.load(tmp_path / "p.npz")["outputs"], res.output)
    acc = float(np.mean(res.predictions() == data["y"]))
    assert f"accuracy {100 * acc:.2f} %" in r.output
