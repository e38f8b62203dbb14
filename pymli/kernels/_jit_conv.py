"""numba-compiled integer matrix products of the int8 convolutions, straight from the padded input (no
im2col copy), loaded through :func:`pymli.kernels._jit.compiled` (only when numba is installed: an
optional dependency).

Like :mod:`pymli.kernels._jit_numba`: ``nopython``, ``nogil``, ``cache=True``, no ``fastmath``; every
value is an integer and every sum exact (the caller, :func:`pymli.kernels.convolution._conv_int`,
proves the int32 lanes never wrap). Three products, each an x86 instruction that multiplies narrow
integers and adds neighbouring products into 32-bit lanes:

* ``u8x16``: VNNI ``vpdpbusd`` on 512-bit vectors (AVX-512 VNNI and BW): unsigned 8-bit inputs x
  signed 8-bit weights, four products per lane and instruction.
* ``u8x8``: the same on 256-bit vectors (AVX-VNNI, or AVX-512 VNNI and VL; 16 vector registers do).
* ``s16x16``: AVX-512 BW ``vpmaddwd`` + ``vpaddd`` on 512-bit vectors: signed 16-bit inputs x
  weights, two products per lane (about half the rate of ``u8x16``; also the int16 inputs' product).
* ``s16x8``: the same on 256-bit vectors (AVX2; for CPUs without VNNI or AVX-512).

:data:`PRODUCTS` lists those numba can compile for this CPU, fastest first; nothing else in this
module may be called (LLVM cannot lower an instruction the target lacks: it is never compiled there).
:func:`checked` compiles a product and compares it with NumPy on a small random case once per
process, so that a numba or LLVM that rejects or miscompiles the intrinsics costs the NumPy path,
not a wrong or failed call.

The product: ``out[p, n] = init[n] + sum_k u[p, k] * w[k, n]`` where the row ``u[p]`` of output pixel
``p`` is read from the padded input as ``S`` segments of ``L`` 4-byte groups (4 uint8 or 2 int16
values each), segment ``s`` at byte ``offs[p] + roff[s]`` (the kernel rows of a convolution: with an
undilated kernel width a segment is one kernel row's ``Kw * C`` values). The weights are packed per
chunk of at most ``MAX_NB`` vectors of output channels as ``(groups, lanes * NB, values per group)``:
the weights of lane ``n`` for one group of taps are adjacent, as the instruction multiplies them with
one group of input values broadcast to every lane. A tile of :data:`ROWS` output pixels x one chunk
keeps its ``ROWS * NB`` accumulators in registers over all of ``K`` (512 bits: 24 of the 32 vector
registers at ``NB = 4``; 256 bits: 12 of 16 at ``NB = 2``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from llvmlite import binding as _llvm
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = ["PRODUCTS", "ROWS", "Product", "checked", "conv_s16x16", "conv_s16x8", "conv_u8x16", "conv_u8x8",
           "warm_up"]

_JIT = {"nogil": True, "cache": True, "fastmath": False, "boundscheck": False}

ROWS = 6
"""Output pixels per register tile."""


@dataclass(frozen=True)
class Product:
    """One of the products (see the module docstring).

    Attributes:
        name: ``u8x16``, ``u8x8``, ``s16x16`` or ``s16x8``.
        lanes: 32-bit lanes per vector.
        max_nb: most vectors of output channels per tile (the accumulators and weights fill the registers).
        per_group: input values per 4-byte group (4 uint8, or 2 int16).
    """

    name: str
    lanes: int
    max_nb: int
    per_group: int


def _products() -> tuple[Product, ...]:
    """The products numba can compile for this CPU, fastest first. numba must compile for this
    machine's CPU (no ``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` override)."""
    if numba.config.CPU_NAME not in (None, "host") or numba.config.CPU_FEATURES:
        return ()
    try:
        feats = _llvm.get_host_cpu_features()
    except RuntimeError:  # pragma: no cover - hosts whose features LLVM cannot read
        return ()

    def has(*names: str) -> bool:
        return all(feats.get(f, False) for f in names)

    found = []
    if has("avx512f", "avx512bw", "avx512vnni"):
        found.append(Product("u8x16", 16, 4, 4))
    if has("avxvnni") or has("avx512f", "avx512vl", "avx512vnni"):
        found.append(Product("u8x8", 8, 2, 4))
    if has("avx512f", "avx512bw"):
        found.append(Product("s16x16", 16, 4, 2))
    if has("avx2"):
        found.append(Product("s16x8", 8, 2, 2))
    return tuple(found)


