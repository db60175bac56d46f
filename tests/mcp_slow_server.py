"""A real MCP server (official SDK, stdio) whose read-only lookup waits for a file: the tests
steer it as they steer ACME's slow plug-in (tests/test_round_together.py)."""

import asyncio
import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

CALLS = Path(os.environ["CALLS_DIR"])
server = MCPServer("slow")


@server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
async def lookup(key: str, until: str = "") -> str:
    """Look something up on a far server (waits for the file ``until``)."""
    CALLS.mkdir(exist_ok=True)
    (CALLS / f"{key}.started").write_text("")
    for _ in range(2000):
        if not until or (CALLS / until).exists():
            (CALLS / f"{key}.finished").write_text("")
            return f"{key} found"
        await asyncio.sleep(0.01)
    return f"{key} gave up waiting for {until}"


server.run()
