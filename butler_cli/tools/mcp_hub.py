"""The MCP servers of one process: started lazily, in parallel, once, and bounded.

The official ``mcp`` SDK is asynchronous; its client (:mod:`mcp_client`, loaded when a server
first starts — MCP's one lazy point) runs every server's session on one background event loop
and the tool loop calls into it synchronously. Nothing starts until it is needed: a server's
tool list comes from the cache in the home (:mod:`mcp_cache`) and the server is started
when one of its tools is called — or listed, when the cache has no good entry (then every
such server starts at once, side by side). A start is bounded (``start_timeout``, default
:data:`START_TIMEOUT_S`): one that does not answer in time is killed with its whole process
group. Its stderr goes to ``mcp-logs/NAME.log`` in the home,
never to the terminal, and a failure is told in one line by its real cause. A server that
failed, or died, stays so for the rest of the process: a process (a chat, `butler serve`, one
run) starts each server at most once. A failed start is remembered in the home for a short
back-off (:mod:`mcp_backoff`): the next runs list their tools without that server at once
instead of waiting for it again; a call to one of its (cached) tools, a decision that needs
it, and `butler mcp list` always try.
"""

from __future__ import annotations

import fnmatch
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from butler_cli.tools.mcp_backoff import FailedStarts
from butler_cli.tools.mcp_cache import Listing, ToolCache, ToolInfo, cache_key
from butler_cli.tools.sandbox import Confinement
from butler_cli.tools.trusted import Trusted

if TYPE_CHECKING:  # the client (asyncio, anyio, the SDK) loads when a server first starts
    from butler_cli.tools.mcp_client import Live, McpClient

START_TIMEOUT_S = 10.0
CALL_TIMEOUT_S = 120.0
LOG_DIR = "mcp-logs"
SEP = "__"


class McpUnavailable(Exception):
    """A server could not be reached; the message is one line saying why."""


@dataclass(frozen=True)
class McpServer:
    """One ``[mcp.NAME]`` table: how to reach the server and which of its tools to govern."""

    name: str
    command: str | None = None  # stdio: the program to launch …
    url: str | None = None  # … or a streamable HTTP endpoint
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    governed: bool | tuple[str, ...] = ()
    #: Tool globs the config declares benign although the server does not mark them read-only.
    benign: tuple[str, ...] = ()
    start_timeout: float = START_TIMEOUT_S
    #: stdio servers run in the command sandbox (the butler's files hidden) unless False.
    sandbox: bool = True

    @property
    def key(self) -> str:
        return cache_key(self.command, self.url, self.args, list(self.env))

    def governs(self, tool: str, read_only: bool, destructive: bool, closed: bool) -> bool:
        """Governed: named by ``governed``, declared destructive, or not known to be benign —
        benign is named in ``benign`` (the person's choice), or declared read-only *and*
        closed-world (``closed``: ``openWorldHint: false``; a tool that reaches other machines
        is governed like ``http_request``, whatever ``readOnlyHint`` says)."""
        patterns = self.governed if isinstance(self.governed, tuple) else ()
        if self.governed is True or destructive or self.named(tool, patterns):
            return True
        return not ((read_only and closed) or self.named(tool, self.benign))

    def named(self, tool: str, patterns: tuple[str, ...]) -> bool:
        return any(
            fnmatch.fnmatchcase(tool, p) or fnmatch.fnmatchcase(f"{self.name}{SEP}{tool}", p)
            for p in patterns
        )


