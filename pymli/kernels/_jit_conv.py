"""numba-compiled integer matrix product of the int8 convolutions: AVX-512 VNNI ``vpdpbusd`` (unsigned
8-bit x signed 8-bit products, four summed into each 32-bit lane) straight from the padded input, loaded
through :func:`pymli.kernels._jit.compiled` (only when numba is installed: an optional dependency).

Like :mod:`pymli.kernels._jit_numba`: ``nopython``, ``nogil``, ``cache=True``, no ``fastmath``; every
value is an integer and every sum exact (the caller, :func:`pymli.kernels.convolution._conv_vnni`,
proves the int32 lanes never wrap). The instruction exists only on CPUs with AVX-512 VNNI and BW:
:data:`SUPPORTED` says whether numba compiles for such a CPU here, and nothing in this module is
compiled otherwise (LLVM cannot lower the intrinsic for other targets).

The product: ``out[p, n] = init[n] + sum_k u[p, k] * w[k, n]`` where the row ``u[p]`` of output pixel
``p`` is not copied out (no im2col) but read from the padded uint8 input as ``S`` segments of ``4 * L``
contiguous bytes, segment ``s`` at byte ``offs[p] + roff[s]`` (the kernel rows of a convolution: with
an undilated kernel width a segment is one kernel row's ``Kw * C`` values). The weights are packed per
chunk of at most 64 output channels (``NB`` vectors of 16 lanes) as ``(K / 4, 16 * NB, 4)`` bytes: the
four weights of lane ``n`` for taps ``4g .. 4g + 3`` are adjacent, as ``vpdpbusd`` multiplies them
with four adjacent input bytes broadcast to every lane. A tile of :data:`ROWS` output pixels x one
chunk keeps its ``ROWS * NB`` accumulators in registers over all of ``K`` (24 of the 32 vector
registers at ``NB = 4``).
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import binding as _llvm
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = ["ROWS", "SUPPORTED", "conv_u8s8"]

_JIT = {"nogil": True, "cache": True, "fastmath": False, "boundscheck": False}

ROWS = 6
"""Output pixels per register tile."""


def _supported() -> bool:
    """numba compiles for this machine's CPU (no ``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` override),
    and that CPU has AVX-512 F, BW and VNNI."""
    if numba.config.CPU_NAME not in (None, "host") or numba.config.CPU_FEATURES:
        return False
    try:
        feats = _llvm.get_host_cpu_features()
    except RuntimeError:  # pragma: no cover - hosts whose features LLVM cannot read
        return False
    return all(feats.get(f, False) for f in ("avx512f", "avx512bw", "avx512vnni"))


SUPPORTED = _supported()
"""Whether :func:`conv_u8s8` can run here (else it must not be called: it would not compile)."""

_I64 = ir.IntType(64)
_I32 = ir.IntType(32)
_V16 = ir.VectorType(_I32, 16)
_DPBUSD = "llvm.x86.avx512.vpdpbusd.512"


def _tile(rows: int, nb: int):  # type: ignore[no-untyped-def]
    """An intrinsic computing one tile: ``rows`` output pixels x ``nb`` vectors of 16 channels.

    Arguments (all int64 addresses or counts): the padded input's address, the address of the
    tile's ``rows`` pixel offsets (int64), the address of the ``S`` segment offsets (int64), ``S``,
    ``L`` (4-byte groups per segment), the chunk's packed weights, its ``16 * nb`` int32 initial
    values, the address of the tile's first output row and the output's row stride in bytes.
    """

    @intrinsic
    def tile(typingctx, a_base, offs, roff, nseg, l4, w, init, out, ostride):  # type: ignore[no-untyped-def]
        sig = types.void(*([types.int64] * 9))

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            a_base, offs, roff, nseg, l4, w, init, out, ostride = args
            mod = builder.module
            dp = mod.globals.get(_DPBUSD) or ir.Function(mod, ir.FunctionType(_V16, [_V16, _V16, _V16]), name=_DPBUSD)

            def at(addr, ty, align):  # type: ignore[no-untyped-def]
                v = builder.load(builder.inttoptr(addr, ir.PointerType(ty)))
                v.align = align
                return v

            def plus(addr, n):  # type: ignore[no-untyped-def]
                return builder.add(addr, ir.Constant(_I64, n))

            rows_at = [builder.add(a_base, at(plus(offs, 8 * i), _I64, 8)) for i in range(rows)]
            start = [at(plus(init, 64 * j), _V16, 4) for j in range(nb)]
            entry = builder.block
            fn = builder.function
            seg_b, k_b = fn.append_basic_block("seg"), fn.append_basic_block("k")
            kend_b, exit_b = fn.append_basic_block("kend"), fn.append_basic_block("exit")
            builder.branch(seg_b)

            # segment loop: s, the weights pointer and the accumulators carried over
            builder.position_at_end(seg_b)
            s = builder.phi(_I64)
            wp = builder.phi(_I64)
            acc_s = [[builder.phi(_V16) for _ in range(nb)] for _ in range(rows)]
            s.add_incoming(ir.Constant(_I64, 0), entry)
            wp.add_incoming(w, entry)
            for i in range(rows):
                for j in range(nb):
                    acc_s[i][j].add_incoming(start[j], entry)
            ro = at(builder.add(roff, builder.shl(s, ir.Constant(_I64, 3))), _I64, 8)
            bases = [builder.add(r, ro) for r in rows_at]
            builder.branch(k_b)

            # 4-tap group loop: nb weight vectors, one broadcast of 4 input bytes per pixel
            builder.position_at_end(k_b)
            kk = builder.phi(_I64)
            wk = builder.phi(_I64)
            acc_k = [[builder.phi(_V16) for _ in range(nb)] for _ in range(rows)]
            kk.add_incoming(ir.Constant(_I64, 0), seg_b)
            wk.add_incoming(wp, seg_b)
            for i in range(rows):
                for j in range(nb):
                    acc_k[i][j].add_incoming(acc_s[i][j], seg_b)
            wv = [at(plus(wk, 64 * j), _V16, 4) for j in range(nb)]
            k4 = builder.shl(kk, ir.Constant(_I64, 2))
            new = [[None] * nb for _ in range(rows)]
            undef = ir.Constant(_V16, ir.Undefined)
            for i in range(rows):
                quad = at(builder.add(bases[i], k4), _I32, 1)
                bc = builder.insert_element(undef, quad, ir.Constant(_I32, 0))
                bc = builder.shuffle_vector(bc, undef, ir.Constant(_V16, [0] * 16))
                for j in range(nb):
                    new[i][j] = builder.call(dp, [acc_k[i][j], bc, wv[j]])
            kk1 = builder.add(kk, ir.Constant(_I64, 1))
            wk1 = plus(wk, 64 * nb)
            kk.add_incoming(kk1, k_b)
            wk.add_incoming(wk1, k_b)
            for i in range(rows):
                for j in range(nb):
                    acc_k[i][j].add_incoming(new[i][j], k_b)
            builder.cbranch(builder.icmp_signed("<", kk1, l4), k_b, kend_b)

            builder.position_at_end(kend_b)
            s1 = builder.add(s, ir.Constant(_I64, 1))
            s.add_incoming(s1, kend_b)
            wp.add_incoming(wk1, kend_b)
            for i in range(rows):
                for j in range(nb):
                    acc_s[i][j].add_incoming(new[i][j], kend_b)
            builder.cbranch(builder.icmp_signed("<", s1, nseg), seg_b, exit_b)

            builder.position_at_end(exit_b)
            for i in range(rows):
                row = builder.add(out, builder.mul(ostride, ir.Constant(_I64, i)))
                for j in range(nb):
                    st = builder.store(new[i][j], builder.inttoptr(plus(row, 64 * j), ir.PointerType(_V16)))
                    st.align = 4
            return context.get_dummy_value()

        return sig, codegen

    return tile


_T1, _T2, _T3, _T4 = (_tile(ROWS, nb) for nb in (1, 2, 3, 4))
_S1, _S2, _S3, _S4 = (_tile(1, nb) for nb in (1, 2, 3, 4))


@numba.njit(**_JIT)
def _run_tile(rows, nb, a, offs, roff, nseg, l4, w, init, out, ostride):  # pragma: no cover - compiled
    """One tile of ``rows`` (:data:`ROWS` or 1) pixels x ``nb`` (1-4) vectors of channels."""
    if rows == ROWS:
        if nb == 4:
            _T4(a, offs, roff, nseg, l4, w, init, out, ostride)
        elif nb == 3:
            _T3(a, offs, roff, nseg, l4, w, init, out, ostride)
        elif nb == 2:
            _T2(a, offs, roff, nseg, l4, w, init, out, ostride)
        else:
            _T1(a, offs, roff, nseg, l4, w, init, out, ostride)
    elif nb == 4:
        _S4(a, offs, roff, nseg, l4, w, init, out, ostride)
    elif nb == 3:
        _S3(a, offs, roff, nseg, l4, w, init, out, ostride)
    elif nb == 2:
        _S2(a, offs, roff, nseg, l4, w, init, out, ostride)
    else:
        _S1(a, offs, roff, nseg, l4, w, init, out, ostride)


@numba.njit(**_JIT)
def conv_u8s8(xp, offs, roff, l4, wpk, chunks, init, out):  # pragma: no cover - compiled
    """``out[p, n] = init[n] + sum_k u[p, k] * w[k, n]`` (see the module docstring), int32 lanes that
    the caller proves never wrap.

    Args:
        xp: the padded input, uint8, C-contiguous (read at ``offs[p] + roff[s] + 0 .. 4 * l4 - 1``).
        offs: (P,) int64 byte offset of each output pixel's first segment.
        roff: (S,) int64 byte offsets of the segments from a pixel's offset.
        l4: 4-byte groups per segment (``K = 4 * l4 * S``).
        wpk: packed int8 weights of every chunk (see the module docstring).
        chunks: (M, 3) int64: per chunk its first output channel (a multiple of 16), its vectors
            ``nb`` (1-4) and the byte offset of its packed weights in ``wpk``.
        init: (Np,) int32 initial values (Np = the output's columns, a multiple of 16).
        out: (P, Np) int32, C-contiguous (written).
    """
    p_all = offs.shape[0]
    a = xp.ctypes.data
    ob = out.ctypes.data
    ost = np.int64(out.strides[0])
    ro = roff.ctypes.data
    nseg = np.int64(roff.shape[0])
    for c in range(chunks.shape[0]):
        col, nb, woff = chunks[c, 0], chunks[c, 1], chunks[c, 2]
        w = wpk.ctypes.data + woff
        ini = init.ctypes.data + 4 * col
        p = 0
        while p + ROWS <= p_all:
            _run_tile(ROWS, nb, a, offs.ctypes.data + 8 * p, ro, nseg, l4, w, ini, ob + ost * p + 4 * col, ost)
            p += ROWS
        while p < p_all:
            _run_tile(1, nb, a, offs.ctypes.data + 8 * p, ro, nseg, l4, w, ini, ob + ost * p + 4 * col, ost)
            p += 1
