"""Every tool the butler would offer, where it comes from, and its default verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from butler_cli.app.config.config import load_config, resolve_options
from butler_cli.app.config.options import RunOptions
from butler_cli.app.run.protected import protected_paths
from butler_cli.core.defaults import DEFAULT_POLICY
from butler_cli.core.gate import default_decision
from butler_cli.core.notices import notice
from butler_cli.core.toolsets import Toolset
from butler_cli.memory.store import DEFAULT_PROFILE, open_memory
from butler_cli.memory.tools import MemoryTools
from butler_cli.policy.loader import LoadedPolicy, load_policy
from butler_cli.policy.settings import PolicySettings
from butler_cli.store.files import butler_home
from butler_cli.tools.context import ToolContext
from butler_cli.tools.loader import load_tool_plugins
from butler_cli.tools.paths import roots_from


def offline_toolsets(opts: RunOptions) -> tuple[LoadedPolicy, list[tuple[str, Toolset]]]:
    """The active policy and every toolset (with where it comes from), built as a run would
    build them but with no model: for `policy check/test` and `tools list`."""
    config = load_config()
    opts = resolve_options(opts, config)
    home = butler_home()
    policy_file = Path(opts.policy_file).expanduser().resolve() if opts.policy_file else None
    policy = load_policy(
        opts.policy or DEFAULT_POLICY, PolicySettings(home, policy_file, config.sections)
    )
    base = Path.cwd()
    context = ToolContext(
        base,
        home,
        policy.classify,
        protected_paths(home, [policy_file, *policy.files], config),
        roots_from(base, config.allowed_roots()),
        config.sections,
        config.sandbox,  # every config section a run gives its tools, so they are built alike
    )
    memory = MemoryTools(open_memory(home, opts.profile or DEFAULT_PROFILE)).toolset()
    sources: list[tuple[str, Toolset]] = [("built-in memory", memory)]
    for plugin in load_tool_plugins(context):
        sources += [(plugin.source, toolset) for toolset in plugin.toolsets]
    return policy, sources


def tool_inventory(opts: RunOptions) -> list[dict[str, Any]]:
    """Every tool a run would offer — the MCP servers' too (from the tool cache, or listed
    by starting the servers it lacks) — with its kind and default verdict."""
    policy, sources = offline_toolsets(opts)
    sources += mcp_sources(policy)
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


def mcp_sources(policy: LoadedPolicy) -> list[tuple[str, Toolset]]:
    """The MCP servers' toolsets, governed as in a run; a server that could not be listed is
    named in a notice."""
    config = load_config()
    if not config.mcp:
        return []
    from butler_cli.app.run.mcp_servers import mcp_with_toolsets

    home = butler_home()
    protected = protected_paths(home, list(policy.files), config)
    hub, servers = mcp_with_toolsets(config, home, policy, protected)
    found = [(f"mcp {server.name}", toolset) for server, toolset in servers]
    for name, problem in hub.failures.items():
        notice(f"MCP server '{name}' did not start ({problem}); its tools are not listed")
    return found
