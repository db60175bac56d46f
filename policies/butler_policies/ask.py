"""``ask``: no opinion on anything, so every governed tool falls back to its default verdict.

The built-in governed tools default to approve: a person is asked before each change.
"""

from __future__ import annotations

from typing import Any

from butler_cli.api import Verdict


def policy(name: str, args: dict[str, Any]) -> Verdict | None:
    return None
