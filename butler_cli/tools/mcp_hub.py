"""The MCP servers of one process: started lazily, in parallel, once, and bounded.

The official ``mcp`` SDK is asynchronous; the hub runs every server's session on one
background event loop and the tool loop calls into it synchronously. Nothing starts until it
is needed: a server's tool list comes from the cache in the home (:mod:`mcp_cache`) and the
server is started when one of its tools is called — or listed, when the cache has no good
entry (then every such server starts at once, side by side). A start is bounded
(``start_timeout``, default :data:`START_TIMEOUT_S`): one that does not answer in time is
killed with its whole process group. Its stderr goes to ``mcp-logs/NAME.log`` in the home,
never to the terminal, and a failure is told in one line by its real cause. A server that
failed, or died, stays so for the rest of the process: a process (a chat, `butler serve`, one
run) starts each server at most once.
"""

from __future__ import annotations

import atexit
import fnmatch
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from butler_cli.core.together import on_interrupt
from butler_cli.tools.mcp_cache import Listing, ToolCache, ToolInfo, cache_key
from butler_cli.tools.mcp_content import one_line, result_text, start_failure

if TYPE_CHECKING:  # the event loop and its futures load when a server first starts
    import asyncio
    from concurrent.futures import Future

START_TIMEOUT_S = 10.0
CALL_TIMEOUT_S = 120.0
LOG_DIR = "mcp-logs"
SEP = "__"
#: A server's log is moved aside (``NAME.log.1``) when it passes this size at a start.
LOG_KEEP_BYTES = 1 << 20


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

    def governs(self, tool: str, read_only: bool, destructive: bool) -> bool:
        """Governed: named by ``governed``, declared destructive, or not known to be benign
        (neither declared read-only by the server nor named in ``benign``)."""
        patterns = self.governed if isinstance(self.governed, tuple) else ()
        if self.governed is True or destructive or self.named(tool, patterns):
            return True
        return not (read_only or self.named(tool, self.benign))

    def named(self, tool: str, patterns: tuple[str, ...]) -> bool:
        return any(
            fnmatch.fnmatchcase(tool, p) or fnmatch.fnmatchcase(f"{self.name}{SEP}{tool}", p)
            for p in patterns
        )


@dataclass
class _Live:
    session: Any
    listing: Listing
    stop: asyncio.Event