PRODUCTS = _products()
"""The products that can run here, fastest first (empty: none may be called)."""

_I64 = ir.IntType(64)
_I32 = ir.IntType(32)


def _tile(rows: int, nb: int, lanes: int, signed16: bool = False):  # type: ignore[no-untyped-def]
    """An intrinsic computing one tile: ``rows`` output pixels x ``nb`` vectors of ``lanes`` channels,
    with ``vpdpbusd`` (uint8 inputs), or ``signed16``: ``vpmaddwd`` + ``vpaddd`` (int16 inputs).

    Arguments (all int64 addresses or counts): the padded input's address, the address of the
    tile's ``rows`` pixel offsets (int64), the address of the ``S`` segment offsets (int64), ``S``,
    ``L`` (4-byte groups per segment), the chunk's packed weights, its ``lanes * nb`` int32 initial
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
            if signed16:
                half = ir.VectorType(ir.IntType(16), 2 * lanes)
                name = "llvm.x86.avx2.pmadd.wd" if lanes == 8 else "llvm.x86.avx512.pmaddw.d.512"
                fnty = ir.FunctionType(vec, [half, half])
            else:
                name = f"llvm.x86.avx512.vpdpbusd.{32 * lanes}"
                fnty = ir.FunctionType(vec, [vec, vec, vec])
            op = mod.globals.get(name) or ir.Function(mod, fnty, name=name)

            def dot(acc, a, b):  # type: ignore[no-untyped-def]
                if signed16:  # two int16 products per lane, added to the lane
                    return builder.add(acc, builder.call(op, [builder.bitcast(a, half), builder.bitcast(b, half)]))
                return builder.call(op, [acc, a, b])  # a: unsigned bytes, b: signed bytes

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

            # group loop: nb weight vectors, one broadcast of a 4-byte group of inputs per pixel
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
                    new[i][j] = dot(acc_k[i][j], bc, wv[j])
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
_W1, _W2 = (_tile(ROWS, nb, 8, True) for nb in (1, 2))
_V1, _V2 = (_tile(1, nb, 8, True) for nb in (1, 2))
_X1, _X2, _X3, _X4 = (_tile(ROWS, nb, 16, True) for nb in (1, 2, 3, 4))
_Y1, _Y2, _Y3, _Y4 = (_tile(1, nb, 16, True) for nb in (1, 2, 3, 4))


@numba.njit(**_JIT)
def _tile_u8x16(rows, nb, a, offs, roff, nseg, l4, w, init, out, ostride):  # pragma: no cover - compiled
    """One ``u8x16`` tile of ``rows`` (:data:`ROWS` or 1) pixels x ``nb`` (1-4) vectors."""
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
def _tile_u8x8(rows, nb, a, offs, roff, nseg, l4, w, init, out, ostride):  # pragma: no cover - compiled
    """One ``u8x8`` tile of ``rows`` (:data:`ROWS` or 1) pixels x ``nb`` (1-2) vectors."""
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
def _tile_s16x8(rows, nb, a, offs, roff, nseg, l4, w, init, out, ostride):  # pragma: no cover - compiled
    """One ``s16x8`` tile of ``rows`` (:data:`ROWS` or 1) pixels x ``nb`` (1-2) vectors."""
    if rows == ROWS:
        if nb == 2:
            _W2(a, offs, roff, nseg, l4, w, init, out, ostride)
        else:
            _W1(a, offs, roff, nseg, l4, w, init, out, ostride)
    elif nb == 2:
        _V2(a, offs, roff, nseg, l4, w, init, out, ostride)
    else:
        _V1(a, offs, roff, nseg, l4, w, init, out, ostride)


@numba.njit(**_JIT)
def _tile_s16x16(rows, nb, a, offs, roff, nseg, l4, w, init, out, ostride):  # pragma: no cover - compiled
    """One ``s16x16`` tile of ``rows`` (:data:`ROWS` or 1) pixels x ``nb`` (1-4) vectors."""
    if rows == ROWS:
        if nb == 4:
            _X4(a, offs, roff, nseg, l4, w, init, out, ostride)
        elif nb == 3:
            _X3(a, offs, roff, nseg, l4, w, init, out, ostride)
        elif nb == 2:
            _X2(a, offs, roff, nseg, l4, w, init, out, ostride)
        else:
            _X1(a, offs, roff, nseg, l4, w, init, out, ostride)
    elif nb == 4:
        _Y4(a, offs, roff, nseg, l4, w, init, out, ostride)
    elif nb == 3:
        _Y3(a, offs, roff, nseg, l4, w, init, out, ostride)
    elif nb == 2:
        _Y2(a, offs, roff, nseg, l4, w, init, out, ostride)
    else:
        _Y1(a, offs, roff, nseg, l4, w, init, out, ostride)


@numba.njit(**_JIT)
def conv_u8x16(xp, offs, roff, l4, wpk, chunks, init, out):  # pragma: no cover - compiled
    """``out[p, n] = init[n] + sum_k u[p, k] * w[k, n]`` (see the module docstring) with the ``u8x16``
    product, int32 lanes that the caller proves never wrap.

    Args:
        xp: the padded input, C-contiguous (uint8; int16 for ``s16x16`` / ``s16x8``), read at the bytes
            ``offs[p] + roff[s] + 0 .. 4 * l4 - 1``.
        offs: (P,) int64 byte offset of each output pixel's first segment.
        roff: (S,) int64 byte offsets of the segments from a pixel's offset.
        l4: 4-byte groups per segment.
        wpk: packed weights of every chunk (int8; int16 for the s16 products; see the module docstring).
        chunks: (M, 3) int64: per chunk its first output channel (a multiple of the lanes), its
            vectors ``nb`` (1 to ``max_nb``) and the byte offset of its packed weights in ``wpk``.
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
            _tile_u8x16(ROWS, nb, a, offs.ctypes.data + 8 * p, ro, nseg, l4, w, ini, ob + ost * p + 4 * col, ost)
            p += ROWS
        while p < p_all:
            _tile_u8x16(1, nb, a, offs.ctypes.data + 8 * p, ro, nseg, l4, w, ini, ob + ost * p + 4 * col, ost)
            p += 1


