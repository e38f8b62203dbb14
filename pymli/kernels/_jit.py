"""Optional numba JIT: the depthwise convolution as one fused loop nest (sums and output stage), and
the output stage of the other convolutions' row blocks (:func:`finish`).

numba is an optional dependency (``pip install "pymli-arc[jit]"``): the pure-NumPy kernels are
complete without it and compute the same values bit for bit; the JIT only makes some of them faster
(``benchmarks/README.md``, "Optional JIT"). It is imported the first time a kernel asks for it
(:func:`enabled`), never when pymli is imported: importing numba alone takes ~0.5 s, and the
compiled loop nests are loaded from numba's cache (``__pycache__``) or compiled then (a few seconds
per argument-type combination, once per machine).

Switch: the environment variable ``PYMLI_JIT=0`` turns the JIT off for the process;
:func:`set_enabled` turns it off / on at run time (tests compare both paths), :func:`enabled` says
whether the kernels take it now, :func:`available` whether numba could be loaded at all.

The output stage is the integer arithmetic of :func:`pymli.kernels.convolution.finish` written
element by element: the per-channel constants come from the same :mod:`pymli.arith.requant`
functions (``sa8_out_params``, ``sa8_bias_bound`` and its result-cast plan, ``fx_bias``), and every
step that :func:`~pymli.arith.requant.sa8_result_cast` / ``fx_result_cast`` / ``add_bias`` applies
is applied here too, in int64 (see :func:`_sa8_stage`, :func:`_fx_stage`); shifts for which those
functions take their general saturating path (outside 0..62) are left to NumPy. A 3x3 MLI_FX call
with a 40-bit accumulator (fx16) takes ``depthwise_fx3_rows``: exact float64 sums of weights and bias
scaled by the output shift's power of two (they vectorise), and that stage as a floating-point
rounding (:func:`_fx3_operands`); a 3x3 s8asym call ``depthwise_sa8_3_rows``: exact float32 sums,
then the int64 stage; both on a ring of input rows converted to floats once, where that pays
(:func:`_ring_pays`; else ``depthwise_fx3_pairs``: float64 sums read from the input, and
``depthwise_sa8_rows``); tiny 3x3 s8asym maps (:data:`FLAT_OUTPUTS`) take ``depthwise_sa8_3_flat``,
loops over whole output rows, which also reads a channel multiplier's input channels itself
(:meth:`PreparedDepthwise.single_repeated`). :func:`finish` runs the same stages on the exact
sums of :mod:`pymli.kernels.convolution`'s row blocks (float GEMM results or integers).
:class:`PreparedDepthwise` keeps a prepared layer's loop nest and its operands per platform and input
shape, so that a small step is one compiled call (the per-call derivation of :func:`depthwise` is
Python work of the order of the loop nest itself on small layers).
"""

from __future__ import annotations

import functools
import importlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from ..arith.requant import _cast_plan, fx_bias, sa8_bias_bound
from ..arith.rounding import limits
from ..config import get_platform
from ..formats import RoundMode
from ._parallel import PARTS_PER_THREAD, get_threads, pool_pays, record_time, run_parts

__all__ = ["DepthwiseStage", "PreparedDepthwise", "available", "compiled", "depthwise", "enabled", "finish",
           "fx_stage", "sa8_stage", "set_enabled", "warm_up"]

I64 = np.int64
_I64_MIN, _I64_MAX = int(np.iinfo(I64).min), int(np.iinfo(I64).max)
_I32_MIN, _I32_MAX = limits(32)

JIT_PARALLEL_WORK = 1 << 20
"""Compiled calls with fewer multiply-adds than this stay on one thread (the loop nests run ~8-15 per ns
on one core here: a worker's ~20-30 us wake-up pays from about this size on)."""

_STATE: dict[str, object] = {"on": os.environ.get("PYMLI_JIT", "").strip() != "0", "module": None, "tried": False}


def _module() -> ModuleType | None:
    """The compiled kernels (:mod:`pymli.kernels._jit_numba`), or None when numba cannot be imported.

    An import cut short by anything else (e.g. ``KeyboardInterrupt`` while numba loads) propagates
    and is tried again on the next call: only a missing numba turns the JIT off for the process.
    """
    if not _STATE["tried"]:
        try:
            # optional dependency: numba (and the module that needs it) only when a kernel asks
            mod = importlib.import_module("pymli.kernels._jit_numba")
        except ImportError:
            mod = None
        _STATE["module"], _STATE["tried"] = mod, True
    return _STATE["module"]  # type: ignore[return-value]


_COMPILE_CUT = "no compiled object yet"
"""numba's message when a first compile was interrupted (a signal while LLVM hands the object code to
numba's cache hook: the exception is lost in the ctypes callback and the compile then fails to save
its result). numba has registered the compiled function by then, or compiles it again on the next
call: only that call fails."""


def _compile_cut(err: RuntimeError) -> bool:
    """Whether ``err`` is numba's failure of an interrupted first compile (see :data:`_COMPILE_CUT`);
    counted in ``_STATE["cut"]``."""
    if _COMPILE_CUT not in str(err):
        return False
    _STATE["cut"] = int(_STATE.get("cut", 0)) + 1  # type: ignore[call-overload]
    return True


def _ran(fn: Callable[..., object], *args: object) -> bool:
    """Call the compiled ``fn`` (its results are written into its array arguments).

    Returns:
        True when it ran; False when its compile was cut short (:data:`_COMPILE_CUT`): the caller
        takes the NumPy path for this call, and the next call tries the JIT again.

    Raises:
        RuntimeError: any other failure of the call.
    """
    try:
        fn(*args)
    except RuntimeError as err:
        if not _compile_cut(err):
            raise
        return False
    return True


