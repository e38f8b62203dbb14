"""The per-signature memo of the planned capi functions (``checks.entry``, "the memo").

A call whose arguments equal (by identity, list entry by list entry, per-axis arrays by content,
data arrays by object and metadata) those of an earlier accepted call skips the checks. Every test
here changes one thing between two calls, in place or by assignment, and requires the second call
to end exactly as the same two calls with the memo switched off: same status and message, same
output bytes, same struct fields.
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import warnings
import weakref
from collections.abc import Callable

import numpy as np
import pytest

from pymli import ElType, MliError, Status, Tensor, capi
import pickle

from pymli.capi.move import MovCfg
from pymli.capi.types import ArgmaxCfg, FullyConnectedCfg, PermuteCfg, ReluCfg, ReluType
from pymli.checks import entry
from pymli.config import platform_named, set_memory_budget, use_platform
from pymli.tensor import dense_strides, touch

Args = list


def _relu_sa8() -> tuple[str, Args]:
    x = Tensor.from_numpy(np.arange(-4, 4, dtype=np.int8).reshape(2, 4), "SA_8", zero_point=1, scale=3,
                          scale_frac_bits=4)
    o = Tensor.zeros((2, 4), "SA_8", zero_point=0, scale=7, scale_frac_bits=5)
    return "mli_krn_relu_sa8", [x, ReluCfg(ReluType.RELU_6), o]


def _relu_fx16() -> tuple[str, Args]:
    x = Tensor.from_numpy(np.arange(-400, 400, 100, dtype=np.int16), "FX_16", frac_bits=6)
    o = Tensor.zeros((8,), "FX_16", frac_bits=6)
    return "mli_krn_relu_fx16", [x, ReluCfg(ReluType.GEN), o]


def _eltwise_sa8() -> tuple[str, Args]:
    a = Tensor.from_numpy(np.arange(-40, 40, 10, dtype=np.int8), "SA_8", zero_point=1, scale=3, scale_frac_bits=4)
    b = Tensor.from_numpy(np.arange(8, dtype=np.int8), "SA_8", zero_point=-2, scale=5, scale_frac_bits=5)
    o = Tensor.zeros((8,), "SA_8", zero_point=0, scale=7, scale_frac_bits=5)
    return "mli_krn_eltwise_add_sa8", [a, b, o]


def _eltwise_fx16_scalar() -> tuple[str, Args]:
    a = Tensor.from_numpy(np.arange(-400, 400, 100, dtype=np.int16), "FX_16", frac_bits=8)
    b = Tensor.from_numpy(np.array([300], np.int16), "FX_16", frac_bits=8)
    o = Tensor.zeros((8,), "FX_16", frac_bits=8)
    return "mli_krn_eltwise_mul_fx16", [b, a, o]


def _eltwise_sa8_rank0() -> tuple[str, Args]:
    # A rank-0 operand takes the normaliser's path (no snapshot): the mutations must still be seen.
    a = Tensor.from_numpy(np.arange(-40, 40, 10, dtype=np.int8), "SA_8", zero_point=1, scale=3, scale_frac_bits=4)
    b = Tensor.from_numpy(np.int8(-20), "SA_8", zero_point=1, scale=3, scale_frac_bits=4)
    o = Tensor.zeros((8,), "SA_8", zero_point=1, scale=3, scale_frac_bits=4)
    return "mli_krn_eltwise_max_sa8", [a, b, o]


def _leaky_fx16() -> tuple[str, Args]:
    x = Tensor.from_numpy(np.arange(-400, 400, 100, dtype=np.int16), "FX_16", frac_bits=8)
    s = Tensor.from_numpy(np.array([20], np.int16), "FX_16", frac_bits=7)
    o = Tensor.zeros((8,), "FX_16", frac_bits=8)
    return "mli_krn_leaky_relu_fx16", [x, s, o]


def _fc_sa8() -> tuple[str, Args]:
    rng = np.random.default_rng(1)
    x = Tensor.from_numpy(rng.integers(-100, 100, 6), "SA_8", zero_point=0, scale=3, scale_frac_bits=7)
    w = Tensor.from_numpy(rng.integers(-100, 100, (6, 4)), "SA_8", zero_point=[0] * 4, scale=[5, 6, 7, 8],
                          scale_frac_bits=[9] * 4, dim=1)
    b = Tensor.from_numpy(rng.integers(-1000, 1000, 4), "SA_32", zero_point=[0] * 4, scale=[15, 18, 21, 24],
                          scale_frac_bits=[16] * 4, dim=0)
    o = Tensor.zeros((4,), "SA_8", zero_point=0, scale=9, scale_frac_bits=6)
    return "mli_krn_fully_connected_sa8_sa8_sa32", [x, w, b, FullyConnectedCfg(ReluCfg(ReluType.GEN)), o]


def _fc_fx16() -> tuple[str, Args]:
    rng = np.random.default_rng(2)
    x = Tensor.from_numpy(rng.integers(-1000, 1000, 6), "FX_16", frac_bits=8)
    w = Tensor.from_numpy(rng.integers(-1000, 1000, (6, 4)), "FX_16", frac_bits=10)
    b = Tensor.from_numpy(rng.integers(-1000, 1000, 4), "FX_16", frac_bits=12)
    o = Tensor.zeros((4,), "FX_16", frac_bits=6)
    return "mli_krn_fully_connected_fx16", [x, w, b, FullyConnectedCfg(), o]


def _permute_sa8_per_axis() -> tuple[str, Args]:
    x = Tensor.from_numpy(np.arange(6, dtype=np.int8).reshape(2, 3), "SA_8", zero_point=[0, 1, 2], scale=[1, 2, 3],
                          scale_frac_bits=[0, 1, 2], dim=1)
    o = Tensor.from_numpy(np.zeros((3, 2), np.int8), "SA_8", zero_point=[0, 0, 0], scale=[1, 1, 1],
                          scale_frac_bits=[0, 0, 0], dim=0)
    return "mli_krn_permute_sa8", [x, PermuteCfg([1, 0]), o]


def _argmax_fx16() -> tuple[str, Args]:
    x = Tensor.from_numpy(np.array([[3, -1, 7], [2, 9, 9]], np.int16), "FX_16", frac_bits=3)
    o = Tensor.from_numpy(np.zeros((3, 1), np.int32), "SA_32", zero_point=0, scale=1, scale_frac_bits=0)
    return "mli_krn_argmax_fx16", [x, ArgmaxCfg(axis=1, topk=1), o]


def _mov_sa8_per_axis() -> tuple[str, Args]:
    x = Tensor.from_numpy(np.arange(12, dtype=np.int8).reshape(3, 4), "SA_8", zero_point=[0, 1, 2, 3],
                          scale=[1, 2, 3, 4], scale_frac_bits=[0, 1, 2, 3], dim=1)
    o = Tensor.from_numpy(np.zeros((3, 4), np.int8), "SA_8", zero_point=[0] * 4, scale=[1] * 4,
                          scale_frac_bits=[0] * 4, dim=1)
    return "mli_mov_tensor_sync", [x, MovCfg(), o]


def _mov_fx16_view() -> tuple[str, Args]:
    # The data arrays are views of larger buffers (the mutations change the bases too).
    base = np.arange(-40, 40, dtype=np.int16)
    x = Tensor(data=base[8:32], capacity=48, shape=[4, 6], mem_stride=[6, 1], rank=2, el_type=ElType.FX_16,
               frac_bits=5)
    o = Tensor(data=np.zeros(40, np.int16)[4:28], capacity=48, shape=[1, 1], mem_stride=[0, 0], rank=2,
               el_type=ElType.FX_16)
    return "mli_mov_tensor_sync", [x, MovCfg(), o]


@dataclasses.dataclass
class Conv2dCfg_:  # noqa: N801 - renamed below: a mutable struct that is not capi's but carries its name
    relu: ReluCfg = dataclasses.field(default_factory=ReluCfg)
    stride_width: int = 1
    stride_height: int = 1
    padding_left: int = 0
    padding_right: int = 0
    padding_top: int = 0
    padding_bottom: int = 0
    dilation_width: int = 1
    dilation_height: int = 1


_MutableConv2dCfg = type("Conv2dCfg", (Conv2dCfg_,), {})


def _conv_sa8_mutable_cfg() -> tuple[str, Args]:
    rng = np.random.default_rng(3)
    x = Tensor.from_numpy(rng.integers(-100, 100, (5, 5, 2)), "SA_8", zero_point=0, scale=3, scale_frac_bits=7)
    w = Tensor.from_numpy(rng.integers(-100, 100, (3, 3, 2, 2)), "SA_8", zero_point=[0, 0], scale=[5, 6],
                          scale_frac_bits=[9, 9], dim=3)
    b = Tensor.from_numpy(rng.integers(-1000, 1000, 2), "SA_32", zero_point=[0, 0], scale=[15, 18],
                          scale_frac_bits=[16, 16], dim=0)
    o = Tensor.zeros((3, 3, 2), "SA_8", zero_point=0, scale=9, scale_frac_bits=6)
    return "mli_krn_conv2d_hwcn_sa8_sa8_sa32", [x, w, b, _MutableConv2dCfg(ReluCfg(ReluType.GEN)), o]


CASES = [_relu_sa8, _relu_fx16, _eltwise_sa8, _eltwise_fx16_scalar, _leaky_fx16, _fc_sa8, _fc_fx16,
         _permute_sa8_per_axis, _argmax_fx16, _mov_sa8_per_axis, _mov_fx16_view, _conv_sa8_mutable_cfg]
"""Calls the memo serves (every argument canonical)."""


@dataclasses.dataclass
class ReluCfg_:  # noqa: N801 - renamed below: a class that is not capi's but carries its name
    type: ReluType


_OtherReluCfg = type("ReluCfg", (ReluCfg_,), {})


def _set(t: Tensor, k: str, v: object) -> None:
    setattr(t, k, v)


def _tensor_mutations(t: Tensor) -> list[tuple[str, Callable[[Tensor], None]]]:
    """Changes of one tensor: every field by assignment, lists and arrays in place."""
    m: list[tuple[str, Callable[[Tensor], None]]] = [
        ("shape[0] += 1 in place", lambda t: t.shape.__setitem__(0, t.shape[0] + 1)),
        ("shape[-1] = float", lambda t: t.shape.__setitem__(-1, float(t.shape[-1]))),
        ("shape appended", lambda t: t.shape.append(1)),
        ("shape reassigned equal", lambda t: _set(t, "shape", list(t.shape))),
        ("shape reassigned other", lambda t: _set(t, "shape", list(t.shape[::-1]))),
        ("mem_stride[0] *= 2 in place", lambda t: t.mem_stride.__setitem__(0, 2 * t.mem_stride[0])),
        ("mem_stride[-1] = 2 in place", lambda t: t.mem_stride.__setitem__(-1, 2)),
        ("mem_stride = zeros", lambda t: _set(t, "mem_stride", [0] * len(t.mem_stride))),
        ("mem_stride appended", lambda t: t.mem_stride.append(1)),
        ("shape popped, mem_stride appended (same total length)",
         lambda t: (t.shape.pop(), t.mem_stride.append(t.mem_stride[-1] if t.mem_stride else 1))),
        ("mem_stride = tuple", lambda t: _set(t, "mem_stride", tuple(t.mem_stride))),
        ("rank - 1", lambda t: _set(t, "rank", t.rank - 1)),
        ("rank = 5", lambda t: _set(t, "rank", 5)),
        ("rank = True", lambda t: _set(t, "rank", True) if t.rank == 1 else _set(t, "rank", t.rank * 1.0)),
        ("capacity small", lambda t: _set(t, "capacity", 1)),
        ("capacity np.int64", lambda t: _set(t, "capacity", np.int64(t.capacity))),
        ("capacity float", lambda t: _set(t, "capacity", float(t.capacity))),
        ("el_type other", lambda t: _set(t, "el_type", ElType.FX_8 if t.el_type is not ElType.FX_8 else ElType.SA_8)),
        ("el_type int", lambda t: _set(t, "el_type", int(t.el_type))),
        ("frac_bits + 1", lambda t: _set(t, "frac_bits", t.frac_bits + 1)),
        ("frac_bits float", lambda t: _set(t, "frac_bits", float(t.frac_bits))),
        ("dim = 0", lambda t: _set(t, "dim", 0)),
        ("value", lambda t: _set(t, "value", 7)),
        ("data = None", lambda t: _set(t, "data", None)),
        ("data = copy", lambda t: _set(t, "data", t.data.copy()) if t.data is not None else None),
        ("data = strided view", lambda t: _set(t, "data", np.repeat(t.data, 2)[::2]) if t.data is not None else None),
        ("data read-only", lambda t: t.data.setflags(write=False) if t.data is not None else None),
        ("data shortened", lambda t: _set(t, "data", t.data[:1]) if t.data is not None else None),
        ("data reshaped in place", lambda t: setattr(t.data, "shape", (1, t.data.size)) if t.data is not None else None),
        ("data dtype other", lambda t: _set(t, "data", t.data.astype(np.int32)) if t.data is not None else None),
        ("data list", lambda t: _set(t, "data", list(t.data)) if t.data is not None else None),
        ("data's base rewritten", lambda t: _base(t.data).__setitem__(Ellipsis, 3) if t.data is not None else None),
        ("data's base read-only", lambda t: _base(t.data).setflags(write=False) if t.data is not None else None),
        ("data stride 0 in place", lambda t: _set_strides(t.data) if t.data is not None else None),
        ("data dtype in place", lambda t: setattr(t.data, "dtype", np.dtype(f"u{t.data.itemsize}"))
         if t.data is not None else None),
        ("data an object whose attributes raise", lambda t: _set(t, "data", _Odd())),
        ("shape[0] = a strided array (no buffer for marshal)",
         lambda t: t.shape.__setitem__(0, np.arange(2 * t.shape[0])[::2])),
        ("shape[0] = np.int64 in place", lambda t: t.shape.__setitem__(0, np.int64(t.shape[0]))),
        ("shape[-1] = True in place", lambda t: t.shape.__setitem__(-1, True)),
        ("shape = tuple", lambda t: _set(t, "shape", tuple(t.shape))),
        ("mem_stride[0] = np.int32 in place", lambda t: t.mem_stride.__setitem__(0, np.int32(t.mem_stride[0]))),
        ("mem_stride[-1] = -1 in place", lambda t: t.mem_stride.__setitem__(-1, -1)),
        ("mem_stride cleared in place", lambda t: t.mem_stride.clear()),
        ("shape reversed in place", lambda t: t.shape.reverse()),
        ("field deleted", lambda t: delattr(t, "frac_bits")),
        ("data deleted (the class default None)", lambda t: delattr(t, "data")),
        ("shape deleted", lambda t: delattr(t, "shape")),
        ("data's elements written", lambda t: t.data.__setitem__(Ellipsis, 5) if t.data is not None else None),
        ("fields written around __setattr__, then touched", lambda t: (vars(t).update(rank=t.rank - 1), touch(t))),
    ]
    for k in ("zero_point", "scale", "scale_frac_bits"):
        v = getattr(t, k)
        if isinstance(v, np.ndarray):
            m.append((f"{k}[0] = 0 in place", lambda t, k=k: getattr(t, k).__setitem__(0, 0)))
            m.append((f"{k}[-1] += 1 in place", lambda t, k=k: getattr(t, k).__setitem__(-1, getattr(t, k)[-1] + 1)))
            m.append((f"{k} shortened", lambda t, k=k: _set(t, k, getattr(t, k)[:1].copy())))
            m.append((f"{k} as list", lambda t, k=k: _set(t, k, getattr(t, k).tolist())))
            m.append((f"{k} reshaped in place",
                      lambda t, k=k: setattr(getattr(t, k), "shape", (1, getattr(t, k).size))))
            m.append((f"{k} dtype unsigned in place", lambda t, k=k: setattr(getattr(t, k), "dtype",
                                                                           np.dtype(f"u{getattr(t, k).itemsize}"))))
            m.append((f"{k} dtype float / bytes in place", lambda t, k=k: setattr(
                getattr(t, k), "dtype", np.dtype("e" if getattr(t, k).itemsize == 2 else "S1"))))
            m.append((f"{k} stride 0 in place", lambda t, k=k: _set_strides(getattr(t, k))))
            m.append((f"{k} read-only", lambda t, k=k: getattr(t, k).setflags(write=False)))
            m.append((f"{k} = strided view", lambda t, k=k: _set(t, k, np.repeat(getattr(t, k), 2)[::2])))
            m.append((f"{k} as int32", lambda t, k=k: _set(t, k, getattr(t, k).astype(np.int32))))
            m.append((f"{k} as int", lambda t, k=k: _set(t, k, int(getattr(t, k)[0]))))
        else:
            m.append((f"{k} + 1", lambda t, k=k: _set(t, k, getattr(t, k) + 1)))
            m.append((f"{k} = 0", lambda t, k=k: _set(t, k, 0)))
            m.append((f"{k} -1", lambda t, k=k: _set(t, k, -1)))
            m.append((f"{k} float", lambda t, k=k: _set(t, k, float(getattr(t, k)))))
            m.append((f"{k} bool", lambda t, k=k: _set(t, k, True)))
            m.append((f"{k} np.int16", lambda t, k=k: _set(t, k, np.int16(getattr(t, k)))))
            m.append((f"{k} 1-element array", lambda t, k=k: _set(t, k, np.array([getattr(t, k)], np.int16))))
    return m


class _Odd:
    """A data "array" whose every attribute read fails."""

    def __getattr__(self, name: str) -> object:
        raise RuntimeError(f"no {name}")

    def __repr__(self) -> str:
        return "_Odd()"


def _base(d: np.ndarray) -> np.ndarray:
    return d if d.base is None else d.base


def _set_strides(d: np.ndarray) -> None:
    """Give the array a zero stride in place (every element reads the first; no new array object)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # NumPy deprecates setting strides
        d.strides = (0,)


