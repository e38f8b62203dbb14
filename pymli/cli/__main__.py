"""``python -m pymli.cli``: the ``pymli`` command."""

from __future__ import annotations

from . import main

main(prog_name="pymli")
