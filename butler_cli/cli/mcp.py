"""`butler mcp list`: the configured MCP servers, whether they start, and their tools."""

from __future__ import annotations

from typing import Any

import typer

from butler_cli.cli.options import Json

app = typer.Typer(
    name="mcp",
    help="MCP servers from the config file: their state and tools (benign or governed).",
    no_args_is_help=True,
    rich_markup_mode=None,
)

EXAMPLE = """No MCP servers configured. Add one to {path}, for example:

[mcp.notes]
command = "python"
args = ["-m", "my_notes_server"]
governed = ["create*", "delete*"]   # these tools wait for your approval; true = all of them
benign = ["count"]                   # run without asking though the server does not mark them
                                     # read-only (tools with no annotations are governed)
"""


@app.command("list")
def list_(json_out: Json = False) -> None:
    """Start each configured server, list its tools, and say which wait for approval."""
    from butler_cli.app.config import config_path, load_config
    from butler_cli.cli import render
    from butler_cli.tools.mcp import McpHub, servers_from

    config = load_config()
    if not config.mcp:
        if json_out:
            render.print_json({"servers": []})
        else:
            print(EXAMPLE.format(path=config_path()), end="")
        return
    hub = McpHub(servers_from(config.mcp)).start()
    try:
        servers: list[dict[str, Any]] = []
        for server in hub.servers:
            tools = [
                {
                    "name": t.full_name,
                    "kind": "governed" if t.governed else "benign",
                    "hints": t.hints().strip(),
                }
                for t in hub.tools
                if t.server is server
            ]
            state = (
                f"failed: {hub.failures[server.name]}" if server.name in hub.failures else "running"
            )
            servers.append({"name": server.name, "state": state, "tools": tools})
    finally:
        hub.close()
    if json_out:
        render.print_json({"servers": servers})
        return
    for s in servers:
        print(f"{s['name']}: {s['state']}")
        for t in s["tools"]:
            print(f"  {t['name']:<32} {t['kind']:<9} {t['hints']}")
