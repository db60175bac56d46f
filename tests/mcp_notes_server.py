"""A small real MCP server (official SDK, stdio) for the tests: notes in a folder."""

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

NOTES = Path(os.environ["NOTES_DIR"])
if os.environ.get("NOTES_STARTS"):  # the tests count how many times a server was started
    with open(os.environ["NOTES_STARTS"], "a") as log:
        log.write(f"{os.getpid()}\n")
server = MCPServer("notes")


@server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
def lookup(title: str) -> str:
    """Read a note by title."""
    path = NOTES / f"{title}.txt"
    return path.read_text() if path.exists() else f"no note called {title}"


@server.tool()
def create_note(title: str, text: str) -> str:
    """Create a note."""
    path = NOTES / f"{title}.txt"
    with path.open("a") as fh:  # appends: a second run would show
        fh.write(text)
    return f"created {title}"


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def wipe() -> str:
    """Delete every note."""
    for p in NOTES.glob("*.txt"):
        p.unlink()
    return "wiped"


@server.tool()
def archive(title: str) -> str:
    """Move a note away. It carries no annotations: by the MCP defaults it may change things."""
    path = NOTES / f"{title}.txt"
    path.rename(NOTES / f"{title}.archived")
    return f"archived {title}"


@server.tool()
def count() -> str:
    """How many notes there are (no annotations; the config marks it benign)."""
    return str(len(list(NOTES.glob("*.txt"))))


@server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
def crash() -> str:
    """Dies mid-call, as a buggy server would."""
    os._exit(3)


if __name__ == "__main__":
    import sys

    if len(sys.argv) > 1:  # `mcp_notes_server.py PORT`: streamable HTTP on 127.0.0.1
        server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
    else:
        server.run()