def _try(f: Callable[[Tensor], None], t: Tensor) -> None:
    """Apply a mutation that fits the tensor (an empty shape has no ``shape[0]``: nothing changes)."""
    try:
        f(t)
    except IndexError:
        pass


def _mutations(args: Args) -> list[tuple[str, Callable[[Args], None]]]:
    out: list[tuple[str, Callable[[Args], None]]] = []
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            for label, f in _tensor_mutations(a):
                out.append((f"arg {i}: {label}", lambda args, i=i, f=f: _try(f, args[i])))
        elif isinstance(a, ReluCfg):
            out.append((f"arg {i}: cfg.type changed in place",
                        lambda args, i=i: object.__setattr__(args[i], "type", ReluType.NONE)))
            out.append((f"arg {i}: cfg.type as int", lambda args, i=i: object.__setattr__(args[i], "type", 3)))
            out.append((f"arg {i}: cfg None", lambda args, i=i: args.__setitem__(i, None)))
        elif isinstance(a, PermuteCfg):
            out.append((f"arg {i}: perm_dim[0] changed in place", lambda args, i=i: args[i].perm_dim.__setitem__(0, 0)))
            out.append((f"arg {i}: perm_dim appended", lambda args, i=i: args[i].perm_dim.append(2)))
            out.append((f"arg {i}: perm_dim = tuple",
                        lambda args, i=i: object.__setattr__(args[i], "perm_dim", tuple(args[i].perm_dim))))
            out.append((f"arg {i}: perm_dim = [0, 1] (length kept)",
                        lambda args, i=i: object.__setattr__(args[i], "perm_dim", [0, 1])))
        elif isinstance(a, ArgmaxCfg):
            out.append((f"arg {i}: topk changed in place", lambda args, i=i: object.__setattr__(args[i], "topk", 3)))
            out.append((f"arg {i}: axis as float", lambda args, i=i: object.__setattr__(args[i], "axis", 1.0)))
        elif isinstance(a, FullyConnectedCfg):
            out.append((f"arg {i}: cfg.relu.type changed in place",
                        lambda args, i=i: object.__setattr__(args[i].relu, "type", ReluType.RELU_1)))
            out.append((f"arg {i}: cfg.relu replaced",
                        lambda args, i=i: args.__setitem__(i, dataclasses.replace(args[i], relu=ReluCfg(ReluType.RELU_6)))))
            out.append((f"arg {i}: cfg.relu of another class named ReluCfg",
                        lambda args, i=i: object.__setattr__(args[i], "relu", _OtherReluCfg(args[i].relu.type))))
        elif isinstance(a, Conv2dCfg_):
            # A mutable struct of capi's name: fields assigned (plain setattr, no counter of its own).
            for k, v in (("stride_width", 2), ("stride_height", 2.0), ("padding_left", 1), ("padding_bottom", True),
                         ("dilation_width", np.uint8(1)), ("dilation_height", 256), ("relu", ReluCfg(ReluType.RELU_1))):
                out.append((f"arg {i}: cfg.{k} = {v!r}", lambda args, i=i, k=k, v=v: setattr(args[i], k, v)))
            out.append((f"arg {i}: cfg.relu.type changed in place",
                        lambda args, i=i: object.__setattr__(args[i].relu, "type", ReluType.RELU_6)))
        elif isinstance(a, MovCfg):
            # A mutable struct: fields assigned and lists changed in place.
            out.append((f"arg {i}: size[0] = 1 in place", lambda args, i=i: args[i].size.__setitem__(0, 1)))
            out.append((f"arg {i}: offset = [1] assigned", lambda args, i=i: setattr(args[i], "offset", [1])))
            out.append((f"arg {i}: perm_dim = tuple", lambda args, i=i: setattr(args[i], "perm_dim",
                                                                               tuple(args[i].perm_dim))))
            out.append((f"arg {i}: padding_pre[0] = True in place",
                        lambda args, i=i: args[i].padding_pre.__setitem__(0, True)))
            out.append((f"arg {i}: sub_sample_step[1] = 2.0 in place",
                        lambda args, i=i: args[i].sub_sample_step.__setitem__(1, 2.0)))
            out.append((f"arg {i}: sub_sample_step[1] = 2 in place",
                        lambda args, i=i: args[i].sub_sample_step.__setitem__(1, 2)))
            out.append((f"arg {i}: dst_mem_stride appended", lambda args, i=i: args[i].dst_mem_stride.append(0)))
            out.append((f"arg {i}: padding_post popped", lambda args, i=i: args[i].padding_post.pop()))
            out.append((f"arg {i}: dst_offset[0] = np.int64(0) in place",
                        lambda args, i=i: args[i].dst_offset.__setitem__(0, np.int64(0))))
            out.append((f"arg {i}: perm_dim[0] = np.uint8 in place",
                        lambda args, i=i: args[i].perm_dim.__setitem__(0, np.uint8(args[i].perm_dim[0]))))
            out.append((f"arg {i}: perm_dim reversed in place", lambda args, i=i: args[i].perm_dim.reverse()))
            out.append((f"arg {i}: dst_mem_stride[0] = -1 in place",
                        lambda args, i=i: args[i].dst_mem_stride.__setitem__(0, -1)))
            out.append((f"arg {i}: size appended", lambda args, i=i: args[i].size.append(1)))
            out.append((f"arg {i}: offset[0] = 1 in place", lambda args, i=i: args[i].offset.__setitem__(0, 1)))
    out.append(("in place: out is in", lambda args: args.__setitem__(len(args) - 1, args[0])))
    out.append(("first argument repeated", lambda args: args.__setitem__(1, args[0])
                if isinstance(args[1], Tensor) else None))
    return out


