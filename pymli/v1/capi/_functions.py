"""The 320 callables, generated from the function names: family, element types, specialisation."""

from __future__ import annotations

import re
from typing import Any, Callable, Sequence

import numpy as np

from .. import checks as C
from .. import kernels as K
from ..cfg import RnnAct, RnnMode
from ..tables import EXPNEG_LUT, SIGMOID_LUT, TANH_LUT
from ..tensor import MliError, Status, Tensor, element_size
from ._core import FX8, TYPE_SUFFIXES, commit, read, run
from ._names import API_FUNCTIONS

__all__ = ["FUNCTIONS", "SPECIALISATIONS", "spec_constraint", "conv_mac_path"]

OK = Status.OK
_SPEC_RE = re.compile(r"^mli_krn_(conv2d|depthwise_conv2d|avepool|maxpool)_chw_(fx8w16d|fx16|fx8)(?:_(.+))?$")


def _doc(head: str, raises: str = "a checked build's status.") -> str:
    """A generated function's docstring: ``head`` (summary and Args) + the common Returns/Raises."""
    return f"""{head.rstrip()}

    Returns:
        Status: ``Status.OK``.

    Raises:
        MliError: {raises}
    """


def _typed(st: Status, types: Sequence[tuple[Tensor, int]]) -> Status:
    """A generic check's status, then (if OK) the ``_fx8`` / ``_fx16`` / ``_fx8w16d`` type check."""
    return st if st != OK else C.chk_types(types)