@dataclass
class McpHub:
    """Every configured server of this process, each started at most once."""

    servers: Sequence[McpServer]
    home: Path
    failures: dict[str, str] = field(default_factory=dict)
    _hidden: set[Path] = field(default_factory=set)
    _live: dict[str, _Live] = field(default_factory=dict)
    _listings: dict[str, Listing] = field(default_factory=dict)
    _done: dict[str, Future[None]] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None

    def __post_init__(self) -> None:
        self.cache = ToolCache(self.home)

    def hide(self, paths: Sequence[Path]) -> None:
        """Paths a sandboxed server must never see (the butler's own files)."""
        self._hidden.update(paths)

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
            self._start(missing)
            return dict(self._listings)

    def ensure(self, server: McpServer) -> _Live:
        """The server's running session, started now if need be (McpUnavailable if not)."""
        with self._lock:
            if server.name not in self._live and server.name not in self.failures:
                self._start([server])
            live = self._live.get(server.name)
            if live is None:
                raise McpUnavailable(
                    f"MCP server '{server.name}' is not available: "
                    f"{self.failures.get(server.name, 'it is not running')}"
                )
            return live

    def _start(self, servers: Sequence[McpServer]) -> None:
        """Start ``servers`` side by side and wait for each to answer or fail (bounded)."""
        if not servers:
            return
        import asyncio
        from concurrent.futures import Future
        from concurrent.futures import wait as wait_all

        loop = self._running_loop()
        readies: list[tuple[McpServer, Future[_Live], str]] = []
        for server in servers:
            ready: Future[_Live] = Future()
            log, mark = self._open_log(server)
            serving = asyncio.run_coroutine_threadsafe(self._serve(server, ready, log), loop)
            self._done[server.name] = serving
            readies.append((server, ready, mark))
        longest = max(s.start_timeout for s in servers)
        wait_all([r for _, r, _ in readies], timeout=longest + 10)  # a kill takes a few s
        for server, ready, mark in readies:
            try:
                live = ready.result(timeout=0)
            except BaseException as exc:  # told in one line; the butler goes on without it
                last = self._last_words(server, mark)
                self.failures[server.name] = start_failure(exc, server.start_timeout, last)
                continue
            self._live[server.name] = live
            self._listings[server.name] = live.listing
            self.cache.put(server.name, live.listing, list(server.env))

    async def _serve(self, server: McpServer, ready: Future[_Live], log: TextIO) -> None:
        import asyncio

        import anyio
        from mcp import ClientSession

        stop = asyncio.Event()
        try:
            async with (
                _transport(server, log, sorted(self._hidden)) as (reader, writer),
                ClientSession(reader, writer) as session,
            ):
                with anyio.fail_after(server.start_timeout):
                    init = await session.initialize()
                    listed = await session.list_tools()
                info = init.server_info
                ready.set_result(_Live(session, _listing(server.key, info, listed.tools), stop))
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))
        finally:
            log.close()

    # -- calling -----------------------------------------------------------------------------

    def call(self, server: McpServer, tool: str, args: dict[str, Any]) -> str:
        """Call ``tool``; the result's text, capped. A failed call raises with the server's
        words (an error result for the model)."""
        import asyncio

        live = self.ensure(server)
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(live.session.call_tool(tool, args), self._loop)
        try:  # Ctrl-C, or the timeout, cancels the request; other calls go on meanwhile
            with on_interrupt(future.cancel):
                result = future.result(timeout=CALL_TIMEOUT_S)
        except Exception as exc:
            raise RuntimeError(
                f"MCP server '{server.name}': {start_failure(exc, CALL_TIMEOUT_S, '')}"
            ) from exc
        finally:
            future.cancel()  # a no-op once it is done
        text = result_text(result.content)
        if getattr(result, "is_error", False):
            raise RuntimeError(text or f"{server.name}{SEP}{tool} failed")
        return text

    def fresh(self, server: McpServer, tool: str) -> ToolInfo | None:
        """The tool as the running server lists it now (starting it if need be)."""
        live = self.ensure(server)
        return next((t for t in live.listing.tools if t.name == tool), None)

    # -- plumbing ----------------------------------------------------------------------------

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        import asyncio
        import logging

        if self._loop is None:
            logging.getLogger("mcp").addHandler(logging.NullHandler())  # never on the screen
            logging.getLogger("mcp").propagate = False
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(
                target=self._loop.run_forever, name="butler-mcp", daemon=True
            )
            self._thread.start()
            atexit.register(self.close)
        return self._loop

    def _open_log(self, server: McpServer) -> tuple[TextIO, str]:
        """The server's log, opened for appending its stderr, with a line that marks this
        start (what follows it is what the server said this time)."""
        from butler_cli.store.files import ensure_private_dir

        ensure_private_dir(self.log_dir)
        path = self.log_dir / f"{server.name}.log"
        try:
            if path.stat().st_size > LOG_KEEP_BYTES:
                os.replace(path, path.with_name(path.name + ".1"))
        except OSError:
            pass
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        log = os.fdopen(fd, "a", encoding="utf-8", errors="replace")
        mark = f"--- butler starts {server.name} (pid {os.getpid()}, {id(log):x})"
        log.write(mark + "\n")
        log.flush()
        return log, mark

    def _last_words(self, server: McpServer, mark: str) -> str:
        """The last line the server wrote to its log since ``mark``."""
        try:
            with open(self.log_dir / f"{server.name}.log", "rb") as fh:
                fh.seek(max(0, os.fstat(fh.fileno()).st_size - 65536))
                text = fh.read().decode("utf-8", "replace")
        except OSError:
            return ""
        said = text.rpartition(mark)[2] if mark in text else ""
        lines = [ln for ln in said.splitlines() if ln.strip()]
        return one_line(lines[-1], 200) if lines else ""

    def close(self) -> None:
        """Stop every server (each is killed with its group if it does not exit)."""
        from concurrent.futures import wait as wait_all

        loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return
        for live in self._live.values():
            loop.call_soon_threadsafe(live.stop.set)
        for name, task in self._done.items():  # a start still under way (Ctrl-C): cancelled,
            if name not in self._live:  # which kills what it started
                task.cancel()
        wait_all(self._done.values(), timeout=8)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)


def _listing(key: str, info: Any, tools: Sequence[Any]) -> Listing:
    found = []
    for tool in tools:
        hints = tool.annotations
        found.append(
            ToolInfo(
                tool.name,
                tool.description or "",
                dict(tool.input_schema or {"type": "object"}),
                getattr(hints, "read_only_hint", None) if hints else None,
                getattr(hints, "destructive_hint", None) if hints else None,
            )
        )
    reported = f"{getattr(info, 'name', '')} {getattr(info, 'version', '')}".strip()
    return Listing(key, reported, tuple(found))


def _transport(server: McpServer, log: TextIO, hidden: Sequence[Path]) -> Any:
    """The SDK's client transport for this server: stdio (in the sandbox unless the config
    says ``sandbox = false``; stderr to its log) or streamable HTTP."""
    if server.url:
        from mcp.client.streamable_http import streamable_http_client

        return streamable_http_client(server.url)
    import shutil

    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    from butler_cli.tools.redact import child_env

    assert server.command is not None
    env = child_env(server.env)  # the allowlist and what the config passes, never keys
    program = shutil.which(server.command, path=env.get("PATH"))
    if program is None:
        raise FileNotFoundError(2, "No such file or directory (or not on PATH)", server.command)
    argv = [program, *server.args]
    if server.sandbox:
        from butler_cli.tools.sandbox import detect_sandbox

        argv = detect_sandbox().wrap_server(argv, Path.cwd(), hidden)
    return stdio_client(StdioServerParameters(command=argv[0], args=argv[1:], env=env), errlog=log)


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
