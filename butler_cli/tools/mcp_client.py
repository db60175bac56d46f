"""The MCP client of one process: the servers' sessions on one background event loop.

The official ``mcp`` SDK is asynchronous (anyio, asyncio); the tool loop is not. The hub
(:mod:`butler_cli.tools.mcp_hub`) keeps what is known without a running server — the
configured servers, the cached tool lists, the failures — and loads this module (its one
lazy point) only when a server must start: a run whose MCP tools come from the cache and are
never called imports no event loop and no SDK. A start is bounded and its stderr goes to the
server's log in the home; a call is bounded and cancelled by Ctrl-C.
"""

from __future__ import annotations

import asyncio
import atexit
import itertools
import logging
import os
import shutil
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from concurrent.futures import wait as wait_all
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from butler_cli.core.errors import Untrusted
from butler_cli.core.together import on_interrupt
from butler_cli.store.files import ensure_private_dir
from butler_cli.tools.mcp_cache import Listing, ToolInfo
from butler_cli.tools.mcp_content import one_line, result_text, start_failure
from butler_cli.tools.mcp_hub import CALL_TIMEOUT_S, SEP, McpServer
from butler_cli.tools.mcp_log import open_capped_log
from butler_cli.tools.redact import child_env
from butler_cli.tools.sandbox import Confinement, detect_sandbox
from butler_cli.tools.trusted import refusal

#: Numbers each start's mark in the log (with the pid: unique across processes too).
_STARTS = itertools.count(1)


@dataclass
class Live:
    """A running server: its session, what it listed when it started, and its stop."""

    session: Any
    listing: Listing
    stop: asyncio.Event


class McpClient:
    """One event loop on a daemon thread, serving every started server's session."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self._done: dict[str, Future[None]] = {}
        logging.getLogger("mcp").addHandler(logging.NullHandler())  # never on the screen
        logging.getLogger("mcp").propagate = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="butler-mcp", daemon=True
        )
        self._thread.start()
        self._live: dict[str, Live] = {}
        atexit.register(self.close)

    def start(
        self, servers: Sequence[McpServer], confined: Confinement
    ) -> tuple[dict[str, Live], dict[str, str]]:
        """Start ``servers`` side by side and wait for each to answer or fail (bounded): the
        ones running, and why each of the others did not start (one line)."""
        readies: list[tuple[McpServer, Future[Live], str]] = []
        for server in servers:
            ready: Future[Live] = Future()
            log, mark = self._open_log(server)
            serving = asyncio.run_coroutine_threadsafe(
                self._serve(server, ready, log, confined), self._loop
            )
            self._done[server.name] = serving
            readies.append((server, ready, mark))
        longest = max(s.start_timeout for s in servers)
        wait_all([r for _, r, _ in readies], timeout=longest + 10)  # a kill takes a few s
        started: dict[str, Live] = {}
        failed: dict[str, str] = {}
        for server, ready, mark in readies:
            try:
                started[server.name] = ready.result(timeout=0)
            except BaseException as exc:  # told in one line; the butler goes on without it
                last = self._last_words(server, mark)
                failed[server.name] = start_failure(exc, server.start_timeout, last)
        self._live.update(started)
        return started, failed

    async def _serve(
        self, server: McpServer, ready: Future[Live], log: TextIO, confined: Confinement
    ) -> None:
        stop = asyncio.Event()
        try:
            async with (
                _transport(server, log, confined) as (reader, writer),
                ClientSession(reader, writer) as session,
            ):
                with anyio.fail_after(server.start_timeout):
                    init = await session.initialize()
                    listed = await session.list_tools()
                info = init.server_info
                ready.set_result(Live(session, _listing(server.key, info, listed.tools), stop))
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))
        finally:
            log.close()

    def call(self, live: Live, server: str, tool: str, args: dict[str, Any]) -> str:
        """Call ``tool`` on the running ``server``; the result's text, capped. A failed call
        raises with the server's words (an error result for the model)."""
        future = asyncio.run_coroutine_threadsafe(live.session.call_tool(tool, args), self._loop)
        try:  # Ctrl-C, or the timeout, cancels the request; other calls go on meanwhile
            with on_interrupt(future.cancel):
                result = future.result(timeout=CALL_TIMEOUT_S)
        except Exception as exc:
            raise RuntimeError(
                f"MCP server '{server}': {start_failure(exc, CALL_TIMEOUT_S, '')}"
            ) from exc
        finally:
            future.cancel()  # a no-op once it is done
        text = result_text(result.content)
        if getattr(result, "is_error", False):
            raise RuntimeError(text or f"{server}{SEP}{tool} failed")
        return text

    def close(self) -> None:
        """Stop every server (each is killed with its group if it does not exit)."""
        loop, thread, live = self._loop, self._thread, self._live
        if not thread.is_alive():
            return
        for running in live.values():
            loop.call_soon_threadsafe(running.stop.set)
        for name, task in self._done.items():  # a start still under way (Ctrl-C): cancelled,
            if name not in live:  # which kills what it started
                task.cancel()
        wait_all(self._done.values(), timeout=8)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)

    def _open_log(self, server: McpServer) -> tuple[TextIO, str]:
        """The server's stderr: its log (capped while written, :mod:`mcp_log`), with a line
        that marks this start (what follows it is what the server said this time)."""
        ensure_private_dir(self.log_dir)
        mark = f"--- butler starts {server.name} (pid {os.getpid()}, {next(_STARTS):x})"
        return open_capped_log(self.log_dir / f"{server.name}.log", mark), mark

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
                getattr(hints, "open_world_hint", None) if hints else None,
            )
        )
    reported = f"{getattr(info, 'name', '')} {getattr(info, 'version', '')}".strip()
    return Listing(key, reported, tuple(found))


def _transport(server: McpServer, log: TextIO, confined: Confinement) -> Any:
    """The SDK's client transport for this server: stdio (in the sandbox unless the config
    says ``sandbox = false``; stderr to its log; its program refused when someone else could
    have changed it, :mod:`butler_cli.tools.trusted`) or streamable HTTP."""
    if server.url:
        return streamable_http_client(server.url)
    assert server.command is not None
    env = child_env(server.env)  # the allowlist and what the config passes, never keys
    program = shutil.which(server.command, path=env.get("PATH"))
    if program is None:
        raise FileNotFoundError(2, "No such file or directory (or not on PATH)", server.command)
    problem = refusal(program, [] if server.sandbox else confined.writable, "the MCP server")
    if problem is not None:
        raise Untrusted(problem)
    argv = [program, *server.args]
    if server.sandbox:
        argv = detect_sandbox().wrap_server(argv, Path.cwd(), confined)
    return stdio_client(StdioServerParameters(command=argv[0], args=argv[1:], env=env), errlog=log)
