"""`butler tools list`: every tool, where it comes from, and its default verdict."""

from __future__ import annotations

import typer

from butler_cli.app.config.options import RunOptions
from butler_cli.app.views.inventory import not_offered, tool_inventory
from butler_cli.cli import render
from butler_cli.cli.options import Json

app = typer.Typer(
    name="tools",
    help="The tools the butler offers: built-ins, plug-ins (butler.tools entry points) and MCP.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command("list")
def list_(json_out: Json = False) -> None:
    """Every tool with its source and default verdict, MCP servers' tools included (from the
    tool cache; a server not in it is started to list them; `butler mcp list` starts every
    server and refreshes the cache)."""
    rows = tool_inventory(RunOptions())
    if json_out:
        render.print_json(rows)
        return
    width = max([16, *(len(row["name"]) for row in rows)])  # MCP names run long
    for row in rows:
        print(f"{row['name']:<{width}} {row['kind']:<9} {row['default']:<12} {row['source']}")
    for line in not_offered():
        print(line)
