"""The MCP servers of the config, as a run, `butler mcp list` and `butler tools list` see them.

The one way from ``app/`` to MCP (a named lazy point, tests/test_imports.py): a caller imports
this module only when the config names a server, so a run without one loads no MCP code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from butler_cli.app.run.protected import protected_paths, trusted_files
from butler_cli.store.files import butler_home
from butler_cli.tools.mcp import hub_tools, mcp_toolsets, servers_from, shared_hub
from butler_cli.tools.mcp_backoff import BACKOFF_S
from butler_cli.tools.mcp_hub import SEP, McpHub, McpUnavailable
from butler_cli.tools.paths import write_roots_from

#: How long a failed start is remembered (seconds): `butler mcp list` says so.
REMEMBERED_FAILURE_S = BACKOFF_S

if TYPE_CHECKING:
    from butler_cli.app.config.config import Config
    from butler_cli.core.toolsets import Toolset
    from butler_cli.policy.loader import LoadedPolicy
    from butler_cli.tools.mcp_hub import McpServer


def start_mcp(settings: Config, home: Path, protected: list[Path]) -> McpHub:
    """This process's MCP hub for the configured servers (call it when the config names one),
    hidden from the ``protected`` files first: no server ever sees the gate's files. Nothing
    starts here: a server starts when its tools must be listed or one is called."""
    hub = shared_hub(servers_from(settings.mcp), home)
    hub.hide(protected)
    here = Path.cwd()
    hub.confine(write_roots_from(here, settings.allowed_roots()), trusted_files(settings, here))
    return hub


def mcp_with_toolsets(
    settings: Config, home: Path, policy: LoadedPolicy, protected: list[Path]
) -> tuple[McpHub, list[tuple[McpServer, Toolset]]]:
    """The hub (see :func:`start_mcp`) and each server's toolset, governed by ``policy`` as
    in a run (its tools listed: from the cache, or by starting the server)."""
    hub = start_mcp(settings, home, protected)
    return hub, mcp_toolsets(hub, policy.classify, policy.governs)


def unavailable(hub: McpHub, server: McpServer, tool: str) -> str | None:
    """Why ``tool`` of ``server`` cannot be called now (its server did not start, or no
    longer offers it), or None when it can."""
    try:
        if hub.fresh(server, tool.removeprefix(server.name + SEP)) is None:
            return f"MCP server '{server.name}' no longer offers it"
    except McpUnavailable as exc:
        return str(exc)
    return None


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
    #: After a failed start: when runs try the server again (UTC, ISO 8601); until then they
    #: go on without it at once. None when it runs.
    retry_after: str | None = None

    @property
    def failed(self) -> bool:
        return self.state != "running"


def mcp_states(settings: Config) -> list[McpServerState]:
    """Start every configured server (side by side, bounded), list its tools, refresh the
    cache, and say which tools wait for approval. Servers are hidden from the butler's files
    as in a run."""
    if not settings.mcp:
        return []
    home = butler_home()
    hub = start_mcp(settings, home, protected_paths(home, [], settings))
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
        remembered = hub.failed_starts.current(server.name, server.key) if problem else None
        retry = (
            datetime.fromtimestamp(remembered.until, UTC).isoformat(timespec="seconds")
            if remembered is not None
            else None
        )
        log = str(hub.log_dir / f"{server.name}.log")
        out.append(McpServerState(server.name, state, log, rows, retry))
    return out
