"""``pymli tour``: a short guided tour of pymli's tensors, conversions and helpers, printed on a rich console.

``run(console)`` builds a few tensors, converts float data to FX16 and SA8 (per tensor and per
axis) and back with ``mli_hlp_convert_tensor``, and calls some ``mli_hlp_*`` helpers, printing what
each step did. It only uses the public API, so it doubles as an example.
"""

from __future__ import annotations

from typing import Any

import click
import numpy as np
from rich.console import Console
from rich.table import Table

from ..capi import helpers as H
from ..capi.types import SubTensorCfg
from ..config import EM, VPX, use_platform
from ..errors import MliError
from ..formats import ElType
from ..quant import quantize
from ..tensor import Tensor

__all__ = ["run", "tour"]


def _fmt(a: Any) -> str:
    return np.array2string(np.asarray(a), precision=4, separator=", ", threshold=12, edgeitems=3,
                           suppress_small=True).replace("\n", "")


def run(console: Any = None) -> None:
    """Print the walk-through on ``console`` (a :class:`rich.console.Console`; a new one if ``None``)."""
    con = console or Console()
    rng = np.random.default_rng(2021)
    x = rng.normal(0.0, 1.5, size=(2, 3, 4)).astype(np.float32)

    con.rule("[bold]pymli walk-through: tensors, conversions, helpers")
    con.print("1. A float32 tensor (HWC 2x3x4) wrapped as an MLI tensor struct:")
    src = Tensor.from_numpy(x, ElType.FP_32)
    con.print(f"   {src.el_type.name}, first values {_fmt(src.numpy().ravel()[:4])}")
    con.print(f"   rank={src.rank} shape={src.shape} mem_stride={src.mem_stride} capacity={src.capacity} bytes; "
              f"mli_hlp_count_elem_num(src, 1) = {H.mli_hlp_count_elem_num(src, 1)}")

    con.print("\n2. float32 -> FX16: frac_bits chosen as the largest that fits the data, then "
              "mli_hlp_convert_tensor:")
    fx = quantize(x, ElType.FX_16)
    dst = Tensor.zeros(x.shape, ElType.FX_16, frac_bits=fx.frac_bits)
    H.mli_hlp_convert_tensor(src, dst)
    back = Tensor.zeros(x.shape, ElType.FP_32)
    H.mli_hlp_convert_tensor(dst, back)
    err = np.abs(back.numpy() - x).max()
    con.print(f"   frac_bits={dst.frac_bits}: first values {_fmt(dst.numpy().ravel()[:4])}; back to float the "
              f"largest error is {err:.3g} (half an LSB is {2.0 ** -dst.frac_bits / 2:.3g})")

    con.print("\n3. FX16 -> FX8 requantisation: the rounding of the shift is a platform option:")
    t = Table("value (Q8)", "VPX: round half up", "EM: round half to even")
    ties = Tensor.from_numpy(np.array([384, 640, -384, -640], np.int16), ElType.FX_16, frac_bits=8)
    outs = {}
    for plat in (VPX, EM):
        o = Tensor.zeros((4,), ElType.FX_8, frac_bits=0)
        with use_platform(plat):
            H.mli_hlp_convert_tensor(ties, o)
        outs[plat.name] = o.numpy().tolist()
    for v, a, b in zip(ties.to_float().tolist(), outs["vpx"], outs["em"]):
        t.add_row(f"{v:+.1f}", str(a), str(b))
    con.print(t)

    con.print("4. float32 -> SA8 per tensor, then per axis (one scale and zero point per channel, dim=2):")
    for dim in (-1, 2):
        sa = quantize(x, ElType.SA_8, dim=dim)
        err = np.abs(sa.to_float() - x).max()
        kind = "per tensor" if dim < 0 else "per axis  "
        con.print(f"   {kind}: zero_point={_fmt(sa.zero_point)} scale={_fmt(sa.scale)} "
                  f"scale_frac_bits={_fmt(sa.scale_frac_bits)}; max error {err:.3g}")
    sa = quantize(x, ElType.SA_8, dim=2)
    con.print(f"   mli_hlp_tensor_scale(sa, 1) = {H.mli_hlp_tensor_scale(sa, 1)}, "
              f"mli_hlp_tensor_scale_shift(sa, 1) = {H.mli_hlp_tensor_scale_shift(sa, 1)}, "
              f"mli_hlp_tensor_zero_offset(sa, 1) = {H.mli_hlp_tensor_zero_offset(sa, 1)}")

    con.print("\n5. SA8 (per axis) -> FX16 with mli_hlp_convert_tensor_safx, no float in between:")
    fx2 = Tensor.zeros(x.shape, ElType.FX_16, frac_bits=fx.frac_bits)
    H.mli_hlp_convert_tensor_safx(sa, fx2)
    via_float = quantize(sa.to_float(), ElType.FX_16, frac_bits=fx.frac_bits)
    diff = int(np.abs(fx2.numpy().astype(int) - via_float.numpy().astype(int)).max())
    con.print(f"   integer requantisation vs dequantise-then-quantise: at most {diff} LSB apart "
              f"(the integer path rounds a 16-bit scale ratio)")

    con.print("\n6. mli_hlp_create_subtensor: a window sharing the input buffer (no copy):")
    sub = Tensor()
    H.mli_hlp_create_subtensor(sa, SubTensorCfg(offset=[1, 1, 1, 0], size=[1, 2, 2, 0], sub_tensor_rank=2), sub)
    con.print(f"   {sub!r}")
    con.print(f"   shares memory with the input: {np.shares_memory(sub.data, sa.data)}; its scales start at "
              f"channel 1: {_fmt(sub.scale[:2])}")

    con.print("\n7. Errors carry the C status: converting into a tensor of another shape:")
    try:
        H.mli_hlp_convert_tensor(src, Tensor.zeros((4, 3, 2), ElType.FX_8))
    except MliError as e:
        con.print(f"   MliError: {e}")
    con.print(f"\nBuild options of the emulated library: {H.mli_hlp_compile_options_string()!r}")


if __name__ == "__main__":
    run()


@click.command()
def tour() -> None:
    """A short walk-through: tensors, fp32 <-> fx16/sa8 conversions, helpers, rounding modes."""
    run()
