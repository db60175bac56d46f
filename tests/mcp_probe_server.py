"""A real MCP server (official SDK, stdio) for the life-cycle tests: it counts its starts, can
wait for a sibling before answering, chatters on stderr, returns big and binary results and
tries to read any file it is told to.

Environment: PROBE_LOG (a file each start appends its pid to), PROBE_NAME (the server's name),
PROBE_VERSION_FILE (the version it reports, read at start), PROBE_WAIT_FOR (a file to wait for
before serving, up to 30 s, after writing PROBE_MARK), PROBE_HANG (never answer), PROBE_DIE
(print that to stderr and exit 1).
"""

import base64
import os
import sys
import time
from pathlib import Path

if os.environ.get("PROBE_LOG"):
    with open(os.environ["PROBE_LOG"], "a") as log:
        log.write(f"{os.getpid()}\n")
print("probe: warming up, lots of chatter on stderr", file=sys.stderr, flush=True)
if os.environ.get("PROBE_DIE_IF") and Path(os.environ["PROBE_DIE_IF"]).exists():
    print("probe: broken on purpose", file=sys.stderr, flush=True)
    sys.exit(1)
if os.environ.get("PROBE_DIE"):
    print(os.environ["PROBE_DIE"], file=sys.stderr, flush=True)
    sys.exit(1)
if os.environ.get("PROBE_HANG"):
    time.sleep(120)
if os.environ.get("PROBE_MARK"):
    Path(os.environ["PROBE_MARK"]).write_text("up")
if os.environ.get("PROBE_WAIT_FOR"):
    other = Path(os.environ["PROBE_WAIT_FOR"])
    deadline = time.monotonic() + 30
    while not other.exists():
        if time.monotonic() > deadline:
            sys.exit("probe: my sibling never came up")
        time.sleep(0.02)
from mcp.server.mcpserver import MCPServer  # noqa: E402 (slow: after the start is logged)
from mcp.server.mcpserver.utilities.types import Image  # noqa: E402
from mcp.types import ToolAnnotations  # noqa: E402

version_file = os.environ.get("PROBE_VERSION_FILE")
version = Path(version_file).read_text().strip() if version_file else "1.0"
server = MCPServer(os.environ.get("PROBE_NAME", "probe"), version=version)
RO = ToolAnnotations(read_only_hint=True, open_world_hint=False)


@server.tool(annotations=RO if version != "3.0" else None)  # 3.0 no longer says read-only
def echo(text: str) -> str:
    """Say it back."""
    return text


@server.tool(annotations=RO)
def big(kib: int) -> str:
    """That many KiB of text."""
    return ("0123456789abcdef" * 64) * kib


@server.tool(annotations=RO)
def picture() -> Image:
    """A PNG of 200 000 bytes."""
    return Image(data=b"\x89PNG\r\n\x1a\n" + bytes(200_000 - 8), format="png")


@server.tool(annotations=RO)
def peek(path: str) -> str:
    """Read any file (what a compromised server would try)."""
    try:
        return base64.b64encode(Path(path).read_bytes()).decode()
    except OSError as exc:
        return f"cannot read: {exc}"


@server.tool(annotations=RO)
def shout(kib: int) -> str:
    """Write that many KiB to stderr (a chatty server's logging)."""
    line = "probe: " + "x" * 1016 + "\n"
    for _ in range(kib):
        sys.stderr.write(line)
    sys.stderr.flush()
    return "shouted"


@server.tool()
def stamp(path: str, text: str) -> str:
    """Append text to a file (no annotations: governed)."""
    with open(path, "a") as fh:
        fh.write(text)
    return f"stamped {path}"


if version != "1.0":

    @server.tool(annotations=RO)
    def newer() -> str:
        """Only in later versions."""
        return "new"


if __name__ == "__main__":
    server.run()
