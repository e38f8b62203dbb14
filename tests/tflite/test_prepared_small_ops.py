"""Prepared steps of small TFLM reference operators against the unprepared computation they replace
(seeded random data, odd shapes, extreme values, batches; both rounding platforms, switched between runs):
the int16-input unary tables, the prepared SVDF, the small-row SOFTMAX, the convolutions as one matrix
product, MEAN / SUM, STRIDED_SLICE, ADD / SUB tables, QUANTIZE from float32, the in-place MBQM."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from pymli.config import use_platform
from pymli.kernels import _jit
from pymli.tflite.tgraph import TGraph, TOp, TTensor
from pymli.tflm import activations as A
from pymli.tflm import quant_util as qu
from pymli.tflm import quantize as Q
from pymli.tflm import conv as C
from pymli.tflm import elementwise, shape_ops, svdf
from pymli.tflm.conv import conv_out_geometry
from pymli.tflm.handlers import HANDLERS, prepare_op

PLATFORMS = ("vpx", "em")


def _unprepared(g: TGraph, op: TOp, ins: list) -> list:
    """The operator's handler with every prepared form of this change turned off (the kernels' own path)."""
    with pytest.MonkeyPatch.context() as mp:
        for mod, name in ((C, "prepare_mac"), (elementwise, "prepare_add_sub")):
            mp.setattr(mod, name, lambda *a, **k: None)
        if op.name in ("STRIDED_SLICE", "MEAN", "SUM"):  # index inputs as if computed: nothing prepared
            T = list(g.tensors)
            for i in op.inputs[1:4]:
                T[i] = TTensor(T[i].index, T[i].name, T[i].shape, T[i].dtype, T[i].scale, T[i].zero_point, 0, None,
                               False)
            g = TGraph(T, g.ops, g.inputs, g.outputs)
        return HANDLERS[op.name](g, op, ins)


def _tensor(i: int, shape: tuple, dtype: type, scale: float, zp: int, data: np.ndarray | None = None) -> TTensor:
    return TTensor(i, f"t{i}", tuple(shape), np.dtype(dtype), np.array([scale], np.float32),
                   np.array([zp], np.int64), 0, data, False)


def _graph(tensors: list[TTensor], name: str, options: object = None) -> tuple[TGraph, TOp]:
    op = TOp(0, name, tuple(range(len(tensors) - 1)), (len(tensors) - 1,), options)
    return TGraph(tensors, [op], [0], [len(tensors) - 1]), op


def _extremes(rng: np.random.Generator, shape: tuple, dtype: type) -> np.ndarray:
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max + 1, size=shape).astype(dtype)
    flat = x.reshape(-1)
    flat[: min(2, flat.size)] = [info.min, info.max][: min(2, flat.size)]
    return x


@pytest.mark.parametrize("seed", range(6))
def test_int16_unary_tables_equal_handler(seed: int) -> None:
    rng = np.random.default_rng(seed)
    shape = tuple(int(n) for n in rng.integers(1, 6, size=int(rng.integers(1, 4))))
    si, so = float(rng.uniform(1e-4, 0.05)), float(rng.uniform(1e-4, 0.05))
    zi, zo = 0, int(rng.integers(-20, 20))
    alpha = np.float32(rng.uniform(-1, 1))
    cases = [("QUANTIZE", np.int8, None, zo), ("QUANTIZE", np.int16, None, 0), ("QUANTIZE", np.int32, None, zo),
             ("LEAKY_RELU", np.int16, SimpleNamespace(Alpha=lambda: alpha), 0),
             ("DEQUANTIZE", np.float32, None, 0)]
    for name, od, opts, z in cases:
        g, op = _graph([_tensor(0, shape, np.int16, si, zi), _tensor(1, shape, od, so, z)], name, opts)
        inv = prepare_op(g, op)
        for platform in PLATFORMS + PLATFORMS[::-1]:
            with use_platform(platform):
                for batch in ((), (3,)):
                    x = _extremes(rng, batch + shape, np.int16)
                    got, want = inv([x])[0], HANDLERS[name](g, op, [x])[0]
                    assert got.dtype == want.dtype and np.array_equal(got, want), (name, od, platform)


def _svdf_case(rng: np.random.Generator, sd: type) -> tuple:
    rank = int(rng.integers(1, 4))
    units = int(rng.integers(1, 6))
    nf, n_in, nm = units * rank, int(rng.integers(1, 40)), int(rng.integers(2, 12))
    p = svdf.svdf_params(rng.uniform(1e-3, 0.1), int(rng.integers(-128, 128)), rng.uniform(1e-4, 0.05),
                         rng.uniform(1e-4, 0.05), int(rng.integers(-100, 100)) if rng.random() < 0.7 else 0,
                         rng.uniform(1e-4, 0.05), rng.uniform(1e-3, 0.2), int(rng.integers(-128, 128)))
    wf = _extremes(rng, (nf, n_in), np.int8)
    wt = _extremes(rng, (nf, nm), sd)
    bias = None if rng.random() < 0.3 else rng.integers(-(2**31), 2**31, size=units).astype(np.int32)
    return p, wf, wt, bias, rank, nf, n_in, nm


@pytest.mark.parametrize("sd", [np.int8, np.int16])
@pytest.mark.parametrize("seed", range(12))
def test_prepared_svdf_equals_reference(seed: int, sd: type) -> None:
    rng = np.random.default_rng(100 + seed)
    p, wf, wt, bias, rank, nf, n_in, nm = _svdf_case(rng, sd)
    step = svdf.prepare_svdf_int8(wf, wt, bias, p, rank=rank)
    nb = int(rng.integers(1, 4))
    state = _extremes(rng, (nb, nf * nm), sd)
    st_ref = state.copy()
    for k in range(5):  # several steps: the state carried, the platform switched between them
        with use_platform(PLATFORMS[k % 2]):
            x = _extremes(rng, (nb, n_in), np.int8)
            y, state = step(x, state)
            y_ref, st_ref = svdf.svdf_int8(x, wf, wt, bias, st_ref, p, rank=rank)
        assert np.array_equal(y, y_ref) and y.dtype == y_ref.dtype
        assert np.array_equal(state, st_ref) and state.dtype == st_ref.dtype


def test_prepared_svdf_refuses_wrong_input() -> None:
    rng = np.random.default_rng(7)
    p, wf, wt, bias, rank, nf, n_in, nm = _svdf_case(rng, np.int16)
    step = svdf.prepare_svdf_int8(wf, wt, bias, p, rank=rank)
    with pytest.raises(Exception, match="SVDF"):
        step(np.zeros((1, n_in + 1), np.int8), np.zeros((1, nf * nm), np.int16))


@pytest.mark.parametrize("od", [np.int8, np.int16])
@pytest.mark.parametrize("seed", range(10))
def test_prepared_softmax_equals_reference(seed: int, od: type) -> None:
    rng = np.random.default_rng(200 + seed)
    beta, scale = float(rng.choice([0.5, 1.0, 2.0])), float(10 ** rng.uniform(-4, 1))
    m, ls, dmin = A.softmax_params(beta, scale)
    f = A.prepare_softmax_int8(m, ls, dmin, od)
    for k, shape in enumerate([(1, 2), (1, 3), (3, 5), (2, 1, 7), (4, 16), (1, 64), (2, 40), (1, 300), (6,)]):
        with use_platform(PLATFORMS[k % 2]):
            x = _extremes(rng, shape, np.int8)
            if k % 3 == 0:
                x[..., 0] = 127  # one dominant score: the others far below diff_min for small scales
                x[..., -1] = -128
            got = f(x)
            want = A.softmax_int8(x, input_multiplier=m, input_left_shift=ls, diff_min=dmin, out_dtype=od)
        assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want), (shape, beta, scale)


def _mac_case(rng: np.random.Generator, kind: str, xd: type, bias_dtype: type | None, many: bool = False) -> tuple:
    """A random small CONV_2D / DEPTHWISE_CONV_2D / TRANSPOSE_CONV: the graph and its operator (``many``: 8 to
    24 output channels, depth multipliers 8 to 12: the compiled step's blocks of columns)."""
    h, w_, cin = int(rng.integers(1, 6)), int(rng.integers(1, 7)), int(rng.integers(1, 4))
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    dil = (int(rng.integers(1, 3)), int(rng.integers(1, 3))) if kind != "TRANSPOSE_CONV" else (1, 1)
    same = bool(rng.integers(0, 2))
    act = int(rng.choice([0, 1, 3]))
    if not same and kind != "TRANSPOSE_CONV":  # a VALID window inside the input
        kh, kw = min(kh, h), min(kw, w_)
        dil = (dil[0] if (kh - 1) * dil[0] < h else 1, dil[1] if (kw - 1) * dil[1] < w_ else 1)
    izp, ozp = (int(rng.integers(-128, 128)), int(rng.integers(-128, 128))) if xd == np.int8 else (0, 0)
    si, so = float(rng.uniform(1e-3, 0.1)), float(rng.uniform(1e-3, 0.5)) * (1 if rng.random() < 0.7 else 1e-4)
    if kind == "CONV_2D":
        cout = int(rng.choice([8, 9, 12, 16, 24])) if many else int(rng.integers(1, 6))
        wshape = (cout, kh, kw, cin)
    elif kind == "DEPTHWISE_CONV_2D":
        dm = int(rng.choice([8, 9, 12])) if many else int(rng.integers(1, 3))
        cout = cin * dm
        wshape = (1, kh, kw, cout)
    else:
        cout = int(rng.choice([8, 10, 16])) if many else int(rng.integers(1, 5))
        wshape = (cout, kh, kw, cin)
    ws = rng.uniform(1e-3, 0.05, size=cout).astype(np.float32)
    qdim = 3 if kind == "DEPTHWISE_CONV_2D" else 0
    wt = TTensor(1, "w", wshape, np.dtype(np.int8), ws, np.zeros(cout, np.int64), qdim, _extremes(rng, wshape, np.int8),
                 False)
    bias = None
    if bias_dtype is not None:
        info = np.iinfo(bias_dtype)
        big = min(info.max, 2**40)
        bias = rng.integers(-big, big, size=cout).astype(bias_dtype)
    if kind == "TRANSPOSE_CONV":
        oh = (h - 1) * stride[0] + kh if not same else h * stride[0]
        ow = (w_ - 1) * stride[1] + kw if not same else w_ * stride[1]
        x = _tensor(2, (1, h, w_, cin), xd, si, izp)
        tensors = [_tensor(0, (4,), np.int32, 0.0, 0, np.array([1, oh, ow, cout], np.int32)), wt, x]
        opts = SimpleNamespace(StrideH=lambda: stride[0], StrideW=lambda: stride[1], Padding=lambda: 0 if same else 1,
                               FusedActivationFunction=lambda: 0)
        out_hw = (oh, ow)
    else:
        x = _tensor(0, (1, h, w_, cin), xd, si, izp)
        tensors = [x, wt]
        opts = SimpleNamespace(StrideH=lambda: stride[0], StrideW=lambda: stride[1], Padding=lambda: 0 if same else 1,
                               DilationHFactor=lambda: dil[0], DilationWFactor=lambda: dil[1],
                               FusedActivationFunction=lambda: act,
                               DepthMultiplier=lambda: cout // cin)
        out_hw = conv_out_geometry(same, (h, w_), (kh, kw), stride, dil)[0]
    if bias is not None:
        tensors.append(_tensor(len(tensors), (cout,), bias_dtype, si * float(ws[0]), 0, bias))
    tensors.append(_tensor(len(tensors), (1,) + tuple(out_hw) + (cout,), xd, so, ozp))
    g, op = _graph(tensors, kind, opts)
    xi = 2 if kind == "TRANSPOSE_CONV" else 0
    return g, op, xi


@pytest.mark.parametrize("kind,xd,bias_dtype", [
    ("CONV_2D", np.int8, np.int32), ("CONV_2D", np.int8, None), ("CONV_2D", np.int16, np.int64),
    ("CONV_2D", np.int16, np.int32), ("CONV_2D", np.int16, None),
    ("DEPTHWISE_CONV_2D", np.int8, np.int32), ("DEPTHWISE_CONV_2D", np.int16, np.int64),
    ("TRANSPOSE_CONV", np.int8, np.int32), ("TRANSPOSE_CONV", np.int16, np.int64),
    ("TRANSPOSE_CONV", np.int16, np.int16),
    ("TRANSPOSE_CONV", np.int16, None)])
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("jit", [True, False])
def test_prepared_mac_equals_handler(kind: str, xd: type, bias_dtype: type | None, seed: int, jit: bool) -> None:
    """The matrix form, its output stage compiled (JIT on; NumPy where numba is missing) or NumPy (JIT off)."""
    rng = np.random.default_rng(300 + seed)
    g, op, xi = _mac_case(rng, kind, xd, bias_dtype)
    inv = prepare_op(g, op)
    T = g.tensors
    consts = [T[i].data for i in op.inputs]
    prev = _jit.set_enabled(jit)
    try:
        for k in range(4):
            with use_platform(PLATFORMS[k % 2]):
                ins = list(consts)
                ins[xi] = _extremes(rng, T[op.inputs[xi]].shape, xd)
                if k == 3:  # a batch of two (one sample repeated)
                    ins[xi] = np.concatenate([ins[xi], ins[xi][::-1]])
                got = inv(ins)[0]
                want = _unprepared(g, op, ins)[0]
            assert got.dtype == want.dtype and np.array_equal(got, want.reshape(got.shape)), (kind, k)
    finally:
        _jit.set_enabled(prev)


def test_prepared_mac_takes_the_matrix_form() -> None:
    """The prepared form is the matrix product (not the handler again): the kernel is not called."""
    rng = np.random.default_rng(5)
    g, op, xi = _mac_case(rng, "CONV_2D", np.int16, np.int64)
    inv = prepare_op(g, op)
    ins = [g.tensors[i].data for i in op.inputs]
    ins[xi] = _extremes(rng, g.tensors[op.inputs[xi]].shape, np.int16)
    orig = C.conv2d
    try:
        C.conv2d = None  # type: ignore[assignment]
        got = inv(ins)[0]
    finally:
        C.conv2d = orig
    assert np.array_equal(got, _unprepared(g, op, ins)[0])


_MAC_KINDS = [("CONV_2D", np.int8, np.int32), ("CONV_2D", np.int16, np.int64), ("CONV_2D", np.int16, np.int32),
              ("DEPTHWISE_CONV_2D", np.int8, None), ("DEPTHWISE_CONV_2D", np.int16, np.int64),
              ("TRANSPOSE_CONV", np.int8, np.int32), ("TRANSPOSE_CONV", np.int16, np.int16)]


@pytest.mark.parametrize("kind,xd,bias_dtype", _MAC_KINDS)
@pytest.mark.parametrize("jit", [True, False])
def test_prepared_mac_blocks_equal_handler(kind: str, xd: type, bias_dtype: type | None, jit: bool) -> None:
    """Many output channels (the compiled step's blocks of 8 or more columns, :func:`C._gather_form`): the
    prepared step against the handler's kernel on contiguous, read-only, non-contiguous (the NumPy step) and
    constant extreme inputs; the prepared form is taken, mostly in blocks."""
    blocks, taken = [], []
    gather, prepare = C._gather_form, C.prepare_mac

    def spy_gather(mat: np.ndarray, nch: int) -> tuple:
        form = gather(mat, nch)
        blocks.append(form[1].shape[2])
        return form

    def spy_prepare(*a: object, **k: object) -> object:
        mac = prepare(*a, **k)
        taken.append(mac is not None)
        return mac
    prev = _jit.set_enabled(jit)
    try:
        for seed in range(8):
            rng = np.random.default_rng(700 + seed)
            g, op, xi = _mac_case(rng, kind, xd, bias_dtype, many=True)
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(C, "_gather_form", spy_gather)
                mp.setattr(C, "prepare_mac", spy_prepare)
                inv = prepare_op(g, op)
            T = g.tensors
            shape = T[op.inputs[xi]].shape
            for k in range(4):
                with use_platform(PLATFORMS[k % 2]):
                    x = _extremes(rng, shape, xd)
                    if k == 1:
                        x.flags.writeable = False
                    elif k == 2:  # a non-contiguous view
                        x = _extremes(rng, shape[:-1] + (2 * shape[-1],), xd)[..., ::2]
                    elif k == 3:
                        x[...] = np.iinfo(xd).min if seed % 2 else np.iinfo(xd).max
                    ins = [T[i].data for i in op.inputs]
                    ins[xi] = x
                    got = inv(ins)[0]
                    want = _unprepared(g, op, ins)[0]
                assert got.dtype == want.dtype and np.array_equal(got, want.reshape(got.shape)), (kind, seed, k)
    finally:
        _jit.set_enabled(prev)
    assert sum(taken) >= 4 and sum(b > 1 for b in blocks) >= len(blocks) // 2, (taken, blocks)


@pytest.mark.parametrize("seed", range(12))
def test_gather_form_holds_the_matrix(seed: int) -> None:
    """:func:`C._gather_form`: the blocks' rows and weights rebuild the matrix (sparse, dense, empty columns,
    every channel count's divisors), each block's nonzero rows first, ascending, each once."""
    rng = np.random.default_rng(900 + seed)
    nch = int(rng.choice([1, 3, 8, 9, 16, 24, 32]))
    n_in, reps = int(rng.integers(1, 40)), int(rng.integers(1, 6))
    mat = rng.integers(-128, 128, size=(n_in, reps * nch)) * (rng.random((n_in, reps * nch)) < rng.random())
    if seed % 3 == 0:  # rows shared by an output position's channels (a convolution's pattern), some zero weights
        mat = np.repeat(rng.random((n_in, reps, 1)) < 0.3, nch, 2).reshape(n_in, -1) * rng.integers(-3, 4, mat.shape)
    if seed == 1:
        mat[:] = 0
    idx, w, ns = C._gather_form(mat.astype(np.int64), nch)
    n_b, n_t, n_g = w.shape
    assert ns > 0
    assert idx.dtype == np.uint32 and w.dtype == np.int32 and idx.shape == (n_b, n_t) and n_b * n_g == mat.shape[1]
    assert nch % n_g == 0 and (n_g == 1 or n_g >= 8)
    back = np.zeros_like(mat)
    for b in range(n_b):
        for t in range(n_t):
            back[idx[b, t], b * n_g:(b + 1) * n_g] += w[b, t]
    assert np.array_equal(back, mat)
    nz = np.abs(w).sum(2) > 0
    for b in range(n_b):
        rows = idx[b][nz[b]]
        assert np.array_equal(rows, np.unique(rows)) and nz[b, :rows.size].all()


def test_prepare_mac_refuses_an_empty_matrix() -> None:
    """No prepared form for a map without outputs (the probe's matrix is empty): the kernel's own path."""
    kw = dict(input_zp=0, bias=None, bits=32, multiplier=np.full(3, 1 << 30), shift=np.zeros(3, np.int64),
              output_zp=0, act_min=-128, act_max=127)
    assert C.prepare_mac(lambda xs: np.zeros((xs.shape[0], 0, 3), np.int64), (1, 4), np.dtype(np.int8), (1, 2, 3),
                         **kw) is None


@pytest.mark.parametrize("seed", range(16))
def test_prepare_mac_linear_map_compiled_equals_numpy(seed: int) -> None:
    """:func:`C.prepare_mac` of a random sparse integer map (channel counts with and without blocks, weights
    that are sums of taps, zero points, biases up to the int32 limits: wrapped sums, both accumulator widths,
    extreme multipliers and shifts, a narrow clamp; seeds from 12: dense maps, the float64 product's step)
    with the JIT on and off, against ``requantize_acc`` of the exact sums: batches of 4, 1 and 0 samples,
    reversed and strided (non-contiguous) batches."""
    rng = np.random.default_rng(950 + seed)
    xd = np.int16 if seed % 2 else np.int8
    bits = 64 if seed % 4 == 1 else 32
    nch = int(rng.choice([1, 2, 5, 8, 12, 16]))
    per, reps = (int(rng.integers(1, 5)), int(rng.integers(1, 9))), int(rng.integers(1, 7))
    if seed >= 12:
        per, reps = (int(rng.integers(8, 12)), int(rng.integers(12, 17))), 128 // nch
    n_in = per[0] * per[1]
    mat = rng.integers(-300, 300, size=(n_in, reps, nch)) * (rng.random((n_in, reps, 1)) < (0.4 if seed < 12 else 1))
    mat = mat.reshape(n_in, -1).astype(np.int64)
    dense = []
    pays = C._dense_pays
    zp = 0 if xd == np.int16 else int(rng.integers(-128, 128))
    big = 2 ** int(rng.integers(8, 32)) if seed % 4 else 2**31
    bias = rng.integers(-big, big, size=nch) if seed % 3 else None
    x = _extremes(rng, (4,) + per, xd)
    exact = (x.reshape(4, n_in).astype(np.int64) - zp) @ mat + (0 if bias is None else np.tile(bias, reps))
    exact = exact.reshape(4, reps, nch)
    info = np.iinfo(xd)
    m = rng.integers(2**30, 2**31, size=nch)
    m[0] = 2**31 - 1
    mag = int(np.abs(qu.wrap(exact, 32) if bits == 32 else exact).max(initial=1)) + 1
    sh = np.clip(info.bits - 1 - mag.bit_length() + rng.integers(-2, 3, size=nch), -31, 2)  # outputs in range
    if nch > 2:
        sh[-1] = -31
    ozp = 0 if xd == np.int16 else int(rng.integers(-128, 128))
    lo, hi = (int(info.min), int(info.max)) if seed % 3 != 2 else (int(rng.integers(info.min, 0)), int(info.max) - 3)

    def acc(xs: np.ndarray) -> np.ndarray:
        return np.rint(xs.reshape(xs.shape[0], n_in) @ mat).astype(np.int64).reshape((xs.shape[0], reps, nch))
    want = C.requantize_acc(qu.wrap(exact, 32) if bits == 32 else exact, m, sh, output_zp=ozp, act_min=lo,
                            act_max=hi, acc_bits=bits)
    for on in (True, False):
        prev = _jit.set_enabled(on)
        try:
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(C, "_dense_pays", lambda *a: dense.append(pays(*a)) or dense[-1])
                mac = C.prepare_mac(acc, (1,) + per, np.dtype(xd), (1, reps, nch), input_zp=zp, bias=bias,
                                    bits=bits, multiplier=m, shift=sh, output_zp=ozp, act_min=lo, act_max=hi)
            assert mac is not None
            for xs, ref in ((x, want), (x[:1], want[:1]), (x[:0], want[:0]), (x[::-1], want[::-1]),
                            (x[::2], want[::2])):
                got = mac(xs)
                assert got.dtype == xd and np.array_equal(got, ref), (on, xs.shape)
        finally:
            _jit.set_enabled(prev)
    assert dense == [seed >= 12] * 2


@pytest.mark.parametrize("xd", [np.int8, np.int16])
@pytest.mark.parametrize("seed", range(24))
@pytest.mark.parametrize("jit", [True, False])
def test_prepared_mean_sum_equals_handler(seed: int, xd: type, jit: bool) -> None:
    """Compiled (JIT on, axes in one block; NumPy where numba is missing) or NumPy (JIT off)."""
    prev = _jit.set_enabled(jit)
    try:
        _check_mean_sum(seed, xd)
    finally:
        _jit.set_enabled(prev)


def _check_mean_sum(seed: int, xd: type) -> None:
    rng = np.random.default_rng(400 + seed)
    shape = tuple(int(n) for n in rng.integers(1, 7, size=int(rng.integers(1, 5))))
    nd = len(shape)
    axes = rng.choice(np.arange(-nd, nd), size=int(rng.integers(1, nd + 1))).astype(np.int32)
    keep = bool(rng.integers(0, 2))
    info = np.iinfo(xd)
    zi = int(rng.integers(info.min, info.max)) if xd == np.int8 else 0
    for name in ("MEAN", "SUM"):
        red = tuple(sorted({int(a) % nd for a in axes}))
        oshape = tuple(1 if k in red else n for k, n in enumerate(shape)) if keep else \
            tuple(n for k, n in enumerate(shape) if k not in red)
        tensors = [_tensor(0, shape, xd, float(rng.uniform(1e-3, 0.1)), zi),
                   _tensor(1, axes.shape, np.int32, 0.0, 0, axes),
                   _tensor(2, oshape, xd, float(rng.uniform(1e-4, 0.1)), int(rng.integers(-50, 50)))]
        g, op = _graph(tensors, name, SimpleNamespace(KeepDims=lambda: keep))
        inv = prepare_op(g, op)
        for k in range(3):
            with use_platform(PLATFORMS[k % 2]):
                x = _extremes(rng, shape, xd)
                if k == 2:
                    x[...] = info.max if rng.random() < 0.5 else info.min
                got, want = inv([x, axes])[0], _unprepared(g, op, [x, axes])[0]
            assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want), (name, k)


@pytest.mark.parametrize("seed", range(12))
def test_prepared_strided_slice_equals_handler(seed: int) -> None:
    rng = np.random.default_rng(500 + seed)
    for _ in range(100):  # arguments drawn again until TFLM accepts the slice
        shape = tuple(int(n) for n in rng.integers(1, 7, size=int(rng.integers(1, 5))))
        nd = len(shape)
        begin = np.array([int(rng.integers(-n, n)) for n in shape], np.int32)
        end = np.array([int(rng.integers(-n - 1, n + 2)) for n in shape], np.int32)
        strides = np.array([int(rng.choice([-2, -1, 1, 2, 3])) for _ in shape], np.int32)
        masks = [int(rng.integers(0, 1 << nd)) for _ in range(3)]
        try:
            oshape = shape_ops.strided_slice(np.zeros(shape, np.int16), begin, end, strides, begin_mask=masks[0],
                                             end_mask=masks[1], shrink_axis_mask=masks[2]).shape
            break
        except Exception:  # noqa: BLE001, S112 - a slice TFLM refuses: draw another
            continue
    else:
        raise AssertionError("no accepted strided slice in 100 draws")
    opts = SimpleNamespace(BeginMask=lambda: masks[0], EndMask=lambda: masks[1], ShrinkAxisMask=lambda: masks[2],
                           EllipsisMask=lambda: 0, NewAxisMask=lambda: 0, Offset=lambda: False)
    tensors = [_tensor(0, shape, np.int16, 0.1, 0), _tensor(1, (nd,), np.int32, 0.0, 0, begin),
               _tensor(2, (nd,), np.int32, 0.0, 0, end), _tensor(3, (nd,), np.int32, 0.0, 0, strides),
               _tensor(4, oshape, np.int16, 0.1, 0)]
    g, op = _graph(tensors, "STRIDED_SLICE", opts)
    inv = prepare_op(g, op)
    for dt in (np.int16, np.int8):
        x = _extremes(rng, shape, dt)
        ins = [x, begin, end, strides]
        got, want = inv(ins)[0], _unprepared(g, op, ins)[0]
        assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)


