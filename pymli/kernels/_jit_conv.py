"""numba-compiled integer matrix product of the int8 convolutions: VNNI ``vpdpbusd`` (unsigned 8-bit x
signed 8-bit products, four summed into each 32-bit lane) straight from the padded input, loaded through
:func:`pymli.kernels._jit.compiled` (only when numba is installed: an optional dependency).

Like :mod:`pymli.kernels._jit_numba`: ``nopython``, ``nogil``, ``cache=True``, no ``fastmath``; every
value is an integer and every sum exact (the caller, :func:`pymli.kernels.convolution._conv_vnni`,
proves the int32 lanes never wrap). The instruction exists only on CPUs with VNNI: 512-bit vectors
of 16 lanes with AVX-512 VNNI and BW (:func:`conv_u8s8`), 256-bit vectors of 8 lanes with AVX-VNNI or
AVX-512 VNNI and VL (:func:`conv_u8s8_256`; 16 vector registers suffice). :data:`LANES` says which one
numba can compile for this CPU (0: none), and nothing else in this module is compiled (LLVM cannot
lower the intrinsic for other targets).

The product: ``out[p, n] = init[n] + sum_k u[p, k] * w[k, n]`` where the row ``u[p]`` of output pixel
``p`` is not copied out (no im2col) but read from the padded uint8 input as ``S`` segments of ``4 * L``
contiguous bytes, segment ``s`` at byte ``offs[p] + roff[s]`` (the kernel rows of a convolution: with
an undilated kernel width a segment is one kernel row's ``Kw * C`` values). The weights are packed per
chunk of at most :data:`MAX_NB` vectors of output channels as ``(K / 4, lanes * NB, 4)`` bytes: the
four weights of lane ``n`` for taps ``4g .. 4g + 3`` are adjacent, as ``vpdpbusd`` multiplies them
with four adjacent input bytes broadcast to every lane. A tile of :data:`ROWS` output pixels x one
chunk keeps its ``ROWS * NB`` accumulators in registers over all of ``K`` (512 bits: 24 of the 32
vector registers at ``NB = 4``; 256 bits: 12 of 16 at ``NB = 2``).
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import binding as _llvm
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = ["LANES", "MAX_NB", "ROWS", "SUPPORTED", "conv_u8s8", "conv_u8s8_256"]

_JIT = {"nogil": True, "cache": True, "fastmath": False, "boundscheck": False}

ROWS = 6
"""Output pixels per register tile."""


def _lanes() -> int:
    """32-bit lanes of the widest VNNI vectors numba compiles for here (16, 8, or 0: none). numba must
    compile for this machine's CPU (no ``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` override)."""
    if numba.config.CPU_NAME not in (None, "host") or numba.config.CPU_FEATURES:
        return 0
    try:
        feats = _llvm.get_host_cpu_features()
    except RuntimeError:  # pragma: no cover - hosts whose features LLVM cannot read
        return 0

    def has(*names: str) -> bool:
        return all(feats.get(f, False) for f in names)

    if has("avx512f", "avx512bw", "avx512vnni"):
        return 16
    return 8 if has("avxvnni") or has("avx512f", "avx512vl", "avx512vnni") else 0


LANES = _lanes()
"""32-bit lanes per vector of the product to call here: 16 (:func:`conv_u8s8`), 8
(:func:`conv_u8s8_256`; also compiled on 16-lane CPUs), 0 (neither may be called: not compiled)."""

SUPPORTED = LANES > 0
"""Whether a VNNI product can run here."""

MAX_NB = {16: 4, 8: 2}
"""Most vectors of output channels per tile, by lanes (the accumulators and weights fill the registers)."""

_I64 = ir.IntType(64)
_I32 = ir.IntType(32)


