"""MLI 1.x: the first API generation of embARC MLI (``Release_1.0``), bit-exact with the C library.

* :class:`Tensor` (the 1.x ``mli_tensor``), :class:`ElType`, :class:`Status`, :class:`MliError`;
* the cfg structs in :mod:`pymli.v1.cfg`;
* :mod:`pymli.v1.capi`: one callable per 1.x C function (320);
* platform presets :data:`MLI1_CONV` (MLI 1.0's default build: convergent rounding, no checks),
  :data:`MLI1_UP`, :data:`MLI1_CONV_CHK`, :data:`MLI1_UP_CHK`, used with :func:`pymli.use_platform`;
* :func:`pymli.v1.replay.run_path`: replay of the 1.x golden cases and the models_v1 packs.
"""

from __future__ import annotations

from .cfg import (ConcatCfg, Conv2dCfg, Padding2dCfg, PermuteCfg, PointToSubtsrCfg, PoolCfg, ReluCfg, ReluType,
                  RnnAct, RnnCellCfg, RnnMode)
from .config import MLI1_CONV, MLI1_CONV_CHK, MLI1_UP, MLI1_UP_CHK, PRESETS_V1
from .tensor import MLI_MAX_RANK, ElType, MliError, Status, Tensor

__all__ = [
    "Tensor", "ElType", "Status", "MliError", "MLI_MAX_RANK", "ReluType", "RnnMode", "RnnAct", "ReluCfg", "Conv2dCfg",
    "PoolCfg", "RnnCellCfg", "PermuteCfg", "Padding2dCfg", "ConcatCfg", "PointToSubtsrCfg", "MLI1_CONV", "MLI1_UP",
    "MLI1_CONV_CHK", "MLI1_UP_CHK", "PRESETS_V1",
]