def _outcome(name: str, args: Args) -> tuple:
    try:
        res = capi.FUNCTIONS[name](*args)
        status, msg = res, ""
    except MliError as e:
        status, msg = e.status, e.message
    except Exception as e:  # noqa: BLE001 - a Python error must be the same one with and without memo
        status, msg = type(e).__name__, str(e)
    state = []
    for a in args:
        if isinstance(a, Tensor):
            d = {k: (v.tobytes(), str(v.dtype), v.shape) if isinstance(v, np.ndarray) else repr(v)
                 for k, v in vars(a).items()}
            state.append(d)
    return status, msg, state


def _run_pair(factory, mutation, memo: bool, platform: str = "vpx") -> tuple:
    was = entry.memo_enabled(memo)
    try:
        with use_platform(platform):
            name, args = factory()
            first = _outcome(name, args)
            second = _outcome(name, args)  # a hit when the memo is on (same objects)
            mutation(args)
            third = _outcome(name, args)
            fourth = _outcome(name, args)
            return first, second, third, fourth
    finally:
        entry.memo_enabled(was)


@pytest.mark.parametrize("factory", [*CASES, _eltwise_sa8_rank0], ids=lambda f: f.__name__[1:])
def test_every_mutation_between_calls_is_seen(factory) -> None:
    _, args = factory()
    labels = [label for label, _ in _mutations(args)]
    assert len(labels) > 40
    for label, _ in _mutations(args):
        def mutation(args, label=label):
            dict(_mutations(args))[label](args)
        with_memo = _run_pair(factory, mutation, True)
        plain = _run_pair(factory, mutation, False)
        assert with_memo[0][0] is Status.OK, (label, with_memo[0])
        assert with_memo == plain, label