def _tile(rows: int, nb: int, lanes: int):  # type: ignore[no-untyped-def]
    """An intrinsic computing one tile: ``rows`` output pixels x ``nb`` vectors of ``lanes`` channels.

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
            vec = ir.VectorType(_I32, lanes)
            vb = 4 * lanes  # bytes per vector
            name = f"llvm.x86.avx512.vpdpbusd.{32 * lanes}"
            dp = mod.globals.get(name) or ir.Function(mod, ir.FunctionType(vec, [vec, vec, vec]), name=name)

            def at(addr, ty, align):  # type: ignore[no-untyped-def]
                v = builder.load(builder.inttoptr(addr, ir.PointerType(ty)))
                v.align = align
                return v

            def plus(addr, n):  # type: ignore[no-untyped-def]
                return builder.add(addr, ir.Constant(_I64, n))

            rows_at = [builder.add(a_base, at(plus(offs, 8 * i), _I64, 8)) for i in range(rows)]
            start = [at(plus(init, vb * j), vec, 4) for j in range(nb)]
            entry = builder.block
            fn = builder.function
            seg_b, k_b = fn.append_basic_block("seg"), fn.append_basic_block("k")
            kend_b, exit_b = fn.append_basic_block("kend"), fn.append_basic_block("exit")
            builder.branch(seg_b)

            # segment loop: s, the weights pointer and the accumulators carried over
            builder.position_at_end(seg_b)
            s = builder.phi(_I64)
            wp = builder.phi(_I64)
            acc_s = [[builder.phi(vec) for _ in range(nb)] for _ in range(rows)]
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
            acc_k = [[builder.phi(vec) for _ in range(nb)] for _ in range(rows)]
            kk.add_incoming(ir.Constant(_I64, 0), seg_b)
            wk.add_incoming(wp, seg_b)
            for i in range(rows):
                for j in range(nb):
                    acc_k[i][j].add_incoming(acc_s[i][j], seg_b)
            wv = [at(plus(wk, vb * j), vec, 4) for j in range(nb)]
            k4 = builder.shl(kk, ir.Constant(_I64, 2))
            new = [[None] * nb for _ in range(rows)]
            undef = ir.Constant(vec, ir.Undefined)
            for i in range(rows):
                quad = at(builder.add(bases[i], k4), _I32, 1)
                bc = builder.insert_element(undef, quad, ir.Constant(_I32, 0))
                bc = builder.shuffle_vector(bc, undef, ir.Constant(vec, [0] * lanes))
                for j in range(nb):
                    new[i][j] = builder.call(dp, [acc_k[i][j], bc, wv[j]])
            kk1 = builder.add(kk, ir.Constant(_I64, 1))
            wk1 = plus(wk, vb * nb)
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
                    st = builder.store(new[i][j], builder.inttoptr(plus(row, vb * j), ir.PointerType(vec)))
                    st.align = 4
            return context.get_dummy_value()

        return sig, codegen

    return tile


_T1, _T2, _T3, _T4 = (_tile(ROWS, nb, 16) for nb in (1, 2, 3, 4))
_S1, _S2, _S3, _S4 = (_tile(1, nb, 16) for nb in (1, 2, 3, 4))
_H1, _H2 = (_tile(ROWS, nb, 8) for nb in (1, 2))
_G1, _G2 = (_tile(1, nb, 8) for nb in (1, 2))


@numba.njit(**_JIT)
def _run_tile(rows, nb, a, offs, roff, nseg, l4, w, init, out, ostride):  # pragma: no cover - compiled
    """One tile of ``rows`` (:data:`ROWS` or 1) pixels x ``nb`` (1-4) vectors of 16 channels."""
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
def _run_tile_256(rows, nb, a, offs, roff, nseg, l4, w, init, out, ostride):  # pragma: no cover - compiled
    """One tile of ``rows`` (:data:`ROWS` or 1) pixels x ``nb`` (1-2) vectors of 8 channels."""
    if rows == ROWS:
        if nb == 2:
            _H2(a, offs, roff, nseg, l4, w, init, out, ostride)
        else:
            _H1(a, offs, roff, nseg, l4, w, init, out, ostride)
    elif nb == 2:
        _G2(a, offs, roff, nseg, l4, w, init, out, ostride)
    else:
        _G1(a, offs, roff, nseg, l4, w, init, out, ostride)


@numba.njit(**_JIT)
def conv_u8s8(xp, offs, roff, l4, wpk, chunks, init, out):  # pragma: no cover - compiled
    """``out[p, n] = init[n] + sum_k u[p, k] * w[k, n]`` (see the module docstring) with 512-bit vectors
    (16 lanes; :data:`LANES` 16), int32 lanes that the caller proves never wrap.

    Args:
        xp: the padded input, uint8, C-contiguous (read at ``offs[p] + roff[s] + 0 .. 4 * l4 - 1``).
        offs: (P,) int64 byte offset of each output pixel's first segment.
        roff: (S,) int64 byte offsets of the segments from a pixel's offset.
        l4: 4-byte groups per segment (``K = 4 * l4 * S``).
        wpk: packed int8 weights of every chunk (see the module docstring).
        chunks: (M, 3) int64: per chunk its first output channel (a multiple of the lanes), its
            vectors ``nb`` (1 to :data:`MAX_NB`) and the byte offset of its packed weights in ``wpk``.
        init: (Np,) int32 initial values (Np = the output's columns, a multiple of the lanes).
        out: (P, Np) int32, C-contiguous (written).
    """
    p_all = offs.shape[0]
    a, ob, ost, ro, nseg = xp.ctypes.data, out.ctypes.data, np.int64(out.strides[0]), roff.ctypes.data, roff.shape[0]
    for c in range(chunks.shape[0]):
        col, nb = chunks[c, 0], chunks[c, 1]
        w, ini = wpk.ctypes.data + chunks[c, 2], init.ctypes.data + 4 * col
        p = 0
        while p + ROWS <= p_all:
            _run_tile(ROWS, nb, a, offs.ctypes.data + 8 * p, ro, nseg, l4, w, ini, ob + ost * p + 4 * col, ost)
            p += ROWS
        while p < p_all:
            _run_tile(1, nb, a, offs.ctypes.data + 8 * p, ro, nseg, l4, w, ini, ob + ost * p + 4 * col, ost)
            p += 1


@numba.njit(**_JIT)
def conv_u8s8_256(xp, offs, roff, l4, wpk, chunks, init, out):  # pragma: no cover - compiled
    """:func:`conv_u8s8` with 256-bit vectors (8 lanes; :data:`LANES` 8 or 16). A copy, not a shared
    driver: each function may hold only the vectors its CPUs have."""
    p_all = offs.shape[0]
    a, ob, ost, ro, nseg = xp.ctypes.data, out.ctypes.data, np.int64(out.strides[0]), roff.ctypes.data, roff.shape[0]
    for c in range(chunks.shape[0]):
        col, nb = chunks[c, 0], chunks[c, 1]
        w, ini = wpk.ctypes.data + chunks[c, 2], init.ctypes.data + 4 * col
        p = 0
        while p + ROWS <= p_all:
            _run_tile_256(ROWS, nb, a, offs.ctypes.data + 8 * p, ro, nseg, l4, w, ini, ob + ost * p + 4 * col, ost)
            p += ROWS
        while p < p_all:
            _run_tile_256(1, nb, a, offs.ctypes.data + 8 * p, ro, nseg, l4, w, ini, ob + ost * p + 4 * col, ost)
            p += 1
