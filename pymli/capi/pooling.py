"""Pooling kernels of ``mli_kernels_api.h``: ``mli_krn_avepool_hwc_*`` and ``mli_krn_maxpool_hwc_*``.

Each function validates its arguments as the checked C build does (``mli_chk_avepool_hwc`` /
``mli_chk_maxpool_hwc`` of ``private/src/mli_check.cc``), then computes into a temporary and writes
``out`` through its mem_stride. The ``_k2x2`` / ``_k3x3`` specialisations are the generic kernel
plus the kernel-size check (SHAPE_MISMATCH).
"""

from __future__ import annotations

from collections.abc import Callable

from ..arith.pool import requant_params
from ..checks.pooling import check_pool_hwc
from ..config import get_platform
from ..errors import Status
from ..formats import ElType
from ..kernels.pooling import degenerate, pool_plan, pool_writes_c_order
from ..tensor import Tensor
from ._plan import view, view_spec
from ._registry import c_variant
from .types import PoolCfg

__all__ = [
    "POOLING",
    "mli_krn_avepool_hwc_fx8",
    "mli_krn_avepool_hwc_fx8_k2x2",
    "mli_krn_avepool_hwc_fx8_k3x3",
    "mli_krn_avepool_hwc_fx16",
    "mli_krn_avepool_hwc_fx16_k2x2",
    "mli_krn_avepool_hwc_fx16_k3x3",
    "mli_krn_avepool_hwc_sa8",
    "mli_krn_avepool_hwc_sa8_k2x2",
    "mli_krn_avepool_hwc_sa8_k3x3",
    "mli_krn_maxpool_hwc_fx8",
    "mli_krn_maxpool_hwc_fx8_k2x2",
    "mli_krn_maxpool_hwc_fx8_k3x3",
    "mli_krn_maxpool_hwc_fx16",
    "mli_krn_maxpool_hwc_fx16_k2x2",
    "mli_krn_maxpool_hwc_fx16_k3x3",
    "mli_krn_maxpool_hwc_sa8",
    "mli_krn_maxpool_hwc_sa8_k2x2",
    "mli_krn_maxpool_hwc_sa8_k3x3",
]


def _plan(kind: str, inp: Tensor, out: Tensor, c: dict[str, int], k: int,
          **arith: object) -> Callable[[Tensor, Tensor], None]:
    """The computation of a checked pooling call: ``compute(inp, out)`` reads ``inp`` and writes ``out``."""
    geo = dict(kernel=(c["kernel_height"], c["kernel_width"]), stride=(c["stride_height"], c["stride_width"]),
               pad=(c["padding_top"], c["padding_left"]), out_hw=(int(out.shape[0]), int(out.shape[1])))
    h, w, ch = (int(v) for v in inp.shape[:3])
    pads = (c["padding_top"], c["padding_bottom"], c["padding_left"], c["padding_right"])
    if degenerate(h, w, geo["kernel"], geo["stride"], pads, geo["out_hw"]):
        # MLI's border passes store outside the output here: replay its stores in order.
        in_strides, out_strides = tuple(inp.strides()[:2]), tuple(out.strides()[:2])

        def replay(inp: Tensor, out: Tensor) -> None:
            writes = pool_writes_c_order(inp.data, in_strides, (h, w, ch), out_strides, kind=kind, fixed=k,
                                         **geo, **arith)  # type: ignore[arg-type]
            n = out.data.shape[0]
            for offs, vals in writes:
                inside = (offs >= 0) & (offs < n)
                out.data[offs[inside]] = vals[inside]

        return replay
    vi = view_spec(inp)
    vo = view_spec(out)
    pool = pool_plan(kind, (h, w, ch), inp.el_type.dtype, **geo, **arith)  # type: ignore[arg-type]
    # The data arrays' dtypes are part of the memo's snapshot: decided once.
    direct = out.data.dtype == inp.el_type.dtype

    def compute(inp: Tensor, out: Tensor) -> None:
        if direct:
            pool(view(inp, vi), view(out, vo))
        else:
            view(out, vo)[...] = pool(view(inp, vi))

    return compute


def _avepool(fn: str, el_type: ElType, k: int, inp: Tensor, cfg: PoolCfg, out: Tensor) -> Callable[..., Status]:
    c = check_pool_hwc(fn, inp, cfg, out, el_type, k, ave=True)
    if el_type is ElType.SA_8:
        rq = requant_params(int(inp.scale), int(inp.scale_frac_bits), int(inp.zero_point),
                            int(out.scale), int(out.scale_frac_bits), int(out.zero_point))
        compute = _plan("ave", inp, out, c, k, base_shift=0, requant=rq, mul16=get_platform().avepool_16bit_mul)
    else:
        compute = _plan("ave", inp, out, c, k, base_shift=int(inp.frac_bits) - int(out.frac_bits))

    def run(inp: Tensor, cfg: PoolCfg, out: Tensor) -> Status:
        compute(inp, out)
        return Status.OK

    return run


