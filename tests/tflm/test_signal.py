"""The TFLM signal-library CUSTOM operators (pymli.tflm.signal) against the TFLite Micro Python
interpreter, which registers every ``Signal*`` operator: single-operator models built here (random
and audio-like inputs, streamed over several Invokes for the stateful ones) and the micro_speech
audio preprocessor (tests/data/audio) frame after frame on a synthesised tone + noise and on real
speech, compared at every tensor with ``np.array_equal``."""

from __future__ import annotations

import wave
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tflite

from pymli.errors import MliError, Status
from pymli.testing import tflm_golden as _golden
from pymli.tflm import handlers, signal

from ._model import Tensor, single_op

runtime = pytest.importorskip("tflite_micro.python.tflite_micro.runtime",
                              reason="the tflite_micro interpreter is an optional test dependency")

DATA = Path(__file__).resolve().parents[1] / "data" / "audio"
I16, I32, U32, U64, F32 = np.int16, np.int32, np.uint32, np.uint64, np.float32


def custom_op(code: str, inputs: list[Tensor], outputs: list[Tensor], options: dict[str, Any]) -> bytes:
    """Bytes of a model with one CUSTOM operator ``code`` whose options are a flexbuffer map."""
    return single_op("CUSTOM", inputs, outputs, options, custom_code=code)


def _ttype(dt: Any) -> int:
    """The ``tflite.TensorType`` code of a NumPy dtype (the signal operators' ``T`` option)."""
    return int(getattr(tflite.TensorType, np.dtype(dt).name.upper()))


def T(shape: tuple[int, ...], dtype: Any, data: np.ndarray | None = None) -> Tensor:
    return Tensor(shape, dtype, data=None if data is None else np.asarray(data).astype(dtype))


def run_both(model: bytes, feeds: list[list[np.ndarray]]) -> list[tuple[list, list]]:
    """Invoke the interpreter and pymli (one state carried across calls) on each feed in turn;
    returns ``(pymli outputs, interpreter outputs)`` per feed."""
    g = _golden.read_graph(model)
    ip = runtime.Interpreter.from_bytes(model, arena_size=1 << 20)
    state: dict = {}
    res = []
    for xs in feeds:
        for i, x in enumerate(xs):
            ip.set_input(x, i)
        ip.invoke()
        vals = _golden.run_graph(g, xs, state)
        got = [np.asarray(vals[o]) for o in g.outputs]
        want = [np.asarray(ip.get_output(i)) for i in range(len(g.outputs))]
        res.append((got, want))
    return res


def assert_same(model: bytes, feeds: list[list[np.ndarray]], only: dict[int, slice] | None = None) -> None:
    for k, (got, want) in enumerate(run_both(model, feeds)):
        for j, (a, b) in enumerate(zip(got, want)):
            a, b = a.reshape(-1), np.asarray(b).reshape(-1)
            sl = (only or {}).get(j, slice(None))
            assert a.dtype == b.dtype, f"invoke {k} output {j}: {a.dtype} vs {b.dtype}"
            assert np.array_equal(a[sl], b[sl]), \
                f"invoke {k} output {j}: {np.count_nonzero(a[sl] != b[sl])} values differ"


def rng(*key: Any) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def audio(r: np.random.Generator, n: int, amp: float, freq: float = 440.0, noise: float = 300.0,
          rate: int = 16000, phase: float = 0.0) -> np.ndarray:
    """A tone plus Gaussian noise as int16 (saturated), like a microphone frame."""
    t = np.arange(n) / rate
    x = amp * np.sin(2 * np.pi * freq * t + phase) + r.normal(0, noise, n)
    return np.clip(np.rint(x), -32768, 32767).astype(I16)


def full16(r: np.random.Generator, shape: Any) -> np.ndarray:
    return r.integers(-32768, 32768, shape).astype(I16)