@pytest.mark.parametrize("name", ["ADD", "SUB"])
@pytest.mark.parametrize("xd", [np.int8, np.int16])
@pytest.mark.parametrize("seed", range(8))
def test_prepared_add_sub_equals_kernel(name: str, xd: type, seed: int) -> None:
    rng = np.random.default_rng(600 + seed)
    shape = tuple(int(n) for n in rng.integers(1, 6, size=int(rng.integers(1, 4))))
    shape2 = shape
    if rng.random() < 0.6:  # broadcasting: fewer axes, some of extent 1
        shape2 = tuple(1 if rng.random() < 0.5 else n for n in shape)[-int(rng.integers(1, len(shape) + 1)):]
    int8 = xd == np.int8
    zps = [int(rng.integers(-128, 128)) if int8 else 0 for _ in range(3)]
    sc = [float(10 ** rng.uniform(-4, -1)) for _ in range(3)]
    act = int(rng.choice([0, 1, 3]))
    const = int(rng.integers(0, 3))  # 0: none, 1: input 1, 2: input 2 constant
    c1 = _extremes(rng, shape, xd) if const == 1 else None
    c2 = _extremes(rng, shape2, xd) if const == 2 else None
    oshape = np.broadcast_shapes(shape, shape2)
    tensors = [_tensor(0, shape, xd, sc[0], zps[0], c1), _tensor(1, shape2, xd, sc[1], zps[1], c2),
               _tensor(2, oshape, xd, sc[2], zps[2])]
    g, op = _graph(tensors, name, SimpleNamespace(FusedActivationFunction=lambda: act))
    inv = prepare_op(g, op)
    for k in range(4):
        with use_platform(PLATFORMS[k % 2]):
            x1 = c1 if c1 is not None else _extremes(rng, shape, xd)
            x2 = c2 if c2 is not None else _extremes(rng, shape2, xd)
            got, want = inv([x1, x2])[0], _unprepared(g, op, [x1, x2])[0]
        assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want), (name, k)


