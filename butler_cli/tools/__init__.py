"""Built-in tools: benign reading and the clock, governed file changes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from butler_cli.core.gate import Policy
from butler_cli.core.toolsets import Toolset
from butler_cli.tools.clock import clock_toolset
from butler_cli.tools.command import CommandTool
from butler_cli.tools.email import EmailTool
from butler_cli.tools.files import FileTools
from butler_cli.tools.http import http_gate
from butler_cli.tools.paths import roots_from


def builtin_toolsets(
    base_dir: Path,
    home: Path,
    policy: Policy | None,
    protected: Sequence[Path | None] = (),
    allowed_roots: list[str] | None = None,
    smtp: Mapping[str, Any] | None = None,
) -> list[Toolset]:
    """Every built-in tool, bound to the task's folder, the butler's home and the allowed roots
    (config ``allowed_roots``; by default the task's folder and the home folder)."""
    roots = roots_from(base_dir, allowed_roots)
    files = FileTools(base_dir, home, [p for p in protected if p is not None], roots)
    command = CommandTool(base_dir, home, roots)
    return [
        files.benign(),
        clock_toolset(),
        files.governed(policy),
        command.governed(policy),
        http_gate(policy),
        EmailTool(smtp or {}).governed(policy),
    ]
