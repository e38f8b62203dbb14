"""Checks of the convolutions (``mli_chk_conv2d_hwcn`` & co) and the sa8/fx parameter checks
shared by every MAC kernel (conv, transpose conv, fully connected, RNN).

Mirrors ``mli_chk_conv2d_hwcn``, ``mli_chk_depthwise_conv2d_hwcn``, ``mli_chk_group_conv2d_hwcn``,
``mli_chk_transpose_conv2d_hwcn``, ``mli_chk_bias_frac_fx``, ``mli_chk_bias_scale_asym`` and the sa8
parts of their ``_sa8_sa8_sa32`` variants (``private/src/mli_check.cc``). Every function raises
:class:`~pymli.errors.MliError` with the status of the checked C build, or returns ``None``.
Checks that read only struct fields are memoised with :class:`~pymli.checks.tensor.CheckCache`
under a key holding every field they read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..arith.geometry import effective_kernel, transpose_out_size
from ..arith.requant import asr_rnd_int
from ..arith.rounding import asr_rnd, wrap, wrap_int
from ..config import get_platform
from ..errors import Status
from ..formats import MAC_TYPES, ElType, RoundMode
from ..tensor import Tensor
from .tensor import (CheckCache, check_quant_params, check_tensor, fail, inner_most_dimension_is_one, shape_at,
                     struct_key, tensors_not_overlapped)

__all__ = [
    "check_quant",
    "check_conv_types",
    "check_bias_scale_asym",
    "check_sa8_params",
    "check_conv2d",
    "check_depthwise",
    "check_group",
    "check_transpose",
    "check_transpose_str2",
    "check_structure_cached",
    "check_mac",
    "tensor_key",
    "sa8_params_key",
]

# Weights dimensions of HWCN (and HW1N) layouts.
_KH, _KW, _KD, _KC = 0, 1, 2, 3


def check_quant(t: Tensor, zp_used_bits: int) -> None:
    """``mli_chk_tensor_quant_params``, vectorised over the channels of a per-axis tensor (same
    statuses and order as :func:`pymli.checks.check_quant_params`).

    Args:
        t: the tensor; zp_used_bits: allowed zero-point bits (0: zero points must be 0).

    Raises:
        MliError: BAD_TENSOR or INCOMPATEBLE_TENSORS.
    """
    if not t.el_type.is_sa or t.dim < 0 or t.dim >= t.rank:
        check_quant_params(t, zp_used_bits)
        return
    n = shape_at(t, t.dim)
    arrs = []
    for name, itemsize in (("scale", 2), ("zero_point", 2), ("scale_frac_bits", 1)):
        a = getattr(t, name)
        if not isinstance(a, np.ndarray) or a.nbytes < n * itemsize:
            fail(Status.BAD_TENSOR, f"per-axis {name} holds fewer than shape[{t.dim}] = {n} values")
        arrs.append(a.reshape(-1)[:n])
    bad = _quant_problem(np.ascontiguousarray(arrs[0]).tobytes(), np.ascontiguousarray(arrs[1]).tobytes(),
                         arrs[0].dtype.str, arrs[1].dtype.str, zp_used_bits)
    if bad is not None:
        fail(bad[0], bad[1])


@functools.lru_cache(maxsize=512)
def _quant_problem(s_b: bytes, z_b: bytes, s_dt: str, z_dt: str, zp_used_bits: int) -> tuple[Status, str] | None:
    scales, zps = np.frombuffer(s_b, s_dt), np.frombuffer(z_b, z_dt)
    zp_min = 0 if zp_used_bits == 0 else -(1 << zp_used_bits)
    zp_max = 0 if zp_used_bits == 0 else (1 << zp_used_bits) - 1
    bad_s = scales <= 0
    bad_z = (zps < zp_min) | (zps > zp_max)
    if bad_s.any() or bad_z.any():
        # C stops at the first channel with a problem; a bad scale there wins over its zero point.
        i = int(np.flatnonzero(bad_s | bad_z)[0])
        if bad_s[i]:
            return Status.BAD_TENSOR, f"non-positive scale {int(scales[i])} at channel {i}"
        return Status.INCOMPATEBLE_TENSORS, f"zero point {int(zps[i])} outside [{zp_min}, {zp_max}] at channel {i}"
    return None


def check_conv_types(inp: Tensor, w: Tensor, b: Tensor, out: Tensor, kind: str) -> None:
    """Type checks of an fx kind (fx16 / fx16_fx8_fx8 / fx8): types, bias and output frac bits.

    Args:
        inp, w, b, out: input, weights, bias and output tensors;
        kind: "fx16", "fx16_fx8_fx8" or "fx8".

    Raises:
        MliError: TYPE_MISMATCH or INCOMPATEBLE_TENSORS (frac bits).
    """
    want = MAC_TYPES[kind]
    if (inp.el_type, w.el_type, b.el_type) != want:
        fail(Status.TYPE_MISMATCH, f"{kind}: in/weights/bias types {inp.el_type.name}/{w.el_type.name}/"
             f"{b.el_type.name}")
    if b.frac_bits > inp.frac_bits + w.frac_bits:
        fail(Status.INCOMPATEBLE_TENSORS, f"bias frac_bits {b.frac_bits} > in + weights frac_bits")
    if out.frac_bits > inp.frac_bits + w.frac_bits:
        fail(Status.INCOMPATEBLE_TENSORS, f"out frac_bits {out.frac_bits} > in + weights frac_bits")


def check_bias_scale_asym(inp: Tensor, w: Tensor, b: Tensor) -> None:
    """``mli_chk_bias_scale_asym``: bias scale equals in scale x weights scale (+-1 after shifting).

    Args:
        inp, w, b: input, weights and bias tensors (SA, per tensor or per axis).

    Raises:
        MliError: INCOMPATEBLE_TENSORS (a scale off by more than 1) or BAD_TENSOR (short arrays).
    """
    n = shape_at(w, w.dim) if w.dim >= 0 else 1
    if w.dim < 0 and b.dim < 0 and not isinstance(w.scale, np.ndarray) and not isinstance(b.scale, np.ndarray):
        # One channel: plain integer arithmetic (the C check's int32 expressions).
        s_in = int(np.asarray(inp.scale).reshape(-1)[0])
        f_in = int(np.asarray(inp.scale_frac_bits).reshape(-1)[0])
        expected = wrap_int(s_in * int(w.scale), 32)
        sh = f_in + int(w.scale_frac_bits) - int(b.scale_frac_bits)
        expected = asr_rnd_int(expected, sh, 32) if sh > 0 else wrap_int(expected << min(-sh, 63), 32)
        if not -1 <= expected - int(b.scale) <= 1:
            fail(Status.INCOMPATEBLE_TENSORS, f"bias scale {int(b.scale)} != in scale x weights scale ({expected})")
        return

    def vec(t: Tensor, name: str) -> bytes:
        v = getattr(t, name)
        if t.dim < 0 or not isinstance(v, np.ndarray):
            return np.full(n, int(v) if not isinstance(v, np.ndarray) else int(v.reshape(-1)[0]), np.int64).tobytes()
        v = v.reshape(-1)
        if v.size < n:
            fail(Status.BAD_TENSOR, f"{name} of a per-axis tensor holds fewer than {n} values")
        return np.ascontiguousarray(v[:n], dtype=np.int64).tobytes()

    def first(t: Tensor, name: str) -> int:
        v = getattr(t, name)
        return int(v) if not isinstance(v, np.ndarray) else int(v.reshape(-1)[0])

    bad = _bias_scale_mismatch(first(inp, "scale"), first(inp, "scale_frac_bits"), vec(w, "scale"),
                               vec(w, "scale_frac_bits"), vec(b, "scale"), vec(b, "scale_frac_bits"),
                               get_platform().round_mode)
    if bad is not None:
        fail(Status.INCOMPATEBLE_TENSORS, f"bias scale {bad[1]} != in scale x weights scale ({bad[2]}) "
             f"for channel {bad[0]}")


@functools.lru_cache(maxsize=256)
def _bias_scale_mismatch(s_in: int, f_in: int, ws: bytes, wf: bytes, bs: bytes, bf: bytes,
                         mode: RoundMode) -> tuple[int, int, int] | None:
    w_s, w_f = np.frombuffer(ws, np.int64), np.frombuffer(wf, np.int64)
    b_s, b_f = np.frombuffer(bs, np.int64), np.frombuffer(bf, np.int64)
    expected = wrap(s_in * w_s, 32)
    sh = f_in + w_f - b_f
    right = asr_rnd(expected, np.maximum(sh, 1), 32, mode)
    left = wrap(expected << np.clip(-sh, 0, 63), 32)
    expected = np.where(sh > 0, right, left)
    diff = expected - b_s
    bad = np.flatnonzero((diff < -1) | (diff > 1))
    if bad.size:
        i = int(bad[0])
        return i, int(b_s[i]), int(expected[i])
    return None


def check_sa8_params(inp: Tensor, w: Tensor, b: Tensor, out: Tensor, w_dim: int) -> None:
    """sa8 x sa8 + sa32 requirements shared by the conv and FC checks (after the generic check).

    They depend only on types, ranks, dims and quantisation parameters: the outcome is cached
    under a key made of exactly those fields.

    Args:
        inp, w, b, out: input, weights, bias and output tensors;
        w_dim: the weights dimension of per-axis parameters (3 for HWCN, 1 for FC).

    Raises:
        MliError: TYPE_MISMATCH, BAD_TENSOR or INCOMPATEBLE_TENSORS.
    """
    key = (sa8_params_key(inp), sa8_params_key(w), sa8_params_key(b), sa8_params_key(out), w_dim, get_platform().round_mode)
    _SA8_CHECKED.run(key, lambda: _check_sa8_params(inp, w, b, out, w_dim))


_SA8_CHECKED = CheckCache()


def sa8_params_key(t: Tensor) -> tuple:
    """Every field of ``t`` the sa8 parameter checks read (type, rank, dim, shape[dim], quant values).

    Args:
        t: the tensor.

    Returns:
        A hashable key.
    """
    def part(v: object) -> object:
        return (v.dtype.str, v.shape, v.tobytes()) if isinstance(v, np.ndarray) else int(v)  # type: ignore[call-overload]

    sd = shape_at(t, t.dim) if 0 <= t.dim else -1
    return (t.el_type, t.rank, t.dim, sd, part(t.scale), part(t.zero_point), part(t.scale_frac_bits))


def _check_sa8_params(inp: Tensor, w: Tensor, b: Tensor, out: Tensor, w_dim: int) -> None:
    if inp.el_type != ElType.SA_8 or w.el_type != ElType.SA_8 or b.el_type != ElType.SA_32:
        fail(Status.TYPE_MISMATCH, f"sa8: in/weights/bias types {inp.el_type.name}/{w.el_type.name}/{b.el_type.name}")
    check_quant(inp, 7)
    check_quant(out, 7)
    check_quant(w, 0)
    check_quant(b, 0)
    if w.dim < 0:
        if b.dim >= 0:
            fail(Status.INCOMPATEBLE_TENSORS, "bias: per-tensor quantisation expected, like the weights")
    elif w.dim != w_dim or b.dim != 0:
        fail(Status.INCOMPATEBLE_TENSORS, f"weights per-axis dim {w.dim} (expected {w_dim}) / bias dim {b.dim} (expected 0)")
    if inp.dim >= 0 or out.dim >= 0:
        fail(Status.INCOMPATEBLE_TENSORS, "input and output must be quantised per tensor")
    check_bias_scale_asym(inp, w, b)


def _check_basic(inp: Tensor, w: Tensor, b: Tensor, out: Tensor) -> None:
    for t in (inp, w, b, out):
        check_tensor(t)
    if out.el_type != inp.el_type:
        fail(Status.TYPE_MISMATCH, f"output type {out.el_type.name} != input type {inp.el_type.name}")


def _check_ranks(inp: Tensor, w: Tensor, b: Tensor, out: Tensor) -> bool:
    return inp.rank == 3 and out.rank == 3 and w.rank == 4 and b.rank == 1


def _check_inner(*ts: Tensor) -> None:
    if not all(inner_most_dimension_is_one(t) for t in ts):
        fail(Status.INCOMPATEBLE_TENSORS, "the innermost mem_stride of in, weights, bias and out must be 1")


def _check_kernel_size(w: Tensor, ksize: int) -> None:
    if ksize and (shape_at(w, _KH) != ksize or shape_at(w, _KW) != ksize):
        fail(Status.SHAPE_MISMATCH, f"specialisation for {ksize}x{ksize} kernels, weights are "
             f"{shape_at(w, _KH)}x{shape_at(w, _KW)}")


def _check_geometry(inp: Tensor, w: Tensor, cfg: Any, out: Tensor, overlap: bool = True) -> None:
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, "NULL cfg")
    ekw = effective_kernel(shape_at(w, _KW), cfg.dilation_width)
    ekh = effective_kernel(shape_at(w, _KH), cfg.dilation_height)
    eiw = shape_at(inp, 1) + cfg.padding_left + cfg.padding_right
    eih = shape_at(inp, 0) + cfg.padding_top + cfg.padding_bottom
    rw = shape_at(out, 1) * cfg.stride_width + ekw - cfg.stride_width
    rh = shape_at(out, 0) * cfg.stride_height + ekh - cfg.stride_height
    ok = (cfg.dilation_height > 0 and cfg.dilation_width > 0
          and cfg.padding_left < ekw and cfg.padding_right < ekw
          and cfg.padding_top < ekh and cfg.padding_bottom < ekh
          and cfg.stride_height > 0 and cfg.stride_width > 0
          and rh <= eih and rw <= eiw)
    if not ok:
        fail(Status.BAD_FUNC_CFG, f"cfg {cfg} does not fit in {inp.shape} / weights {w.shape} / out {out.shape}")
    if overlap and not tensors_not_overlapped(inp, out):
        fail(Status.INCOMPATEBLE_TENSORS, "input and output buffers overlap")


def _check_family(what: str, shapes_ok: Callable[[], bool], inp: Tensor, w: Tensor, b: Tensor, cfg: Any,
                  out: Tensor, ksize: int, overlap: bool) -> None:
    """The checks of every HWCN convolution in C's order; ``shapes_ok`` is the kind's shape test."""
    _check_kernel_size(w, ksize)
    _check_basic(inp, w, b, out)
    if not shapes_ok():
        fail(Status.SHAPE_MISMATCH, f"{what} shapes in {inp.shape}, weights {w.shape}, bias {b.shape}, out {out.shape}")
    _check_inner(inp, w, b, out)
    _check_geometry(inp, w, cfg, out, overlap)


def check_conv2d(inp: Tensor, w: Tensor, b: Tensor, cfg: Any, out: Tensor, ksize: int = 0,
                 overlap: bool = True) -> None:
    """``mli_chk_conv2d_hwcn`` (generic part).

    Args:
        inp: HWC input; w: HWCN weights; b: bias (N,); out: HWN output;
        cfg: ``mli_conv2d_cfg`` (``None`` is NULL); ksize: kernel size of a specialisation (0: generic);
        overlap: also check that input and output buffers do not overlap.

    Raises:
        MliError: BAD_TENSOR, NOT_ENGH_MEM, TYPE_MISMATCH, SHAPE_MISMATCH, INCOMPATEBLE_TENSORS or
            BAD_FUNC_CFG.
    """
    _check_family("conv2d", lambda: (_check_ranks(inp, w, b, out) and shape_at(inp, 2) == shape_at(w, _KD)
                                     and shape_at(out, 2) == shape_at(w, _KC)
                                     and shape_at(b, 0) == shape_at(w, _KC)),
                  inp, w, b, cfg, out, ksize, overlap)


def check_depthwise(inp: Tensor, w: Tensor, b: Tensor, cfg: Any, out: Tensor, ksize: int = 0,
                    overlap: bool = True) -> None:
    """``mli_chk_depthwise_conv2d_hwcn`` (generic part).

    Args:
        inp: HWC input; w: HW1N weights; b: bias (N,); out: HWN output (N = C);
        cfg: ``mli_conv2d_cfg``; ksize: kernel size of a specialisation (0: generic);
        overlap: also check buffer overlap.

    Raises:
        MliError: as :func:`check_conv2d`.
    """
    _check_family("depthwise", lambda: (_check_ranks(inp, w, b, out) and shape_at(w, _KD) == 1
                                        and shape_at(b, 0) == shape_at(w, _KC)
                                        and shape_at(w, _KC) == shape_at(inp, 2)
                                        and shape_at(w, _KC) == shape_at(out, 2)),
                  inp, w, b, cfg, out, ksize, overlap)


def check_group(inp: Tensor, w: Tensor, b: Tensor, cfg: Any, out: Tensor, ksize: int = 0,
                overlap: bool = True) -> None:
    """``mli_chk_group_conv2d_hwcn`` (generic part).

    Args:
        inp: HWC input; w: HW(C/groups)N weights; b: bias (N,); out: HWN output;
        cfg: ``mli_conv2d_cfg``; ksize: kernel size of a specialisation (0: generic);
        overlap: also check buffer overlap.

    Raises:
        MliError: as :func:`check_conv2d`.
    """
    _check_family("group conv", lambda: _group_shapes_ok(inp, w, b, out), inp, w, b, cfg, out, ksize, overlap)


def _group_shapes_ok(inp: Tensor, w: Tensor, b: Tensor, out: Tensor) -> bool:
    ok = _check_ranks(inp, w, b, out) and shape_at(b, 0) == shape_at(w, _KC)
    wd = shape_at(w, _KD)
    if wd == 0:
        fail(Status.SHAPE_MISMATCH, "weights with 0 input channels")
    groups = shape_at(inp, 2) // wd
    ok = ok and shape_at(inp, 2) % wd == 0 and groups != 0 and shape_at(w, _KC) % groups == 0
    return ok and shape_at(out, 2) == shape_at(w, _KC)


def check_transpose(inp: Tensor, w: Tensor, b: Tensor, cfg: Any, out: Tensor) -> None:
    """``mli_chk_transpose_conv2d_hwcn`` (generic part).

    Args:
        inp: HWC input; w: HWCN weights; b: bias (N,); out: HWN output; cfg: ``mli_conv2d_cfg``.

    Raises:
        MliError: as :func:`check_conv2d`.
    """
    _check_basic(inp, w, b, out)
    if not (_check_ranks(inp, w, b, out) and shape_at(inp, 2) == shape_at(w, _KD)
            and shape_at(out, 2) == shape_at(w, _KC) and shape_at(b, 0) == shape_at(w, _KC)):
        fail(Status.SHAPE_MISMATCH, f"transpose conv shapes in {inp.shape}, weights {w.shape}, out {out.shape}")
    _check_inner(inp, w, b, out)
    kw, kh = shape_at(w, _KW), shape_at(w, _KH)
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, "NULL cfg")
    ok = (cfg.dilation_width == 1 and cfg.dilation_height == 1
          and cfg.padding_left < kw and cfg.padding_right < kw and cfg.padding_top < kh and cfg.padding_bottom < kh
          and cfg.stride_height > 0 and cfg.stride_width > 0
          and cfg.stride_width <= kw and cfg.stride_height <= kh)
    if not ok:
        fail(Status.BAD_FUNC_CFG, f"transpose conv cfg {cfg} for a {kh}x{kw} kernel")
    ew = transpose_out_size(shape_at(inp, 1), kw, cfg.stride_width, cfg.padding_left, cfg.padding_right)
    eh = transpose_out_size(shape_at(inp, 0), kh, cfg.stride_height, cfg.padding_top, cfg.padding_bottom)
    # C compares against unsigned values: a negative expectation never matches.
    if shape_at(out, 1) != ew or shape_at(out, 0) != eh or shape_at(out, 2) != shape_at(w, _KC):
        fail(Status.BAD_FUNC_CFG, f"output {out.shape[:3]} != expected {[eh, ew, shape_at(w, _KC)]}")
    if not tensors_not_overlapped(inp, out):
        fail(Status.INCOMPATEBLE_TENSORS, "input and output buffers overlap")


def check_transpose_str2(w: Tensor, cfg: Any, ksize: int) -> None:
    """``mli_chk_transpose_conv2d_hwcn_k{2x2,4x4}_str2``.

    Args:
        w: HWCN weights; cfg: ``mli_conv2d_cfg``; ksize: 2 or 4.

    Raises:
        MliError: BAD_FUNC_CFG (stride) or INCOMPATEBLE_TENSORS (kernel size).
    """
    if cfg.stride_width != 2 or cfg.stride_height != 2:
        fail(Status.BAD_FUNC_CFG, f"k{ksize}x{ksize}_str2 needs stride 2, got {cfg.stride_height}x{cfg.stride_width}")
    if shape_at(w, _KW) != ksize or shape_at(w, _KH) != ksize:
        fail(Status.INCOMPATEBLE_TENSORS, f"k{ksize}x{ksize}_str2 needs a {ksize}x{ksize} kernel")


_STRUCT_CHECKED = CheckCache()


def tensor_key(t: Tensor | None) -> tuple | None:
    """The cache key of a tensor's struct checks (:func:`pymli.checks.tensor.struct_key`; None for NULL).

    Args:
        t: the tensor or None.

    Returns:
        A hashable key.
    """
    if t is None:
        return None
    return struct_key(t)


def check_structure_cached(chk: Callable[..., None], op: str, ksize: int, inp: Tensor, w: Tensor, b: Tensor,
                       cfg: Any, out: Tensor) -> None:
    """Run ``chk`` (shapes, strides, capacities, cfg: a pure function of the struct fields, cached
    under them), then the buffer-overlap check, which depends on the data addresses.

    Args:
        chk: :func:`check_conv2d`, :func:`check_depthwise` or :func:`check_group`;
        op: a label of ``chk`` for the key; ksize: specialisation kernel size;
        inp, w, b, cfg, out: the call's arguments.

    Raises:
        MliError: as ``chk``.
    """
    ck = None if cfg is None else (int(cfg.relu.type), cfg.stride_width, cfg.stride_height, cfg.padding_left,
                                   cfg.padding_right, cfg.padding_top, cfg.padding_bottom, cfg.dilation_width,
                                   cfg.dilation_height)
    key = (op, ksize, tensor_key(inp), tensor_key(w), tensor_key(b), tensor_key(out), ck)
    _STRUCT_CHECKED.run(key, lambda: chk(inp, w, b, cfg, out, ksize, overlap=False))
    if not tensors_not_overlapped(inp, out):
        fail(Status.INCOMPATEBLE_TENSORS, "input and output buffers overlap")


def check_mac(kind: str, structure: Callable[[], None], inp: Tensor, w: Tensor, b: Tensor, out: Tensor,
              w_dim: int) -> None:
    """The checks of a MAC kernel (conv2d family, fully connected) in the C order of its type.

    sa8 checks the structure first and then the sa8 parameters; the fx types check the element
    types first and then the structure.

    Args:
        kind: ``"sa8"``, ``"fx16"``, ``"fx16_fx8_fx8"`` or ``"fx8"``.
        structure: the kernel's structure check (shapes, strides, cfg), called without arguments.
        inp, w, b, out: input, weights, bias and output; w_dim: the weights' output-channel dimension.

    Raises:
        MliError: the first failing check's status.
    """
    if kind == "sa8":
        structure()
        check_sa8_params(inp, w, b, out, w_dim)
    else:
        check_conv_types(inp, w, b, out, kind)
        structure()
