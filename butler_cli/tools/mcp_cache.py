"""The MCP servers' tool lists, kept between runs in the butler's home (``mcp-tools.json``).

A run sends the model every server's tool specs but starts a server only when one of its
tools is called: the specs come from here. An entry is used while its key matches — the
server's command (and the program it resolves to, with its size and time), its args (and any
that name a file, with theirs), the *names* of its env variables (never their values), or its
URL — and it is refreshed whenever the server is started and reports another name, version or
tool list. The file lives in the home, so no tool and no program the butler runs can read or
change it; a file that cannot be read is treated as empty and written afresh (it is a cache:
nothing is lost).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from butler_cli.core.errors import StorageError
from butler_cli.store.files import read_no_follow, write_atomic

CACHE_FILE = "mcp-tools.json"
FORMAT = 2  # 2: each tool's openWorldHint is kept (a format-1 entry is listed afresh)


@dataclass(frozen=True)
class ToolInfo:
    """One tool as the server listed it."""

    name: str
    description: str
    schema: dict[str, Any]
    read_only: bool | None
    destructive: bool | None
    #: ``openWorldHint``: it reaches other machines (the web). None: not said — the MCP
    #: specification's default is true.
    open_world: bool | None


@dataclass(frozen=True)
class Listing:
    """What a server said of itself when it was last started."""

    key: str
    server: str  # the name and version it reported, "name version"
    tools: tuple[ToolInfo, ...]


def cache_key(
    command: str | None, url: str | None, args: tuple[str, ...], env_names: list[str]
) -> str:
    """The identity of a configured server, as far as it can be known without starting it
    (as JSON text: it holds no secret, and a person can read why an entry was not used)."""
    parts: dict[str, Any] = {"url": url} if url else {}
    if command:
        program = shutil.which(command) or command
        parts |= {
            "command": command,
            "program": _stamp(program),
            "args": list(args),
            "files": [_stamp(a) for a in args if os.path.isfile(a)],
            "env": sorted(env_names),
        }
    return json.dumps(parts, sort_keys=True)


def _stamp(path: str) -> list[Any]:
    try:
        st = os.stat(path)
    except OSError:
        return [path]
    return [os.path.realpath(path), st.st_size, st.st_mtime_ns]


def read_servers(path: Path) -> dict[str, Any]:
    """A per-server file of the home (``{"format": 1, "servers": {NAME: entry}}``): its entries,
    or none when it is missing, unreadable, malformed or of another format (it is rebuilt)."""
    try:
        data = json.loads(read_no_follow(path))
        entries = data["servers"] if data.get("format") == FORMAT else {}
        return {k: v for k, v in entries.items() if isinstance(k, str) and isinstance(v, dict)}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}


def write_servers(path: Path, entries: dict[str, Any]) -> None:
    """Write such a file whole, atomically; a failed write is ignored (the next run, finding
    the old file or none, lists or tries again)."""
    body = json.dumps({"format": FORMAT, "servers": entries}, indent=1, sort_keys=True)
    with contextlib.suppress(StorageError, OSError):
        write_atomic(path, body.encode())


class ToolCache:
    """The cache file: read once, written whole (atomically) when an entry changes."""

    def __init__(self, home: Path) -> None:
        self.path = home / CACHE_FILE
        self._entries: dict[str, Any] | None = None

    def _load(self) -> dict[str, Any]:
        if self._entries is None:
            self._entries = read_servers(self.path)  # missing or malformed: listed afresh
        return self._entries

    def get(self, name: str, key: str) -> Listing | None:
        entry = self._load().get(name)
        try:
            if entry is None or entry["key"] != key:
                return None
            return Listing(key, str(entry["server"]), tuple(ToolInfo(**t) for t in entry["tools"]))
        except (KeyError, TypeError):
            return None

    def put(self, name: str, listing: Listing, env_names: list[str]) -> None:
        """Keep ``listing`` for ``name`` (a failed write is ignored: the next run lists again)."""
        entries = self._load()
        entry = {
            "key": listing.key,
            "server": listing.server,
            "env_names": sorted(env_names),
            "tools": [asdict(t) for t in listing.tools],
        }
        if entries.get(name) == entry:
            return
        entries[name] = entry
        write_servers(self.path, entries)
