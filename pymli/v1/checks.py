"""The argument checks of MLI 1.0's checked build (``mli_check.c``), one function per C check.

Each returns a :class:`~pymli.v1.tensor.Status` (``OK`` or the C error), in the C order of tests,
so that pymli reports the status the checked C library returns. They never write anything.
"""

from __future__ import annotations

from typing import Any, Sequence

from .cfg import MLI_CONCAT_MAX_TENSORS, RnnMode
from .tensor import MLI_MAX_RANK, Status, Tensor, element_size

__all__ = [
    "chk_tensor", "chk_scalar_tensor", "is_scalar", "chk_conv2d", "chk_depthwise", "chk_pool",
    "chk_fully_connected", "chk_relu", "chk_eltwise", "chk_basic_activation", "chk_leaky_relu",
    "chk_basic_rnn", "chk_lstm", "chk_concat", "chk_padding2d", "chk_permute", "chk_count_elem_num",
    "chk_convert_tensor", "chk_point_to_subtensor", "chk_types",
]

OK = Status.OK
FX8, FX16 = 0, 1


def _is_null(t: Tensor | None) -> bool:
    return t is None


def _data_null(t: Tensor) -> bool:
    return t.data is None or (not hasattr(t.data, "dtype") and int(t.data) == 0)


def chk_tensor(t: Tensor | None) -> Status:
    """``mli_chk_tensor``: rank <= 4 and capacity >= elements x element size."""
    if t is None:
        return Status.BAD_TENSOR
    fail = not t.rank <= MLI_MAX_RANK
    fail |= not element_size(t.el_type) * t.count() <= t.capacity
    return Status.BAD_TENSOR if fail else OK


def chk_scalar_tensor(t: Tensor | None) -> Status:
    """``mli_chk_scalar_tensor``: rank 0, or a valid tensor with one element."""
    if t is None:
        return Status.BAD_TENSOR
    if t.rank == 0:
        return OK
    st = chk_tensor(t)
    if st != OK:
        return st
    return OK if t.count() == 1 else Status.SHAPE_MISMATCH


def is_scalar(t: Tensor) -> bool:
    """``mli_tensor_is_scalar``."""
    return t.rank == 0 or t.count() == 1


def _chk_out(out: Tensor | None) -> Status:
    if out is None or _data_null(out):
        return Status.BAD_TENSOR
    return OK


def _chk_io(ins: Sequence[Tensor | None], out: Tensor | None, rank: int | None = None) -> Status:
    """``mli_chk_tensor`` on each input in order, the output's data pointer, then the first input's rank.

    ``rank`` None: no rank test; otherwise SHAPE_MISMATCH unless ``ins[0].rank == rank``.
    """
    for t in ins:
        st = chk_tensor(t)
        if st != OK:
            return st
    st = _chk_out(out)
    if st != OK or rank is None:
        return st
    return OK if ins[0].rank == rank else Status.SHAPE_MISMATCH


def _chk_mem(n: int, el_type: Any, capacity: int) -> Status:
    """``NOT_ENGH_MEM`` unless ``n`` elements of ``el_type`` fit in ``capacity`` bytes."""
    return OK if n * element_size(el_type) <= capacity else Status.NOT_ENGH_MEM


def _chk_weight_types(inp: Tensor, w: Tensor, b: Tensor) -> Status:
    """The weights/bias type and fractional-bits tests shared by conv2d, depthwise and fully connected."""
    if int(w.el_type) != int(b.el_type) or (int(inp.el_type) == FX8 and int(w.el_type) == FX16):
        return Status.NOT_SUPPORTED
    if not b.frac_bits <= inp.frac_bits + w.frac_bits:
        return Status.INCOMPATEBLE_TENSORS
    return OK


def chk_types(types: Sequence[tuple[Tensor, int]]) -> Status:
    """The ``_fx8`` / ``_fx16`` / ``_fx8w16d`` wrappers: each tensor's el_type as the name says."""
    for t, el in types:
        if int(t.el_type) != el:
            return Status.TYPE_MISMATCH
    return OK


def chk_conv2d(inp: Tensor, w: Tensor, b: Tensor, cfg: Any, out: Tensor, layout: str) -> Status:
    """``mli_chk_conv2d_chw`` / ``mli_chk_conv2d_hwc``."""
    st = _chk_io((inp, w, b), out)
    if st != OK:
        return st
    ch_in = inp.shape[0] if layout == "chw" else inp.shape[2]
    w_ch = w.shape[1] if layout == "chw" else w.shape[3]
    fail = inp.rank != 3 or w.rank != 4 or b.rank != 1 or ch_in != w_ch or b.shape[0] != w.shape[0]
    if fail:
        return Status.SHAPE_MISMATCH
    kw, kh = (w.shape[3], w.shape[2]) if layout == "chw" else (w.shape[2], w.shape[1])
    st = _chk_geometry(cfg, kw, kh)
    if st != OK:
        return st
    return _chk_weights_common(inp, w, b, cfg, out, kw, kh, w.shape[0], layout)


