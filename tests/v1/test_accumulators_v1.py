"""MLI 1.0's accumulators: fx16 sums saturate to 40 bits after every MAC, fx8 / fx8w16d sums wrap in int32.

Properties of :func:`pymli.v1.kernels.acc40_accumulate` and :func:`wrap32` against plain Python
oracles, then calls whose operands push the accumulators to their limits, run through pymli.v1 and
the real MLI 1.0 library (ctypes, ../shared/mli1/build.sh, variant ``conv``): whole output buffers
compared, and each case checked to actually reach the limit (the exact sum gives another output).
"""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pymli
from pymli.v1 import PRESETS_V1, Conv2dCfg, ElType, ReluCfg, ReluType, RnnAct, RnnCellCfg, RnnMode, Tensor, capi
from pymli.v1.kernels import ACC40_MAX, ACC40_MIN, acc40_accumulate, mac_terms, wrap32

from ._cmli1 import CCall
from ._cmli1 import load as _lib


# ---------------------------------------------------------------------------------- oracles
def _sat40_oracle(init: int, terms: list[int]) -> int:
    acc = init
    for t in terms:
        acc = min(max(acc + t, ACC40_MIN), ACC40_MAX)
    return acc


_BIG = st.integers(-(1 << 36), 1 << 36)


@given(st.integers(ACC40_MIN, ACC40_MAX), st.lists(st.lists(_BIG, min_size=0, max_size=40), min_size=1, max_size=6),
       st.integers(0, 3))
def test_acc40_equals_the_sequential_oracle(init: int, rows: list[list[int]], scale: int) -> None:
    k = max(len(r) for r in rows)
    terms = np.array([r + [0] * (k - len(r)) for r in rows], dtype=np.int64) << scale  # zeros are neutral steps
    got = acc40_accumulate(np.full(len(rows), init), terms)
    assert got.tolist() == [_sat40_oracle(init, [int(v) for v in row]) for row in terms]


def test_acc40_order_matters_and_is_kept() -> None:
    up, down = 1 << 38, -(1 << 38)
    terms = np.array([[up, up, up, down], [down, up, up, up]])
    got = acc40_accumulate(np.zeros(2, np.int64), terms)
    assert got.tolist() == [ACC40_MAX - (1 << 38), ACC40_MAX]
    assert acc40_accumulate(np.array([5]), np.zeros((1, 0), np.int64)).tolist() == [5]


@given(st.lists(st.integers(-(1 << 45), 1 << 45), min_size=1, max_size=30))
def test_wrap32_is_the_low_word(xs: list[int]) -> None:
    want = [((x + (1 << 31)) % (1 << 32)) - (1 << 31) for x in xs]
    assert wrap32(np.array(xs)).tolist() == want


def test_mac_terms_pairs_after_singles() -> None:
    p = np.arange(1, 12)
    assert mac_terms(p, 3).tolist() == [1, 2, 3, 4 + 5, 6 + 7, 8 + 9, 10 + 11]
    assert mac_terms(p[:8], 0).sum() == p[:8].sum()


# ---------------------------------------------------------------------------------- live MLI 1.0
def _el(bits: int) -> ElType:
    return ElType.FX_8 if bits == 8 else ElType.FX_16