@pytest.mark.parametrize("od", [np.int8, np.int16, np.int32])
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("jit", [True, False])
def test_prepared_affine_quantize_equals_reference(seed: int, od: type, jit: bool) -> None:
    """Compiled (JIT on; NumPy where numba is missing) or NumPy (JIT off) against the reference: ties,
    signed zeros, infinities, NaN, values past int32, a non-contiguous input, 0-d and empty inputs."""
    rng = np.random.default_rng(700 + seed)
    scale = float(np.float32(10 ** rng.uniform(-5, 1)))
    zp = int(rng.integers(-128, 128)) if od == np.int8 else 0
    f = Q.prepare_affine_quantize(scale=scale, zero_point=zp, out_dtype=od)
    prev = _jit.set_enabled(jit)
    try:
        for k, shape in enumerate([(1, 5), (3, 7, 2), (40,), (), (0, 3), (6, 8)]):
            x = (rng.standard_normal(shape) * 10 ** rng.uniform(-3, 12)).astype(np.float32)
            if x.size:  # ties (k + 0.5 quotients), signed zeros, infinities, NaN, values past int32
                flat = x.reshape(-1)
                ties = (np.arange(flat.size) - flat.size // 2 + 0.5).astype(np.float32) * np.float32(scale)
                flat[::2] = ties[::2]
                flat[:5] = np.array([-0.0, np.inf, -np.inf, 3e38, np.nan], np.float32)[:min(5, flat.size)]
            if k == 5:
                x = x[:, ::2]
            with use_platform(PLATFORMS[k % 2]), np.errstate(invalid="ignore"):
                got = f(x)
                want = Q.affine_quantize(x, scale=scale, zero_point=zp, out_dtype=od)
            assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want), (shape, scale)
    finally:
        _jit.set_enabled(prev)