# ----------------------------------------------------------------------------- specialisations
def spec_constraint(spec: str | None, kw: int, kh: int, ch: int, cfg: Any) -> bool:
    """Whether a geometry fits a specialisation name (``k3x3_ch1_str1_krnpad``, ``k1xn_nopad``, ...).

    Tokens: ``k<W>x<H>`` (``n`` = any), ``ch<N>`` input channels, ``str1`` both strides 1,
    ``nopad`` no padding, ``krnpad`` "same" padding (exact with ``str1``, otherwise each side at
    most ``(K-1)//2`` before / ``K//2`` after), ``generic`` anything.
    """
    if spec is None or spec == "generic":
        return True
    toks = spec.split("_")
    fw = fh = None
    str1 = "str1" in toks
    for t in toks:
        m = re.fullmatch(r"k(\d+|n)x(\d+|n)", t)
        if m:
            fw = None if m.group(1) == "n" else int(m.group(1))
            fh = None if m.group(2) == "n" else int(m.group(2))
            if (fw is not None and kw != fw) or (fh is not None and kh != fh):
                return False
        elif t.startswith("ch") and ch != int(t[2:]):
            return False
    if str1 and (cfg.stride_width != 1 or cfg.stride_height != 1):
        return False
    pads = (cfg.padding_top, cfg.padding_bottom, cfg.padding_left, cfg.padding_right)
    if "nopad" in toks and any(pads):
        return False
    if "krnpad" in toks:
        want = ((kh - 1) // 2, kh // 2, (kw - 1) // 2, kw // 2)
        fixed = (fh is not None, fh is not None, fw is not None, fw is not None)
        for p, w_, f in zip(pads, want, fixed):
            if not f:
                continue
            if (str1 and p != w_) or (not str1 and p > w_):
                return False
    return True


#: (kernel_w, kernel_h, (top, bottom, left, right)) of the str1 specialisations with fixed padding
#: that ``mli_krn_conv2d_chw_fx16`` selects (its k1x1 one computes one MAC per product)
_STR1_FIXED = {(7, 7, (3, 3, 3, 3)), (6, 6, (2, 3, 2, 3)), (5, 5, (0, 0, 0, 0)), (5, 5, (2, 2, 2, 2)),
               (4, 4, (1, 2, 1, 2)), (3, 3, (1, 1, 1, 1)), (3, 1, (0, 0, 1, 1)), (2, 2, (0, 1, 0, 1)),
               (2, 1, (0, 0, 0, 1)), (1, 3, (1, 1, 0, 0)), (1, 2, (0, 1, 0, 0))}


def conv_mac_path(kind: str, layout: str, spec: str | None, kw: int, kh: int, ch: int, cfg: Any) -> str:
    """The C code path (:data:`pymli.v1.kernels.MAC_PATHS`) an fx16 convolution call runs in MLI 1.0.

    It fixes the order of the saturating 40-bit MACs. A specialisation runs its own path (the
    dispatchers ``mli_krn_conv2d_chw_fx16`` / ``mli_krn_depthwise_conv2d_chw_fx16`` first select
    one from the geometry): ``*_k1x1_*nopad`` one MAC per product; conv2d ``*_str1_krnpad``,
    ``k5x5*_str1_nopad`` and every depthwise ``*str1*`` ``conv2d_chw_str1`` with fixed padding;
    conv2d ``k1xn_str1``, ``knx1_str1``, ``ch1_str1`` ``conv2d_chw_str1`` without; ``_str1``,
    ``*_krnpad`` (any stride) and ``_generic`` ``conv2d_chw``. ``mli_krn_conv2d_hwc_fx16``: ``hwc``.

    Args:
        kind: ``conv2d`` or ``depthwise_conv2d``. layout: ``chw`` or ``hwc``.
        spec: the specialisation suffix (``k3x3_str1_krnpad``, ``generic``, ...) or None (dispatcher).
        kw, kh: kernel width and height. ch: input channels. cfg: the :class:`~pymli.v1.cfg.Conv2dCfg`.

    Returns:
        str: the path name.
    """
    if layout == "hwc":
        return "hwc"
    str1 = cfg.stride_width == 1 and cfg.stride_height == 1
    pads = (cfg.padding_top, cfg.padding_bottom, cfg.padding_left, cfg.padding_right)
    if kind == "depthwise_conv2d":
        if spec is None:
            return "str1_fixed" if str1 else "any"
        return "str1_fixed" if "str1" in spec.split("_") else "any"
    if spec is None:  # mli_krn_conv2d_chw_fx16's choice
        if kw == 1 and kh == 1 and not any(pads):
            return "single"
        if not str1:
            return "any"
        if (kw, kh, pads) in _STR1_FIXED:
            return "str1_fixed"
        return "str1" if (kw == 1 or kh == 1 or ch == 1) else "any"
    toks = spec.split("_")
    if "k1x1" in toks:
        return "single"
    if "str1" in toks:
        if "krnpad" in toks or "nopad" in toks:
            return "str1_fixed"
        return "any" if spec == "str1" else "str1"
    return "any"


def _geometry_extra(inp: Tensor, kw: int, kh: int, layout: str, spec: str | None, cfg: Any, ch: int) -> Callable[[], Status]:
    def extra() -> Status:
        if not spec_constraint(spec, kw, kh, ch, cfg):
            return Status.SPEC_PARAM_MISMATCH
        h, w = (inp.shape[1], inp.shape[2]) if layout == "chw" else (inp.shape[0], inp.shape[1])
        # MLI 1.0 bug: an input smaller than the kernel leaves outputs unwritten and writes outside
        # the output buffer; pymli refuses such calls (docs/mli1.md, Quirks).
        if h < kh or w < kw or cfg.stride_width == 0 or cfg.stride_height == 0:
            return Status.SHAPE_MISMATCH
        return OK
    return extra


# ----------------------------------------------------------------------------- conv / depthwise
def _make_conv(name: str, kind: str, layout: str, suffix: str, spec: str | None) -> Callable:
    dt, wt, bits = TYPE_SUFFIXES[suffix]

    def fn(in_: Tensor, weights: Tensor, bias: Tensor, cfg: Any, out: Tensor) -> Status:
        def check() -> Status:
            if kind == "depthwise_conv2d":
                st = C.chk_depthwise(in_, weights, bias, cfg, out)
            else:
                st = C.chk_conv2d(in_, weights, bias, cfg, out, layout)
            if st != OK or (layout == "hwc" and suffix == "fx16"):  # conv2d_hwc_fx16: generic checks only
                return st
            return C.chk_types([(in_, dt), (weights, wt), (bias, wt)])

        if layout == "chw":
            kw, kh, ch = weights.shape[3], weights.shape[2], in_.shape[0]
        else:
            kw, kh, ch = weights.shape[2], weights.shape[1], in_.shape[2]

        def compute() -> None:
            x = read(in_, dt).reshape(in_.dims)
            w = read(weights, wt).reshape(weights.dims)
            b = read(bias, wt).reshape(bias.dims)
            if layout == "hwc":
                x = x.transpose(2, 0, 1)
                w = w.transpose(0, 3, 1, 2)
            f = K.depthwise_conv2d_chw if kind == "depthwise_conv2d" else K.conv2d_chw
            r = f(x, w, b, in_frac=in_.frac_bits, w_frac=weights.frac_bits, b_frac=bias.frac_bits,
                  out_frac=out.frac_bits, stride=(cfg.stride_height, cfg.stride_width),
                  pads=(cfg.padding_top, cfg.padding_bottom, cfg.padding_left, cfg.padding_right),
                  relu=int(cfg.relu.type), bits=bits, acc40=suffix == "fx16",
                  mac_path=conv_mac_path(kind, layout, spec, kw, kh, ch, cfg))
            if layout == "hwc":
                r = r.transpose(1, 2, 0)
            commit([(out, dt, r.reshape(-1))], [(out, {"rank": 3, "shape": list(r.shape), "el_type": in_.el_type})])

        return run(check, compute, _geometry_extra(in_, kw, kh, layout, spec, cfg, ch))

    fn.__doc__ = _doc(f"""``{name}``: MLI 1.0 {kind.replace('_', ' ')} ({layout.upper()}, {suffix}{', specialisation ' + spec if spec else ''}).

    Args:
        in_: input feature map, {'[C, H, W]' if layout == 'chw' else '[H, W, C]'}.
        weights: {'[C, 1, Kh, Kw]' if kind == 'depthwise_conv2d' else ('[Co, C, Kh, Kw]' if layout == 'chw' else '[Co, Kh, Kw, C]')}.
        bias: [Co].
        cfg: :class:`~pymli.v1.cfg.Conv2dCfg`.
        out: output tensor (buffer and frac_bits set by the caller); shape, rank and el_type are written.
    """, """a checked build's status; SPEC_PARAM_MISMATCH for arguments outside the
            specialisation; SHAPE_MISMATCH for an input smaller than the kernel (a 1.0 memory bug).""")
    return fn


# ----------------------------------------------------------------------------- pooling
def _make_pool(name: str, kind: str, layout: str, suffix: str, spec: str | None) -> Callable:
    dt, _, bits = TYPE_SUFFIXES[suffix]

    def fn(in_: Tensor, cfg: Any, out: Tensor) -> Status:
        def check() -> Status:
            st = C.chk_pool(in_, cfg, out, layout)
            return _typed(st, [(in_, dt)])

        ch = in_.shape[0] if layout == "chw" else in_.shape[2]

        def compute() -> None:
            x = read(in_, dt).reshape(in_.dims)
            if layout == "hwc":
                x = x.transpose(2, 0, 1)
            kw_ = dict(kernel=(cfg.kernel_height, cfg.kernel_width), stride=(cfg.stride_height, cfg.stride_width),
                       pads=(cfg.padding_top, cfg.padding_bottom, cfg.padding_left, cfg.padding_right))
            r = K.maxpool_chw(x, **kw_) if kind == "maxpool" else K.avepool_chw(x, bits=bits, **kw_)
            if layout == "hwc":
                r = r.transpose(1, 2, 0)
            commit([(out, dt, r.reshape(-1))], [(out, {"rank": 3, "shape": list(r.shape), "el_type": in_.el_type,
                                                       "frac_bits": in_.frac_bits})])

        return run(check, compute, _geometry_extra(in_, cfg.kernel_width, cfg.kernel_height, layout, spec, cfg, ch))

    fn.__doc__ = _doc(f"""``{name}``: MLI 1.0 {kind} ({layout.upper()}, {suffix}{', specialisation ' + spec if spec else ''}).

    Args:
        in_: input feature map, {'[C, H, W]' if layout == 'chw' else '[H, W, C]'}.
        cfg: :class:`~pymli.v1.cfg.PoolCfg`.
        out: output tensor; shape, rank, el_type and frac_bits (the input's) are written.
    """, """a checked build's status, SPEC_PARAM_MISMATCH, or SHAPE_MISMATCH (input smaller than the kernel).""")
    return fn


# ----------------------------------------------------------------------------- fully connected
def _make_fc(name: str, suffix: str) -> Callable:
    dt, wt, bits = TYPE_SUFFIXES[suffix]

    def fn(in_: Tensor, weights: Tensor, bias: Tensor, out: Tensor) -> Status:
        def check() -> Status:
            st = C.chk_fully_connected(in_, weights, bias, out)
            return _typed(st, [(in_, dt), (weights, wt), (bias, wt)])

        def compute() -> None:
            w = read(weights, wt).reshape(weights.dims[:2])
            x = read(in_, dt, w.shape[1])
            b = read(bias, wt, w.shape[0])
            r = K.fully_connected(x, w, b, in_frac=in_.frac_bits, w_frac=weights.frac_bits, b_frac=bias.frac_bits,
                                  out_frac=out.frac_bits, bits=bits, acc40=suffix == "fx16")
            commit([(out, dt, r)], [(out, {"rank": 1, "shape": [r.size], "el_type": in_.el_type})])

        return run(check, compute)

    fn.__doc__ = _doc(f"""``{name}``: MLI 1.0 fully connected layer ({suffix}).

    Args:
        in_: input of N elements (any shape). weights: [M, N]. bias: [M].
        out: output (caller sets frac_bits); rank 1, shape [M] and el_type are written.
    """)
    return fn


# ----------------------------------------------------------------------------- element-wise transforms
def _fmt(in_: Tensor, **kw: Any) -> dict[str, Any]:
    d = {"rank": in_.rank, "shape": list(in_.dims), "el_type": in_.el_type, "frac_bits": in_.frac_bits}
    d.update(kw)
    return d


def _make_relu(name: str, suffix: str) -> Callable:
    dt, _, bits = TYPE_SUFFIXES[suffix]

    def fn(in_: Tensor, cfg: Any, out: Tensor) -> Status:
        def check() -> Status:
            st = C.chk_relu(in_, out)
            return _typed(st, [(in_, dt)])

        def compute() -> None:
            x = read(in_, dt)
            lo, hi = K.relu_limits(int(cfg.type), in_.frac_bits, bits)
            commit([(out, dt, np.clip(x, lo, hi))], [(out, _fmt(in_))])

        return run(check, compute)

    fn.__doc__ = _doc(f"""``{name}``: MLI 1.0 ReLU ({suffix}); limits from the input's frac_bits.

    Args:
        in_: input, any shape. cfg: :class:`~pymli.v1.cfg.ReluCfg`. out: output (format copied from in).
    """)
    return fn


def _make_leaky(name: str, suffix: str) -> Callable:
    dt, _, bits = TYPE_SUFFIXES[suffix]

    def fn(in_: Tensor, slope_coeff: Tensor, out: Tensor) -> Status:
        def check() -> Status:
            st = C.chk_leaky_relu(in_, slope_coeff, out)
            return _typed(st, [(in_, dt), (slope_coeff, dt)])

        def compute() -> None:
            x = read(in_, dt)
            s = int(read(slope_coeff, dt, 1, scalar_in_data=True)[0])
            commit([(out, dt, K.leaky_relu(x, s, slope_coeff.frac_bits, bits))], [(out, _fmt(in_))])

        return run(check, compute)

    fn.__doc__ = _doc(f"""``{name}``: MLI 1.0 leaky ReLU ({suffix}), with 1.0's Q15-slope quirk (docs/mli1.md).

    Args:
        in_: input. slope_coeff: scalar (rank 0 value in the data field, or one element). out: output.
    """)
    return fn


def _make_lut_act(name: str, kind: str, suffix: str) -> Callable:
    dt, _, bits = TYPE_SUFFIXES[suffix]
    lut = SIGMOID_LUT if kind == "sigm" else TANH_LUT

    def fn(in_: Tensor, out: Tensor) -> Status:
        def check() -> Status:
            st = C.chk_basic_activation(in_, out)
            return _typed(st, [(in_, dt)])

        def compute() -> None:
            x = read(in_, dt)
            if kind == "softmax":
                r = K.softmax(x, in_.frac_bits, EXPNEG_LUT, bits) if x.size else x
            else:
                r = K.lut_activation(x, lut, in_.frac_bits, bits)
            commit([(out, dt, r)], [(out, _fmt(in_, frac_bits=bits - 1))])

        return run(check, compute)

    fn.__doc__ = _doc(f"""``{name}``: MLI 1.0 {kind} ({suffix}) with 1.0's own tables; output frac_bits {bits - 1}.

    Args:
        in_: input (softmax: over all elements). out: output.
    """)
    return fn


# ----------------------------------------------------------------------------- eltwise
def _make_eltwise(name: str, op: str, suffix: str) -> Callable:
    dt, _, bits = TYPE_SUFFIXES[suffix]

    def fn(in1: Tensor, in2: Tensor, out: Tensor) -> Status:
        def check() -> Status:
            st = C.chk_eltwise(in1, in2, out, op != "mul")
            return _typed(st, [(in1, dt), (in2, dt)])

        def compute() -> None:
            n1, n2 = in1.count(), in2.count()
            a = read(in1, dt, n1, scalar_in_data=True)
            b = read(in2, dt, n2, scalar_in_data=True)
            if n1 != n2 and min(n1, n2) != 1:
                raise MliError(Status.SHAPE_MISMATCH, f"{n1} vs {n2} elements: only vector-with-scalar broadcast")
            r = K.eltwise(op, a, b, shift=in1.frac_bits + in2.frac_bits - out.frac_bits, bits=bits)
            fields: dict[str, Any] = {"el_type": in1.el_type}
            if op != "mul":
                fields["frac_bits"] = in1.frac_bits
            if out.capacity == 0:
                if r.size != 1:
                    raise MliError(Status.NOT_ENGH_MEM, "capacity 0 output takes one value")
                fields.update(rank=0, data=int(r[0]))
                commit([], [(out, fields)])
            else:
                src = in1 if n1 > n2 else in2
                fields.update(rank=src.rank, shape=list(src.dims))
                commit([(out, dt, r)], [(out, fields)])

        return run(check, compute)

    fn.__doc__ = _doc(f"""``{name}``: MLI 1.0 element-wise {op} ({suffix}); a one-element operand is broadcast.

    Args:
        in1, in2: operands (rank 0: the value is in the data field). out: output; with capacity 0
            the single result is stored in its data field and its rank set to 0 (as in C).
    """)
    return fn


# ----------------------------------------------------------------------------- data movement
def _make_permute(name: str, suffix: str) -> Callable:
    dt = TYPE_SUFFIXES[suffix][0]

    def fn(in_: Tensor, cfg: Any, out: Tensor) -> Status:
        def check() -> Status:
            st = C.chk_permute(in_, cfg, out)
            return _typed(st, [(in_, dt)])

        def compute() -> None:
            perm = [int(p) for p in cfg.perm_dim[: in_.rank]]
            if sorted(perm) != list(range(in_.rank)):
                raise MliError(Status.BAD_FUNC_CFG, f"perm_dim {perm} is not a permutation")
            r = read(in_, dt).reshape(in_.dims).transpose(perm)
            commit([(out, dt, r.reshape(-1))], [(out, _fmt(in_, shape=list(r.shape)))])

        return run(check, compute)

    fn.__doc__ = _doc(f"""``{name}``: MLI 1.0 permute ({suffix}): ``transpose(in, perm_dim[:rank])``.

    Args:
        in_: input. cfg: :class:`~pymli.v1.cfg.PermuteCfg`. out: output.
    """)
    return fn


def _make_concat(name: str, suffix: str) -> Callable:
    dt = TYPE_SUFFIXES[suffix][0]

    def fn(inputs: Sequence[Tensor], cfg: Any, out: Tensor) -> Status:
        def check() -> Status:
            st = C.chk_concat(inputs, cfg, out)
            return st if st != OK else C.chk_types([(inputs[0], dt)])

        def compute() -> None:
            ts = list(inputs[: cfg.tensors_num])
            if not ts or len(ts) < cfg.tensors_num:
                raise MliError(Status.BAD_FUNC_CFG, "tensors_num does not match the inputs")
            arrs = [read(t, dt).reshape(t.dims) for t in ts]
            r = np.concatenate(arrs, axis=cfg.axis)
            commit([(out, dt, r.reshape(-1))], [(out, _fmt(ts[0], shape=list(r.shape)))])

        return run(check, compute)

    fn.__doc__ = _doc(f"""``{name}``: MLI 1.0 concatenation ({suffix}) along ``cfg.axis``.

    Args:
        inputs: list of tensors (``cfg.tensors_num`` are used). cfg: :class:`~pymli.v1.cfg.ConcatCfg`. out: output.
    """)
    return fn


def _make_padding(name: str, layout: str, suffix: str) -> Callable:
    dt = TYPE_SUFFIXES[suffix][0]

    def fn(in_: Tensor, cfg: Any, out: Tensor) -> Status:
        def check() -> Status:
            st = C.chk_padding2d(in_, cfg, out, layout)
            return _typed(st, [(in_, dt)])

        def compute() -> None:
            x = read(in_, dt).reshape(in_.dims)
            hw = ((cfg.padding_top, cfg.padding_bottom), (cfg.padding_left, cfg.padding_right))
            pw = ((0, 0),) + hw if layout == "chw" else hw + ((0, 0),)
            r = np.pad(x, pw)
            commit([(out, dt, r.reshape(-1))], [(out, _fmt(in_, shape=list(r.shape)))])

        return run(check, compute)

    fn.__doc__ = _doc(f"""``{name}``: MLI 1.0 2D zero padding ({layout.upper()}, {suffix}).

    Args:
        in_: rank-3 feature map. cfg: :class:`~pymli.v1.cfg.Padding2dCfg`. out: output.
    """)
    return fn


# ----------------------------------------------------------------------------- helpers
def mli_hlp_count_elem_num(in_: Tensor, start_dim: int) -> int:
    """``mli_hlp_count_elem_num``: product of ``shape[start_dim:rank]``.

    Args:
        in_: the tensor (data not read). start_dim: first dimension counted.

    Returns:
        int: the count; 0 when a checked build rejects the call (``start_dim >= rank`` or rank > 4).
    """
    from ..config import checked_build

    if checked_build() and C.chk_count_elem_num(in_, start_dim) != OK:
        return 0
    if start_dim > in_.rank:
        raise MliError(Status.BAD_FUNC_CFG, "start_dim > rank (the C loop would run 2^32 times)")
    return in_.count(start_dim)


def mli_hlp_tensor_element_size(in_: Tensor) -> int:
    """``mli_hlp_tensor_element_size``: 1 for FX_8, 2 for FX_16, 0 otherwise.

    Args:
        in_: the tensor (only el_type is read).

    Returns:
        int: bytes per element.
    """
    return element_size(in_.el_type)


def mli_hlp_point_to_subtensor(in_: Tensor, cfg: Any, out: Tensor) -> Status:
    """``mli_hlp_point_to_subtensor``: make ``out`` a view of part of ``in_`` (no copy).

    Args:
        in_: the tensor. cfg: :class:`~pymli.v1.cfg.PointToSubtsrCfg`. out: receives data (a NumPy
            view into ``in_.data``), shape, rank, capacity, el_type and frac_bits.

    Returns:
        Status: ``Status.OK``.

    Raises:
        MliError: a checked build's status (pymli also refuses coord_num 0 and views outside the buffer).
    """
    def check() -> Status:
        return C.chk_point_to_subtensor(in_, cfg, out)

    def extra() -> Status:
        return C.chk_point_to_subtensor(in_, cfg, out)

    def compute() -> None:
        es = element_size(in_.el_type)
        start = cfg.coord_num - 1
        dims = list(in_.dims)
        strides = [int(np.prod(dims[i + 1:], dtype=np.int64)) for i in range(len(dims))]
        off = sum(int(cfg.start_coord[i]) * strides[i] for i in range(cfg.coord_num))
        shape = [cfg.first_out_dim_size] + dims[start + 1:]
        n = int(np.prod(shape, dtype=np.int64))
        if not isinstance(in_.data, np.ndarray):
            raise MliError(Status.BAD_TENSOR, "NULL input")
        view = in_.data[off:]
        commit([], [(out, {"data": view, "rank": in_.rank - start, "shape": shape, "capacity": n * es,
                           "el_type": in_.el_type, "frac_bits": in_.frac_bits})])

    return run(check, compute, extra)


def mli_hlp_convert_tensor(in_: Tensor, out: Tensor) -> Status:
    """``mli_hlp_convert_tensor``: requantise into ``out``'s el_type and frac_bits.

    Args:
        in_: source tensor. out: destination (el_type and frac_bits set by the caller; shape and rank copied).

    Returns:
        Status: ``Status.OK``.

    Raises:
        MliError: BAD_TENSOR for an input with no elements (every build), or a checked build's status.
    """
    def check() -> Status:
        return C.chk_convert_tensor(in_, out)

    def compute() -> None:
        n = in_.count()
        if n <= 0:
            raise MliError(Status.BAD_TENSOR, "input has no elements")
        if int(in_.el_type) not in (0, 1) or int(out.el_type) not in (0, 1):
            raise MliError(Status.BAD_TENSOR, "unknown element type")
        x = read(in_, int(in_.el_type))
        ob = 8 if int(out.el_type) == FX8 else 16
        r = K.convert(x, in_.frac_bits - out.frac_bits, 8 if int(in_.el_type) == FX8 else 16, ob)
        commit([(out, int(out.el_type), r)], [(out, {"rank": in_.rank, "shape": list(in_.dims)})])

    return run(check, compute)


# ----------------------------------------------------------------------------- recurrent
def _make_rnn(name: str, suffix: str) -> Callable:
    dt, wt, bits = TYPE_SUFFIXES[suffix]
    act_lut = {RnnAct.TANH: TANH_LUT, RnnAct.SIGM: SIGMOID_LUT}

    def fn(in_: Tensor, prev_out: Tensor, weights: Tensor, bias: Tensor, cfg: Any, out: Tensor) -> Status:
        def check() -> Status:
            st = C.chk_basic_rnn(in_, prev_out, weights, bias, cfg, out)
            return _typed(st, [(in_, dt), (prev_out, dt), (weights, wt), (bias, wt)])

        def compute() -> None:
            mode, act = RnnMode(cfg.mode), RnnAct(cfg.act)
            m_prev = prev_out.count()
            m_out = bias.count()
            batch = 1 if mode == RnnMode.ONE_TO_ONE else in_.shape[0]
            n_in = in_.count() if mode == RnnMode.ONE_TO_ONE else in_.count(1)
            w = read(weights, wt).reshape(m_out, n_in + m_prev)
            b = read(bias, wt, m_out)
            xs = read(in_, dt, batch * n_in).reshape(batch, n_in)
            state = read(prev_out, dt, m_prev)
            dense_frac = out.frac_bits if act == RnnAct.NONE else bits - 4
            kw_ = dict(bias_shift=in_.frac_bits + weights.frac_bits - bias.frac_bits,
                       in_to_state=in_.frac_bits - prev_out.frac_bits,
                       out_shift=prev_out.frac_bits + weights.frac_bits - dense_frac, acc40=suffix == "fx16", bits=bits)
            outs = []
            ir_writes = None
            for t in range(batch):
                d = K.dense_rnn(xs[t], state, w, b, **kw_)
                if act != RnnAct.NONE:
                    if mode == RnnMode.BATCH_TO_LAST:
                        ir_writes = d
                    r = K.lut_activation(d, act_lut[act], dense_frac, bits)
                else:
                    r = d
                outs.append(r)
                state = r
            writes = []
            if mode == RnnMode.BATCH_TO_BATCH:
                writes.append((out, dt, np.concatenate(outs)))
            else:
                writes.append((out, dt, outs[-1]))
            if mode == RnnMode.BATCH_TO_LAST:
                ir = cfg.ir_tsr
                if act == RnnAct.NONE:
                    # results alternate between out and the scratch buffer, the last one in out
                    in_ir = [outs[t] for t in range(batch) if (batch - 1 - t) % 2 == 1]
                    if in_ir:
                        writes.append((ir, dt, in_ir[-1]))
                elif ir_writes is not None:
                    writes.append((ir, dt, ir_writes))
            frac = out.frac_bits if act == RnnAct.NONE else bits - 1
            if mode == RnnMode.BATCH_TO_BATCH:
                fields = {"rank": 2, "shape": [batch, m_out]}
            else:
                fields = {"rank": bias.rank, "shape": list(bias.dims)}
            fields.update(el_type=in_.el_type, frac_bits=frac)
            commit(writes, [(out, fields)])

        return run(check, compute)

    fn.__doc__ = _doc(f"""``{name}``: MLI 1.0 basic RNN cell ({suffix}).

    Args:
        in_: input [N] (batched modes: [batch, N]). prev_out: previous output [M].
        weights: [M, N + M] (one-to-one stacked: [S, M, N + M]). bias: [M] ([S, M]).
        cfg: :class:`~pymli.v1.cfg.RnnCellCfg` (``ir_tsr`` needed in batch-to-last mode). out: output.
    """)
    return fn


def _make_lstm(name: str, suffix: str) -> Callable:
    dt, wt, bits = TYPE_SUFFIXES[suffix]

    def fn(in_: Tensor, prev_out: Tensor, weights: Tensor, bias: Tensor, cfg: Any, cell: Tensor, out: Tensor) -> Status:
        def check() -> Status:
            st = C.chk_lstm(in_, prev_out, weights, bias, cfg, cell, out)
            return _typed(st, [(in_, dt), (prev_out, dt), (weights, wt), (bias, wt)])

        def compute() -> None:
            mode, act = RnnMode(cfg.mode), RnnAct(cfg.act)
            m = prev_out.count()
            batch = 1 if mode == RnnMode.ONE_TO_ONE else in_.shape[0]
            n_in = in_.count() if mode == RnnMode.ONE_TO_ONE else in_.count(1)
            w = read(weights, wt).reshape(4 * m, n_in + m)
            b = read(bias, wt, 4 * m)
            xs = read(in_, dt, batch * n_in).reshape(batch, n_in)
            state = read(prev_out, dt, m)
            c = read(cell, dt, m)
            ir_frac = bits - 4
            gate_frac = bits - 1
            kw_ = dict(bias_shift=in_.frac_bits + weights.frac_bits - bias.frac_bits,
                       in_to_state=in_.frac_bits - prev_out.frac_bits,
                       out_shift=prev_out.frac_bits + weights.frac_bits - ir_frac, acc40=suffix == "fx16", bits=bits)
            out_frac = prev_out.frac_bits if act == RnnAct.NONE else gate_frac
            outs = []
            gates = None
            for t in range(batch):
                d = K.dense_rnn(xs[t], state, w, b, **kw_).reshape(4, m)
                gi = K.lut_activation(d[0], SIGMOID_LUT, ir_frac, bits)
                gg = K.lut_activation(d[1], TANH_LUT, ir_frac, bits)
                gf = K.lut_activation(d[2], SIGMOID_LUT, ir_frac, bits)
                go = K.lut_activation(d[3], SIGMOID_LUT, ir_frac, bits)
                gates = np.concatenate([gi, gg, gf, go])
                nv = K.rnd_sat32(gi * gg, gate_frac - cell.frac_bits)
                nv = nv + gf * c
                c = K.rnd_sat_from32(nv, gate_frac, bits)
                if act == RnnAct.NONE:
                    r = K.eltwise("mul", c, go, shift=cell.frac_bits + gate_frac - out_frac, bits=bits)
                else:
                    lut = TANH_LUT if act == RnnAct.TANH else SIGMOID_LUT
                    h = K.lut_activation(c, lut, cell.frac_bits, bits)
                    r = K.eltwise("mul", h, go, shift=gate_frac, bits=bits)
                outs.append(r)
                state = r
            res = np.concatenate(outs) if mode == RnnMode.BATCH_TO_BATCH else outs[-1]
            ir = cfg.ir_tsr
            ir_shape = list(ir.shape)
            ir_shape[0], ir_shape[1] = bias.shape[0], bias.shape[1]
            if mode == RnnMode.BATCH_TO_BATCH:
                fields = {"rank": 2, "shape": [batch, m]}
            else:
                fields = {"rank": 1, "shape": [m]}
            fields.update(el_type=in_.el_type, frac_bits=out_frac)
            commit([(out, dt, res), (cell, dt, c), (ir, dt, gates)],
                   [(out, fields), (ir, {"rank": bias.rank, "shape": ir_shape, "el_type": in_.el_type,
                                         "frac_bits": ir_frac})])

        return run(check, compute)

    fn.__doc__ = _doc(f"""``{name}``: MLI 1.0 LSTM cell ({suffix}); gate order i, g, f, o.

    Args:
        in_: input [N] (batched: [batch, N]). prev_out: [M]. weights: [4, M, N + M]. bias: [4, M].
        cfg: :class:`~pymli.v1.cfg.RnnCellCfg` with ``ir_tsr`` (>= 4*M elements; left holding the
            last step's gate values). cell: in/out cell state [M]. out: output.
    """)
    return fn


# ----------------------------------------------------------------------------- the table
def _build() -> tuple[dict[str, Callable], dict[str, str]]:
    funcs: dict[str, Callable] = {}
    specs: dict[str, str] = {}
    helpers = {"mli_hlp_count_elem_num": mli_hlp_count_elem_num,
               "mli_hlp_tensor_element_size": mli_hlp_tensor_element_size,
               "mli_hlp_point_to_subtensor": mli_hlp_point_to_subtensor,
               "mli_hlp_convert_tensor": mli_hlp_convert_tensor}
    for name in API_FUNCTIONS:
        if name in helpers:
            funcs[name] = helpers[name]
            continue
        m = _SPEC_RE.match(name)
        if m:
            kind, suffix, spec = m.group(1), m.group(2), m.group(3)
            if spec:
                specs[name] = spec
            f = (_make_conv if kind in ("conv2d", "depthwise_conv2d") else _make_pool)(name, kind, "chw", suffix, spec)
        else:
            m = re.match(r"^mli_krn_(.+?)_(fx8w16d|fx16|fx8)$", name)
            if not m:
                raise RuntimeError(f"unhandled 1.x function {name}")
            base, suffix = m.group(1), m.group(2)
            if base == "conv2d_hwc":
                f = _make_conv(name, "conv2d", "hwc", suffix, None)
            elif base in ("avepool_hwc", "maxpool_hwc"):
                f = _make_pool(name, base[:7], "hwc", suffix, None)
            elif base == "fully_connected":
                f = _make_fc(name, suffix)
            elif base == "relu":
                f = _make_relu(name, suffix)
            elif base == "leaky_relu":
                f = _make_leaky(name, suffix)
            elif base in ("sigm", "tanh", "softmax"):
                f = _make_lut_act(name, base, suffix)
            elif base.startswith("eltwise_"):
                f = _make_eltwise(name, base[8:], suffix)
            elif base == "permute":
                f = _make_permute(name, suffix)
            elif base == "concat":
                f = _make_concat(name, suffix)
            elif base in ("padding2d_chw", "padding2d_hwc"):
                f = _make_padding(name, base[-3:], suffix)
            elif base == "basic_rnn_cell":
                f = _make_rnn(name, suffix)
            elif base == "lstm_cell":
                f = _make_lstm(name, suffix)
            else:
                raise RuntimeError(f"unhandled 1.x function {name}")
        f.__name__ = f.__qualname__ = name
        funcs[name] = f
    return funcs, specs


FUNCTIONS, SPECIALISATIONS = _build()
