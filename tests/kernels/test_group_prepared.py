"""The prepared group convolution (:func:`pymli.kernels.conv_prepared.prepare_group_conv`) against the plain
kernel :func:`pymli.kernels.convolution.group_conv2d_hwcn`: seeded random layers of every weights type
(sa8 per tensor / per axis, with weights zero points, fx16, fx16 x fx8, fx8), groups of one channel (a channel
multiplier) and of several, strides, dilations, paddings, batches, extreme values, every platform, the JIT
on and off, and the single-shape form; and the prepared transpose convolution
(:func:`pymli.kernels.conv_prepared.prepare_transpose_conv`, a prepared convolution of one group on the
zero-inserted input) against :func:`pymli.kernels.convolution.transpose_conv2d_hwcn`. Whole outputs are compared
with ``np.array_equal``."""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from pymli import Platform, RoundMode, use_platform
from pymli.config import PRESETS
from pymli.kernels import _jit
from pymli.kernels import conv_prepared as CP
from pymli.kernels import convolution as K
from pymli.kernels.conv_prepared import prepare_group_conv, prepare_transpose_conv

from .test_conv_prepared import _geometry, _input
from .test_fc_paths import _layer, _ordinary

PLATFORMS = [*PRESETS.values(), Platform(RoundMode.CONVERGENT, True, False, "em-full-accu")]
KINDS = ["sa8", "sa8_axis", "sa8_wzp", "fx16", "fx16_fx8_fx8"]


def _case(seed: int, kind: str, extreme: bool, ordinary: bool):
    """A random group layer: (w, bias, q, bounds, geometry, x); every third seed has groups of several channels."""
    rng = np.random.default_rng(seed)
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    groups = int(rng.integers(1, 6))
    cg = 1 if seed % 3 else int(rng.integers(2, 4))
    mult = int(rng.integers(1, 4))
    c, n = groups * cg, groups * mult
    w, b, q, bounds, xt = _layer(rng, kind, kh * kw * cg, n, extreme)
    if ordinary:
        q = _ordinary(q, np.iinfo(w.dtype).bits)
    w = w.reshape(kh, kw, cg, n)
    h, wd = int(rng.integers(1, 8)), int(rng.integers(1, 8))
    geo = _geometry(rng, h, wd, kh, kw)
    x = _input(rng, h, wd, c, xt, extreme)
    return w, b, q, bounds, geo, x


@pytest.fixture(params=[True, False], ids=["jit", "nojit"])
def jit(request: pytest.FixtureRequest):
    was = _jit.set_enabled(request.param)
    yield request.param
    _jit.set_enabled(was)


@pytest.mark.parametrize("kind", KINDS)
def test_prepared_group_matches_plain(kind: str, jit: bool) -> None:
    for seed in range(15):
        extreme, ordinary = seed % 5 == 1, seed % 5 in (2, 3)
        w, b, q, bounds, geo, x = _case(seed * 7919 + len(kind), kind, extreme, ordinary)
        dtype = np.int16 if isinstance(q, K.FxQuant) else np.int8
        prep = prepare_group_conv(w, b, q, **geo, bounds=bounds, out_dtype=dtype)
        single = prep.single(x.shape, x.dtype)
        for p in PLATFORMS:
            with use_platform(p):
                want = K.group_conv2d_hwcn(x, w, b, q, **geo, bounds=bounds).astype(dtype)
                for _ in range(2):  # the second call reuses the kept buffers / plans
                    got = prep(x)
                    assert got.dtype == np.dtype(dtype) and got.shape == want.shape, (seed, got.shape, want.shape)
                    assert np.array_equal(got, want), (seed, kind, geo, p.name)
                if single is not None:
                    assert np.array_equal(single(x), want), (seed, kind, geo, p.name)


def test_single_form_exists_with_the_jit() -> None:
    """With the JIT on, a depthwise layer with a channel multiplier and a layer of groups of several channels
    have the single-shape form (the model step's path); weights zero points and the JIT off have none."""
    if not _jit.available():
        pytest.skip("numba is not installed: no compiled single-shape form")
    was = _jit.set_enabled(True)
    try:
        for seed, wzp in ((1, False), (3, False), (3, True)):
            w, b, q, bounds, geo, x = _case(seed, "sa8_wzp" if wzp else "sa8_axis", False, True)
            if wzp:
                q = dataclasses.replace(q, w_zp=3)
            assert (w.shape[2] > 1) == (seed == 3)
            prep = prepare_group_conv(w, b, q, **geo, bounds=bounds, out_dtype=np.int8)
            assert (prep.single(x.shape, x.dtype) is None) == wzp
        _jit.set_enabled(False)
        assert prep.single(x.shape, x.dtype) is None
    finally:
        _jit.set_enabled(was)