@numba.njit(**_JIT)
def conv_u8x8(xp, offs, roff, l4, wpk, chunks, init, out):  # pragma: no cover - compiled
    """:func:`conv_u8x16` with the ``u8x8`` product. A copy, not a shared driver: each function may
    hold only the instructions of its CPUs."""
    p_all = offs.shape[0]
    a, ob, ost, ro, nseg = xp.ctypes.data, out.ctypes.data, np.int64(out.strides[0]), roff.ctypes.data, roff.shape[0]
    for c in range(chunks.shape[0]):
        col, nb = chunks[c, 0], chunks[c, 1]
        w, ini = wpk.ctypes.data + chunks[c, 2], init.ctypes.data + 4 * col
        p = 0
        while p + ROWS <= p_all:
            _tile_u8x8(ROWS, nb, a, offs.ctypes.data + 8 * p, ro, nseg, l4, w, ini, ob + ost * p + 4 * col, ost)
            p += ROWS
        while p < p_all:
            _tile_u8x8(1, nb, a, offs.ctypes.data + 8 * p, ro, nseg, l4, w, ini, ob + ost * p + 4 * col, ost)
            p += 1


@numba.njit(**_JIT)
def conv_s16x16(xp, offs, roff, l4, wpk, chunks, init, out):  # pragma: no cover - compiled
    """:func:`conv_u8x16` with the ``s16x16`` product (int16 input and weights)."""
    p_all = offs.shape[0]
    a, ob, ost, ro, nseg = xp.ctypes.data, out.ctypes.data, np.int64(out.strides[0]), roff.ctypes.data, roff.shape[0]
    for c in range(chunks.shape[0]):
        col, nb = chunks[c, 0], chunks[c, 1]
        w, ini = wpk.ctypes.data + chunks[c, 2], init.ctypes.data + 4 * col
        p = 0
        while p + ROWS <= p_all:
            _tile_s16x16(ROWS, nb, a, offs.ctypes.data + 8 * p, ro, nseg, l4, w, ini, ob + ost * p + 4 * col, ost)
            p += ROWS
        while p < p_all:
            _tile_s16x16(1, nb, a, offs.ctypes.data + 8 * p, ro, nseg, l4, w, ini, ob + ost * p + 4 * col, ost)
            p += 1


