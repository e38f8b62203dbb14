"""Runs one offloaded operator of a golden model through pymli.capi with the parameters of
pymli.tflm.arc_mli (what TFLM's arc_mli glue hands to MLI)."""

from __future__ import annotations

import numpy as np

import pymli
from pymli import Tensor, capi
from pymli.capi import Conv2dCfg, FullyConnectedCfg, PoolCfg, ReluCfg, ReluType
from pymli.tflm import arc_mli
from pymli.testing.tflm_golden import TGraph, TOp
from pymli.tflm.common import activation_range


def _sa8(data: np.ndarray, p: arc_mli.SaParams, el: str = "SA_8") -> Tensor:
    if p.dim >= 0:
        return Tensor.from_numpy(data, el, zero_point=p.zero_point.astype(np.int64),
                                 scale=p.scale.astype(np.int64),
                                 scale_frac_bits=p.scale_frac_bits.astype(np.int64), dim=p.dim)
    return Tensor.from_numpy(data, el, zero_point=int(p.zero_point), scale=int(p.scale),
                             scale_frac_bits=int(p.scale_frac_bits))


def _out(shape: tuple[int, ...], p: arc_mli.SaParams) -> Tensor:
    return _sa8(np.zeros(shape, np.int8), p)


def run_offloaded(g: TGraph, op: TOp, ins: list, *, fix: bool, platform: str) -> np.ndarray:
    T = g.tensors
    x, o = T[op.inputs[0]], T[op.outputs[0]]
    opt = op.options
    act = opt.FusedActivationFunction() if hasattr(opt, "FusedActivationFunction") else 0
    lo, hi = activation_range(act, o.s, o.zp, o.dtype)
    plat = {"vpx": pymli.VPX, "em": pymli.EM}[platform]
    with pymli.use_platform(plat):
        if op.name in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            w, b = T[op.inputs[1]], T[op.inputs[2]]
            dm = w.shape[3] // x.shape[3] if op.name == "DEPTHWISE_CONV_2D" else 1
            p = arc_mli.conv_params(op.name, in_scale=x.s, in_zp=x.zp, w_scales=w.scale,
                                    b_scales=b.scale, out_scale=o.s, out_zp=o.zp, act=act,
                                    act_min=lo, act_max=hi, same=opt.Padding() == 0,
                                    in_hw=x.shape[1:3], k_hw=w.shape[1:3],
                                    stride=(opt.StrideH(), opt.StrideW()), depth_multiplier=dm,
                                    fix=fix)
            wt = _sa8(arc_mli.hwcn_weights(op.name, ins[1]), p.weights)
            bt = _sa8(ins[2].astype(np.int32), p.bias, "SA_32")
            t, bo, l, r = p.padding
            cfg = Conv2dCfg(relu=ReluCfg(ReluType(p.relu)), stride_width=p.stride[1],
                            stride_height=p.stride[0], padding_left=l, padding_right=r,
                            padding_top=t, padding_bottom=bo)
            res = []
            for n in range(ins[0].shape[0]):
                xt = _sa8(ins[0][n], p.inp)
                ot = _out(o.shape[1:], p.out)
                st = getattr(capi, p.function)(xt, wt, bt, cfg, ot)
                assert int(st) == 0, st
                res.append(ot.numpy())
            return np.stack(res)
        if op.name == "FULLY_CONNECTED":
            w, b = T[op.inputs[1]], T[op.inputs[2]]
            p = arc_mli.fc_params(in_scale=x.s, in_zp=x.zp, w_scale=w.s, b_scale=b.s, out_scale=o.s,
                                  out_zp=o.zp, act=act, act_min=lo, act_max=hi,
                                  out_rank=len(o.shape), fix=fix)
            wt = _sa8(arc_mli.hwcn_weights(op.name, ins[1]), p.weights)
            bt = _sa8(ins[2].astype(np.int32), p.bias, "SA_32")
            cfg = FullyConnectedCfg(relu=ReluCfg(ReluType(p.relu)))
            nout = w.shape[0]
            xs = ins[0].reshape(-1, w.shape[1])
            res = []
            for n in range(xs.shape[0]):
                ot = _out((nout,), p.out)
                st = capi.mli_krn_fully_connected_sa8_sa8_sa32(_sa8(xs[n], p.inp), wt, bt, cfg, ot)
                assert int(st) == 0, st
                res.append(ot.numpy())
            y = np.stack(res)
            if len(o.shape) > 2 and not fix:
                y = np.where(np.arange(nout) == 0, y, 0)  # only element 0 (fresh arena: zeros)
            return y.reshape(o.shape)
        if op.name in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
            fn = arc_mli.mli_function(op.name, input_dtype="int8", act=act)
            k = (opt.FilterHeight(), opt.FilterWidth())
            t, bo, l, r = arc_mli.pool_padding(opt.Padding() == 0, x.shape[1:3], k,
                                               (opt.StrideH(), opt.StrideW()))
            cfg = PoolCfg(kernel_width=k[1], kernel_height=k[0], stride_width=opt.StrideW(),
                          stride_height=opt.StrideH(), padding_left=l, padding_right=r, padding_top=t,
                          padding_bottom=bo)
            pin = arc_mli.SaParams(*(np.array(v) for v in (x.zp, *arc_mli.mli_scale(x.s, fix=fix))))
            pout = arc_mli.SaParams(*(np.array(v) for v in (o.zp, *arc_mli.mli_scale(o.s, fix=fix))))
            res = []
            for n in range(ins[0].shape[0]):
                ot = _out(o.shape[1:], pout)
                st = getattr(capi, fn)(_sa8(ins[0][n], pin), cfg, ot)
                assert int(st) == 0, st
                res.append(ot.numpy())
            return np.stack(res)
    raise NotImplementedError(op.name)
