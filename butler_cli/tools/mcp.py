"""MCP servers as toolsets: their tools join the loop as ``<server>__<tool>``.

The official ``mcp`` SDK is asynchronous; the hub runs each server's session on one background
event loop and the loop calls into it synchronously. A tool is benign unless the config puts it
behind the gate unless its server declares it read-only (``readOnlyHint``) or the config
names it benign (``benign = ["count"]``): the MCP specification's defaults are
``readOnlyHint: false`` and ``destructiveHint: true``, so a tool with no annotations may change
things. The config can govern more (``governed = ["create*"]``, or ``true`` for the whole
server); a declared hint is shown in the tool's description. A server that fails to start is
reported and the butler runs without it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import fnmatch
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from butler_cli.core.gate import Gate, Policy
from butler_cli.core.together import on_interrupt
from butler_cli.core.toolsets import FunctionToolset, Toolset, ToolSpec
from butler_cli.core.verdicts import approve

START_TIMEOUT_S = 30.0
CALL_TIMEOUT_S = 120.0
SEP = "__"


@dataclass(frozen=True)
class McpServer:
    name: str
    command: str | None = None  # stdio: the program to launch …
    url: str | None = None  # … or a streamable HTTP endpoint
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    governed: bool | tuple[str, ...] = ()
    #: Tool globs the config declares benign although the server does not mark them read-only.
    benign: tuple[str, ...] = ()

    def governs(self, tool: str, read_only: bool, destructive: bool) -> bool:
        """Governed: named by ``governed``, declared destructive, or not known to be benign
        (neither declared read-only by the server nor named in ``benign``)."""
        patterns = self.governed if isinstance(self.governed, tuple) else ()
        if self.governed is True or destructive or self._named(tool, patterns):
            return True
        return not (read_only or self._named(tool, self.benign))

    def _named(self, tool: str, patterns: tuple[str, ...]) -> bool:
        return any(
            fnmatch.fnmatchcase(tool, p) or fnmatch.fnmatchcase(f"{self.name}{SEP}{tool}", p)
            for p in patterns
        )


@dataclass
class McpTool:
    server: McpServer
    name: str
    description: str
    schema: dict[str, Any]
    read_only: bool | None
    destructive: bool | None

    @property
    def full_name(self) -> str:
        return f"{self.server.name}{SEP}{self.name}"

    @property
    def governed(self) -> bool:
        return self.server.governs(self.name, self.read_only is True, self.destructive is True)

    def hints(self) -> str:
        shown = [
            h for h, on in (("read-only", self.read_only), ("destructive", self.destructive)) if on
        ]
        return f" [declared {', '.join(shown)}]" if shown else ""


class McpHub:
    """Starts the configured servers and keeps their sessions on a background event loop."""

    def __init__(self, servers: list[McpServer]) -> None:
        self.servers = servers
        self.tools: list[McpTool] = []
        self.failures: dict[str, str] = {}
        self._sessions: dict[str, Any] = {}
        self._stops: dict[str, asyncio.Event] = {}
        self._done: list[Future[None]] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="butler-mcp", daemon=True
        )

    def start(self) -> McpHub:
        self._thread.start()
        atexit.register(self.close)
        for server in self.servers:
            ready: Future[list[Any]] = Future()
            self._done.append(
                asyncio.run_coroutine_threadsafe(self._serve(server, ready), self._loop)
            )
            try:
                listed = ready.result(timeout=START_TIMEOUT_S)
            except Exception as exc:  # reported; the butler runs without this server
                self.failures[server.name] = f"{type(exc).__name__}: {exc}"[:300]
                continue
            for tool in listed:
                hints = tool.annotations
                self.tools.append(
                    McpTool(
                        server,
                        tool.name,
                        tool.description or "",
                        dict(tool.input_schema or {"type": "object"}),
                        getattr(hints, "read_only_hint", None) if hints else None,
                        getattr(hints, "destructive_hint", None) if hints else None,
                    )
                )
        return self

    async def _serve(self, server: McpServer, ready: Future[list[Any]]) -> None:
        from mcp import ClientSession

        stop = asyncio.Event()
        self._stops[server.name] = stop
        try:
            async with (
                _transport(server) as (reader, writer),
                ClientSession(reader, writer) as session,
            ):
                await session.initialize()
                listed = await session.list_tools()
                self._sessions[server.name] = session
                ready.set_result(list(listed.tools))
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))

    def call(self, tool: McpTool, args: dict[str, Any]) -> str:
        session = self._sessions.get(tool.server.name)
        if session is None:
            raise RuntimeError(f"MCP server '{tool.server.name}' is not running")
        future = asyncio.run_coroutine_threadsafe(session.call_tool(tool.name, args), self._loop)
        try:  # Ctrl-C, or the timeout, cancels the request; other calls go on meanwhile
            with on_interrupt(future.cancel):
                result = future.result(timeout=CALL_TIMEOUT_S)
        finally:
            future.cancel()  # a no-op once it is done
        text = "\n".join(getattr(c, "text", "") or str(c) for c in result.content)
        if getattr(result, "is_error", False):
            raise RuntimeError(text or f"{tool.full_name} failed")
        return text

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        for stop in self._stops.values():
            self._loop.call_soon_threadsafe(stop.set)
        for done in self._done:
            with contextlib.suppress(Exception):  # a server that already died is fine here
                done.result(timeout=5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    def toolsets(
        self, policy: Policy | None, governs: Callable[[str], bool] | None = None
    ) -> list[Toolset]:
        """Benign tools inline; governed ones (config, a destructive hint, or ``governs``: the
        policy object's claim on the name, see ``LoadedPolicy.governs``) behind a gate."""

        def is_governed(t: McpTool) -> bool:
            return t.governed or (governs is not None and governs(t.full_name))

        benign = [t for t in self.tools if not is_governed(t)]
        governed = [t for t in self.tools if is_governed(t)]
        out: list[Toolset] = []
        if benign:
            out.append(FunctionToolset([(self._spec(t), self._runner(t)) for t in benign]))
        if governed:
            by_name = {t.full_name: t for t in governed}
            out.append(
                Gate(
                    [self._spec(t, governed=True) for t in governed],
                    lambda name, args: self.call(by_name[name], args),
                    policy=policy,
                )
            )
        return out

    def _spec(self, tool: McpTool, governed: bool = False) -> ToolSpec:
        default = None
        if governed:
            if tool.destructive:
                why = "the server declares it destructive"
            elif tool.read_only or tool.server._named(tool.name, tool.server.benign):
                why = "governed by your MCP config"
            else:
                why = "the server does not declare it read-only"
            default = approve(f"MCP tool {tool.full_name}: {why} — asking you first")
        return ToolSpec(tool.full_name, f"{tool.description}{tool.hints()}", tool.schema, default)

    def _runner(self, tool: McpTool) -> Callable[[dict[str, Any]], str]:
        return lambda args: self.call(tool, args)


def _transport(server: McpServer) -> Any:
    """The SDK's client transport for this server: stdio or streamable HTTP."""
    if server.url:
        from mcp.client.streamable_http import streamable_http_client

        return streamable_http_client(server.url)
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    from butler_cli.tools.redact import child_env

    assert server.command is not None
    env = child_env(server.env)  # the allowlist and what the config passes, never our keys
    return stdio_client(
        StdioServerParameters(command=server.command, args=list(server.args), env=env)
    )


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
            )
        )
    return out
