"""``pymli export``: a model as a plain C program on MLI 2.0 (the command lives with :mod:`pymli.export`)."""

from __future__ import annotations

from ..export.cli import export_command

__all__ = ["export_command"]
