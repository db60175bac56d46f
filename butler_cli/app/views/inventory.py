"""Every tool the butler would offer, where it comes from, and its default verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from butler_cli.app.config.config import load_config
from butler_cli.app.config.options import RunOptions
from butler_cli.app.run.session import equip, open_guard, resolved
from butler_cli.core.gate import default_decision
from butler_cli.core.notices import notice
from butler_cli.core.toolsets import Toolset
from butler_cli.memory.store import DEFAULT_PROFILE, open_memory
from butler_cli.policy.loader import LoadedPolicy
from butler_cli.store.files import butler_home


def offline_toolsets(
    opts: RunOptions, *, mcp: bool = False
) -> tuple[LoadedPolicy, list[tuple[str, Toolset]]]:
    """The active policy and every toolset (with where it comes from), built as a run builds
    them — the same guard and tools (app/run/session.py) — but with no model: for
    `policy check/test` and `tools list` (``mcp``: the MCP servers' too; one that could not be
    listed is named in a notice)."""
    settings, opts = resolved(opts)
    home = butler_home()
    guard = open_guard(settings, opts, home, Path.cwd())
    equipment = equip(guard, open_memory(home, opts.profile or DEFAULT_PROFILE), mcp=mcp)
    sources: list[tuple[str, Toolset]] = [("built-in memory", equipment.memory)]
    for plugin in equipment.plugins:
        sources += [(plugin.source, toolset) for toolset in plugin.toolsets]
    sources += [(f"mcp {server.name}", toolset) for server, toolset in equipment.servers]
    for name, problem in (equipment.mcp.failures if equipment.mcp is not None else {}).items():
        notice(f"MCP server '{name}' did not start ({problem}); its tools are not listed")
    return guard.policy, sources


def tool_inventory(opts: RunOptions) -> list[dict[str, Any]]:
    """Every tool a run would offer — the MCP servers' too (from the tool cache, or listed
    by starting the servers it lacks) — with its kind and default verdict."""
    _, sources = offline_toolsets(opts, mcp=True)
    rows = []
    for source, toolset in sources:
        for spec in toolset.specs():
            if toolset.governed:
                default, kind = default_decision(spec), "governed"
            else:
                default, kind = "runs inline", "benign"
            rows.append({"name": spec.name, "kind": kind, "default": default, "source": source})
    return rows


def not_offered() -> list[str]:
    """Built-in tools left out for want of configuration, each with what would offer it."""
    if load_config().sections.get("smtp", {}).get("host"):
        return []
    return ["send_email is not offered: no SMTP server is set (butler config set smtp.host HOST)"]