# ---------------------------------------------------------------------------------------- Window
@pytest.mark.parametrize("shape,shift,kind", [((480,), 12, "audio"), ((480,), 12, "full"),
                                              ((2, 64), 15, "full"), ((3, 32), 0, "full"),
                                              ((1, 480), 14, "audio")])
def test_window(shape: tuple, shift: int, kind: str) -> None:
    r = rng("window", shape, shift, kind)
    n = shape[-1]
    hann = np.rint(4096 * (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n)))  # Q12 like the model's
    w = hann if kind == "audio" else r.integers(-32768, 32768, n)
    m = custom_op("SignalWindow", [T(shape, I16), T((n,), I16, w)], [T(shape, I16)], {"shift": shift})
    feeds = [[(audio(r, int(np.prod(shape)), a).reshape(shape) if kind == "audio" else full16(r, shape))]
             for a in (30000, 3000, 100)]
    feeds.append([np.full(shape, -32768, I16)])
    assert_same(m, feeds)


# ---------------------------------------------------------------------------------- FftAutoScale
_SPECIAL = [[0] * 16, [-32768] + [0] * 15, [5, -32768, -40, -30, 7, 1, 0, 2] * 2,
            [1, 2, 3, -32768], [-32768, -100, -50, -60, 3, 2, 1, 0], [-32768, -3, -2, -1, -1, 0, 0, 0],
            [100, -32768, 20000, -32768, -5, -4, -3, -2], [1] + [0] * 15, [-1] * 16, [16383, -16384] * 8]


@pytest.mark.parametrize("case", range(len(_SPECIAL) + 6))
def test_fft_auto_scale(case: int) -> None:
    r = rng("autoscale", case)
    if case < len(_SPECIAL):
        x = np.array(_SPECIAL[case], I16)
    else:
        x = (r.integers(-1, 2, 64) * r.integers(0, 2 ** int(r.integers(0, 16)), 64)).astype(I16)
    m = custom_op("SignalFftAutoScale", [T(x.shape, I16)], [T(x.shape, I16), T((), I32)], {})
    assert_same(m, [[x]])


@pytest.mark.parametrize("seed", range(50))
def test_max_abs16_matches_the_c_loop(seed: int) -> None:
    r = rng("maxabs", seed)
    x = r.choice(np.array([-32768, -32767, -100, -50, -49, -1, 0, 1, 60, 32767]), int(r.integers(1, 12)))

    def c_loop(v: np.ndarray) -> int:  # the portable C loop, on an int16 accumulator
        mx = 0
        for e in v.tolist():
            if e > mx:
                mx = e
            elif -e > mx:
                mx = ((-e + 32768) & 0xFFFF) - 32768
        return mx
    assert signal.max_abs16(x.astype(I16)) == c_loop(x)


# ------------------------------------------------------------------------------------ Rfft/Irfft
# complex FFT lengths (fft_length / 2) exercising every kiss_fft butterfly TFLM can run: 256 = 4^4,
# 128 = 4^3*2, 48 = 4*4*3, 80 = 4*4*5, 2 = one radix-2 stage, 90 = 2*3*3*5
_NFFT = [(512, 480), (512, 512), (256, 256), (96, 96), (160, 150), (4, 4), (180, 180)]


def _full(r: np.random.Generator, dt: Any, shape: tuple) -> np.ndarray:
    if dt == F32:
        return r.normal(0, 1e4, shape).astype(F32)
    lim = 2 ** (15 if dt == I16 else 31)
    return r.integers(-lim, lim, shape).astype(dt)


def _extreme(dt: Any, shape: tuple, low: bool) -> np.ndarray:
    if dt == F32:
        return np.full(shape, -1e30 if low else 1e-30, F32)
    lim = 2 ** (15 if dt == I16 else 31)
    return np.full(shape, -lim if low else lim - 1, dt)