def test_weights_copied_and_strided_input() -> None:
    """Rewriting the caller's weights after preparing does not reach the layer; a non-contiguous input gives the
    plain kernel's values."""
    w, b, q, bounds, geo, x = _case(4, "sa8", False, True)
    want_w, want_b = w.copy(), b.copy()
    prep = prepare_group_conv(w, b, q, **geo, bounds=bounds, out_dtype=np.int8)
    w[...] = 1
    b[...] = 0
    xs = np.repeat(x, 2, axis=-2)[..., ::2, :]
    assert not xs.flags.c_contiguous
    with use_platform(PRESETS["vpx"]):
        want = K.group_conv2d_hwcn(x, want_w, want_b, q, **geo, bounds=bounds).astype(np.int8)
        assert np.array_equal(prep(xs), want)


def _grouped(seed: int, kind: str, extreme: bool = False):
    """A random layer of groups of several channels (sometimes one: no multiplier divides), wider than
    :func:`_case`'s: up to 8 groups, 6 channels per group, output groups of 1 to 20 channels (the
    products' lanes: 8 and 16), inputs up to 10 x 10; (w, bias, q, bounds, geometry, x)."""
    rng = np.random.default_rng(seed)
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    groups, cg = int(rng.integers(1, 9)), int(rng.integers(1, 7))
    mult = int(rng.choice([1, 2, 3, 4, 5, 8, 12, 16, 20]))
    c, n = groups * cg, groups * mult
    w, b, q, bounds, xt = _layer(rng, kind, kh * kw * cg, n, extreme)
    if seed % 3 != 2:
        q = _ordinary(q, np.iinfo(w.dtype).bits)
    w = w.reshape(kh, kw, cg, n)
    h, wd = int(rng.integers(1, 11)), int(rng.integers(1, 11))
    geo = _geometry(rng, h, wd, kh, kw)
    x = _input(rng, h, wd, c, xt, extreme)
    return w, b, q, bounds, geo, x


def _check_all(prep, single, x, w, b, q, bounds, geo, dtype, what) -> None:
    """Prepared call (twice), its single-shape form and a strided copy of the input against the plain
    kernel, on every platform."""
    xs = np.repeat(x, 2, axis=-2)[..., ::2, :]
    for p in PLATFORMS:
        with use_platform(p):
            want = K.group_conv2d_hwcn(x, w, b, q, **geo, bounds=bounds).astype(dtype)
            for _ in range(2):
                got = prep(x)
                assert got.dtype == want.dtype and got.shape == want.shape, what
                assert np.array_equal(got, want), (what, p.name)
            assert np.array_equal(prep(xs), want), (what, p.name)
            if single is not None:
                assert np.array_equal(single(x), want), (what, p.name)
                assert np.array_equal(single(xs), want), (what, p.name)


