"""``readonly``: refuse every governed call. Benign tools (reading, the clock) still run."""

from __future__ import annotations

from typing import Any

from butler_cli.api import Verdict, refuse


def policy(name: str, args: dict[str, Any]) -> Verdict:
    return refuse(f"the readonly policy refuses every change ('{name}')")
