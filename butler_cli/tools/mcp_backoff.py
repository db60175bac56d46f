"""MCP servers that failed to start, remembered for a short back-off (``mcp-failures.json``).

A server that never answers costs its ``start_timeout`` and the kill after it on every start;
without a memory, every `butler run` paid that again. A failed start is kept here with its time,
the server's identity (:func:`butler_cli.tools.mcp_cache.cache_key`: its command, program, args,
env names or URL) and its cause, and for :data:`BACKOFF_S` after it a run that would start the
server only to list its tools goes on without it at once, saying so. A changed config (another
key) or a start that works ends it; `butler mcp list`, a call to one of its tools (listed from
the cache) and a decision that needs it always try. The file lives in the home like the tool
cache; one that cannot be read is treated as empty (nothing remembered: the server is tried
again).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from butler_cli.tools.mcp_cache import read_servers, write_servers

BACKOFF_FILE = "mcp-failures.json"
#: How long a failed start is remembered: short, so a server fixed without `mcp list` is
#: tried again soon, long enough that a batch or a schedule does not wait on it every run.
BACKOFF_S = 300.0


@dataclass(frozen=True)
class FailedStart:
    """One remembered failure: when (seconds since the epoch), and its one-line cause."""

    at: float
    why: str

    @property
    def until(self) -> float:
        return self.at + BACKOFF_S

    def skipped(self, now: float) -> str:
        """Why a run goes on without the server now, in one line."""
        return (
            f"it failed to start {round(now - self.at)} s ago ({self.why}); not tried again for "
            f"{round(self.until - now)} s, unless one of its tools is called — `butler mcp "
            "list` tries it now"
        )


class FailedStarts:
    """The back-off file: read once, written whole (atomically) when it changes."""

    def __init__(self, home: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = home / BACKOFF_FILE
        self.clock = clock
        self._entries: dict[str, Any] | None = None

    def _load(self) -> dict[str, Any]:
        if self._entries is None:
            self._entries = read_servers(self.path)  # missing or malformed: nothing remembered
        return self._entries

    def current(self, name: str, key: str) -> FailedStart | None:
        """The failure remembered for this server as configured now, while its back-off
        lasts (a time in the future, from a clock set back, counts as none)."""
        entry = self._load().get(name)
        if entry is None or entry.get("key") != key:
            return None
        at, why = entry.get("at"), entry.get("why")
        if not isinstance(at, int | float) or not isinstance(why, str):
            return None
        failed = FailedStart(float(at), why)
        return failed if failed.at <= self.clock() < failed.until else None

    def update(self, failed: Mapping[str, tuple[str, str]], started: Iterable[str]) -> None:
        """Remember each of ``failed`` (name → key, cause) from now; forget those ``started``.
        A write that fails is ignored: the server is tried again next time."""
        entries = self._load()
        before = json.dumps(entries, sort_keys=True)
        for name in started:
            entries.pop(name, None)
        now = self.clock()
        for name, (key, why) in failed.items():
            entries[name] = {"key": key, "at": now, "why": why}
        if json.dumps(entries, sort_keys=True) != before:
            write_servers(self.path, entries)
