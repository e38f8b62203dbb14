"""Load an MLI example data pack (``model.json`` + ``constants.npz`` + ``vectors.npz``) as a Network.

The packs in ``shared/models/<example>/<variant>/`` record a C example network as the C library
ran it: constants as they sit in memory, the ordered MLI calls with every cfg field and the element
parameters of every tensor handed to the kernels, the test inputs and every intermediate. This
module rebuilds the network (layers calling the exact C symbols the example calls, with the same
output parameters) so that it can be run through pymli and compared bit for bit.

Supported calls: convolutions, depthwise, fully connected (also per time step in a loop), pooling,
eltwise, relu, softmax, sigm, tanh, permute, LSTM cells, and the LSTM loop of MLI's HAR example
built from rnn_dense / sigm / tanh / eltwise calls. Data movement and helper calls (copy, convert,
sub-tensor views) and the state resets (multiplication by a zero scalar) are not layers; the
network input is the quantised tensor the pack records. The final ``mli_krn_argmax`` of the
harness is not a layer either: use :meth:`RunResult.predictions`, which follows its tie rule.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..export import Exportable
from ..errors import MliError, Status
from ..formats import ElType
from ..tensor import Lut
from . import layers as L
from . import recurrent as R
from .network import Network
from .qparams import Const, QParams

__all__ = ["Pack", "load_pack"]


@dataclasses.dataclass
class Pack(Exportable):
    """A loaded pack: the network, its test vectors and the reference facts.

    Attributes:
        network: the network as the C example runs it.
        vectors: ``vectors.npz`` contents (lazy NpzFile).
        model: parsed ``model.json``.
        call_keys: layer name -> vectors key of its recorded output.
        input_key: vectors key of the quantised input.
        accuracy: accuracy the C program printed (fraction).
        in_keys: layer name -> vectors keys of its recorded inputs (``input.q`` for the network input).
        in_qparams: layer name -> element parameters of its inputs exactly as the C program passed them.
    """

    network: Network
    vectors: Any
    model: dict[str, Any]
    call_keys: dict[str, str]
    input_key: str
    accuracy: float
    in_keys: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    in_qparams: dict[str, list[QParams]] = dataclasses.field(default_factory=dict)
    in_steps: dict[str, list[int | None]] = dataclasses.field(default_factory=dict)

    @property
    def labels(self) -> np.ndarray:
        """Class labels of the recorded inputs."""
        return np.asarray(self.vectors["label"])

    @property
    def inputs(self) -> np.ndarray:
        """The recorded quantised network inputs, batch first."""
        return np.asarray(self.vectors[self.input_key])

    def recorded_inputs(self, layer: str, n: int | None = None) -> list[np.ndarray]:
        """The C library's recorded inputs of ``layer`` (first ``n`` vectors), as the layer reads them."""
        out = []
        for key, step in zip(self.in_keys[layer], self.in_steps.get(layer, [None] * len(self.in_keys[layer]))):
            v = np.asarray(self.vectors[key])[:n]
            out.append(v if step is None else v[:, step])
        return out

    def recorded_output(self, layer: str, n: int | None = None) -> np.ndarray:
        """The C library's recorded output of ``layer``; the last step only for an LSTM loop giving the last."""
        v = np.asarray(self.vectors[self.call_keys[layer]])[:n]
        la = self.network[layer]
        if getattr(la, "kind", "") == "unrolled_lstm" and getattr(la, "results", "") == "last":
            v = v[:, -1:]
        return v


def _qparams(desc: dict[str, Any], consts: Any) -> QParams:
    el = ElType.from_c_name(desc["el_type"])
    if "sa" in desc:
        sa = desc["sa"]
        get = (lambda v: np.asarray(consts[v]) if isinstance(v, str) else v)
        return QParams.sa(get(sa["zero_point"]), get(sa["scale"]), get(sa["scale_frac_bits"]), sa.get("dim", -1), el)
    return QParams(el, frac_bits=int(desc.get("fx", {}).get("frac_bits", 0)))


def _const(name: str, model: dict[str, Any], consts: Any) -> Const:
    desc = model["constants"][name]
    q = np.asarray(consts[name]).reshape(desc["shape"]) if desc["shape"] else np.asarray(consts[name])
    return Const.quantized(q, _qparams(desc, consts))


def _arg(call: dict[str, Any], name: str) -> dict[str, Any]:
    for a in call["args"]:
        if a["param"] == name:
            return a
    raise KeyError(f"{call['id']}: no argument {name}")


def _fields(call: dict[str, Any]) -> dict[str, Any]:
    f = _arg(call, "cfg")["cfg"]["fields"]
    return {k: (v["name"] if isinstance(v, dict) and "name" in v else v) for k, v in f.items()}


def _relu(fields: dict[str, Any]) -> str:
    return {"MLI_RELU_NONE": "none", "MLI_RELU_GEN": "gen", "MLI_RELU_1": "relu_1",
            "MLI_RELU_6": "relu_6"}[fields.get("relu.type", "MLI_RELU_NONE")]


