"""A tiny real MCP server (official SDK, stdio) that tells what environment it was given."""

import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("envdump")


@server.tool()
def environment() -> str:
    """Every variable this server sees."""
    return "\n".join(f"{k}={v}" for k, v in sorted(os.environ.items()))


if __name__ == "__main__":
    server.run()