@pytest.mark.parametrize("factory", CASES, ids=lambda f: f.__name__[1:])
def test_platform_and_budget_are_part_of_the_snapshot(factory) -> None:
    name, args = factory()
    fn = capi.FUNCTIONS[name]
    fn.memo.clear()
    ok = _outcome(name, args)
    assert ok[0] is Status.OK
    with use_platform("em"):
        em = _outcome(name, args)
    entry.memo_enabled(False)
    try:
        with use_platform("em"):
            em_plain = _outcome(name, args)
    finally:
        entry.memo_enabled(True)
    assert em == em_plain
    (snap,) = fn.memo.values()
    assert snap[0][0] is platform_named("em")  # the snapshot now is the em call's
    assert _outcome(name, args)[0] is Status.OK
    (snap,) = fn.memo.values()
    assert snap[0][0] is platform_named("vpx")
    set_memory_budget(2 * 1024**3 - 1)
    try:
        assert _outcome(name, args)[0] is Status.OK
        (snap,) = fn.memo.values()
        assert snap[0][1] == 2 * 1024**3 - 1
    finally:
        set_memory_budget(2 * 1024**3)


def _count_runs(fn, key) -> list:  # type: ignore[no-untyped-def]
    """Wrap the kept plan of ``fn.memo[key]``: the returned list gets one entry per run of it."""
    ident, vals, refs, run = fn.memo[key]
    runs: list = []

    def counting(*a):  # type: ignore[no-untyped-def]
        runs.append(1)
        return run(*a)

    fn.memo[key] = (ident, vals, refs, counting)
    return runs