@pytest.mark.parametrize("seed", range(6))
def test_mbqm_inplace_equals_general(seed: int) -> None:
    rng = np.random.default_rng(800 + seed)
    x = rng.integers(-(2**31), 2**31, size=300, dtype=np.int64)
    x[:6] = [-(2**31), 2**31 - 1, -1, 0, 1, -(2**30)]
    cases = [(int(rng.integers(2**30, 2**31)), int(rng.integers(-40, 8))) for _ in range(20)]
    cases += [(-(2**31), -3), (2**30, 0), (0, 0), (-(2**30) - 7, 2), (2**31 - 1, -31), (2**31 - 1, -33)]
    for m, s in cases:
        got = qu.mbqm_inplace(x.copy(), m, s)
        assert np.array_equal(got, qu.multiply_by_quantized_multiplier(x, m, s)), (m, s)


@pytest.mark.parametrize("bits", [32, 64])
def test_output_stage_ties_equal_requantize_acc(bits: int) -> None:
    """Dense accumulators around zero with small right shifts: RoundingDivideByPOT's ties (negative ones
    included) occur often, where the fused rounding could differ."""
    rng = np.random.default_rng(900 + bits)
    acc = np.arange(-5000, 5000, dtype=np.int64).reshape(-1, 4)  # 4 channels
    for _ in range(6):
        m = rng.integers(2**30, 2**31, size=4, dtype=np.int64)
        m[0] = 2**30 + 1
        sh = rng.integers(-5, 1 if bits == 32 else 8, size=4).astype(np.int64)
        stage = C._output_stage(m, sh, bits, 3, -(2**15), 2**15 - 1, np.dtype(np.int16))
        assert stage is not None
        want = C.requantize_acc(acc.copy(), m, sh, output_zp=3, act_min=-(2**15), act_max=2**15 - 1, acc_bits=bits)
        assert np.array_equal(stage(acc.copy()), want.astype(np.int16)), (m, sh)


