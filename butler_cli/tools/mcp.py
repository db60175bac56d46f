"""MCP servers as toolsets: their tools join the loop as ``<server>__<tool>``.

A tool is benign only when its server declares it read-only (``readOnlyHint``) and
closed-world (``openWorldHint: false``), or the config names it benign (``benign = ["count"]``):
the MCP specification's defaults are ``readOnlyHint: false``, ``destructiveHint: true`` and
``openWorldHint: true``, so a tool with no annotations may change things, and a read-only tool
that does not say otherwise may reach other machines (governed like ``http_request``). A tool
that is declared destructive or may reach other machines is asked about every time
(``ask_always``: never "always allow here"). The config can govern more
(``governed = ["create*"]``, or ``true`` for the whole server); a declared hint is shown in
the tool's description. The specs come from the hub (:mod:`mcp_hub`): from the cache when it
is good, so a task that calls no MCP tool starts no server. A server that fails to start is
reported and the butler runs without it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from butler_cli.core.gate import Gate, Policy
from butler_cli.core.toolsets import FunctionToolset, Toolset, ToolSpec
from butler_cli.core.verdicts import approve
from butler_cli.tools.mcp_cache import ToolInfo
from butler_cli.tools.mcp_hub import SEP, START_TIMEOUT_S, McpHub, McpServer, shared_hub

__all__ = ["SEP", "McpHub", "McpServer", "McpTool", "mcp_toolsets", "servers_from", "shared_hub"]


@dataclass(frozen=True)
class McpTool:
    """A tool of a configured server, as last listed (live or cached)."""

    server: McpServer
    info: ToolInfo

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def full_name(self) -> str:
        return f"{self.server.name}{SEP}{self.info.name}"

    @property
    def governed(self) -> bool:
        return governed_by_config(self.server, self.info)

    def hints(self) -> str:
        info = self.info
        declared = (
            ("read-only", info.read_only),
            ("destructive", info.destructive),
            ("open-world", info.open_world),
        )
        shown = [hint for hint, on in declared if on]
        return f" [declared {', '.join(shown)}]" if shown else ""


def governed_by_config(server: McpServer, info: ToolInfo) -> bool:
    return server.governs(
        info.name, info.read_only is True, info.destructive is True, info.open_world is False
    )


def hub_tools(hub: McpHub, refresh: bool = False) -> list[McpTool]:
    """Every tool of every server that could be listed (from the cache where it is good)."""
    listings = hub.listings(refresh)
    return [
        McpTool(server, info)
        for server in hub.servers
        if server.name in listings
        for info in listings[server.name].tools
    ]


def mcp_toolsets(
    hub: McpHub, policy: Policy | None, governs: Callable[[str], bool] | None = None
) -> list[tuple[McpServer, Toolset]]:
    """Per server: its benign tools inline, its governed ones (config, a destructive hint, or
    ``governs``: the policy object's claim on the name, see ``LoadedPolicy.governs``) behind a
    gate. A call starts the server if it is not running yet."""

    def is_governed(t: McpTool) -> bool:
        return t.governed or (governs is not None and governs(t.full_name))

    tools = hub_tools(hub)
    out: list[tuple[McpServer, Toolset]] = []
    for server in hub.servers:
        mine = [t for t in tools if t.server is server]
        benign = [t for t in mine if not is_governed(t)]
        governed = {t.full_name: t for t in mine if is_governed(t)}
        if benign:
            runners = [(_spec(t), _runner(hub, t)) for t in benign]
            out.append((server, FunctionToolset(runners)))
        if governed:
            specs = [_spec(t, governed=True) for t in governed.values()]

            def run(name: str, args: dict[str, Any], by_name: dict[str, McpTool] = governed) -> str:
                tool = by_name[name]
                return hub.call(tool.server, tool.name, args)

            out.append((server, Gate(specs, run, policy=policy)))
    return out


def _spec(tool: McpTool, governed: bool = False) -> ToolSpec:
    default = None
    if governed:
        info, server = tool.info, tool.server
        if info.destructive:
            why = "the server declares it destructive"
        elif info.read_only and info.open_world is not False:
            why = "it may reach other machines (the server does not declare it closed-world)"
        elif info.read_only or server.named(tool.name, server.benign):
            why = "governed by your MCP config"
        else:
            why = "the server does not declare it read-only"
        # like http_request and a delete: what reaches other machines, or is declared
        # destructive, is asked every time — never kept as "always allow here"
        every_time = info.destructive is True or info.open_world is not False
        default = approve(
            f"MCP tool {tool.full_name}: {why} — asking you first", ask_always=every_time
        )
    described = f"{tool.info.description}{tool.hints()}"
    return ToolSpec(tool.full_name, described, tool.info.schema, default)


def _runner(hub: McpHub, tool: McpTool) -> Callable[[dict[str, Any]], str]:
    """A benign tool's call. Its spec may come from the cache: if the running server now
    lists it otherwise (gone, or no longer read-only), the call is not made."""

    def run(args: dict[str, Any]) -> str:
        fresh = hub.fresh(tool.server, tool.name)
        if fresh is None or governed_by_config(tool.server, fresh):
            raise RuntimeError(
                f"MCP server '{tool.server.name}' changed since its tools were listed: "
                f"'{tool.name}' is {'gone' if fresh is None else 'no longer read-only'}; "
                "nothing was run (the next task sees its new list)"
            )
        return hub.call(tool.server, tool.name, args)

    return run


def servers_from(config: Mapping[str, Any]) -> list[McpServer]:
    """``[mcp.NAME]`` tables (already validated by the config loader) as server settings."""
    out = []
    for name, table in sorted(config.items()):
        governed = table.get("governed", ())
        out.append(
            McpServer(
                name,
                table.get("command"),
                table.get("url"),
                tuple(table.get("args", ())),
                dict(table.get("env", {})),
                governed if governed is True else tuple(governed or ()),
                tuple(table.get("benign", ())),
                float(table.get("start_timeout", START_TIMEOUT_S)),
                bool(table.get("sandbox", True)),
            )
        )
    return out
