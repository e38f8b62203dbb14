"""The prepared pooling (:class:`pymli.kernels.pooling.PreparedPool`) against the plain kernels
(:func:`~pymli.kernels.pooling.maxpool_hwc`, :func:`~pymli.kernels.pooling.avepool_hwc`): seeded random
geometries (kernels, strides, padding on every side), sa8 / fx8 / fx16, one map, a batch of one and a
batch of several, strided and reversed inputs, extreme values, both rounding modes with AVEPOOL_16BIT_MUL
on and off, the JIT on and off (the compiled form, the gather form and the plain call); calls on another
shape or dtype, or under another platform, give the plain results too."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from pymli import use_platform
from pymli.arith.pool import requant_params
from pymli.config import Platform, get_platform
from pymli.formats import RoundMode
from pymli.kernels import _jit
from pymli.kernels import pooling as KP

PLATFORMS = [Platform(mode, False, mul16, f"{mode.name}-{mul16}") for mode in (RoundMode.UP, RoundMode.CONVERGENT)
             for mul16 in (False, True)]
KINDS = ["max8", "max16", "sa8", "fx8", "fx16"]


@pytest.fixture(autouse=True)
def _jit_restored() -> Iterator[None]:
    prev = _jit.set_enabled(True)
    yield
    _jit.set_enabled(prev)


def _x(rng: np.random.Generator, shape: tuple[int, ...], dt: type, extreme: bool) -> np.ndarray:
    info = np.iinfo(dt)
    if extreme:  # the container limits only (and zeros): the largest sums, output saturation
        return rng.choice(np.array([info.min, info.max, 0, info.min, info.max], dt), size=shape)
    return rng.integers(info.min, info.max + 1, size=shape).astype(dt)


def _case(rng: np.random.Generator, kind: str) -> tuple[str, type, dict, dict, tuple[int, int, int]]:
    """(pool kind, dtype, geometry, arithmetic with the requantisation as a function, (H, W, C))."""
    h, w = (int(v) for v in rng.integers(1, 13, 2))
    c = int(rng.integers(1, 20))
    kh, kw = (int(v) for v in rng.integers(1, 6, 2))
    sh, sw = (int(v) for v in rng.integers(1, 4, 2))
    pt, pl, pb, pr = (int(rng.integers(0, k)) for k in (kh, kw, kh, kw))
    oh, ow = KP.out_size(h, kh, sh, pt, pb), KP.out_size(w, kw, sw, pl, pr)
    if oh < 1 or ow < 1:  # no window: grow the map to the kernel
        h, w = max(h, kh), max(w, kw)
        oh, ow = KP.out_size(h, kh, sh, pt, pb), KP.out_size(w, kw, sw, pl, pr)
    geo = dict(kernel=(kh, kw), stride=(sh, sw), pad=(pt, pl), out_hw=(oh, ow))
    dt = np.int16 if kind.endswith("16") else np.int8
    arith: dict = {}
    if kind == "sa8":
        q = [int(rng.integers(1, 32768)), int(rng.integers(0, 25)), int(rng.integers(-128, 128)),
             int(rng.integers(1, 32768)), int(rng.integers(0, 25)), int(rng.integers(-128, 128))]
        arith = dict(requant=lambda: requant_params(*q))
    elif kind.startswith("fx"):
        arith = dict(base_shift=int(rng.integers(-4, 9)))
    return ("max" if kind.startswith("max") else "ave"), dt, geo, arith, (h, w, c)


def _plain(kind: str, x: np.ndarray, geo: dict, arith: dict, mul16: bool | None = None) -> np.ndarray:
    if kind == "max":
        return KP.maxpool_hwc(x, **geo)
    rq = arith["requant"]() if "requant" in arith else None
    m16 = get_platform().avepool_16bit_mul if mul16 is None else mul16
    return KP.avepool_hwc(x, **geo, base_shift=arith.get("base_shift", 0), requant=rq, mul16=m16)


def _same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(8))
def test_single_equals_plain(kind: str, seed: int) -> None:
    rng = np.random.default_rng((KINDS.index(kind), seed, 4))
    pk, dt, geo, arith, (h, w, c) = _case(rng, kind)
    extreme = seed % 3 == 2
    mul16 = [None, True, False][seed % 3] if kind == "sa8" else None
    prep = KP.PreparedPool(pk, **geo, **arith, mul16=mul16)
    forms = 0
    for shape in ((h, w, c), (1, h, w, c), (3, h, w, c)):
        f = prep.single(shape, dt)
        assert f is not None
        for plat in PLATFORMS:
            with use_platform(plat):
                for jit in (True, False):
                    _jit.set_enabled(jit)
                    forms += prep._form(plat, jit, shape, np.dtype(dt)) is not prep
                    for ext in (extreme, not extreme):
                        x = _x(rng, shape, dt, ext)
                        want = _plain(pk, x, geo, arith, mul16)
                        _same(f(x), want)
                        _same(prep(x), want)
                        wide = np.zeros(shape[:-1] + (2 * c,), dt)
                        wide[..., ::2] = x
                        _same(f(wide[..., ::2]), want)  # strided
                        rev = x[..., ::-1].copy()[..., ::-1]  # negative strides, read-only
                        rev.flags.writeable = False
                        _same(f(rev), want)
                    other = _x(rng, (2, h + 1, w, c), dt, extreme)  # another shape: the plain call
                    _same(f(other), _plain(pk, other, geo, arith, mul16))
                    if dt is np.int8:  # another dtype
                        x16 = _x(rng, shape, np.int16, extreme)
                        _same(f(x16), _plain(pk, x16, geo, arith, mul16))
    if _jit.available() and kind != "fx16":  # one map's taps stay below the compiled form's limit here
        assert forms, "neither the compiled nor the gather form was made"


@pytest.mark.skipif(not _jit.available(), reason="numba (the jit extra) is not installed")
def test_compiled_form_is_taken_for_small_int8_maps() -> None:
    """The benchmark models' pools (2x2 windows, stride 2) run the compiled loop nest."""
    taken = []
    for pk, arith in (("max", {}), ("ave", dict(requant=lambda: requant_params(16384, 20, 3, 20000, 21, -5)))):
        prep = KP.PreparedPool(pk, kernel=(2, 2), stride=(2, 2), pad=(0, 0), out_hw=(6, 6), **arith)
        for plat in PLATFORMS:
            with use_platform(plat):
                mod = _jit.compiled("_jit_pool")
                assert mod is not None
                taken.append(prep._compiled(mod, plat, (1, 12, 12, 32), np.dtype(np.int8)) is not None)
    assert all(taken)


