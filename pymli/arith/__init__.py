"""Integer arithmetic of MLI: the only place where pymli rounds and saturates."""

from .rounding import add_sat, asl, asr, asr_rnd, cast_fx, limits, sat, sat_fx, sub_sat, wrap

__all__ = ["add_sat", "asl", "asr", "asr_rnd", "cast_fx", "limits", "sat", "sat_fx", "sub_sat", "wrap"]
