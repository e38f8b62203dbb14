"""``pymli eval``: a model over a whole dataset (the command lives with :mod:`pymli.eval`)."""

from __future__ import annotations

from ..eval.command import eval_command

__all__ = ["eval_command"]