def test_large_int16_average_takes_the_numpy_forms() -> None:
    """Beyond the table's size the compiled average is not made, and the result is still the plain one."""
    rng = np.random.default_rng(7)
    geo = dict(kernel=(5, 5), stride=(1, 1), pad=(2, 2), out_hw=(9, 9))
    prep = KP.PreparedPool("ave", **geo, base_shift=3)
    x = _x(rng, (1, 9, 9, 3), np.int16, False)
    mod = _jit.compiled("_jit_pool")
    if mod is not None:
        assert prep._compiled(mod, get_platform(), x.shape, x.dtype) is None
    _same(prep.single(x.shape, x.dtype)(x), _plain("ave", x, geo, dict(base_shift=3)))


def test_requantisation_is_derived_per_platform() -> None:
    """A requantisation given as a function is derived under each platform (its derivation rounds)."""
    calls = []

    def rq():  # type: ignore[no-untyped-def]
        calls.append(get_platform())
        return requant_params(12345, 17, -7, 23456, 19, 11)
    prep = KP.PreparedPool("ave", kernel=(3, 3), stride=(2, 2), pad=(1, 1), out_hw=(4, 4), requant=rq)
    f = prep.single((1, 7, 7, 5), np.int8)
    x = _x(np.random.default_rng(3), (1, 7, 7, 5), np.int8, False)
    for plat in PLATFORMS:
        with use_platform(plat):
            _same(f(x), _plain("ave", x, prep.geo, dict(requant=rq)))
    assert {p.round_mode for p in calls} == {RoundMode.UP, RoundMode.CONVERGENT}


