"""Known failures of the fuzz properties today: ``(function, misuse class) -> "Fnn: what happens"``.

Each entry becomes ``pytest.mark.xfail(strict=True)``; ids refer to the findings table kept by the
lead (``fuzz_findings.md``). Remove an entry when its fix lands (the strict xfail then turns red).
"""

from __future__ import annotations

__all__ = ["KNOWN"]

KNOWN: dict[tuple[str, str], str] = {}

KNOWN_OPS: dict[str, str] = {}
KNOWN_RESOURCES: dict[str, str] = {}
KNOWN_HISTORY: dict[str, str] = {}