def _both(name: str, args: list, out: Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(C output buffer, pymli output buffer) of one call."""
    c = CCall(_lib())
    assert c.call(name, args) == 0
    with pymli.use_platform(PRESETS_V1["conv"]):
        getattr(capi, name)(*args)
    return c.buffer(out).copy(), out.data.copy()


def _exact_out(acc: np.ndarray, shift: int, bits: int) -> np.ndarray:
    """The output an unlimited accumulator would give (rounding aside): shows the limit was reached."""
    lim = 1 << (bits - 1)
    return np.clip(np.floor(acc / 2.0 ** shift + 0.5), -lim, lim - 1)


def _operands(rng: np.random.Generator, n: int, bits: int, same_sign: int) -> np.ndarray:
    """Extreme values: the first ``same_sign`` of the largest magnitude, then random signs."""
    lim = 1 << (bits - 1)
    v = rng.choice([-lim, lim - 1], size=n)
    v[:same_sign] = -lim
    return v


@pytest.mark.parametrize("n", [5, 7, 8, 11, 12, 14, 600, 1027, 1030, 2048])
def test_fc_fx16_saturates_at_40_bits_in_c_order(n: int) -> None:
    """Mixed-sign products that hit the 40-bit limit: single and dual MACs in full_connection's order."""
    rng = np.random.default_rng(n)
    m = 6
    x = np.full(n, -32768)
    w = np.stack([_operands(rng, n, 16, rng.integers(n // 2, n + 1)) for _ in range(m)])
    if n < 600:  # few products cannot reach 2^39 from zero: start near the limit through the bias
        b, b_frac = np.full(m, 32767), 0
        in_frac, w_frac, out_frac = 15, 15, 0
        bias_tensor = Tensor.from_numpy(b, ElType.FX_16, frac_bits=b_frac)
        shift = 30
        init = b.astype(np.int64) << 30  # bias << (in + w - b frac), saturated below 2^39 by the C code
    else:
        bias_tensor = Tensor.from_numpy(np.zeros(m, int), ElType.FX_16, frac_bits=0)
        in_frac, w_frac, out_frac, shift, init = 15, 15, 0, 30, np.zeros(m, np.int64)
    X = Tensor.from_numpy(x, ElType.FX_16, frac_bits=in_frac)
    W = Tensor.from_numpy(w, ElType.FX_16, frac_bits=w_frac)
    out = Tensor.empty(m, ElType.FX_16, frac_bits=out_frac)
    c, ours = _both("mli_krn_fully_connected_fx16", [X, W, bias_tensor, out], out)
    assert np.array_equal(ours, c), f"n={n}\npymli {ours}\nC     {c}"
    exact = _exact_out(np.minimum(init, ACC40_MAX) + w.astype(np.int64) @ x, shift, 16)
    assert not np.array_equal(exact, c), "the operands did not reach the accumulator's limit"


@pytest.mark.parametrize("name,n,bits_in,bits_w", [("mli_krn_fully_connected_fx8w16d", 600, 16, 8),
                                                    ("mli_krn_fully_connected_fx8w16d", 1024, 16, 8),
                                                    ("mli_krn_fully_connected_fx8w16d", 1501, 16, 8),
                                                    ("mli_krn_fully_connected_fx8", 140_000, 8, 8)])
def test_fc_int32_accumulator_wraps(name: str, n: int, bits_in: int, bits_w: int) -> None:
    rng = np.random.default_rng(n)
    m = 3
    x = np.full(n, -(1 << (bits_in - 1)))
    w = np.stack([_operands(rng, n, bits_w, rng.integers(n * 3 // 4, n + 1)) for _ in range(m)])
    in_frac, w_frac = bits_in - 1, bits_w - 1
    X = Tensor.from_numpy(x, _el(bits_in), frac_bits=in_frac)
    W = Tensor.from_numpy(w, _el(bits_w), frac_bits=w_frac)
    B = Tensor.from_numpy(np.zeros(m, int), _el(bits_w), frac_bits=0)
    out = Tensor.empty(m, _el(bits_in), frac_bits=0)
    c, ours = _both(name, [X, W, B, out], out)
    assert np.array_equal(ours, c), f"pymli {ours}\nC     {c}"
    exact = _exact_out(w.astype(np.int64) @ x, in_frac + w_frac, bits_in)
    assert not np.array_equal(exact, c), "the operands did not reach the accumulator's limit"


@pytest.mark.parametrize("name,k,pad,spec_ok", [("mli_krn_conv2d_chw_fx16", 3, 1, True),
                                                ("mli_krn_conv2d_chw_fx16", 4, 0, True),
                                                ("mli_krn_conv2d_chw_fx16_k3x3_str1_krnpad", 3, 1, True),
                                                ("mli_krn_conv2d_chw_fx16_k1x1_str1_nopad", 1, 0, True)])
def test_conv_fx16_saturates_at_40_bits(name: str, k: int, pad: int, spec_ok: bool) -> None:
    """Products of one sign (any order gives the same saturated sum), random magnitudes, a random bias."""
    rng = np.random.default_rng(k * 10 + pad)
    ci = 2048 if k == 1 else 300
    h = w_ = 6
    x = -rng.integers(16000, 32769, (ci, h, w_))
    wt = -rng.integers(16000, 32769, (3, ci, k, k))
    wt[1] *= -1  # one output channel saturates downwards
    b = rng.integers(-32768, 32768, 3)
    X = Tensor.from_numpy(x, ElType.FX_16, frac_bits=15)
    W = Tensor.from_numpy(wt, ElType.FX_16, frac_bits=15)
    B = Tensor.from_numpy(b, ElType.FX_16, frac_bits=12)
    ho = h + 2 * pad - k + 1
    out = Tensor.empty(3 * ho * ho, ElType.FX_16, frac_bits=0)
    cfg = Conv2dCfg(ReluCfg(ReluType.NONE), 1, 1, pad, pad, pad, pad)
    c, ours = _both(name, [X, W, B, cfg, out], out)
    assert np.array_equal(ours, c)
    assert np.any(c == 512) and np.any(c == -512), "no output at the 40-bit limit (2^39 >> 30)"


@pytest.mark.parametrize("name,ci,k", [("mli_krn_conv2d_chw_fx8w16d", 64, 3), ("mli_krn_conv2d_chw_fx8w16d", 130, 2),
                                       ("mli_krn_conv2d_chw_fx8", 16400, 3)])
def test_conv_int32_accumulator_wraps(name: str, ci: int, k: int) -> None:
    rng = np.random.default_rng(ci)
    bits_in = 8 if name.endswith("fx8") else 16
    h = k + 1
    x = np.full((ci, h, h), -(1 << (bits_in - 1)))
    wt = _operands(rng, 2 * ci * k * k, 8, ci * k * k).reshape(2, ci, k, k)
    X = Tensor.from_numpy(x, _el(bits_in), frac_bits=bits_in - 1)
    W = Tensor.from_numpy(wt, ElType.FX_8, frac_bits=7)
    B = Tensor.from_numpy(np.zeros(2, int), ElType.FX_8, frac_bits=0)
    out = Tensor.empty(2 * 4, _el(bits_in), frac_bits=0)
    cfg = Conv2dCfg(ReluCfg(ReluType.NONE), 1, 1, 0, 0, 0, 0)
    c, ours = _both(name, [X, W, B, cfg, out], out)
    assert np.array_equal(ours, c)
    exact = np.einsum("chw,ochw->o", x[:, :k, :k].astype(np.int64), wt.astype(np.int64))
    assert not np.array_equal(_exact_out(exact, bits_in - 1 + 7, bits_in), c.reshape(2, 4)[:, 0])


def test_depthwise_fx16_saturates_at_40_bits() -> None:
    k = 23  # 529 products of 2^30 > 2^39
    x = np.full((2, k, k), -32768)
    wt = np.full((2, 1, k, k), -32768)
    wt[1] = 32767
    X = Tensor.from_numpy(x, ElType.FX_16, frac_bits=15)
    W = Tensor.from_numpy(wt, ElType.FX_16, frac_bits=15)
    B = Tensor.from_numpy(np.zeros(2, int), ElType.FX_16, frac_bits=0)
    out = Tensor.empty(2, ElType.FX_16, frac_bits=0)
    cfg = Conv2dCfg(ReluCfg(ReluType.NONE), 1, 1, 0, 0, 0, 0)
    c, ours = _both("mli_krn_depthwise_conv2d_chw_fx16", [X, W, B, cfg, out], out)
    assert np.array_equal(ours, c)
    assert c.tolist() == [512, -512]  # 2^39 - 1 and -2^39 read out with a shift of 30; exact: 529, -529


@pytest.mark.parametrize("n,m", [(600, 8), (1030, 5), (5, 600), (12, 1024)])
def test_basic_rnn_fx16_saturates_in_both_parts(n: int, m: int) -> None:
    """The input part, its truncating shift and the state part on the saturating 40-bit accumulator."""
    rng = np.random.default_rng(n * m)
    mo = 4
    x = np.full(n, -32768)
    prev = np.full(m, -32768)
    w = np.stack([_operands(rng, n + m, 16, rng.integers((n + m) // 2, n + m)) for _ in range(mo)])
    X = Tensor.from_numpy(x, ElType.FX_16, frac_bits=15)
    P = Tensor.from_numpy(prev, ElType.FX_16, frac_bits=14)  # in.frac - prev.frac = 1: a shift in between
    W = Tensor.from_numpy(w, ElType.FX_16, frac_bits=15)
    B = Tensor.from_numpy(rng.integers(-32768, 32768, mo), ElType.FX_16, frac_bits=0)
    out = Tensor.empty(mo, ElType.FX_16, frac_bits=0)
    cfg = RnnCellCfg(RnnMode.ONE_TO_ONE, RnnAct.NONE, None)
    c, ours = _both("mli_krn_basic_rnn_cell_fx16", [X, P, W, B, cfg, out], out)
    assert np.array_equal(ours, c), f"pymli {ours}\nC     {c}"
    assert np.any(np.abs(c.astype(int)) >= 500), "the accumulator stayed far from its limit"


@pytest.mark.parametrize("name,bits_in,bits_w", [("mli_krn_conv2d_hwc_fx16", 16, 16),
                                                 ("mli_krn_conv2d_hwc_fx8w16d", 16, 8)])
def test_conv_hwc_limits(name: str, bits_in: int, bits_w: int) -> None:
    """HWC convolution: fx16 saturates (products of one sign), fx8w16d wraps (mixed signs)."""
    rng = np.random.default_rng(bits_w)
    ci, k, h = 300, 3, 4
    x = np.full((h, h, ci), -(1 << (bits_in - 1)))
    if bits_w == 16:
        wt = -rng.integers(16000, 32769, (2, k, k, ci))
        wt[1] *= -1
    else:
        wt = _operands(rng, 2 * k * k * ci, 8, k * k * ci).reshape(2, k, k, ci)
    X = Tensor.from_numpy(x, _el(bits_in), frac_bits=bits_in - 1)
    W = Tensor.from_numpy(wt, _el(bits_w), frac_bits=bits_w - 1)
    B = Tensor.from_numpy(np.zeros(2, int), _el(bits_w), frac_bits=0)
    out = Tensor.empty(2 * 4, _el(bits_in), frac_bits=0)
    cfg = Conv2dCfg(ReluCfg(ReluType.NONE), 1, 1, 0, 0, 0, 0)
    c, ours = _both(name, [X, W, B, cfg, out], out)
    assert np.array_equal(ours, c)
    exact = np.einsum("hwc,ohwc->o", x[:k, :k].astype(np.int64), wt.astype(np.int64))
    assert not np.array_equal(_exact_out(exact, bits_in - 1 + bits_w - 1, bits_in), c.reshape(4, 2)[0])


@pytest.mark.parametrize("name,bits_w", [("mli_krn_lstm_cell_fx16", 16), ("mli_krn_lstm_cell_fx8w16d", 8)])
def test_lstm_dense_step_at_the_limits(name: str, bits_w: int) -> None:
    """An LSTM cell whose gate pre-activations leave the accumulator's range (saturating / wrapping)."""
    rng = np.random.default_rng(bits_w)
    n, m, steps = 1100, 4, 3
    x = np.full((steps, n), -32768)
    w = np.stack([_operands(rng, m * (n + m), bits_w, rng.integers(n // 2, n)).reshape(m, n + m) for _ in range(4)])
    X = Tensor.from_numpy(x, ElType.FX_16, frac_bits=15)
    P = Tensor.from_numpy(np.zeros(m, int), ElType.FX_16, frac_bits=15)
    # the dense read-out shift (15 + w_frac - 12) brings the accumulator's limit (2^39 / 2^31) to ~2^9
    W = Tensor.from_numpy(w, _el(bits_w), frac_bits=27 if bits_w == 16 else 19)
    B = Tensor.from_numpy(np.zeros((4, m), int), _el(bits_w), frac_bits=0)
    cell = Tensor.from_numpy(np.zeros(m, int), ElType.FX_16, frac_bits=11)
    ir = Tensor.empty(4 * m, ElType.FX_16, frac_bits=0)
    out = Tensor.empty(steps * m, ElType.FX_16, frac_bits=15)
    cfg = RnnCellCfg(RnnMode.BATCH_TO_BATCH, RnnAct.TANH, ir)
    c = CCall(_lib())
    assert c.call(name, [X, P, W, B, cfg, cell, out]) == 0
    with pymli.use_platform(PRESETS_V1["conv"]):
        getattr(capi, name)(X, P, W, B, cfg, cell, out)
    for t in (out, cell, ir):
        assert np.array_equal(t.data, c.buffer(t)), name
    # the scratch holds the last step's pre-activations at frac 12: far from the exact sums
    exact = np.einsum("gmk,k->gm", w[:, :, :n].astype(np.int64), x[-1].astype(np.int64))
    assert np.any(np.abs(exact) >= (1 << 39) if bits_w == 16 else np.abs(exact) >= (1 << 31))