def _maxpool(fn: str, el_type: ElType, k: int, inp: Tensor, cfg: PoolCfg, out: Tensor) -> Callable[..., Status]:
    c = check_pool_hwc(fn, inp, cfg, out, el_type, k)
    compute = _plan("max", inp, out, c, k)

    def run(inp: Tensor, cfg: PoolCfg, out: Tensor) -> Status:
        compute(inp, out)
        # MLI copies the input's element parameters to the output.
        out.frac_bits = inp.frac_bits
        if el_type.is_sa:
            out.dim, out.zero_point, out.scale, out.scale_frac_bits = inp.dim, inp.zero_point, inp.scale, inp.scale_frac_bits
        return Status.OK

    return run


POOLING: dict[tuple[str, ElType, int], Callable[..., Status]] = {}
"""The pooling functions by ("ave" or "max", element type, kernel size of the specialisation; 0: generic)."""
_PLANNERS = {"ave": (_avepool, "average"), "max": (_maxpool, "max")}


def _make(kind: str, el_type: ElType, k: int, name: str) -> Callable[..., Status]:
    """Register ``name`` (``kind`` pooling of ``el_type``, kernel ``k`` x ``k``; 0: any) and enter it in
    :data:`POOLING`."""
    impl, what = _PLANNERS[kind]
    doc = (f"``{name}(in, cfg, out)``: {what} pooling of an HWC {el_type.name} tensor"
           + (f" with a {k}x{k} kernel (SHAPE_MISMATCH otherwise)." if k else ".")
           + "\n\nArgs:\n    inp: input feature map, HWC (rank 3).\n    cfg: :class:`~pymli.capi.types.PoolCfg`."
           + "\n    out: output feature map, HWC, written through its mem_stride.\n\nReturns:\n    ``Status.OK``."
           + "\n\nRaises:\n    MliError: the status of the checked C build (nothing is written to ``out``).\n")
    POOLING[(kind, el_type, k)] = fn = c_variant(name, impl, "inp cfg out", doc, head=(el_type, k), planned=True)
    return fn


mli_krn_avepool_hwc_fx8 = _make("ave", ElType.FX_8, 0, "mli_krn_avepool_hwc_fx8")
mli_krn_avepool_hwc_fx8_k2x2 = _make("ave", ElType.FX_8, 2, "mli_krn_avepool_hwc_fx8_k2x2")
mli_krn_avepool_hwc_fx8_k3x3 = _make("ave", ElType.FX_8, 3, "mli_krn_avepool_hwc_fx8_k3x3")
mli_krn_avepool_hwc_fx16 = _make("ave", ElType.FX_16, 0, "mli_krn_avepool_hwc_fx16")
mli_krn_avepool_hwc_fx16_k2x2 = _make("ave", ElType.FX_16, 2, "mli_krn_avepool_hwc_fx16_k2x2")
mli_krn_avepool_hwc_fx16_k3x3 = _make("ave", ElType.FX_16, 3, "mli_krn_avepool_hwc_fx16_k3x3")
mli_krn_avepool_hwc_sa8 = _make("ave", ElType.SA_8, 0, "mli_krn_avepool_hwc_sa8")
mli_krn_avepool_hwc_sa8_k2x2 = _make("ave", ElType.SA_8, 2, "mli_krn_avepool_hwc_sa8_k2x2")
mli_krn_avepool_hwc_sa8_k3x3 = _make("ave", ElType.SA_8, 3, "mli_krn_avepool_hwc_sa8_k3x3")
mli_krn_maxpool_hwc_fx8 = _make("max", ElType.FX_8, 0, "mli_krn_maxpool_hwc_fx8")
mli_krn_maxpool_hwc_fx8_k2x2 = _make("max", ElType.FX_8, 2, "mli_krn_maxpool_hwc_fx8_k2x2")
mli_krn_maxpool_hwc_fx8_k3x3 = _make("max", ElType.FX_8, 3, "mli_krn_maxpool_hwc_fx8_k3x3")
mli_krn_maxpool_hwc_fx16 = _make("max", ElType.FX_16, 0, "mli_krn_maxpool_hwc_fx16")
mli_krn_maxpool_hwc_fx16_k2x2 = _make("max", ElType.FX_16, 2, "mli_krn_maxpool_hwc_fx16_k2x2")
mli_krn_maxpool_hwc_fx16_k3x3 = _make("max", ElType.FX_16, 3, "mli_krn_maxpool_hwc_fx16_k3x3")
mli_krn_maxpool_hwc_sa8 = _make("max", ElType.SA_8, 0, "mli_krn_maxpool_hwc_sa8")
mli_krn_maxpool_hwc_sa8_k2x2 = _make("max", ElType.SA_8, 2, "mli_krn_maxpool_hwc_sa8_k2x2")
mli_krn_maxpool_hwc_sa8_k3x3 = _make("max", ElType.SA_8, 3, "mli_krn_maxpool_hwc_sa8_k3x3")
