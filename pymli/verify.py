"""``python -m pymli.verify``: the golden-case runner, kept here for that command.

The runner lives in :mod:`pymli.testing.golden`; this module re-exports it.
"""

from __future__ import annotations

import sys

from .testing.golden import Case, CaseError, iter_cases, load_case, main, run_case, run_dirs

__all__ = ["Case", "CaseError", "load_case", "run_case", "iter_cases", "run_dirs", "main"]

if __name__ == "__main__":
    sys.exit(main())