@numba.njit(**_JIT)
def conv_s16x8(xp, offs, roff, l4, wpk, chunks, init, out):  # pragma: no cover - compiled
    """:func:`conv_u8x16` with the ``s16x8`` product (int16 input and weights)."""
    p_all = offs.shape[0]
    a, ob, ost, ro, nseg = xp.ctypes.data, out.ctypes.data, np.int64(out.strides[0]), roff.ctypes.data, roff.shape[0]
    for c in range(chunks.shape[0]):
        col, nb = chunks[c, 0], chunks[c, 1]
        w, ini = wpk.ctypes.data + chunks[c, 2], init.ctypes.data + 4 * col
        p = 0
        while p + ROWS <= p_all:
            _tile_s16x8(ROWS, nb, a, offs.ctypes.data + 8 * p, ro, nseg, l4, w, ini, ob + ost * p + 4 * col, ost)
            p += ROWS
        while p < p_all:
            _tile_s16x8(1, nb, a, offs.ctypes.data + 8 * p, ro, nseg, l4, w, ini, ob + ost * p + 4 * col, ost)
            p += 1


_CHECKED: dict[str, bool] = {}


def checked(prod: Product) -> bool:
    """Whether ``prod`` (one of :data:`PRODUCTS`) compiles and computes a small random product equal to
    NumPy's int64 one (two chunks, full and single-pixel tiles, two segments); tried once per process.

    Args:
        prod: the product.

    Returns:
        True when the product may be used.
    """
    ok = _CHECKED.get(prod.name)
    if ok is None:
        try:
            ok = _self_test(prod)
        except Exception:  # numba / LLVM rejecting the product: the callers take NumPy's path
            ok = False
        _CHECKED[prod.name] = ok
    return ok


def _self_test(prod: Product) -> bool:
    """:func:`checked`'s comparison (packing as in the module docstring)."""
    rng = np.random.default_rng(1)
    g, lanes = prod.per_group, prod.lanes
    dt, wdt = (np.uint8, np.int8) if g == 4 else (np.int16, np.int16)
    lo, hi = (0, 256) if g == 4 else (-255, 256)
    l4, pixels, nbs = 3, ROWS + 1, (prod.max_nb, 1)
    xp = rng.integers(lo, hi, 4096).astype(dt)
    offs = rng.integers(0, 2048 // xp.itemsize, pixels).astype(np.int64) * xp.itemsize
    roff = np.array([0, 4 * l4 + 8], np.int64)  # two segments, not adjacent
    groups = l4 * roff.size
    npad = lanes * sum(nbs)
    chunk_w = [rng.integers(-128, 128, (groups, lanes * nb, g)).astype(wdt) for nb in nbs]
    chunks = np.array([(0, nbs[0], 0), (lanes * nbs[0], nbs[1], chunk_w[0].nbytes)], np.int64)
    init = rng.integers(-1000, 1000, npad).astype(np.int32)
    out = np.empty((pixels, npad), np.int32)
    globals()[f"conv_{prod.name}"](xp, offs, roff, l4, np.concatenate([c.ravel() for c in chunk_w]), chunks, init,
                                   out)
    # reference: u[p, k] read as the product reads it (4 * l4 bytes per segment); w[k, n] unpacked
    raw = xp.view(np.uint8)
    u = np.stack([np.concatenate([raw[o + r:o + r + 4 * l4].view(dt) for r in roff]) for o in offs])
    w = np.concatenate([c.transpose(0, 2, 1).reshape(groups * g, -1) for c in chunk_w], axis=1)
    want = u.astype(np.int64) @ w.astype(np.int64) + init
    return bool(np.array_equal(out, want))


def warm_up() -> None:
    """Compile (or load from numba's cache) and self-test every product of :data:`PRODUCTS`, as
    :func:`pymli.kernels._jit.warm_up` asks of each compiled-kernel module."""
    for prod in PRODUCTS:
        checked(prod)
