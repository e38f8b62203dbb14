"""The ``pymli`` command line: one module per command, gathered on one click group.

Commands: ``tour``, ``info``, ``verify``, ``demo`` (pymli itself) and ``run``, ``compare``,
``inspect`` (TFLite models), ``eval`` (a model over a dataset), ``export`` (a model as a C program on MLI). A user mistake never ends in a traceback: wrong arguments exit with
code 2 and one ``Error:`` line (:mod:`pymli.cli._common`), a pymli error during a run with code 1.
"""

from __future__ import annotations

import click

from .. import __version__
from ._common import Group
from .compare import compare
from .demo import demo
from .eval import eval_command
from .export import export_command
from .info import info
from .inspect import inspect
from .run import run
from .tour import tour
from .v1net import v1net
from .verify import verify

__all__ = ["main"]


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pymli")
def main() -> None:
    """pymli: the embARC MLI 2.0 library in NumPy, bit-exact with the C library."""


for _cmd in (tour, info, verify, demo, run, compare, inspect, v1net):
    main.add_command(_cmd)
main.add_command(eval_command, name="eval")
main.add_command(export_command, name="export")