def test_mbqm_inplace_ties() -> None:
    x = np.arange(-70000, 70000, dtype=np.int64)
    for m in (2**30 + 1, 2**30 + 12345, 2**31 - 1, 2**30, 1234567):
        for s in (-1, -2, -3, -5, 0, 2):
            assert np.array_equal(qu.mbqm_inplace(x.copy(), m, s), qu.multiply_by_quantized_multiplier(x, m, s)), (m, s)


@pytest.mark.parametrize("seed", range(4))
def test_requantize_clamp_compiled_equals_numpy(seed: int) -> None:
    """The compiled output stage (JIT on) against the NumPy one (JIT off): random and tie-dense sums, sums
    beyond int32 (wrapped), every output type, a 0-d and a non-contiguous accumulator."""
    if not _jit.available():
        pytest.skip("numba is not installed: only the NumPy stage exists")
    rng = np.random.default_rng(1000 + seed)
    accs = [rng.integers(-(2**40), 2**40, size=(3, 37)), rng.integers(-(2**31), 2**31, size=101),
            np.arange(-70000, 70000, dtype=np.int64), np.array(rng.integers(-(2**31), 2**31)),
            rng.integers(-(2**20), 2**20, size=(9, 8))[:, ::3]]
    accs[1][:5] = [-(2**31), 2**31 - 1, -1, 0, 1]
    cases = [(int(rng.integers(2**30, 2**31)), int(rng.integers(-31, 8))) for _ in range(12)]
    cases += [(2**31 - 1, -31), (2**30, 0), (2**30 + 1, -1), (0, 0), (1234567, -3), (2**31 - 1, 2)]
    for dt in (np.int8, np.int16, np.int32):
        info = np.iinfo(dt)
        for acc in accs:
            acc = np.asarray(acc, np.int64)
            for m, s in cases:
                zp, lo, hi = int(rng.integers(-5, 6)), int(info.min) + int(rng.integers(0, 3)), int(info.max)
                got = []
                for on in (True, False):
                    prev = _jit.set_enabled(on)
                    try:
                        got.append(qu.requantize_clamp(acc.copy(), m, s, zp, lo, hi, dt, True))
                    finally:
                        _jit.set_enabled(prev)
                assert got[0].dtype == got[1].dtype == dt and got[0].shape == got[1].shape == acc.shape
                assert np.array_equal(got[0], got[1]), (dt, m, s, zp)