def test_hit_runs_the_kept_plan_and_the_result_is_the_plain_one() -> None:
    name, args = _eltwise_sa8()
    fn = capi.FUNCTIONS[name]
    fn.memo.clear()
    assert _outcome(name, args)[0] is Status.OK
    (key,) = fn.memo
    runs = _count_runs(fn, key)
    rng = np.random.default_rng(5)
    for i in range(5):
        args[0].data[:] = rng.integers(-128, 128, 8)  # element values are read on every call
        args[1].data[:] = rng.integers(-128, 128, 8)
        got = _outcome(name, args)
        assert len(runs) == i + 1  # the kept plan ran: no check, no planning
        entry.memo_enabled(False)
        try:
            want = _outcome(name, copy.deepcopy(args))
        finally:
            entry.memo_enabled(True)
        assert got[0] is Status.OK and got == want
    args[2].shape[0] = 9  # out no longer fits: refused, and the plan must not run
    assert _outcome(name, args)[0] is Status.NOT_ENGH_MEM
    assert len(runs) == 5


def test_memo_holds_no_data_array() -> None:
    name, args = _relu_fx16()
    ref = weakref.ref(args[0].data)
    capi.FUNCTIONS[name](*args)
    capi.FUNCTIONS[name](*args)
    args[0].data = args[0].data.copy()
    gc.collect()
    assert ref() is None