def _pad(f: dict[str, Any]) -> tuple[int, int, int, int]:
    return (f["padding_top"], f["padding_bottom"], f["padding_left"], f["padding_right"])


def _lut(name: str, model: dict[str, Any], consts: Any) -> Lut:
    d = model["luts"][name]
    table = np.asarray(consts[d.get("npz_key", f"lut.{name}")])
    cap = int(d.get("data_capacity_bytes", table.nbytes))
    data = np.zeros(max(cap // table.itemsize, table.size), table.dtype)
    data[: table.size] = table
    return Lut(data=data, capacity=cap, type=ElType.from_c_name(d["type"]), length=int(d["length"]),
               in_frac_bits=int(d["in_frac_bits"]), out_frac_bits=int(d["out_frac_bits"]),
               input_offset=int(d["input_offset"]), output_offset=int(d["output_offset"]))


def _layer(call: dict[str, Any], model: dict[str, Any], consts: Any, producers: dict[str, str]) -> L.Layer:
    fn = call["fn"]
    generic = call.get("generic_fn", fn)
    out = _arg(call, "out")
    kw: dict[str, Any] = {"name": call["id"], "fn": fn, "out_q": _qparams(out["tensor"], consts)}
    kw["inputs"] = [_source(a, producers) for a in _data_inputs(call)]
    if "lstm_cell" in generic:
        f = _fields(call)
        return R.LSTM(_const(_arg(call, "weights_in")["const"], model, consts),
                      _const(_arg(call, "weights_out")["const"], model, consts),
                      _const(_arg(call, "bias")["const"], model, consts),
                      results="all" if f.get("results") == "RNN_OUT_ALL" else "last",
                      act={"RNN_ACT_TANH": "tanh", "RNN_ACT_SIGM": "sigm"}.get(f.get("act", ""), "none"),
                      cell_q=_qparams(_arg(call, "cell")["tensor"], consts),
                      tanh_lut=_lut(_arg(call, "tanh_lut")["lut"], model, consts),
                      sigm_lut=_lut(_arg(call, "sigm_lut")["lut"], model, consts), **kw)
    if "conv2d" in generic or "fully_connected" in generic:
        w = _const(_arg(call, "weights")["const"], model, consts)
        b = _const(_arg(call, "bias")["const"], model, consts)
        f = _fields(call)
        if "fully_connected" in generic:
            return L.FullyConnected(w, b, relu=_relu(f), **kw)
        cls = L.DepthwiseConv2D if "depthwise" in generic else L.Conv2D
        return cls(w, b, stride=(f["stride_height"], f["stride_width"]), padding=_pad(f),
                   dilation=(f.get("dilation_height", 1), f.get("dilation_width", 1)), relu=_relu(f), **kw)
    if "pool" in generic:
        f = _fields(call)
        cls = L.MaxPool if "maxpool" in generic else L.AvgPool
        return cls((f["kernel_height"], f["kernel_width"]), stride=(f["stride_height"], f["stride_width"]),
                   padding=_pad(f), **kw)
    if "softmax" in generic:
        return L.Softmax(axis=int(_fields(call).get("axis", -1)), lut=_lut(_arg(call, "lut")["lut"], model, consts),
                         **kw)
    if "sigm" in generic or "tanh" in generic:
        cls = L.Sigmoid if "sigm" in generic else L.Tanh
        return cls(lut=_lut(_arg(call, "lut")["lut"], model, consts), **kw)
    if "relu" in generic and "leaky" not in generic:
        return L.ReLU(type=_relu({"relu.type": _fields(call)["type"]}), **kw)
    if "eltwise" in generic:
        op = generic.split("eltwise_")[1].split("_")[0]
        return L.Eltwise(op, **kw)
    if "permute" in generic:
        return L.Permute(_fields(call)["perm_dim"], **kw)
    raise NotImplementedError(f"pack call {call['id']}: {fn} is not supported by the pack loader")


def _data_inputs(call: dict[str, Any]) -> list[dict[str, Any]]:
    """The activation (non-constant) input arguments of a call, in C order."""
    out = []
    for a in call["args"]:
        if a["param"] in ("in", "in1", "in2"):
            if "array_of_tensors" in a:
                out.append(a["array_of_tensors"][0])
            elif "tensor" in a and "const" not in a:
                out.append(a)
    return out


def _source_key(a: dict[str, Any]) -> str:
    src = a.get("data_source", [])
    if isinstance(src, dict):
        src = next(iter(src.values()))
    return (src[0] if src else "").split(" ")[0].split("[")[0]


def _source_step(a: dict[str, Any]) -> int | None:
    """The time step a loop result is read at (``x[t=127]``), or None."""
    src = a.get("data_source", [])
    m = re.search(r"\[t=(\d+)\]$", (src[0] if isinstance(src, list) and src else "").split(" ")[0])
    return int(m.group(1)) if m else None


def _source(a: dict[str, Any], producers: dict[str, str]) -> str:
    return producers.get(_source_key(a), "input")


def _is_state_reset(call: dict[str, Any]) -> bool:
    """The examples zero a state by multiplying it in place with a scalar zero constant."""
    return "eltwise_mul" in call["fn"] and any("const" in a for a in call["args"])


def _unrolled_lstm(loop: dict[str, Any], model: dict[str, Any], consts: Any, producers: dict[str, str],
                   resets: dict[str, dict[str, Any]]) -> R.UnrolledLSTM:
    body = {b["id"]: b for b in loop["body"]}
    dense = body["dense_i"]
    const_of = {a["param"]: a for a in dense["args"]}
    w_in = _const(const_of["weights"]["array_of_tensors"][0]["const"], model, consts)
    w_out = _const(const_of["weights"]["array_of_tensors"][1]["const"], model, consts)
    bias = _const(const_of["bias"]["const"], model, consts)
    qs = {k: _qparams(_arg(body[k], "out")["tensor"], consts) for k in body if k in R.UnrolledLSTM.OPS}
    h_src = _arg(dense, "in")["array_of_tensors"][1]["data_source"]["t=0"][0].split(".")[0]
    c_src = _arg(body["mul_fc"], "in2")["data_source"]["t=0"][0].split(".")[0]
    qs["h0"] = _qparams(_arg(resets[h_src], "out")["tensor"], consts)
    qs["c0"] = _qparams(_arg(resets[c_src], "out")["tensor"], consts)
    luts = {}
    for b in loop["body"]:
        for a in b["args"]:
            if "lut" in a:
                luts[a["lut"]] = _lut(a["lut"], model, consts)
    x_arg = _arg(dense, "in")["array_of_tensors"][0]
    return R.UnrolledLSTM(w_in, w_out, bias, qs=qs, results="last", tanh_lut=luts.get("tanh"),
                          sigm_lut=luts.get("sigm"), name=loop["loop"], inputs=[_source(x_arg, producers)])


def load_pack(folder: str | Path) -> Pack:
    """Build the network of an MLI example pack folder (one bit-depth variant).

    Raises:
        NotImplementedError: the pack uses calls the loader does not map (e.g. RNN loops).
        MliError: BAD_FUNC_CFG for a ``folder`` that is not a path.
        OSError: the folder or one of its files cannot be read.
    """
    if not isinstance(folder, (str, Path)):
        raise MliError(Status.BAD_FUNC_CFG, f"load_pack: folder = {folder!r:.40}: a path expected")
    folder = Path(folder)
    model = json.loads((folder / "model.json").read_text())
    consts = np.load(folder / "constants.npz")
    vectors = np.load(folder / "vectors.npz")
    inp = model["input"]
    input_q = _qparams(inp["model_input_tensor"], consts)
    net = Network(inp["model_input_tensor"]["shape"], input_q=input_q,
                  name=f"{model['example']}/{model['variant']}")
    producers: dict[str, str] = {}
    keys: dict[str, str] = {}
    in_qs: dict[str, list[QParams]] = {}
    in_keys: dict[str, list[str]] = {}
    in_steps: dict[str, list[int | None]] = {}
    resets: dict[str, dict[str, Any]] = {}
    for call in model["calls"]:
        if "loop" in call:
            body = call["body"]
            if len(body) == 1 and "fully_connected" in body[0]["fn"]:
                b = body[0]
                layer = _layer(dict(b, id=call["loop"]), model, consts, producers)
                layer.per_step = True  # type: ignore[attr-defined]
                key = f"{call['loop']}.{b['id']}.out"
                in_args = _data_inputs(b)
            elif any(b["id"] == "dense_i" for b in body):
                layer = _unrolled_lstm(call, model, consts, producers, resets)
                key = f"{call['loop']}.mul_out.out"
                in_args = [_arg(next(b for b in body if b["id"] == "dense_i"), "in")["array_of_tensors"][0]]
            else:
                raise NotImplementedError(f"pack loop {call['loop']} is not supported by the loader")
        elif call["fn"].startswith(("mli_mov_", "mli_hlp_", "mli_krn_argmax")):
            continue
        elif _is_state_reset(call):
            resets[call["id"]] = call
            continue
        else:
            layer = _layer(call, model, consts, producers)
            key = _arg(call, "out").get("vectors_key", f"{call['id']}.out")
            in_args = _data_inputs(call)
        net.add(layer)
        producers[key] = layer.name
        keys[layer.name] = key
        in_qs[layer.name] = [_qparams(a["tensor"], consts) for a in in_args]
        in_steps[layer.name] = [_source_step(a) for a in in_args]
        in_keys[layer.name] = [next((k for k, v in producers.items() if v == i), inp["vectors_keys"]["quantised"])
                               for i in layer.inputs]
    m = re.search(r"([\d.]+) %", model["reference"]["example_binary_accuracy_line"])
    acc = float(m.group(1)) / 100 if m else float("nan")
    return Pack(net, vectors, model, keys, inp["vectors_keys"]["quantised"], acc, in_keys, in_qs, in_steps)
