"""The clock: ``now()`` gives local time with its zone."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from butler_cli.api import FunctionToolset, ToolSpec


def now(_args: dict[str, Any]) -> str:
    local = datetime.now().astimezone()
    return f"{local.isoformat(timespec='seconds')} ({local.tzname()})"


def clock_toolset() -> FunctionToolset:
    spec = ToolSpec(
        "now", "The current local date and time with its zone.", {"type": "object"}, read_only=True
    )
    return FunctionToolset([(spec, now)])
