"""Tools: the built-ins (files, clock, commands, HTTP, e-mail) and plug-ins, all loaded through
the ``butler.tools`` entry points; MCP servers come from the config (``tools.mcp``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # importing a tools module (redact, read by the config) loads none of these
    from pathlib import Path

    from butler_cli.core.toolsets import Toolset
    from butler_cli.tools.context import Classifier


def builtin_toolsets(
    base_dir: Path,
    home: Path,
    policy: Classifier | None,
    protected: Sequence[Path | None] = (),
    allowed_roots: list[str] | None = None,
    sections: Mapping[str, Mapping[str, Any]] | None = None,
    sandbox: Mapping[str, Any] | None = None,
) -> list[Toolset]:
    """Every tool from the ``butler.tools`` plug-ins, bound to the task's folder, the butler's
    home and the allowed roots (config ``allowed_roots``; by default the task's folder and the
    home folder)."""
    from butler_cli.tools.context import ToolContext
    from butler_cli.tools.loader import load_tool_plugins
    from butler_cli.tools.paths import roots_from

    context = ToolContext(
        base_dir,
        home,
        policy,
        [p for p in protected if p is not None],
        roots_from(base_dir, allowed_roots),
        dict(sections or {}),
        dict(sandbox or {}),
    )
    return [toolset for plugin in load_tool_plugins(context) for toolset in plugin.toolsets]