def test_gather_form_without_the_jit() -> None:
    """With the JIT off a small map takes the one-gather form, a large one the plain call."""
    prep = KP.PreparedPool("ave", kernel=(3, 3), stride=(2, 2), pad=(1, 1), out_hw=(4, 4), base_shift=2)
    p = get_platform()
    assert prep._form(p, False, (1, 7, 7, 5), np.dtype(np.int8)) is not prep
    assert prep._form(p, False, (1, 7, 7, 600), np.dtype(np.int8)) is prep
    assert prep._form(p, False, (2, 7, 7, 5), np.dtype(np.int8)) is prep


def test_refused_inputs() -> None:
    prep = KP.PreparedPool("max", kernel=(2, 2), stride=(2, 2), pad=(0, 0), out_hw=(2, 2))
    assert prep.single((4, 4, 3), np.float32) is None
    assert prep.single((4, 4), np.int8) is None
    assert prep.single((0, 4, 4, 3), np.int8) is None
    with pytest.raises(ValueError, match="kind"):
        KP.PreparedPool("min", kernel=(2, 2), stride=(2, 2), pad=(0, 0), out_hw=(2, 2))


@pytest.mark.parametrize("jit", [True, False])
def test_threads_share_a_form(jit: bool) -> None:
    """Calls of one form from several threads at once give each call its own result."""
    _jit.set_enabled(jit)
    geo = dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), out_hw=(4, 4))
    prep = KP.PreparedPool("ave", **geo, base_shift=1)
    f = prep.single((1, 7, 7, 6), np.int8)
    rng = np.random.default_rng(11)
    xs = [_x(rng, (1, 7, 7, 6), np.int8, False) for _ in range(8)]
    wants = [_plain("ave", x, geo, dict(base_shift=1)) for x in xs]
    f(xs[0])  # the form made before the threads start

    def work(k: int) -> bool:
        return all(np.array_equal(f(xs[k]), wants[k]) for _ in range(200))
    with ThreadPoolExecutor(4) as ex:
        assert all(ex.map(work, range(8)))


@pytest.mark.parametrize("kind", ["max", "ave"])
def test_pool_plan_shared_by_threads(kind: str) -> None:
    """A memoised capi plan (:func:`pool_plan`'s one-gather form) called from several threads at once:
    each call reads its own input (the kept buffer serves one call; the others take their own)."""
    geo = dict(kernel=(3, 3), stride=(1, 1), pad=(1, 1), out_hw=(6, 6))
    arith = dict(base_shift=1) if kind == "ave" else {}
    plan = KP.pool_plan(kind, (6, 6, 5), np.int16, **geo, **arith)
    rng = np.random.default_rng(12)
    xs = [rng.integers(-32768, 32768, (6, 6, 5)).astype(np.int16) for _ in range(8)]
    wants = [_plain(kind, x[None], geo, arith)[0] for x in xs]
    plan(xs[0])
    plan(xs[0])  # the gather form from the second call on

    def work(k: int) -> bool:
        return all(np.array_equal(plan(xs[k]), wants[k]) for _ in range(300))
    with ThreadPoolExecutor(4) as ex:
        assert all(ex.map(work, range(8)))


@pytest.mark.skipif(not _jit.available(), reason="numba (the jit extra) is not installed")
def test_warm_up_covers_the_compiled_forms() -> None:
    """``_jit_pool.warm_up()`` compiles every signature the compiled forms call: none is added after it."""
    mod = importlib.import_module("pymli.kernels._jit_pool")
    mod.warm_up()
    before = {name: len(getattr(mod, name).overloads) for name in ("max_hwc", "ave_hwc")}
    assert all(before.values())
    rng = np.random.default_rng(2)
    for dt in (np.int8, np.int16):
        for pk in ("max", "ave"):
            prep = KP.PreparedPool(pk, kernel=(2, 1), stride=(1, 2), pad=(1, 0), out_hw=(4, 3), base_shift=1)
            for shape in ((5, 6, 3), (2, 5, 6, 3)):
                x = _x(rng, shape, dt, False)
                assert prep._form(get_platform(), True, shape, np.dtype(dt)) is not prep
                _same(prep.single(shape, dt)(x), _plain(pk, x, prep.geo, dict(base_shift=1)))
    assert {name: len(getattr(mod, name).overloads) for name in before} == before
