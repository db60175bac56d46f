"""Built-in tools: benign reading and the clock, governed file changes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from butler_cli.core.gate import Policy
from butler_cli.core.toolsets import Toolset
from butler_cli.tools.clock import clock_toolset
from butler_cli.tools.command import CommandTool
from butler_cli.tools.files import FileTools


def builtin_toolsets(
    base_dir: Path,
    home: Path,
    policy: Policy | None,
    protected: Sequence[Path | None] = (),
) -> list[Toolset]:
    files = FileTools(base_dir, home, [p for p in protected if p is not None])
    command = CommandTool(base_dir, home)
    return [files.benign(), clock_toolset(), files.governed(policy), command.governed(policy)]