class _Guarded:
    """A compiled-kernel module as :func:`compiled` hands it out: its functions called through a guard
    that calls once more when the first compile was cut short (:data:`_COMPILE_CUT`; the second call
    finds the function compiled or compiles it again: its callers write results into arrays and
    cannot take another path halfway). Other attributes are the module's."""

    def __init__(self, module: ModuleType) -> None:
        """Args:
            module: the compiled-kernel module."""
        self._module = module

    def __getattr__(self, name: str) -> Any:
        """The module's attribute ``name``, a function guarded (the guard is kept on the proxy; it
        looks the function up in the module at each call)."""
        value = getattr(self._module, name)
        if callable(value) and not isinstance(value, type):
            module = self._module

            def guarded(*args: object) -> object:
                try:
                    return getattr(module, name)(*args)
                except RuntimeError as err:
                    if not _compile_cut(err):
                        raise
                    return getattr(module, name)(*args)
            guarded.__name__ = guarded.__qualname__ = name
            guarded.__doc__ = getattr(value, "__doc__", None)
            value = guarded
        setattr(self, name, value)
        return value


def is_on() -> bool:
    """Whether the JIT is switched on (``PYMLI_JIT`` / :func:`set_enabled`), without asking whether numba
    imports: for a caller that already holds a compiled function (cheaper than :func:`enabled`).

    Returns:
        the switch.
    """
    return bool(_STATE["on"])


def entry(module: _Guarded, name: str, *args: object) -> Callable[..., object]:
    """Run the compiled function ``name`` of ``module`` (a :func:`compiled` module) on ``args`` once,
    through its guard, and return the native entry of its compiled version for exactly these argument
    types: calling it skips numba's type dispatch (~0.2 us) and the guard's frame. Only for arguments of
    the very same types, layouts and dimensions on every later call (numba's native wrapper unboxes
    them without checking against its signature): a caller's own buffers.

    Args:
        module: the guarded module. name: the function's name. args: its arguments (written as by the
            function: this call is a real one).

    Returns:
        the entry, or the guarded function when numba has no compiled version of exactly these types
        (it chose a compatible one).
    """
    guarded = getattr(module, name)
    guarded(*args)
    disp = getattr(module._module, name)
    try:
        sig = tuple(disp.typeof_pyval(a) for a in args)
        return disp.overloads[sig].entry_point  # type: ignore[no-any-return]
    except (KeyError, AttributeError):  # another numba's internals, or another signature chosen
        return guarded  # type: ignore[no-any-return]


def available() -> bool:
    """Whether numba can be imported (imports it on the first call).

    Returns:
        True when the JIT kernels can run.
    """
    return _module() is not None


def enabled() -> bool:
    """Whether the kernels take the JIT now: switched on (``PYMLI_JIT`` is not ``0``, or
    :func:`set_enabled`) and numba available.

    Returns:
        True when the JIT is used.
    """
    return bool(_STATE["on"]) and available()


def compiled(name: str) -> _Guarded | None:
    """Another compiled-kernel module of :mod:`pymli.kernels` (e.g. ``"_jit_reduce"``), imported the
    first time it is asked for, when the JIT is :func:`enabled`; its functions guarded against an
    interrupted first compile (see :class:`_Guarded`).

    Args:
        name: the module's name within ``pymli.kernels``.

    Returns:
        The module (a guarded view of it, the same object on every call), or None when the JIT is
        off or numba is missing.
    """
    if not enabled():
        return None
    mods = _STATE.setdefault("modules", {})
    if name not in mods:  # type: ignore[operator]
        mods[name] = _Guarded(importlib.import_module(f"pymli.kernels.{name}"))  # type: ignore[index]
    return mods[name]  # type: ignore[index]


def set_enabled(on: bool) -> bool:
    """Turn the JIT on or off for this process (the NumPy kernels compute the same values).

    Args:
        on: True to use the JIT when numba is available, False for the pure-NumPy kernels.

    Returns:
        The previous setting.
    """
    prev = bool(_STATE["on"])
    _STATE["on"] = bool(on)
    return prev


@dataclass(frozen=True, eq=False)
class DepthwiseStage:
    """Output-stage constants of one call for the loop nests of :mod:`pymli.kernels._jit_numba`.

    Attributes:
        sa8: s8asym (``depthwise_sa8_rows``), else MLI_FX (``depthwise_fx_rows``).
        chan: per-channel int64 constants, (7, C) for sa8 (bias, pre_lim, pre, pre_half, mul, sh,
            half), (C,) aligned bias for FX.
        par: the int64 scalars of the loop nest (see its docstring).
        out_dtype: the output container.
    """

    sa8: bool
    chan: np.ndarray
    par: np.ndarray
    out_dtype: np.dtype


def sa8_stage(bias: np.ndarray, mul: np.ndarray, shift: np.ndarray, out_zp: int,
              bounds: tuple[int, int]) -> DepthwiseStage | None:
    """Constants of ``sa8_result_cast(add_bias(wrap_acc(sum), sa8_bias(bias)))`` with the ReLU clamp.

    Args:
        bias: sa32 bias (C,) before the precision reduction.
        mul, shift: from :func:`pymli.arith.requant.sa8_out_params` (current platform).
        out_zp: output zero point; bounds: the fused ReLU clamp.

    Returns:
        The stage, or None when a shift lies outside 0..62 (NumPy's general path).
    """
    p = get_platform()
    b = np.ascontiguousarray(bias, dtype=I64).reshape(-1)
    m = np.ascontiguousarray(mul, dtype=I64)
    s = np.ascontiguousarray(shift, dtype=I64)
    return _sa8_stage(b.tobytes(), m.tobytes(), s.tobytes(), int(out_zp), int(bounds[0]), int(bounds[1]),
                      p.full_accu, p.round_mode)