@dataclass
class McpHub:
    """Every configured server of this process, each started at most once."""

    servers: Sequence[McpServer]
    home: Path
    failures: dict[str, str] = field(default_factory=dict)
    _hidden: set[Path] = field(default_factory=set)
    _confined: Confinement = field(default_factory=Confinement)
    _live: dict[str, Live] = field(default_factory=dict)
    _listings: dict[str, Listing] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _client: McpClient | None = None

    def __post_init__(self) -> None:
        self.cache = ToolCache(self.home)
        self.failed_starts = FailedStarts(self.home)

    def hide(self, paths: Sequence[Path]) -> None:
        """Paths a sandboxed server must never see (the butler's own files)."""
        self._hidden.update(paths)

    def confine(self, writable: Sequence[Path], trusted: Sequence[Trusted]) -> None:
        """Where a sandboxed server may write (the task's folder and the named roots), and
        the programs the config names, kept read-only (issue 31)."""
        self._confined = Confinement((), tuple(writable), tuple(trusted))

    @property
    def log_dir(self) -> Path:
        return self.home / LOG_DIR

    def server_of(self, tool: str) -> McpServer | None:
        """The configured server a tool name (``<server>__<tool>``) belongs to."""
        return next((s for s in self.servers if tool.startswith(s.name + SEP)), None)

    # -- listing -----------------------------------------------------------------------------

    def listings(self, refresh: bool = False) -> dict[str, Listing]:
        """Every server's tools: from the cache, else (or with ``refresh``) by starting the
        servers that need it, all at once. A server that fails is in ``failures``."""
        with self._lock:
            missing = []
            for server in self.servers:
                if server.name in self._listings or server.name in self.failures:
                    continue
                cached = None if refresh else self.cache.get(server.name, server.key)
                if cached is not None:
                    self._listings[server.name] = cached
                else:
                    missing.append(server)
            self._start(missing, retry=refresh)
            return dict(self._listings)

    def ensure(self, server: McpServer) -> Live:
        """The server's running session, started now if need be (McpUnavailable if not)."""
        with self._lock:
            if server.name not in self._live and server.name not in self.failures:
                self._start([server], retry=True)  # its tool is needed now: always tried
            live = self._live.get(server.name)
            if live is None:
                raise McpUnavailable(
                    f"MCP server '{server.name}' is not available: "
                    f"{self.failures.get(server.name, 'it is not running')}"
                )
            return live

    def _start(self, servers: Sequence[McpServer], retry: bool = False) -> None:
        """Start ``servers`` side by side and wait for each to answer or fail (bounded). One
        whose start failed a moment ago is not started only to list its tools (unless
        ``retry``): it fails at once, saying so, and the run goes on without it."""
        if not retry:
            servers = [s for s in servers if not self._backing_off(s)]
        if not servers:
            return
        if self._client is None:
            # the one lazy point of MCP: the event loop, anyio and the SDK
            from butler_cli.tools.mcp_client import McpClient

            self._client = McpClient(self.log_dir)
        confined = replace(self._confined, hidden=tuple(sorted(self._hidden)))
        started, failed = self._client.start(servers, confined)
        self.failures.update(failed)
        keys = {s.name: s.key for s in servers}
        self.failed_starts.update({n: (keys[n], why) for n, why in failed.items()}, started)
        for name, live in started.items():
            server = next(s for s in servers if s.name == name)
            self._live[name] = live
            self._listings[name] = live.listing
            self.cache.put(name, live.listing, list(server.env))

    def _backing_off(self, server: McpServer) -> bool:
        remembered = self.failed_starts.current(server.name, server.key)
        if remembered is not None:
            self.failures[server.name] = remembered.skipped(self.failed_starts.clock())
        return remembered is not None

    # -- calling -----------------------------------------------------------------------------

    def call(self, server: McpServer, tool: str, args: dict[str, Any]) -> str:
        """Call ``tool``; the result's text, capped. A failed call raises with the server's
        words (an error result for the model)."""
        live = self.ensure(server)
        assert self._client is not None
        return self._client.call(live, server.name, tool, args)

    def fresh(self, server: McpServer, tool: str) -> ToolInfo | None:
        """The tool as the running server lists it now (starting it if need be)."""
        live = self.ensure(server)
        return next((t for t in live.listing.tools if t.name == tool), None)

    def close(self) -> None:
        """Stop every server (each is killed with its group if it does not exit)."""
        if self._client is not None:
            self._client.close()


_HUBS: dict[tuple[str, str], McpHub] = {}
_HUBS_LOCK = threading.Lock()


def shared_hub(servers: Sequence[McpServer], home: Path) -> McpHub:
    """The one hub of this process for these servers and this home: every butler a process
    builds (a chat's approvals, the inbox's decisions, a batch) shares its servers."""
    key = (repr(tuple(servers)), str(home))
    with _HUBS_LOCK:
        hub = _HUBS.get(key)
        if hub is None:
            hub = _HUBS[key] = McpHub(list(servers), home)
        return hub