@pytest.mark.parametrize("sub", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_prepared_add_sub16_compiled_equals_numpy_and_kernel(sub: bool, seed: int) -> None:
    """The int16 ADD / SUB step as one compiled call (JIT on) against the NumPy step (JIT off) and
    :func:`elementwise.add_sub`: inputs of one shape, a constant of that shape, inputs repeated along the
    leading axes (the compiled step), one repeated along the last axis (the NumPy step), a non-contiguous
    input, an empty one, both platforms."""
    if not _jit.available():
        pytest.skip("numba is not installed: only the NumPy step exists")
    rng = np.random.default_rng(1100 + seed)
    shape = tuple(int(n) for n in rng.integers(1, 9, size=int(rng.integers(1, 5))))
    sc = [float(10 ** rng.uniform(-4, -1)) for _ in range(3)]
    p = elementwise.add_sub_params(sc[0], 0, sc[1], 0, sc[2], 0, int16=True, sub=sub)
    lo, hi = (0, 32767) if seed % 2 else (-32768, 32767)
    odd = _extremes(rng, shape[:-1] + (2 * shape[-1],), np.int16)[..., ::2]
    cases = [(None, None, _extremes(rng, shape, np.int16), _extremes(rng, shape, np.int16)),
             (_extremes(rng, shape, np.int16), None, None, odd),
             (None, _extremes(rng, shape, np.int16), odd, None),
             (None, None, _extremes(rng, shape, np.int16), _extremes(rng, shape[-1:], np.int16)),
             (None, _extremes(rng, (1,) + shape[-1:], np.int16), _extremes(rng, shape, np.int16), None),
             (None, None, _extremes(rng, (1,) + shape[1:], np.int16), _extremes(rng, shape, np.int16)),
             (None, None, _extremes(rng, shape, np.int16), _extremes(rng, shape[:-1] + (1,), np.int16)),
             (None, None, np.zeros((0, 3), np.int16), np.zeros((0, 3), np.int16))]
    for c1, c2, x1, x2 in cases:
        a = c1 if c1 is not None else x1
        b = c2 if c2 is not None else x2
        want = elementwise.add_sub(a, b, p, act_min=lo, act_max=hi, sub=sub)
        for k, on in enumerate((True, False)):
            prev = _jit.set_enabled(on)
            try:
                with use_platform(PLATFORMS[(seed + k) % 2]):
                    f = elementwise.prepare_add_sub(p, np.int16, act_min=lo, act_max=hi, sub=sub, const1=c1,
                                                    const2=c2)
                    assert f is not None
                    got = f(a, b)
            finally:
                _jit.set_enabled(prev)
            assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want), (on, k)