@functools.lru_cache(maxsize=128)
def _sa8_stage(b_bytes: bytes, mul_b: bytes, shift_b: bytes, zp: int, lo: int, hi: int,
               full: bool, mode: RoundMode) -> DepthwiseStage | None:
    """:func:`sa8_stage` by value (memoised)."""
    b, _ = sa8_bias_bound(np.frombuffer(b_bytes, dtype=I64), full)
    plan = _cast_plan(mul_b, shift_b, full, mode)  # the very constants sa8_result_cast uses
    if not plan.sh_ok64:
        return None
    up = mode is RoundMode.UP
    if full:
        pre = pre_half = 0
        pre_lim = _I64_MAX
    else:
        pre, pre_half = plan.pre["l"], plan.pre_half["l"]
        # ROUND_UP's rounding add saturates at INT32_MAX: sa8_result_cast clamps first (a no-op when
        # it cannot saturate, so applying it always gives the same values).
        pre_lim = plan.pre_lim["l"] if up else _I64_MAX
    chan = np.empty((7, b.size), dtype=I64)
    for i, v in enumerate((b, pre_lim, pre, pre_half, plan.mul["l"], plan.sh["l"], plan.sh_half["l"])):
        chan[i] = v
    par = np.array([up, not full, zp, max(lo, -128), min(hi, 127)], dtype=I64)
    return DepthwiseStage(sa8=True, chan=chan, par=par, out_dtype=np.dtype(np.int8))


def fx_stage(bias: np.ndarray, bias_shift: int, out_shift: int, acc_bits: int, out_bits: int,
             bounds: tuple[int, int]) -> DepthwiseStage | None:
    """Constants of ``clip(fx_result_cast(add_bias(wrap_acc(sum), fx_bias(bias))), bounds)``.

    Args:
        bias: FX bias (C,); bias_shift, out_shift, acc_bits, out_bits: from the call's ``FxQuant``.
        bounds: the fused ReLU clamp.

    Returns:
        The stage, or None when the shift lies outside 0..31 (32-bit accumulator) / 0..62 (40-bit).
    """
    b = np.ascontiguousarray(bias, dtype=I64).reshape(-1)
    return _fx_stage(b.tobytes(), int(bias_shift), int(out_shift), int(acc_bits), int(out_bits), int(bounds[0]),
                     int(bounds[1]), get_platform().round_mode)


@functools.lru_cache(maxsize=128)
def _fx_stage(b_bytes: bytes, bias_shift: int, s: int, acc_bits: int, out_bits: int, lo: int, hi: int,
              mode: RoundMode) -> DepthwiseStage | None:
    """:func:`fx_stage` by value (memoised)."""
    narrow = acc_bits <= 32
    if not 0 <= s <= (31 if narrow else 62):
        return None
    up = mode is RoundMode.UP
    half = (1 << s) >> 1
    b = np.ascontiguousarray(fx_bias(np.frombuffer(b_bytes, dtype=I64), bias_shift, acc_bits), dtype=I64)
    # 32-bit: add_bias saturates to int32 and asr_rnd32's ROUND_UP add saturates at INT32_MAX (its
    # clamp to INT32_MAX - half); 40-bit (int64 container): neither can happen (add_bias, shift_round).
    sat = (_I32_MIN, _I32_MAX) if narrow else (_I64_MIN, _I64_MAX)
    rnd_lim = _I32_MAX - half if narrow and up else _I64_MAX
    cont = limits(out_bits)
    par = np.array([narrow, sat[0], sat[1], rnd_lim, s, half, up, cont[0], cont[1], lo, hi], dtype=I64)
    return DepthwiseStage(sa8=False, chan=b, par=par, out_dtype=np.dtype(np.int16 if out_bits > 8 else np.int8))


_IN_TYPES = (np.dtype(np.int8), np.dtype(np.int16))


def depthwise(x: np.ndarray, w: np.ndarray, x_offset: int, stage: DepthwiseStage | None, *,
              stride: tuple[int, int], dilation: tuple[int, int], pad: tuple[int, int],
              out_hw: tuple[int, int]) -> np.ndarray | None:
    """Depthwise convolution of ``x - x_offset`` with the output stage ``stage``, compiled.

    Args:
        x: (N, H, W, C) int8 / int16 input; w: (Kh, Kw, 1, C) int8 / int16 weights.
        x_offset: the effective input zero point (0 for MLI_FX).
        stage: from :func:`sa8_stage` / :func:`fx_stage` (None: not for the JIT).
        stride, dilation, pad, out_hw: as :func:`pymli.kernels.convolution.depthwise_conv2d_hwcn`.

    Returns:
        (N, Ho, Wo, C) outputs in the stage's container dtype, or None when the JIT does not take
        the call (off, numba missing, other dtypes, empty shapes, products beyond int32, a first
        compile cut short: see :func:`_ran`): the caller runs NumPy.
    """
    if not enabled():
        return None
    # the runner of these operands (stages are memoised by value: equal constants, the same object)
    key = (x.shape, x.dtype, w.shape, w.dtype, w.tobytes(), int(x_offset), stage, tuple(stride), tuple(dilation),
           tuple(pad), tuple(out_hw))
    run = _RUNNERS.get(key, False)
    if run is False:
        run = _rows_runner(x.shape, x.dtype, w, x_offset, stage, stride, dilation, pad, out_hw)
        if len(_RUNNERS) >= 32:  # a few layers of a network at most: keep memory bounded
            _RUNNERS.clear()
        _RUNNERS[key] = run
    if run is None:
        return None
    x = np.ascontiguousarray(x)
    nb, _, _, c = x.shape
    kh, kw = w.shape[:2]
    ho, wo = out_hw
    out = _run_rows(run, x, nb * ho, _site(stage, x.dtype, w, nb * ho, wo, c))  # type: ignore[arg-type]
    return None if out is None else out.reshape(nb, ho, wo, c)


