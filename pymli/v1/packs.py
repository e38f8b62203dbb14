"""Replay of the MLI 1.0 example packs of ``../shared/models_v1`` (CIFAR-10, HAR; fx16, fx8, fx8w16d).

Each pack lists, call by call, what one inference of MLI 1.0's example does: the C function, every
argument (struct as passed, the static buffer and offset its data pointer points to) and the
recorded contents of every output after every call, for every test vector. The replay emulates the
example's memory (its static buffers as bytes, constants from ``constants.npz``), runs the calls
of :mod:`pymli.v1.capi` in order under the pack's build (convergent rounding, release) and compares
every output argument with the recording (``np.array_equal``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ..config import use_platform
from .capi import FUNCTIONS
from .cfg import cfg_from_json
from .config import PRESETS_V1
from .tensor import MliError, Tensor

__all__ = ["Pack", "run_pack", "run_packs", "find_packs"]

_EL = {"MLI_EL_FX_8": 0, "MLI_EL_FX_16": 1}
_DT = {0: np.int8, 1: np.int16}


def _el(v: Any) -> int:
    return _EL[v] if isinstance(v, str) else int(v)


class Pack:
    """One ``models_v1`` pack: ``model.json``, ``constants.npz``, ``vectors.npz``."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.model = json.loads((self.folder / "model.json").read_text())
        with np.load(self.folder / "constants.npz") as z:
            self.constants = {k: z[k] for k in z.files}
        with np.load(self.folder / "vectors.npz") as z:
            self.vectors = {k: z[k] for k in z.files}
        self.num_vectors = int(self.model["num_test_vectors"])

    def _memory(self) -> dict[str, np.ndarray]:
        mem = {k: np.zeros(int(v["size_bytes"]), dtype=np.uint8) for k, v in self.model["static_buffers"].items()}
        for name, c in self.model["constants"].items():
            arr = np.ascontiguousarray(self.constants[c.get("npz_key", name)])
            raw = arr.reshape(-1).view(np.uint8).copy()
            mem.setdefault(c.get("c_data_symbol", name), raw)
            mem.setdefault(name, raw)
        return mem

    def _steps(self) -> Iterator[tuple[dict[str, Any], str, int | None]]:
        for c in self.model["calls"]:
            if "loop" in c:
                for t in range(int(c["count"])):
                    for b in c["body"]:
                        yield b, c["loop"] + ".", t
            else:
                yield c, "", None

    def infer(self, vector: int) -> dict[str, np.ndarray]:
        """Run one inference through pymli.v1 (nothing compared); every output by its vectors key.

        Outputs of calls inside loops are stacked along axis 0 (time step).
        """
        self.replay(vector)
        return {k: (np.stack(v) if len(v) > 1 else v[0]) for k, v in self.outputs.items()}

    def predict(self, vector: int) -> int:
        """The class the example's harness predicts: index of the FIRST maximum of the model output."""
        out = self.infer(vector)[self.model["output"]["vectors_key"]]
        return int(np.argmax(out.reshape(-1)))

    def replay(self, vector: int) -> tuple[int, int, list[str]]:
        """Replay one inference; returns (outputs matching, outputs differing, messages)."""
        mem = self._memory()
        ok, bad, msgs = 0, 0, []
        self.outputs: dict[str, list[np.ndarray]] = {}
        q = self.vectors["input.q"][vector]
        for call, prefix, t in self._steps():
            args, outs, ret, err = self._call(call, prefix, t, mem, q)
            if err:
                bad += 1
                msgs.append(f"vector {vector} {prefix}{call['id']}{'' if t is None else f'[t={t}]'}: {err}")
                continue
            for key, tensor in outs:
                exp = self.vectors[key][vector] if t is None else self.vectors[key][vector, t]
                got = tensor.to_numpy().reshape(-1) if tensor.rank else tensor.to_numpy().reshape(1)
                self.outputs.setdefault(key, []).append(got.reshape(exp.shape) if got.size == exp.size else got)
                if got.size == exp.size and np.array_equal(got, exp.reshape(-1)):
                    ok += 1
                else:
                    bad += 1
                    msgs.append(f"vector {vector} {key}{'' if t is None else f'[t={t}]'}: output differs")
        return ok, bad, msgs

    def _tensor(self, a: dict[str, Any], t: int | None, mem: dict[str, np.ndarray]) -> Tensor:
        d = a["tensor"]
        el = _el(d["el_type"])
        cap = int(d.get("capacity_bytes", 0))
        m = a.get("memory")
        if "capacity_bytes_at_t" in a and t is not None:
            cap = _at(a["capacity_bytes_at_t"], t)
        data = None
        if "const" in a:
            arr = np.ascontiguousarray(self.constants[self.model["constants"][a["const"]].get("npz_key", a["const"])])
            data = arr.reshape(-1).copy()
        elif m and m["buffer"] in mem:  # other pointers are stale fields of output structs
            off = _at(m["offset_bytes_at_t"], t) if ("offset_bytes_at_t" in m and t is not None) else int(m["offset_bytes"])
            raw = mem[m["buffer"]][off:]
            dt = np.dtype(_DT.get(el, np.int8))
            raw = raw[: (raw.size // dt.itemsize) * dt.itemsize]
            data = raw.view(dt)
        return Tensor(data=data, capacity=cap, shape=list(d.get("shape", []))[:4], rank=int(d["rank"]),
                      el_type=el, frac_bits=int(d["frac_bits"]))

    def _call(self, call: dict[str, Any], prefix: str, t: int | None, mem: dict[str, np.ndarray],
              q: np.ndarray) -> tuple[list[Any], list[tuple[str, Tensor]], Any, str]:
        tensors: dict[str, Tensor] = {}
        for a in call["args"]:
            if "tensor" in a:
                src = a.get("data_source")
                if isinstance(src, dict):
                    src = src.get("t=0") if t == 0 else src.get("t>=1", "")
                tensors[a["param"]] = tt = self._tensor(a, t, mem)
                if isinstance(src, str) and isinstance(tt.data, np.ndarray):
                    if src.startswith("input_preprocessing") and not t:  # the model input, written once at its start
                        tt.data.view(np.uint8)[: q.nbytes] = np.ascontiguousarray(q, dtype=tt.data.dtype).view(np.uint8).reshape(-1)
                    elif "zero-filled" in src:
                        tt.data.view(np.uint8)[: tt.capacity] = 0
        args: list[Any] = []
        outs: list[tuple[str, Tensor]] = []
        for a in call["args"]:
            p = a["param"]
            if p == "cfg.ir_tsr":
                pass
            elif "cfg" in a:
                c = a["cfg"]
                args.append(cfg_from_json(c["c_type"], c["fields"], tensors.get("cfg.ir_tsr")))
            elif "value" in a:
                args.append(int(a["value"]))
            else:
                args.append(tensors[p])
            if "vectors_key" in a:
                outs.append((prefix + a["vectors_key"].removeprefix(prefix) if prefix and not a["vectors_key"].startswith(prefix)
                             else a["vectors_key"], tensors[p]))
        fn = FUNCTIONS[call["fn"]]
        try:
            with use_platform(PRESETS_V1["conv"]):
                ret = fn(*args)
        except MliError as e:
            return args, outs, None, f"raised {e}"
        want = call.get("returns")
        if isinstance(want, int) and ret != want:
            return args, outs, ret, f"returned {ret}, C returned {want}"
        return args, outs, ret, ""


def _at(spec: dict[str, Any], t: int) -> int:
    return int(spec["t0"]) + int(spec["step"]) * t


def run_pack(folder: str | Path, vectors: list[int] | None = None) -> tuple[int, int, list[str]]:
    """Replay every call of every (or the given) test vector of one pack: (passed, failed, messages)."""
    pack = Pack(folder)
    ok = bad = 0
    msgs: list[str] = []
    for v in (range(pack.num_vectors) if vectors is None else vectors):
        o, b, m = pack.replay(v)
        ok, bad = ok + o, bad + b
        msgs += [f"{folder}: {x}" for x in m]
    return ok, bad, msgs


def find_packs(root: str | Path) -> list[Path]:
    """Pack folders (holding ``model.json``) at or under ``root``."""
    root = Path(root)
    if (root / "model.json").exists():
        return [root]
    return sorted(p.parent for p in root.rglob("model.json"))


def run_packs(root: str | Path) -> tuple[int, int, list[str]]:
    """Replay every pack at or under ``root``; counts are compared output arguments."""
    ok = bad = 0
    msgs: list[str] = []
    for p in find_packs(root):
        o, b, m = run_pack(p)
        ok, bad, msgs = ok + o, bad + b, msgs + m
    return ok, bad, msgs