def chk_depthwise(inp: Tensor, w: Tensor, b: Tensor, cfg: Any, out: Tensor) -> Status:
    """``mli_chk_depthwise_conv2d_chw``."""
    st = _chk_io((inp, w, b), out)
    if st != OK:
        return st
    fail = (inp.rank != 3 or w.rank != 4 or b.rank != 1 or w.shape[1] != 1 or inp.shape[0] != w.shape[0]
            or b.shape[0] != w.shape[0])
    if fail:
        return Status.SHAPE_MISMATCH
    kw, kh = w.shape[3], w.shape[2]
    st = _chk_geometry(cfg, kw, kh)
    if st != OK:
        return st
    return _chk_weights_common(inp, w, b, cfg, out, kw, kh, w.shape[0], "chw")


def _chk_geometry(cfg: Any, kw: int, kh: int) -> Status:
    fail = not (cfg.padding_left < kw and cfg.padding_right < kw and cfg.padding_top < kh
                and cfg.padding_bottom < kh and cfg.stride_height > 0 and cfg.stride_width > 0)
    return Status.BAD_FUNC_CFG if fail else OK


def _out_hw(inp: Tensor, cfg: Any, kw: int, kh: int, layout: str) -> tuple[int, int]:
    h, w = (inp.shape[1], inp.shape[2]) if layout == "chw" else (inp.shape[0], inp.shape[1])
    ow = -(-(w + cfg.padding_left + cfg.padding_right - kw + 1) // cfg.stride_width)
    oh = -(-(h + cfg.padding_top + cfg.padding_bottom - kh + 1) // cfg.stride_height)
    return oh, ow


def _chk_weights_common(inp: Tensor, w: Tensor, b: Tensor, cfg: Any, out: Tensor, kw: int, kh: int,
                        co: int, layout: str) -> Status:
    st = _chk_weight_types(inp, w, b)
    if st != OK:
        return st
    oh, ow = _out_hw(inp, cfg, kw, kh, layout)
    return _chk_mem(oh * ow * co, inp.el_type, out.capacity)


def chk_pool(inp: Tensor, cfg: Any, out: Tensor, layout: str) -> Status:
    """``mli_chk_{avepool,maxpool}_{chw,hwc}``."""
    st = _chk_io((inp,), out, rank=3)
    if st != OK:
        return st
    st = _chk_geometry(cfg, cfg.kernel_width, cfg.kernel_height)
    if st != OK:
        return st
    oh, ow = _out_hw(inp, cfg, cfg.kernel_width, cfg.kernel_height, layout)
    c = inp.shape[0] if layout == "chw" else inp.shape[2]
    return _chk_mem(oh * ow * c, inp.el_type, out.capacity)


def chk_fully_connected(inp: Tensor, w: Tensor, b: Tensor, out: Tensor) -> Status:
    """``mli_chk_fully_connected``."""
    st = _chk_io((inp, w, b), out)
    if st != OK:
        return st
    if w.rank != 2 or b.rank != 1 or inp.count() != w.shape[1] or b.shape[0] != w.shape[0]:
        return Status.SHAPE_MISMATCH
    st = _chk_weight_types(inp, w, b)
    if st != OK:
        return st
    return _chk_mem(w.shape[0], inp.el_type, out.capacity)


def chk_basic_activation(inp: Tensor, out: Tensor) -> Status:
    """``mli_chk_basic_activation`` (also ``mli_chk_relu``: the cfg is not checked)."""
    st = _chk_io((inp,), out)
    if st != OK:
        return st
    return _chk_mem(inp.count(), inp.el_type, out.capacity)


chk_relu = chk_basic_activation


def chk_eltwise(in1: Tensor, in2: Tensor, out: Tensor | None, same_frac: bool) -> Status:
    """``mli_chk_eltwise``, including its quirk: the status of the ``in2`` check overwrites that of ``in1``."""
    fail = False
    if is_scalar(in1):
        fail |= chk_scalar_tensor(in1) != OK
    if is_scalar(in2):
        fail |= chk_scalar_tensor(in2) != OK
    fail |= out is None or _data_null(out)
    if fail:
        return Status.BAD_TENSOR
    if not (in1.rank > 0 or in2.rank > 0):
        return Status.NOT_SUPPORTED
    st = OK
    if not is_scalar(in1):
        st = chk_tensor(in1)
    if not is_scalar(in2):
        st = chk_tensor(in2)
    if st != OK:
        return st
    fail = int(in1.el_type) != int(in2.el_type)
    if same_frac:
        fail |= in1.frac_bits != in2.frac_bits
    if fail:
        return Status.INCOMPATEBLE_TENSORS
    if not is_scalar(in1) and not is_scalar(in2):
        if in1.rank != in2.rank or any(in1.shape[i] != in2.shape[i] for i in range(min(in1.rank, 4))):
            return Status.SHAPE_MISMATCH
    n = max(in1.count(), in2.count())
    return _chk_mem(n, in1.el_type, out.capacity)


def chk_leaky_relu(inp: Tensor, slope: Tensor, out: Tensor) -> Status:
    """``mli_chk_leaky_relu``."""
    st = _chk_io((inp,), out)
    if st != OK:
        return st
    st = chk_scalar_tensor(slope)
    if st != OK:
        return st
    if int(slope.el_type) != int(inp.el_type):
        return Status.TYPE_MISMATCH
    return _chk_mem(inp.count(), inp.el_type, out.capacity)


def chk_basic_rnn(inp: Tensor, prev: Tensor, w: Tensor, b: Tensor, cfg: Any, out: Tensor) -> Status:
    """``mli_chk_basic_rnn_cell`` (its output-capacity test only counts in batch-to-last mode, as in C)."""
    st = _chk_io((inp, prev, w, b), out)
    if st != OK:
        return st
    if cfg is None:
        return Status.BAD_FUNC_CFG
    ir = cfg.ir_tsr
    fail = cfg.mode == RnnMode.BATCH_TO_LAST and (ir is None or _data_null(ir))
    fail |= cfg.mode != RnnMode.ONE_TO_ONE and inp.rank < 2
    if fail:
        return Status.BAD_FUNC_CFG
    out_el = b.count()
    prev_el = prev.count()
    batches = inp.shape[0] if cfg.mode == RnnMode.BATCH_TO_BATCH else 1
    in_el = inp.count() if cfg.mode == RnnMode.ONE_TO_ONE else inp.count(1)
    if cfg.mode == RnnMode.ONE_TO_ONE and w.rank == 3:
        fail = (b.rank != 2 or w.shape[0] != b.shape[0] or w.shape[1] != b.shape[1] or b.shape[1] != prev_el
                or in_el + prev_el != w.shape[2])
    else:
        fail = (w.rank != 2 or b.rank != 1 or w.shape[0] != b.shape[0] or b.shape[0] != prev_el
                or in_el + prev_el != w.shape[1])
    if fail:
        return Status.SHAPE_MISMATCH
    if prev.rank != 1:
        return Status.SHAPE_MISMATCH
    if int(w.el_type) != int(b.el_type) or int(inp.el_type) != int(prev.el_type):
        return Status.TYPE_MISMATCH
    if not b.frac_bits <= inp.frac_bits + w.frac_bits:
        return Status.INCOMPATEBLE_TENSORS
    fail = not out_el * batches * element_size(inp.el_type) <= out.capacity
    if cfg.mode == RnnMode.BATCH_TO_LAST:
        fail |= not out_el * element_size(inp.el_type) <= ir.capacity
        if fail:
            return Status.NOT_ENGH_MEM
    return OK


def chk_lstm(inp: Tensor, prev: Tensor, w: Tensor, b: Tensor, cfg: Any, cell: Tensor, out: Tensor) -> Status:
    """``mli_chk_lstm_cell``."""
    st = _chk_io((inp, prev, w, b, cell), out)
    if st != OK:
        return st
    if cfg is None or cfg.ir_tsr is None or _data_null(cfg.ir_tsr):
        return Status.BAD_FUNC_CFG
    if cfg.mode != RnnMode.ONE_TO_ONE and inp.rank < 2:
        return Status.BAD_FUNC_CFG
    out_el = prev.count()
    batches = inp.shape[0] if cfg.mode == RnnMode.BATCH_TO_BATCH else 1
    in_el = inp.count() if cfg.mode == RnnMode.ONE_TO_ONE else inp.count(1)
    fail = (w.rank != 3 or b.rank != 2 or w.shape[0] != 4 or b.shape[0] != 4 or w.shape[1] != b.shape[1]
            or b.shape[1] != out_el or in_el + out_el != w.shape[2] or cell.rank != 1 or prev.rank != 1
            or prev.shape[0] != cell.shape[0])
    if fail:
        return Status.SHAPE_MISMATCH
    if int(w.el_type) != int(b.el_type) or int(inp.el_type) != int(prev.el_type) or int(inp.el_type) != int(cell.el_type):
        return Status.TYPE_MISMATCH
    if not b.frac_bits <= inp.frac_bits + w.frac_bits:
        return Status.INCOMPATEBLE_TENSORS
    es = element_size(inp.el_type)
    if not (4 * out_el * es <= cfg.ir_tsr.capacity and batches * out_el * es <= out.capacity):
        return Status.NOT_ENGH_MEM
    return OK


def chk_concat(inputs: Sequence[Tensor], cfg: Any, out: Tensor) -> Status:
    """``mli_chk_concat``."""
    if inputs is None or len(inputs) == 0:
        return Status.BAD_TENSOR
    st = chk_tensor(inputs[0])
    if st != OK:
        return st
    st = _chk_out(out)
    if st != OK:
        return st
    if cfg is None:
        return Status.BAD_FUNC_CFG
    a = inputs[0]
    if not (cfg.axis < a.rank and 0 < cfg.tensors_num <= MLI_CONCAT_MAX_TENSORS):
        return Status.BAD_FUNC_CFG
    if cfg.tensors_num > len(inputs):
        return Status.BAD_TENSOR  # pymli: the C library would read past the pointer array
    total = a.count()
    for t in inputs[1: cfg.tensors_num]:
        st = chk_tensor(t)
        if st != OK:
            return st
        if int(t.el_type) != int(a.el_type) or t.frac_bits != a.frac_bits or t.rank != a.rank:
            return Status.INCOMPATEBLE_TENSORS
        for d in range(a.rank):
            if d != cfg.axis and t.shape[d] != a.shape[d]:
                return Status.SHAPE_MISMATCH
        total += t.count()
    return _chk_mem(total, a.el_type, out.capacity)


def chk_padding2d(inp: Tensor, cfg: Any, out: Tensor, layout: str) -> Status:
    """``mli_chk_padding2d_chw`` / ``_hwc``."""
    st = _chk_io((inp,), out, rank=3)
    if st != OK:
        return st
    if cfg is None:
        return Status.BAD_FUNC_CFG
    if layout == "chw":
        c, h, w = inp.shape[0], inp.shape[1], inp.shape[2]
    else:
        h, w, c = inp.shape[0], inp.shape[1], inp.shape[2]
    n = c * (h + cfg.padding_top + cfg.padding_bottom) * (w + cfg.padding_left + cfg.padding_right)
    return _chk_mem(n, inp.el_type, out.capacity)


def chk_permute(inp: Tensor, cfg: Any, out: Tensor) -> Status:
    """``mli_chk_permute``."""
    st = _chk_io((inp,), out)
    if st != OK:
        return st
    if cfg is None:
        return Status.BAD_FUNC_CFG
    p = list(cfg.perm_dim)
    for i in range(inp.rank):
        if not p[i] < inp.rank:
            return Status.BAD_FUNC_CFG
        for j in range(i + 1, inp.rank):
            if p[i] == p[j]:
                return Status.BAD_FUNC_CFG
    return _chk_mem(inp.count(), inp.el_type, out.capacity)


def chk_count_elem_num(inp: Tensor, start_dim: int) -> Status:
    """``mli_chk_count_elem_num``."""
    if not inp.rank <= MLI_MAX_RANK:
        return Status.BAD_TENSOR
    if not start_dim < inp.rank:
        return Status.BAD_FUNC_CFG
    return OK


def chk_convert_tensor(inp: Tensor, out: Tensor) -> Status:
    """``mli_chk_convert_tensor`` (compares ``out.capacity`` with the INPUT element size, as in C)."""
    return chk_basic_activation(inp, out)


def chk_point_to_subtensor(inp: Tensor, cfg: Any, out: Tensor) -> Status:
    """``mli_chk_point_to_subtensor``."""
    st = chk_tensor(inp)
    if st != OK:
        return st
    if out is None:
        return Status.BAD_TENSOR
    if cfg is None or not cfg.coord_num <= inp.rank:
        return Status.BAD_FUNC_CFG
    for i in range(cfg.coord_num):
        if not cfg.start_coord[i] < inp.shape[i]:
            return Status.BAD_FUNC_CFG
    if cfg.coord_num == 0:
        return Status.BAD_FUNC_CFG  # pymli: C reads start_coord[-1] (undefined)
    end = cfg.start_coord[cfg.coord_num - 1] + cfg.first_out_dim_size
    if not end <= inp.shape[cfg.coord_num - 1]:
        return Status.BAD_FUNC_CFG
    return OK