def _site(stage: DepthwiseStage, x_dtype: np.dtype, w: np.ndarray, rows: int, wo: int, c: int) -> tuple | None:
    """The :func:`pool_pays` site of a call of ``rows`` output rows, or None below
    :data:`JIT_PARALLEL_WORK` multiply-adds (one thread)."""
    kh, kw = w.shape[:2]
    if rows * wo * c * kh * kw < JIT_PARALLEL_WORK:
        return None
    return ("jit-depthwise", stage.sa8, x_dtype.char, w.dtype.char, rows, wo, c, kh, kw)


def _run_rows(run: _RowsRunner, x: np.ndarray, rows: int, site: tuple | None) -> np.ndarray | None:
    """All ``rows`` output rows of a runner: calls of at least :data:`JIT_PARALLEL_WORK` multiply-adds
    (a ``site``) as row blocks on the threads of :mod:`pymli.kernels._parallel` (the loop nests
    release the GIL), or on this thread alone, whichever has been the faster lately for this shape
    (``pool_pays``: the other cores may be busy).

    Returns:
        (rows, Wo, C) outputs, or None when a loop nest's first compile was cut short (:func:`_ran`).
    """
    threads = get_threads()
    if threads <= 1 or rows < 2 or site is None:
        return run(x, 0, rows)
    pooled = pool_pays(site)
    t0 = time.perf_counter()
    if pooled:
        parts = min(rows, threads * PARTS_PER_THREAD)
        cuts = [rows * i // parts for i in range(parts + 1)]
        # each block writes a fresh array (run_parts may abandon a block still running on a worker)
        blocks = run_parts(lambda i: run(x, cuts[i], cuts[i + 1]), parts)
        out = None if any(b is None for b in blocks) else np.concatenate(blocks)
    else:
        out = run(x, 0, rows)
    if out is not None:
        record_time(site, pooled, time.perf_counter() - t0)
    return out


_RowsRunner = Callable[[np.ndarray, int, int], np.ndarray | None]
_Plan = tuple[int, tuple[int, ...], _RowsRunner, tuple | None]
_RUNNERS: dict[tuple, _RowsRunner | None] = {}
""":func:`depthwise`'s runners by operands (see there)."""


def _rows_runner(x_shape: tuple[int, ...], x_dtype: np.dtype, w: np.ndarray, x_offset: int,
                 stage: DepthwiseStage | None, stride: tuple[int, int], dilation: tuple[int, int],
                 pad: tuple[int, int], out_hw: tuple[int, int], mult: int = 1) -> _RowsRunner | None:
    """The compiled loop nest of :func:`depthwise` for inputs of this shape and dtype, its operands
    derived once: ``run(x, r0, r1)`` returns the output rows ``r0 .. r1 - 1`` (rows of all samples,
    numbered ``sample * Ho + oy``; ``x`` C-contiguous (N, H, W, C)) as a fresh (r1 - r0, Wo, C) array
    (None when the loop nest's first compile was cut short: :func:`_ran`).

    ``mult`` > 1: ``run`` takes (N, H, W, C / mult) inputs standing for their channels each repeated
    ``mult`` times (``x_shape``: the repeated shape), read so by ``depthwise_sa8_3_flat`` (the other
    loop nests do not: None).

    Returns:
        The runner, or None when the JIT does not take such calls (see :func:`depthwise`).
    """
    if stage is None or x_dtype not in _IN_TYPES or w.dtype not in _IN_TYPES or len(x_shape) != 4:
        return None
    c = x_shape[3]
    kh, kw = w.shape[:2]
    ho, wo = out_hw
    if 0 in x_shape or w.size == 0 or ho <= 0 or wo <= 0 or stage.chan.shape[-1] != c:
        return None
    x_off = int(x_offset)
    xb = _container_bound(x_dtype.char, x_off)
    wb = -int(np.iinfo(w.dtype).min)
    if xb * wb >= 1 << 31 or (not stage.sa8 and x_off):
        return None  # the loop nest forms each product in int32
    flat = stage.sa8 and kh == 3 and kw == 3 and ho * wo * c <= FLAT_OUTPUTS and 9 * xb * wb < 1 << 24
    mod = _module()
    if mod is None or (mult != 1 and not flat):
        return None
    wk = np.array(w, order="C").reshape(kh, kw, c)  # a copy: depthwise keeps runners by the weights' values
    geo = np.array([stride[0], stride[1], dilation[0], dilation[1], pad[0], pad[1]], dtype=I64)
    chan, par, odt = stage.chan, stage.par, stage.out_dtype
    ring = kh == 3 and kw == 3 and _ring_pays(c, stride, dilation)
    fx3 = None if stage.sa8 or not ring else _fx3_operands(stage, wk, xb, wb)
    if fx3 is not None:
        wf, bf, fpar = fx3

        def run_fx3(x: np.ndarray, r0: int, r1: int) -> np.ndarray | None:
            out = np.empty((r1 - r0, wo, c), dtype=odt)
            return out if _ran(mod.depthwise_fx3_rows, x, wf, bf, out, r0, ho, geo, fpar) else None
        return run_fx3
    fx40 = None if stage.sa8 or kh != 3 or kw != 3 or ring else _fx40_par(stage)
    if fx40 is not None:
        # float64 sums: nine products of at most xb * wb < 2**31 (checked above), every partial sum
        # below 9 * 2**31 < 2**53, so integer-valued and exact
        wf64 = wk.astype(np.float64)

        def run_pairs(x: np.ndarray, r0: int, r1: int) -> np.ndarray | None:
            out = np.empty((r1 - r0, wo, c), dtype=odt)
            return out if _ran(mod.depthwise_fx3_pairs, x, wf64, np.empty(c), out, r0, ho, geo, chan, fx40) else None
        return run_pairs
    if flat:
        # float32 sums: every product and partial sum is an integer below 9 * xb * wb < 2**24: exact;
        # the per-channel operands tiled along an output row (j = ox * C + c)
        wt = np.ascontiguousarray(np.tile(wk.astype(np.float32).reshape(9, c), (1, wo)))
        chan_t = np.ascontiguousarray(np.tile(chan, (1, wo)))
        gather = _flat_gather(x_shape[2], c, mult, stride[1], dilation[1], pad[1], wo)

        def run_flat(x: np.ndarray, r0: int, r1: int) -> np.ndarray | None:
            out = np.empty((r1 - r0, wo, c), dtype=odt)
            return out if _ran(mod.depthwise_sa8_3_flat, x, x_off, wt, gather, out, r0, ho, geo, chan_t, par) \
                else None
        return run_flat
    if stage.sa8 and ring and 9 * xb * wb < 1 << 24:
        # float32 sums: every product and partial sum is an integer below 9 * xb * wb < 2**24: exact
        wf32 = wk.astype(np.float32)

        def run_sa8_3(x: np.ndarray, r0: int, r1: int) -> np.ndarray | None:
            out = np.empty((r1 - r0, wo, c), dtype=odt)
            return out if _ran(mod.depthwise_sa8_3_rows, x, x_off, wf32, out, r0, ho, geo, chan, par) else None
        return run_sa8_3
    # every partial sum is bounded by taps * max|x - offset| * max|w|: int32 accumulators are exact
    # below 2**31
    acc_dt = np.dtype(np.int32 if kh * kw * xb * wb < (1 << 31) else I64)
    if stage.sa8:
        def run_sa8(x: np.ndarray, r0: int, r1: int) -> np.ndarray | None:
            out = np.empty((r1 - r0, wo, c), dtype=odt)
            acc = np.empty((wo, c), dtype=acc_dt)
            return out if _ran(mod.depthwise_sa8_rows, x, wk, x_off, acc, out, r0, ho, geo, chan, par) else None
        return run_sa8

    def run_fx(x: np.ndarray, r0: int, r1: int) -> np.ndarray | None:
        out = np.empty((r1 - r0, wo, c), dtype=odt)
        acc = np.empty((wo, c), dtype=acc_dt)
        return out if _ran(mod.depthwise_fx_rows, x, wk, acc, out, r0, ho, geo, chan, par) else None
    return run_fx


def _flat_gather(wdt: int, c: int, mult: int, sw: int, dw: int, pl: int, wo: int) -> np.ndarray:
    """The ``gather`` table of ``depthwise_sa8_3_flat`` (see there) for input rows of ``wdt`` columns of
    ``c / mult`` channels, the width's stride ``sw``, dilation ``dw``, left padding ``pl``, ``wo`` outputs."""
    cin = c // mult
    width = max(pl + wdt, (wo - 1) * sw + 2 * dw + 1)
    mw = -(-width // sw)
    p, m, ch = np.meshgrid(np.arange(sw), np.arange(mw), np.arange(c), indexing="ij")
    ix = m * sw + p - pl
    inside = (ix >= 0) & (ix < wdt)
    return np.where(inside, ix * cin + ch // mult, wdt * cin).astype(np.uint32).reshape(-1)


class PreparedDepthwise:
    """A depthwise layer of fixed weights, input offset, output stage and geometry for the compiled
    loop nest: ``prepared(x)`` equals :func:`depthwise` on ``x`` (batched or not), with everything
    that depends only on the layer, the input's shape and dtype and the platform (weights layout,
    geometry and stage constants, accumulator dtype, the loop nest) derived on the first call with
    that key and kept, so that a call allocates its output and makes one compiled call (calls of at
    least :data:`JIT_PARALLEL_WORK` multiply-adds: row blocks over the threads, as :func:`depthwise`).
    Calls may overlap on several threads (every call writes fresh arrays).
    """

    def __init__(self, w: np.ndarray, x_offset: int, stage: Callable[[], DepthwiseStage | None], *,
                 stride: tuple[int, int], dilation: tuple[int, int], pad: tuple[int, int],
                 out_hw: tuple[int, int]) -> None:
        """Args:
            w: (Kh, Kw, 1, C) int8 / int16 weights (not copied: the caller keeps them constant).
            x_offset: the effective input zero point (0 for MLI_FX).
            stage: returns the output stage's constants for the current platform (None: not for
                the JIT), e.g. ``_OutputStage.jit_stage`` of :mod:`pymli.kernels.convolution`.
            stride, dilation, pad, out_hw: as :func:`depthwise`.
        """
        self._w, self._x_offset, self._stage = w, int(x_offset), stage
        self._geo = (tuple(stride), tuple(dilation), tuple(pad), tuple(out_hw))
        self._plans: dict[tuple, _Plan | None] = {}
        self._last: tuple = (None, None, None, None)  # (platform, shape, dtype, plan): no hashing

    def __call__(self, x: np.ndarray) -> np.ndarray | None:
        """The layer on ``x``.

        Args:
            x: (H, W, C) or (N, H, W, C) input.

        Returns:
            (Ho, Wo, C) or (N, Ho, Wo, C) outputs in the stage's container dtype, or None when the
            JIT does not take the call (off, or as :func:`depthwise`): the caller runs the plain kernel.
        """
        if not _STATE["on"]:
            return None
        p = get_platform()
        last = self._last
        if last[0] is p and last[1] == x.shape and last[2] == x.dtype:
            plan = last[3]
        else:
            plan = self._plan(p, x)
        if plan is None:
            return None
        rows, out_shape, run, site = plan
        if not x.flags.c_contiguous:
            x = np.ascontiguousarray(x)
        out = _run_rows(run, x if x.ndim == 4 else x[None], rows, site)
        return None if out is None else out.reshape(out_shape)

    def _plan(self, p: object, x: np.ndarray) -> _Plan | None:
        """(output rows, output shape, runner, thread site) for inputs like ``x`` under platform ``p``,
        or None (not for the JIT)."""
        key = (p, x.shape, x.dtype)  # the dtype, not its char: byte order
        plan = self._plans.get(key, False)
        if plan is False:
            plan = None
            c = self._w.shape[-1]
            stride, dilation, pad, (ho, wo) = self._geo
            shape4 = x.shape if x.ndim == 4 else (1, *x.shape)
            stage = self._stage()
            if x.ndim in (3, 4):
                run = _rows_runner(shape4, x.dtype, self._w, self._x_offset, stage, stride, dilation, pad, (ho, wo))
                if run is not None:
                    rows = shape4[0] * ho
                    site = _site(stage, x.dtype, self._w, rows, wo, c)  # type: ignore[arg-type]
                    plan = (rows, (*x.shape[:-3], ho, wo, c), run, site)
            if len(self._plans) >= 16:  # a few platforms / input shapes at most: keep memory bounded
                self._plans.clear()
            self._plans[key] = plan
        self._last = (p, x.shape, x.dtype, plan)
        return plan

    def single(self, shape: tuple[int, ...], dtype: np.dtype, other: Callable[[np.ndarray], np.ndarray]
               ) -> Callable[[np.ndarray], np.ndarray] | None:
        """The layer for repeated calls on inputs of one shape and dtype under the current platform (a
        model's step): ``f(x)`` calls the compiled loop nest of this key straight away (one Python frame
        less per check this call skips: the key, the thread site). Calls on other inputs, under another
        platform, with the JIT off, or whose loop nest's first compile was cut short go to ``other``.

        Args:
            shape: (H, W, C) or (N, H, W, C) of the input. dtype: its dtype.
            other: the layer's general call (e.g. the prepared convolution), for every other call.

        Returns:
            ``f`` (outputs in the stage's container dtype), or None where the JIT does not take such
            inputs or a call may go over the threads.
        """
        p = get_platform()
        if not _STATE["on"] or len(shape) not in (3, 4):
            return None
        plan = self._plan(p, np.empty(shape, dtype))
        if plan is None or plan[3] is not None:
            return None
        rows, out_shape, run, _ = plan
        return self._single(shape, dtype, other, p, rows, out_shape, run)

    def single_repeated(self, shape: tuple[int, ...], dtype: np.dtype, mult: int,
                        other: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray] | None:
        """:meth:`single` on inputs of ``C / mult`` channels standing for each channel repeated ``mult``
        times (a channel multiplier), read so by the loop nest (no repeated copy): ``f(x)`` is
        ``single(...)(x.repeat(mult, axis=-1))``; every other call goes to ``other``, on ``x``.

        Args:
            shape: (H, W, C / mult) or (N, H, W, C / mult) of the input. dtype: its dtype.
            mult: the channel multiplier (``C``: the weights' channels). other: as :meth:`single`.

        Returns:
            ``f``, or None where the loop nest does not take such inputs (only tiny 3x3 s8asym maps:
            ``depthwise_sa8_3_flat``) or a call may go over the threads.
        """
        p = get_platform()
        c = self._w.shape[-1]
        if not _STATE["on"] or len(shape) not in (3, 4) or mult < 1 or shape[-1] * mult != c:
            return None
        stride, dilation, pad, (ho, wo) = self._geo
        shape4 = tuple(shape) if len(shape) == 4 else (1, *shape)
        stage = self._stage()
        rows = shape4[0] * ho
        run = _rows_runner((*shape4[:-1], c), np.dtype(dtype), self._w, self._x_offset, stage, stride, dilation, pad,
                           (ho, wo), mult)
        if run is None or _site(stage, np.dtype(dtype), self._w, rows, wo, c) is not None:  # type: ignore[arg-type]
            return None
        return self._single(shape, dtype, other, p, rows, (*shape[:-3], ho, wo, c), run)

    @staticmethod
    def _single(shape: tuple[int, ...], dtype: np.dtype, other: Callable[[np.ndarray], np.ndarray], p: object,
                rows: int, out_shape: tuple[int, ...], run: _RowsRunner) -> Callable[[np.ndarray], np.ndarray]:
        """The ``f`` of :meth:`single` for inputs ``shape``, ``dtype`` under platform ``p``."""
        shape, state = tuple(shape), _STATE
        if len(shape) == 3:  # the runner's (rows, Wo, C) is the output's shape: no reshape
            def f3(x: np.ndarray) -> np.ndarray:
                if x.shape != shape or x.dtype != dtype or get_platform() is not p or not state["on"] \
                        or not x.flags.c_contiguous:
                    return other(x)
                out = run(x[None], 0, rows)
                return other(x) if out is None else out
            return f3

        def f(x: np.ndarray) -> np.ndarray:
            if x.shape != shape or x.dtype != dtype or get_platform() is not p or not state["on"] \
                    or not x.flags.c_contiguous:
                return other(x)
            out = run(x, 0, rows)
            return other(x) if out is None else out.reshape(out_shape)
        return f


_SUM_TYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64))


def finish(acc: np.ndarray, bound: int, stage: DepthwiseStage | None) -> np.ndarray | None:
    """The output stage ``stage`` on given exact sums, compiled: what
    :func:`pymli.kernels.convolution.finish` computes from them (the convolutions' row blocks).

    Args:
        acc: (..., C) exact sums: integers, or integer-valued float32 / float64.
        bound: bound on ``|acc|``.
        stage: from :func:`sa8_stage` / :func:`fx_stage` (None: not for the JIT).

    Returns:
        The outputs, shape of ``acc``, in the stage's container dtype; or None when the JIT does not
        take the call (off, numba missing, other dtypes, channel mismatch, a 40-bit sum whose biased
        value may leave int64, a first compile cut short: :func:`_ran`): the caller runs NumPy.
    """
    if stage is None or acc.dtype not in _SUM_TYPES or not enabled() or acc.ndim == 0:
        return None
    c = stage.chan.shape[-1]
    if acc.shape[-1] != c:
        return None
    if not stage.sa8 and not stage.par[0] and bound + (int(np.abs(stage.chan).max()) if c else 0) >= 1 << 62:
        return None  # the 40-bit stage adds the bias in int64 without saturation
    out = np.empty(acc.shape, dtype=stage.out_dtype)
    if out.size:
        a2, o2 = acc.reshape(-1, c), out.reshape(-1, c)
        mod = _module()
        fn = mod.finish_sa8 if stage.sa8 else mod.finish_fx  # type: ignore[union-attr]
        if not _ran(fn, a2, stage.chan, stage.par, o2):
            return None
    return out


FLAT_OUTPUTS = 2048
"""Most outputs (Ho * Wo * C) of a 3x3 s8asym call that takes ``depthwise_sa8_3_flat`` (loops over whole
output rows: a few channels' loops run in scalar remainders; measured one thread, with the ~0.45 us
call: 8x8x8 ~1.35 us against ~1.9 us on the row ring, 6x6x8 ~1.0 against ~1.6, 16x16x16 even; larger
maps and strides of 2 read better from the ring or the input directly)."""

RING_CHANNELS = 128
"""Most channels of the row-ring loop nests (``depthwise_fx3_rows``, ``depthwise_sa8_3_rows``): six float
rows of more channels and the weights no longer stay in the first-level cache (measured fx16, one
thread: 56x56x128 ~245 us against ~440 us reading the input directly, 28x28x256 about even,
14x14x512 ~2x slower)."""


def _ring_pays(c: int, stride: tuple[int, int], dilation: tuple[int, int]) -> bool:
    """Whether a 3x3 call takes the row-ring loop nests: blocks of four output rows (stride and dilation
    1 along the height: a stride of 2 shares too few input rows, measured 28x28x256 ~1.3x slower) and
    at most :data:`RING_CHANNELS` channels. The others read the input directly (``depthwise_fx3_pairs``,
    ``depthwise_sa8_rows``)."""
    return c <= RING_CHANNELS and stride[0] == 1 and dilation[0] == 1


def _fx40_par(stage: DepthwiseStage) -> np.ndarray | None:
    """The scalars of ``depthwise_fx3_pairs`` (s, add, odd, lo, hi) for an MLI_FX stage without wrap
    and saturation (40-bit accumulator), else None: the stage of ``depthwise_fx_rows`` in closed form."""
    narrow, sat_lo, sat_hi, rnd_lim, s, half, up, c_lo, c_hi, lo, hi = (int(v) for v in stage.par)
    if narrow or (sat_lo, sat_hi, rnd_lim) != (_I64_MIN, _I64_MAX, _I64_MAX):
        return None
    add, odd = (half, 0) if up or s == 0 else (half - 1, 1)
    # clip(clip(v, c_lo, c_hi), lo, hi) = clip(v, low, high): its values at -inf and +inf
    low, high = min(max(c_lo, lo), hi), min(max(c_hi, lo), hi)
    return np.array([s, add, odd, low, high], dtype=I64)


def _fx3_operands(stage: DepthwiseStage, wk: np.ndarray, xb: int,
                  wb: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The scaled float64 operands of ``depthwise_fx3_rows`` (weights, bias, (up, lo, hi)) for an MLI_FX
    stage without wrap and saturation (40-bit accumulator) whose sums stay exact in float64, else None
    (``depthwise_fx_rows`` takes the call).

    Args:
        stage: the MLI_FX stage; wk: (3, 3, C) weights; xb, wb: bounds on ``|x|`` and ``|w|``.
    """
    narrow, sat_lo, sat_hi, rnd_lim, s, half, up, c_lo, c_hi, lo, hi = (int(v) for v in stage.par)
    if narrow or (sat_lo, sat_hi, rnd_lim) != (_I64_MIN, _I64_MAX, _I64_MAX):
        return None
    add = half if up else 0  # ROUND_UP's rounding half goes into the bias: floor((acc + b + half) / 2**s)
    bias = stage.chan
    # every partial sum of the loop nest is (an integer below this bound) * 2**-s: exact in float64
    if 9 * xb * wb + (max(-int(bias.min()), int(bias.max())) if bias.size else 0) + add >= 1 << 53:
        return None
    scale = 2.0 ** -s  # 0 <= s <= 62 (fx_stage): a power of two, scaling integers below 2**53 exactly
    wf = wk.astype(np.float64) * scale
    bf = (bias + add).astype(np.float64) * scale
    # clip(clip(v, c_lo, c_hi), lo, hi) = clip(v, low, high): its values at -inf and +inf
    low, high = min(max(c_lo, lo), hi), min(max(c_hi, lo), hi)
    return wf, bf, np.array([float(up), low, high])


@functools.lru_cache(maxsize=64)
def _container_bound(char: str, offset: int) -> int:
    """Bound on ``|x - offset|`` for values of the integer container ``char``."""
    info = np.iinfo(np.dtype(char))
    return max(abs(int(info.min) - offset), abs(int(info.max) - offset))


# (x, w, acc, out) containers of depthwise_sa8_rows / depthwise_fx_rows as _rows_runner picks them
# (int32 sums unless int64 is needed: fx16), the (x, out) containers of depthwise_fx3_rows and
# depthwise_fx3_pairs, the x containers of depthwise_sa8_3_rows, and the sums of the convolutions' row
# blocks that finish takes
_WARM_SA8 = (("b", "b", "i", "b"),)
_WARM_FX = (("h", "h", "q", "h"), ("b", "b", "i", "b"), ("h", "b", "i", "h"))
_WARM_FX3 = (("h", "h"), ("b", "b"))
_WARM_SA8_3 = ("b",)  # also the x containers of depthwise_sa8_3_flat
_WARM_PAIRS = (("h", "h"), ("b", "b"))
_WARM_SUMS = ("f", "d", "i", "q")


def _warm_numba(mod: ModuleType) -> None:
    """Call every loop nest of :mod:`pymli.kernels._jit_numba` once on tiny operands of each argument
    type combination the glue above passes (compiled, or loaded from numba's cache)."""
    geo = np.ones(6, dtype=I64)
    chan7, chan1 = np.zeros((7, 2), dtype=I64), np.zeros(2, dtype=I64)
    par_sa8, par_fx = np.zeros(5, dtype=I64), np.zeros(11, dtype=I64)
    for xd, wd, ad, od in _WARM_SA8:
        mod.depthwise_sa8_rows(np.zeros((1, 3, 3, 2), xd), np.zeros((3, 3, 2), wd), 0, np.zeros((3, 2), ad),
                               np.empty((3, 3, 2), od), 0, 3, geo, chan7, par_sa8)
    for xd, wd, ad, od in _WARM_FX:
        mod.depthwise_fx_rows(np.zeros((1, 3, 3, 2), xd), np.zeros((3, 3, 2), wd), np.zeros((3, 2), ad),
                              np.empty((3, 3, 2), od), 0, 3, geo, chan1, par_fx)
    for xd, od in _WARM_PAIRS:
        mod.depthwise_fx3_pairs(np.zeros((1, 3, 3, 2), xd), np.zeros((3, 3, 2)), np.zeros(2), np.empty((3, 3, 2), od),
                                0, 3, geo, chan1, np.zeros(5, dtype=I64))
    for xd in _WARM_SA8_3:
        mod.depthwise_sa8_3_rows(np.zeros((1, 3, 3, 2), xd), 0, np.zeros((3, 3, 2), np.float32),
                                 np.empty((3, 3, 2), np.int8), 0, 3, geo, chan7, par_sa8)
        mod.depthwise_sa8_3_flat(np.zeros((1, 3, 3, 2), xd), 0, np.zeros((9, 6), np.float32),
                                 np.zeros(10, np.uint32), np.empty((3, 3, 2), np.int8), 0, 3, geo,
                                 np.zeros((7, 6), dtype=I64), par_sa8)
    for xd, od in _WARM_FX3:
        mod.depthwise_fx3_rows(np.zeros((1, 3, 3, 2), xd), np.zeros((3, 3, 2)), np.zeros(2), np.empty((3, 3, 2), od),
                               0, 3, geo, np.zeros(3))
    # the sums as arrays, and the integer products' int32 sums as a view of their padded columns
    for sums in [np.zeros((2, 2), sd) for sd in _WARM_SUMS] + [np.zeros((2, 4), np.int32)[:, :2]]:
        mod.finish_sa8(sums, chan7, par_sa8, np.empty((2, 2), np.int8))
        for od in ("b", "h"):
            mod.finish_fx(sums, chan1, par_fx, np.empty((2, 2), od))


def warm_up() -> dict[str, float]:
    """Compile every JIT kernel once (or load it from numba's cache), e.g. when installing, so that no
    later call waits for a compile: the loop nests of :mod:`pymli.kernels._jit_numba` on each argument
    type combination the kernels pass, and every other ``pymli/kernels/_jit_*.py`` module through its
    own ``warm_up()`` function (a module without one is listed with ``nan``).

    Returns:
        Seconds per compiled-kernel module (empty when numba is not installed).
    """
    mod = _module()
    if mod is None:
        return {}
    t0 = time.perf_counter()
    _warm_numba(mod)
    done = {mod.__name__: time.perf_counter() - t0}
    here = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(f[:-3] for f in os.listdir(here) if f.startswith("_jit_") and f.endswith(".py")):
        other = importlib.import_module(f"pymli.kernels.{name}")
        if other is mod:
            continue
        t0 = time.perf_counter()
        hook = getattr(other, "warm_up", None)
        if hook is None:
            done[other.__name__] = float("nan")
            continue
        hook()
        done[other.__name__] = time.perf_counter() - t0
    return done


if __name__ == "__main__":  # python -m pymli.kernels._jit: warm up, one line per module
    print("\n".join(f"{k}: " + ("no warm_up()" if v != v else f"{v:.1f} s") for k, v in warm_up().items())
          or "numba is not installed: nothing to compile")
