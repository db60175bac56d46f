"""The MCP servers of the config, as a run, `butler mcp list` and `butler tools list` see them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from butler_cli.app.config.config import Config

if TYPE_CHECKING:
    from butler_cli.tools.mcp import McpHub


def start_mcp(settings: Config, home: Path) -> McpHub | None:
    """This process's MCP hub for the configured servers (None when there are none). Nothing
    starts here: a server starts when its tools must be listed or one is called."""
    if not settings.mcp:
        return None
    from butler_cli.tools.mcp import servers_from, shared_hub

    return shared_hub(servers_from(settings.mcp), home)


@dataclass(frozen=True)
class McpToolRow:
    name: str
    kind: str  # "benign" or "governed"
    hints: str


@dataclass
class McpServerState:
    name: str
    #: "running", or "failed: <the cause, one line>"
    state: str
    log: str
    tools: list[McpToolRow] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.state != "running"


def mcp_states(settings: Config) -> list[McpServerState]:
    """Start every configured server (side by side, bounded), list its tools, refresh the
    cache, and say which tools wait for approval. Servers are hidden from the butler's files
    as in a run."""
    from butler_cli.app.run.protected import protected_paths
    from butler_cli.store.files import butler_home
    from butler_cli.tools.mcp import hub_tools

    home = butler_home()
    hub = start_mcp(settings, home)
    if hub is None:
        return []
    hub.hide(protected_paths(home, [], settings))
    tools = hub_tools(hub, refresh=True)
    out = []
    for server in hub.servers:
        problem = hub.failures.get(server.name)
        rows = [
            McpToolRow(t.full_name, "governed" if t.governed else "benign", t.hints().strip())
            for t in tools
            if t.server is server
        ]
        state = f"failed: {problem}" if problem else "running"
        out.append(
            McpServerState(server.name, state, str(hub.log_dir / f"{server.name}.log"), rows)
        )
    return out