@pytest.mark.parametrize("kind", ["sa8", "sa8_axis"])
def test_channel_multiplier_read_in_the_loop_nest(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny 3x3 s8asym layers with a channel multiplier: the single-shape form (made under each platform)
    runs ``depthwise_sa8_3_flat`` on the input itself (each channel read for its outputs, no repeated
    copy) and equals the plain kernel: multipliers 2-8, strides, dilations, paddings, batches, extreme
    values, strided inputs (the prepared call)."""
    if not _jit.available():
        pytest.skip("numba is not installed: no compiled loop nest")
    mod = _jit._module()
    seen = []
    real = mod.depthwise_sa8_3_flat
    monkeypatch.setattr(mod, "depthwise_sa8_3_flat",
                        lambda *a: seen.append((a[0].shape[-1], a[4].shape[-1])) or real(*a))
    was = _jit.set_enabled(True)
    try:
        for seed in range(16):
            rng = np.random.default_rng([41, seed, len(kind)])
            c, mult = int(rng.integers(1, 6)), int(rng.integers(2, 9))
            extreme = seed % 4 == 3
            w, b, q, bounds, xt = _layer(rng, kind, 9, c * mult, extreme)
            w = w.reshape(3, 3, 1, c * mult)
            h, wd = int(rng.integers(1, 10)), int(rng.integers(1, 10))
            geo = _geometry(rng, h, wd, 3, 3)
            x = _input(rng, h, wd, c, xt, extreme)
            prep = prepare_group_conv(w, b, q, **geo, bounds=bounds, out_dtype=np.int8)
            for p in PLATFORMS:
                with use_platform(p):
                    single = prep.single(x.shape, x.dtype)
                    assert single is not None
                    want = K.group_conv2d_hwcn(x, w, b, q, **geo, bounds=bounds).astype(np.int8)
                    del seen[:]
                    assert np.array_equal(single(x), want), (seed, kind, geo, c, mult, p.name)
                    assert seen == [(c, c * mult)], (seed, geo)
                    assert np.array_equal(prep(np.repeat(x, 2, axis=-2)[..., ::2, :]), want), (seed, p.name)
    finally:
        _jit.set_enabled(was)


KINDS_ALL = [*KINDS, "fx8"]


@pytest.mark.parametrize(("product", "jit_on"), [(None, True), (None, False), ("u8x8", True), ("s16x8", True)])
@pytest.mark.parametrize("kind", KINDS_ALL)
def test_grouped_layers_match_plain(kind: str, product: str | None, jit_on: bool,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Several channels per group: merged groups on each integer product (the JIT; the products a CPU lacks:
    the plain kernel), block-diagonal conv2d or the plain kernel (no JIT); int8 / int16 outputs, and int64 ones
    (a cast after the compiled stage)."""
    monkeypatch.setattr(K, "INT_PRODUCT", product)
    was = _jit.set_enabled(jit_on)
    try:
        _grouped_layers(kind)
    finally:
        _jit.set_enabled(was)


def _grouped_layers(kind: str) -> None:
    """:func:`test_grouped_layers_match_plain`'s layers of one kind."""
    for seed in range(12):
        w, b, q, bounds, geo, x = _grouped(seed * 131 + len(kind), kind, seed % 6 == 5)
        dtype = (np.int16 if q.out_bits > 8 else np.int8) if isinstance(q, K.FxQuant) else np.int8
        if seed % 4 == 3:
            dtype = np.int64
        prep = prepare_group_conv(w, b, q, **geo, bounds=bounds, out_dtype=dtype)
        _check_all(prep, prep.single(x.shape, x.dtype), x, w, b, q, bounds, geo, dtype, (seed, kind, geo, w.shape))


@pytest.mark.parametrize("kind", KINDS_ALL)
@pytest.mark.parametrize("cost", [0, 1 << 40])
def test_every_merge_and_the_threaded_path(kind: str, cost: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fixed cost per product set to nothing (the fewest taps: groups merged only where lanes are
    empty) and to everything (every group merged); then every call a large one (the plain kernel on
    the merged weights, row blocks over the threads); the JIT on."""
    was = _jit.set_enabled(True)
    try:
        monkeypatch.setattr(CP, "GROUP_CALL_COST", cost)
        for seed in range(8):
            w, b, q, bounds, geo, x = _grouped(seed * 17 + 3, kind)
            dtype = np.int16 if isinstance(q, K.FxQuant) and q.out_bits > 8 else np.int8
            prep = prepare_group_conv(w, b, q, **geo, bounds=bounds, out_dtype=dtype)
            _check_all(prep, prep.single(x.shape, x.dtype), x, w, b, q, bounds, geo, dtype, (seed, kind, cost))
        monkeypatch.setattr(CP, "PARALLEL_WORK", 0)
        for seed in range(4):
            w, b, q, bounds, geo, x = _grouped(seed * 29 + 5, kind)
            dtype = np.int16 if isinstance(q, K.FxQuant) and q.out_bits > 8 else np.int8
            prep = prepare_group_conv(w, b, q, **geo, bounds=bounds, out_dtype=dtype)
            assert prep.single(x.shape, x.dtype) is None or w.shape[2] == 1
            _check_all(prep, None, x, w, b, q, bounds, geo, dtype, (seed, kind, "threads"))
    finally:
        _jit.set_enabled(was)


def test_large_split_layer_keeps_its_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    """fx16 weights (split in two products) of 8 groups of 8 channels, 3x3: merged they would count 576 taps,
    beyond the plain kernel's exact integer product for split weights (512): a large call keeps the groups."""
    was = _jit.set_enabled(True)
    try:
        monkeypatch.setattr(CP, "PARALLEL_WORK", 0)
        rng = np.random.default_rng(8)
        w, b, q, bounds, xt = _layer(rng, "fx16", 9 * 8, 16)
        w, q = w.reshape(3, 3, 8, 16), _ordinary(q, 16)
        x = _input(rng, 6, 5, 64, xt, False)
        geo = {"stride": (1, 1), "dilation": (1, 1), "pad": (1, 1), "out_hw": (6, 5)}
        prep = prepare_group_conv(w, b, q, **geo, bounds=bounds, out_dtype=np.int16)
        if _jit.available():
            found = K._int_applies(x, w, 8, 0, q.acc_bits)
            assert found is not None and found[2] and prep._merge(x.shape, 8, found[1], True) > 1
        _check_all(prep, None, x, w, b, q, bounds, geo, np.int16, "split")
    finally:
        _jit.set_enabled(was)


def test_merged_weights_are_block_diagonal() -> None:
    """Merging ``s`` groups: each output channel's weights at its own group's input channels, zeros at the
    other merged groups' ones."""
    rng = np.random.default_rng(5)
    w = rng.integers(1, 100, (2, 3, 2, 12)).astype(np.int8)  # no zero weight
    _, b, q, bounds, _, _ = _case(3, "sa8", False, True)
    prep = prepare_group_conv(w, np.zeros(12, np.int32), q, out_hw=(1, 1), bounds=bounds, out_dtype=np.int8)
    wm = prep._merged(6, 3)  # 6 groups of 2 inputs -> 2 outputs, merged by 3
    assert wm.shape == (2, 3, 6, 12) and not wm.flags.writeable
    for o in range(12):
        g = o // 2
        slot = g % 3
        assert np.array_equal(wm[:, :, 2 * slot:2 * slot + 2, o], w[..., o])
        assert not np.delete(wm[..., o], [2 * slot, 2 * slot + 1], axis=2).any()
    assert prep._merged(6, 1) is prep._w


def test_numpy_paths_without_the_jit(monkeypatch: pytest.MonkeyPatch) -> None:
    """JIT off: the block-diagonal conv2d and, beyond :data:`BLOCK_DIAG_MAX_MACS`, the plain kernel."""
    was = _jit.set_enabled(False)
    try:
        for limit in (CP.BLOCK_DIAG_MAX_MACS, 0):
            monkeypatch.setattr(CP, "BLOCK_DIAG_MAX_MACS", limit)
            for seed in range(6):
                kind = KINDS_ALL[seed % len(KINDS_ALL)]
                w, b, q, bounds, geo, x = _grouped(seed * 7 + 1, kind)
                dtype = np.int16 if isinstance(q, K.FxQuant) and q.out_bits > 8 else np.int8
                prep = prepare_group_conv(w, b, q, **geo, bounds=bounds, out_dtype=dtype)
                assert prep.single(x.shape, x.dtype) is None
                _check_all(prep, None, x, w, b, q, bounds, geo, dtype, (seed, kind, limit))
    finally:
        _jit.set_enabled(was)


def test_jit_switched_at_run_time_and_other_shapes() -> None:
    """A single-shape form made with the JIT on gives the plain values after the JIT is switched off, on
    other input shapes and under another platform; the layer itself follows the switch."""
    if not _jit.available():
        pytest.skip("numba is not installed: no compiled single-shape form")
    w, b, q, bounds, geo, x = _grouped(11, "sa8")
    assert w.shape[2] > 1
    prep = prepare_group_conv(w, b, q, **geo, bounds=bounds, out_dtype=np.int8)
    was = _jit.set_enabled(True)
    try:
        with use_platform(PRESETS["vpx"]):
            single = prep.single(x.shape, x.dtype)
            assert single is not None
            want = K.group_conv2d_hwcn(x, w, b, q, **geo, bounds=bounds).astype(np.int8)
            x2 = np.concatenate([x[None] if x.ndim == 3 else x] * 2)
            want2 = K.group_conv2d_hwcn(x2, w, b, q, **geo, bounds=bounds).astype(np.int8)
            assert np.array_equal(single(x2), want2)
            _jit.set_enabled(False)
            assert np.array_equal(single(x), want) and np.array_equal(prep(x), want)
            _jit.set_enabled(True)
            assert np.array_equal(single(x), want)
        for p in PLATFORMS:
            with use_platform(p):
                assert np.array_equal(single(x), K.group_conv2d_hwcn(x, w, b, q, **geo, bounds=bounds))
    finally:
        _jit.set_enabled(was)


def test_overlapping_calls_on_threads() -> None:
    """Calls on two threads at once (one of them may find the layer's buffers taken: the plain kernel)."""
    was = _jit.set_enabled(True)
    try:
        w, b, q, bounds, geo, x = _grouped(23, "sa8")
        prep = prepare_group_conv(w, b, q, **geo, bounds=bounds, out_dtype=np.int8)
        rng = np.random.default_rng(0)
        xs = [rng.integers(-128, 128, x.shape).astype(np.int8) for _ in range(40)]
        with use_platform(PRESETS["vpx"]):
            wants = [K.group_conv2d_hwcn(v, w, b, q, **geo, bounds=bounds).astype(np.int8) for v in xs]

        def work(i: int) -> bool:
            with use_platform(PRESETS["vpx"]):
                return all(np.array_equal(prep(xs[i]), wants[i]) for _ in range(5))
        with ThreadPoolExecutor(2) as pool:
            assert all(pool.map(work, range(len(xs))))
    finally:
        _jit.set_enabled(was)


# ---------------------------------------------------------------------------- prepared transpose convolution
def _transposed(seed: int, kind: str, extreme: bool = False):
    """A random transpose convolution (MLI's limits: ``pad < K``, ``stride <= K``): (w, bias, q, bounds,
    geometry, x)."""
    rng = np.random.default_rng(seed)
    kh, kw = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    c, n = int(rng.integers(1, 9)), int(rng.integers(1, 20))
    w, b, q, bounds, xt = _layer(rng, kind, kh * kw * c, n, extreme)
    if seed % 3 != 2:
        q = _ordinary(q, np.iinfo(w.dtype).bits)
    w = w.reshape(kh, kw, c, n)
    h, wd = int(rng.integers(1, 9)), int(rng.integers(1, 9))
    stride = (int(rng.integers(1, kh + 1)), int(rng.integers(1, kw + 1)))
    pads = [int(rng.integers(0, k)) for k in (kh, kh, kw, kw)]
    out = ((h - 1) * stride[0] + kh - pads[0] - pads[1], (wd - 1) * stride[1] + kw - pads[2] - pads[3])
    if min(out) < 1:
        pads = [0, 0, 0, 0]
        out = ((h - 1) * stride[0] + kh, (wd - 1) * stride[1] + kw)
    geo = {"stride": stride, "pad": (pads[0], pads[2]), "out_hw": out}
    return w, b, q, bounds, geo, _input(rng, h, wd, c, xt, extreme)


@pytest.mark.parametrize("kind", KINDS_ALL)
def test_prepared_transpose_matches_plain(kind: str, jit: bool) -> None:
    """:class:`PreparedTransposeConv` against :func:`transpose_conv2d_hwcn`: every weights type (weights zero
    points: the plain kernel), batches, strided inputs, every platform, the JIT on and off."""
    for seed in range(10):
        w, b, q, bounds, geo, x = _transposed(seed * 53 + len(kind), kind, seed % 5 == 4)
        dtype = np.int16 if isinstance(q, K.FxQuant) and q.out_bits > 8 else np.int8
        prep = prepare_transpose_conv(w, b, q, **geo, bounds=bounds, out_dtype=dtype)
        xs = np.repeat(x, 2, axis=-2)[..., ::2, :]
        for p in PLATFORMS:
            with use_platform(p):
                want = K.transpose_conv2d_hwcn(x, w, b, q, **geo, bounds=bounds).astype(dtype)
                for v in (x, x, xs):
                    got = prep(v)
                    assert got.dtype == want.dtype and got.shape == want.shape, (seed, kind)
                    assert np.array_equal(got, want), (seed, kind, geo, w.shape, p.name)


def test_transpose_weights_copied_and_offsets_outside_the_container() -> None:
    """The caller's weights rewritten after preparing do not reach the layer; an input zero point the int8 buffer
    cannot hold (the plain kernel) and an int16 input of an sa8 layer give the plain values."""
    w, b, q, bounds, geo, x = _transposed(7, "sa8")
    want_w = w.copy()
    prep = prepare_transpose_conv(w, b, q, **geo, bounds=bounds, out_dtype=np.int8)
    w[...] = 1
    with use_platform(PRESETS["vpx"]):
        assert np.array_equal(prep(x), K.transpose_conv2d_hwcn(x, want_w, b, q, **geo, bounds=bounds).astype(np.int8))
        q2 = dataclasses.replace(q, in_zp=-200)
        prep = prepare_transpose_conv(want_w, b, q2, **geo, bounds=bounds, out_dtype=np.int8)
        assert np.array_equal(prep(x), K.transpose_conv2d_hwcn(x, want_w, b, q2, **geo, bounds=bounds).astype(np.int8))
        x16 = x.astype(np.int16) * 3
        assert np.array_equal(prep(x16), K.transpose_conv2d_hwcn(x16, want_w, b, q2, **geo, bounds=bounds)
                              .astype(np.int8))