def test_data_replaced_by_a_new_array_at_the_same_id_is_not_a_hit() -> None:
    # The memo keys on object ids: a dead data array's id may be reused by a new array, which the
    # weak reference tells apart (the new array is not the referent).
    name, args = _relu_fx16()
    fn = capi.FUNCTIONS[name]
    for _ in range(20):
        args[0].data = np.arange(-4, 4, dtype=np.int16) * 100
        args[2].data = np.zeros(8, np.int16)
        assert fn(*args) is Status.OK
        assert np.array_equal(args[2].data, np.maximum(args[0].data, 0))


def test_change_counter_moves_on_every_new_field_object_only() -> None:
    t = Tensor.from_numpy(np.arange(6, dtype=np.int8).reshape(2, 3), "SA_8", zero_point=1, scale=3, scale_frac_bits=4)
    v = t._version
    t.rank = t.rank  # the identical object again: the state is the same
    t.data = t.data
    assert t._version == v
    seen = {v}
    for change in (lambda: setattr(t, "shape", list(t.shape)), lambda: setattr(t, "scale", 1000),
                   lambda: setattr(t, "scale", 1000 + int(np.int64(0))), lambda: setattr(t, "data", t.data[:]),
                   lambda: delattr(t, "value"), lambda: touch(t)):
        change()
        assert t._version not in seen
        seen.add(t._version)
    # Copies draw their own counters (a copy is another object: its later changes are its own).
    others = [copy.copy(t), copy.deepcopy(t), pickle.loads(pickle.dumps(t)), dataclasses.replace(t), t.copy(),
              Tensor(), Tensor.zeros((2,), "FX_16")]
    versions = [o._version for o in others]
    assert len(set(versions)) == len(versions) and not set(versions) & seen
    assert vars(copy.copy(t)) == vars(t)  # the counter is no field
    assert "_version" not in vars(t)