@pytest.mark.parametrize("dt", [I16, I32, F32])
@pytest.mark.parametrize("n,L", _NFFT)
def test_rfft(n: int, L: int, dt: Any) -> None:
    r = rng("rfft", n, L, np.dtype(dt).name)
    shape = (2, L)
    m = custom_op("SignalRfft", [T(shape, dt)], [T((2, n + 2), dt)], {"T": _ttype(dt),
                                                                      "fft_length": n})
    feeds = [[_full(r, dt, shape)],
             [np.stack([audio(r, L, 20000, 1000), audio(r, L, 500, 3000)]).astype(dt)
              * (65536 if dt == I32 else 1)],
             [_extreme(dt, shape, True)], [_extreme(dt, shape, False)]]
    assert_same(m, feeds)


@pytest.mark.parametrize("dt", [I16, I32, F32])
@pytest.mark.parametrize("n", [512, 256, 96, 160, 4, 180])
def test_irfft(n: int, dt: Any) -> None:
    r = rng("irfft", n, np.dtype(dt).name)
    shape = (2, n + 2)
    m = custom_op("SignalIrfft", [T(shape, dt)], [T((2, n), dt)], {"T": _ttype(dt),
                                                                   "fft_length": n})
    spec = signal.rfft(audio(r, n, 20000, 700).astype(I16), n).astype(dt)
    feeds = [[_full(r, dt, shape)], [np.stack([spec, spec // 3]).astype(dt)],
             [_extreme(dt, shape, True)]]
    assert_same(m, feeds)


@pytest.mark.parametrize("n,radix", [(14, 7), (44, 11), (56, 7), (2, 1)])
def test_fft_with_a_generic_radix_is_refused(n: int, radix: int) -> None:
    """kiss_fft's generic butterfly (radix 1 or a prime above 5) needs a scratch allocation that
    TFLM's patched kiss_fft returns as NULL (the interpreter segfaults on these lengths, so it cannot
    be the oracle here)."""
    for code, shape_in, shape_out in (("SignalRfft", (n,), (n + 2,)), ("SignalIrfft", (n + 2,), (n,))):
        g = _golden.read_graph(custom_op(code, [T(shape_in, I16)], [T(shape_out, I16)],
                                         {"T": int(tflite.TensorType.INT16), "fft_length": n}))
        with pytest.raises(MliError) as e:
            handlers.run_op(g, g.ops[0], [np.zeros(shape_in, I16)])
        assert e.value.status == Status.NOT_SUPPORTED and f"radix {radix}," in str(e.value)


def test_rfft_is_the_scaled_dft() -> None:
    """Independent of the interpreter: a full-scale cosine lands in its bin as N/2 * A / N."""
    n, k = 256, 10
    x = np.rint(16000 * np.cos(2 * np.pi * k * np.arange(n) / n)).astype(I16)
    y = signal.rfft(x, n).astype(np.int64).reshape(-1, 2)
    assert abs(y[k, 0] - 8000 // 1) <= 8000 * 0.01 and np.abs(np.delete(y, k, axis=0)).max() <= 16


# ----------------------------------------------------------------------------------------- Energy
@pytest.mark.parametrize("start,end", [(5, 241), (0, 257), (0, 0), (100, 101)])
def test_energy(start: int, end: int) -> None:
    r = rng("energy", start, end)
    m = custom_op("SignalEnergy", [T((514,), I16)], [T((257,), U32)],
                  {"end_index": end, "start_index": start})
    spec = signal.rfft(audio(r, 480, 20000), 512)
    feeds = [[full16(r, 514)], [spec], [np.full(514, -32768, I16)]]
    assert_same(m, feeds, only={0: slice(start, end)})  # TFLM leaves the other bins untouched


# ------------------------------------------------------------------------------------- FilterBank
def _preprocessor_graph() -> Any:
    return _golden.read_graph(DATA / "audio_preprocessor_int8.tflite")


def _mel_tables() -> list[np.ndarray]:
    g = _preprocessor_graph()
    op = next(o for o in g.ops if o.name == "CUSTOM:SignalFilterBank")
    return [g.tensors[i].data for i in op.inputs[1:]]


@pytest.mark.parametrize("kind", ["mel", "random"])
def test_filter_bank(kind: str) -> None:
    r = rng("fbank", kind)
    if kind == "mel":
        tabs, nch, nin = _mel_tables(), 40, 257
    else:
        nch, nin = 6, 50
        wd = r.integers(0, 8, nch + 1)
        fs = r.integers(0, nin - 8, nch + 1)
        ws = np.concatenate([[0], np.cumsum(wd)[:-1]])
        tabs = [r.integers(0, 4097, wd.sum()), r.integers(-4096, 4097, wd.sum()), fs, ws, wd]
    ins = [T((nin,), U32)] + [T((len(t),), I16, t) for t in tabs]
    m = custom_op("SignalFilterBank", ins, [T((nch,), U64)], {"num_channels": nch})
    feeds = [[r.integers(0, 2 ** 32, nin, dtype=np.uint64).astype(U32)],
             [r.integers(0, 2 ** 20, nin).astype(U32)], [np.full(nin, 2 ** 32 - 1, U32)]]
    assert_same(m, feeds)


@pytest.mark.parametrize("scale_bits", [0, 1, 7, 31])
def test_filter_bank_square_root(scale_bits: int) -> None:
    r = rng("sqrt", scale_bits)
    m = custom_op("SignalFilterBankSquareRoot", [T((64,), U64), T((), I32, np.array(scale_bits))],
                  [T((64,), U32)], {})
    edges = np.array([0, 1, 2, 3, 4, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, 4294901760, 4294901761,
                      4294836225, 2 ** 64 - 1, 2 ** 64 - 2, (2 ** 32 - 1) ** 2,
                      (2 ** 32 - 1) ** 2 + 2 ** 32 - 1,
                      2 ** 62, 2 ** 53 + 1, 2 ** 53 - 1] + [0] * 46, np.uint64)
    sq = r.integers(0, 2 ** 32, 64, dtype=np.uint64)
    feeds = [[r.integers(0, 2 ** 64 - 1, 64, dtype=np.uint64, endpoint=True)],
             [(r.integers(0, 2 ** 64 - 1, 64, dtype=np.uint64) >> r.integers(0, 64, 64).astype(np.uint64))],
             [edges], [sq * sq], [sq * sq + sq], [sq * sq + sq + np.uint64(1)]]
    assert_same(m, feeds)


def test_sqrt64_is_the_rounded_root() -> None:
    v = np.array([0, 1, 2, 3, 6, 7, 2 ** 32 - 1, 2 ** 40 + 12345, 2 ** 64 - 1], np.uint64)
    want = [0, 1, 1, 2, 2, 3, 65535, 1048576, 4294967295]
    assert signal.sqrt64(v).tolist() == want


# ------------------------------------------------------------------------- SpectralSubtraction
_SS = {"alternate_one_minus_smoothing": 15401, "alternate_smoothing": 983, "clamping": False,
       "min_signal_remaining": 819, "num_channels": 40, "one_minus_smoothing": 15975, "smoothing": 409,
       "smoothing_bits": 10, "spectral_subtraction_bits": 14}


@pytest.mark.parametrize("variant", ["model", "clamping", "wide", "big"])
def test_spectral_subtraction_streams(variant: str) -> None:
    r = rng("ss", variant)
    o = dict(_SS)
    if variant == "clamping":
        o["clamping"] = True
    if variant == "wide":
        o.update(smoothing_bits=3, spectral_subtraction_bits=20, smoothing=700000, one_minus_smoothing=348576,
                 alternate_smoothing=3, alternate_one_minus_smoothing=2 ** 20 - 3, num_channels=7)
    nch = o["num_channels"]
    m = custom_op("SignalFilterBankSpectralSubtraction", [T((nch,), U32)],
                  [T((nch,), U32), T((nch,), U32)], o)
    hi = 2 ** 32 if variant == "big" else 2 ** 16
    feeds = [[(r.integers(0, hi, nch, dtype=np.uint64) >> np.uint64(k % 3 * 4)).astype(U32)]
             for k in range(12)]
    assert_same(m, feeds)


# ------------------------------------------------------------------------------------------ PCAN
def _pcan_lut() -> np.ndarray:
    g = _preprocessor_graph()
    op = next(o for o in g.ops if o.name == "CUSTOM:SignalPCAN")
    return g.tensors[op.inputs[2]].data


@pytest.mark.parametrize("lut_kind,snr_shift", [("model", 6), ("model", 0), ("model", 20), ("random", 6),
                                                ("random", 13)])
def test_pcan(lut_kind: str, snr_shift: int) -> None:
    r = rng("pcan", lut_kind, snr_shift)
    lut = _pcan_lut() if lut_kind == "model" else r.integers(-32768, 32768, 125)
    n = 64
    m = custom_op("SignalPCAN", [T((n,), U32), T((n,), U32), T((125,), I16, lut)], [T((n,), U32)],
                  {"snr_shift": snr_shift})
    small = np.arange(n) % 8
    u32 = lambda: r.integers(0, 2 ** 32, n, dtype=np.uint64).astype(U32)  # noqa: E731
    feeds = [[u32(), u32()],
             [r.integers(0, 2 ** 16, n).astype(U32), (2 ** r.integers(0, 32, n)).astype(U32)],
             [r.integers(0, 9000, n).astype(U32), small.astype(U32)],
             [np.full(n, 2 ** 32 - 1, U32), np.full(n, 2 ** 32 - 1, U32)]]
    assert_same(m, feeds)


# ---------------------------------------------------------------------------------- FilterBankLog
@pytest.mark.parametrize("bits,scale", [(3, 64), (0, 1600), (5, 1600), (0, 2 ** 20), (31, 7)])
def test_filter_bank_log(bits: int, scale: int) -> None:
    r = rng("log", bits, scale)
    m = custom_op("SignalFilterBankLog", [T((64,), U32)], [T((64,), I16)],
                  {"input_correction_bits": bits, "output_scale": scale})
    feeds = [[r.integers(0, 2 ** 32, 64, dtype=np.uint64).astype(U32)],
             [(2 ** r.integers(0, 32, 64)).astype(U32)], [np.arange(64).astype(U32)],
             [(r.integers(0, 2 ** 32, 64, dtype=np.uint64)
               >> r.integers(0, 32, 64).astype(np.uint64)).astype(U32)]]
    assert_same(m, feeds)


# ------------------------------------------------------------------ Delay / Framer / Stacker / OLA
@pytest.mark.parametrize("shape,d", [((16,), 5), ((2, 8), 3), ((3, 4), 9), ((10,), 0)])
def test_delay_streams(shape: tuple, d: int) -> None:
    r = rng("delay", shape, d)
    m = custom_op("SignalDelay", [T(shape, I16)], [T(shape, I16)], {"delay_length": d})
    assert_same(m, [[full16(r, shape)] for _ in range(5)])


@pytest.mark.parametrize("shape,size,step,prefill", [((160,), 400, 160, True), ((160,), 400, 160, False),
                                                     ((2, 6), 5, 2, False), ((2, 6), 5, 3, True),
                                                     ((8,), 4, 4, False), ((9,), 7, 3, True)])
def test_framer_streams(shape: tuple, size: int, step: int, prefill: bool) -> None:
    r = rng("framer", shape, size, step, prefill)
    nf = shape[-1] // step
    m = custom_op("SignalFramer", [T(shape, I16)], [T(shape[:-1] + (nf, size), I16), T((), np.bool_)],
                  {"frame_size": size, "frame_step": step, "prefill": prefill})
    res = run_both(m, [[full16(r, shape)] for _ in range(6)])
    for k, (got, want) in enumerate(res):
        assert bool(got[1]) == bool(want[1]), f"invoke {k}: valid flag"
        if bool(want[1]):  # an incomplete frame is left untouched by TFLM
            assert np.array_equal(got[0].reshape(-1), np.asarray(want[0]).reshape(-1)), f"invoke {k}"
    assert any(bool(w[1]) for _, w in res)


@pytest.mark.parametrize("nc,left,right,step", [(4, 2, 1, 1), (3, 0, 0, 1), (5, 1, 3, 2), (2, 3, 0, 3)])
def test_stacker_streams(nc: int, left: int, right: int, step: int) -> None:
    r = rng("stacker", nc, left, right, step)
    size = nc * (left + right + 1)
    m = custom_op("SignalStacker", [T((nc,), I16)], [T((size,), I16), T((), np.bool_)],
                  {"num_channels": nc, "stacker_left_context": left, "stacker_right_context": right,
                   "stacker_step": step})
    res = run_both(m, [[full16(r, (nc,))] for _ in range(9)])
    for k, (got, want) in enumerate(res):
        assert bool(got[1]) == bool(want[1]), f"invoke {k}: valid flag"
        if bool(want[1]):
            assert np.array_equal(got[0], np.asarray(want[0]).reshape(-1)), f"invoke {k}"
    assert any(bool(w[1]) for _, w in res)


@pytest.mark.parametrize("dt", [I16, np.float32])
@pytest.mark.parametrize("shape,step", [((3, 8), 4), ((2, 2, 6), 2), ((1, 5), 5)])
def test_overlap_add_streams(shape: tuple, step: int, dt: Any) -> None:
    r = rng("ola", shape, step, np.dtype(dt).name)
    oshape = shape[:-2] + (shape[-2] * step,)
    m = custom_op("SignalOverlapAdd", [T(shape, dt)], [T(oshape, dt)],
                  {"T": _ttype(dt), "frame_step": step})
    mk = (lambda: full16(r, shape)) if dt == I16 else (lambda: r.normal(0, 1e3, shape).astype(dt))
    assert_same(m, [[mk()] for _ in range(4)])


# ------------------------------------------------------------------------------ refusals
def test_bad_options_and_types_are_refused() -> None:
    g = _golden.read_graph(custom_op("SignalFilterBankSquareRoot", [T((4,), U64), T((), I32, np.array(40))],
                                     [T((4,), U32)], {}))
    with pytest.raises(MliError) as e:
        handlers.run_op(g, g.ops[0], [np.zeros(4, U64), np.array(40, I32)])
    assert e.value.status == Status.BAD_TENSOR
    g = _golden.read_graph(custom_op("SignalWindow", [T((8,), I16), T((3,), I16, np.ones(3))], [T((8,), I16)],
                                     {"shift": 1}))
    with pytest.raises(MliError):
        handlers.run_op(g, g.ops[0], [np.zeros(8, I16), np.ones(3, I16)])
    g = _golden.read_graph(custom_op("SignalRfft", [T((8,), np.int8)], [T((10,), np.int8)],
                                     {"T": int(tflite.TensorType.INT8), "fft_length": 8}))
    with pytest.raises(MliError) as e:
        handlers.run_op(g, g.ops[0], [np.zeros(8, np.int8)])
    assert e.value.status == Status.NOT_SUPPORTED


# ----------------------------------------------------------------- the micro_speech preprocessor
def _run_with_int32_div(graph: Any, op: Any, ins: list) -> list:
    """``handlers.run_op``; where that has no int32 DIV yet (the builtin handlers' owner adds it), the
    model's TruncateDiv runs as TFLM's reference int32 DIV: C division (toward zero)."""
    try:
        return handlers.run_op(graph, op, ins)
    except MliError as e:
        if op.name != "DIV" or e.status != Status.NOT_SUPPORTED or graph.tensors[op.outputs[0]].dtype != I32:
            raise
        a, b = ins[0].astype(np.int64), ins[1].astype(np.int64)
        return [(np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))).astype(I32)]


def _frames(x: np.ndarray, size: int = 480, hop: int = 320) -> list[np.ndarray]:
    n = (x.size - size) // hop + 1
    return [x[k * hop:k * hop + size].reshape(1, size) for k in range(n)]


def _tone_noise() -> np.ndarray:
    r = rng("tone")
    t = np.arange(16000) / 16000
    env = np.concatenate([np.full(4000, 0.02), np.linspace(0.02, 1, 4000), np.ones(4000), np.full(4000, 0.1)])
    x = env * 20000 * np.sin(2 * np.pi * (400 + 600 * t) * t) + r.normal(0, 150, t.size)
    return np.clip(np.rint(x), -32768, 32767).astype(I16)


def _speech() -> np.ndarray:
    with wave.open(str(DATA / "yes_1000ms.wav")) as w:
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(I16)


@pytest.mark.parametrize("source", ["tone_noise", "speech"])
def test_preprocessor_stream_every_tensor(source: str) -> None:
    """The whole micro_speech preprocessor, 49 frames (30 ms, hop 20 ms) in one stream: every tensor
    of every frame equals the interpreter's (the noise estimate carried from frame to frame)."""
    path = DATA / "audio_preprocessor_int8.tflite"
    g = _golden.read_graph(path)
    ip = runtime.Interpreter.from_file(str(path),
                                       intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors)
    energy_op = next(o for o in g.ops if o.name == "CUSTOM:SignalEnergy")
    opts = signal.custom_options(energy_op)  # [end_index, start_index]
    written = slice(opts[1], opts[0])  # TFLM leaves the energy bins outside [start, end) untouched
    partial = {energy_op.outputs[0], g.ops[energy_op.index + 1].outputs[0]}  # energy and its CAST
    x = _tone_noise() if source == "tone_noise" else _speech()
    state: dict = {}
    feats = []
    for k, fr in enumerate(_frames(x)):
        ip.set_input(fr, 0)
        ip.invoke()
        vals = _golden.run_graph(g, [fr], state, _run_with_int32_div)
        for ti, v in vals.items():
            want = np.asarray(ip.GetTensor(ti, 0)["tensor_data"]).reshape(-1)
            got = np.asarray(v).reshape(-1)
            sl = written if ti in partial else slice(None)
            assert np.array_equal(got[sl], want[sl]), f"frame {k} tensor {ti} {g.tensors[ti].name}"
        feats.append(vals[g.outputs[0]])
    feats = np.array(feats)
    assert feats.shape == (49, 40) and feats.dtype == np.int8 and np.unique(feats).size > 20


def test_preprocessor_reset_matches_interpreter_reset() -> None:
    """A new state dict is TFLM's Reset: the spectral-subtraction noise estimate starts from zero."""
    path = DATA / "audio_preprocessor_int8.tflite"
    g = _golden.read_graph(path)
    ip = runtime.Interpreter.from_file(str(path))
    frames = _frames(_speech())
    state: dict = {}
    for fr in frames[20:26]:
        ip.set_input(fr, 0)
        ip.invoke()
        _golden.run_graph(g, [fr], state, _run_with_int32_div)
    ip.reset()
    ip.set_input(frames[30], 0)
    ip.invoke()
    fresh = _golden.run_graph(g, [frames[30]], {}, _run_with_int32_div)[g.outputs[0]]
    carried = _golden.run_graph(g, [frames[30]], state, _run_with_int32_div)[g.outputs[0]]
    assert np.array_equal(fresh, ip.get_output(0))
    assert not np.array_equal(fresh, carried)