def test_struct_written_back_by_the_normaliser_gets_a_new_counter() -> None:
    # A non-canonical destination takes the normaliser's path: the function fills a shadow, whose
    # fields are copied back with object.__setattr__ (around Tensor.__setattr__): the counter must move,
    # else a later call could take a stale snapshot for the filled struct.
    name, args = _mov_sa8_per_axis()
    dst = args[2]
    dst.capacity = np.int64(dst.capacity)
    dst.shape = [12]
    v = dst._version
    assert _outcome(name, args)[0] is Status.OK
    assert dst.shape == [3, 4] and dst._version != v
    results = []
    for memo in (True, False):  # three calls (normaliser, then planned twice): same with and without memo
        was = entry.memo_enabled(memo)
        try:
            _, fresh = _mov_sa8_per_axis()
            fresh[2].capacity = np.int64(fresh[2].capacity)
            fresh[2].shape = [12]
            results.append([_outcome(name, fresh) for _ in range(3)])
        finally:
            entry.memo_enabled(was)
    assert results[0] == results[1] and results[0][0][0] is Status.OK


def test_repeated_move_runs_the_kept_plan() -> None:
    # The move writes the destination's fields on every call: identical objects keep its counter,
    # so the third call (the second one planned the filled struct) onwards runs the kept plan.
    name, args = _mov_fx16_view()
    fn = capi.FUNCTIONS[name]
    fn.memo.clear()
    for _ in range(2):
        assert _outcome(name, args)[0] is Status.OK
    (key,) = [k for k in fn.memo if k == tuple(map(id, args))]
    runs = _count_runs(fn, key)
    v = args[2]._version
    for i in range(3):
        args[0].data[:] = np.arange(24) * (i + 1)
        assert _outcome(name, args)[0] is Status.OK
        assert np.array_equal(args[2].data, args[0].data)
    assert len(runs) == 3 and args[2]._version == v


@pytest.mark.parametrize("seed", range(6))
def test_dense_copy_moves_match_the_element_copy(seed: int) -> None:
    # mli_mov_tensor_sync of a dense tensor is one copy of its elements: of the whole arrays when both
    # hold exactly those elements, else of the first n. Either way, repeated through the memo, with
    # odd sizes and extreme values, the destination is the source's first n elements and nothing
    # around them changes.
    rng = np.random.default_rng(seed)
    for _ in range(20):
        el = ElType.SA_8 if rng.integers(2) else ElType.FX_16
        dt = el.dtype
        shape = [int(s) for s in rng.integers(1, 6, rng.integers(1, 5))]
        n = int(np.prod(shape))
        info = np.iinfo(dt)
        buf = rng.integers(info.min, info.max, 2 * n + 8, endpoint=True).astype(dt)
        start, extra = int(rng.integers(0, n + 1)), int(rng.integers(0, 3))  # extra > 0: dst longer than n
        src_data = rng.choice([info.min, info.max, 0, -1], n).astype(dt) if rng.integers(2) else \
            rng.integers(info.min, info.max, n, endpoint=True).astype(dt)
        dst_data = buf[start: start + n + extra]
        src = Tensor(data=src_data, capacity=src_data.nbytes, shape=list(shape), mem_stride=dense_strides(shape),
                     rank=len(shape), el_type=el, **({"zero_point": 1, "scale": 2, "scale_frac_bits": 3}
                                                     if el.is_sa else {"frac_bits": 4}))
        dst = Tensor(data=dst_data, capacity=dst_data.nbytes, shape=[1], mem_stride=[0], rank=1, el_type=el)
        want = buf.copy()
        want[start: start + n] = src_data
        for _ in range(3):
            assert capi.mli_mov_tensor_sync(src, MovCfg(), dst) is Status.OK
            assert np.array_equal(buf, want)
            assert dst.shape == shape and dst.rank == len(shape) and dst.el_type is el
            buf[start: start + n] = 0  # the next (memoised) call writes the elements again
