"""`butler mcp list`: the configured MCP servers, whether they start, and their tools."""

from __future__ import annotations

from dataclasses import asdict

import typer

from butler_cli.app.config.config import config_path, load_config
from butler_cli.app.run.mcp_servers import REMEMBERED_FAILURE_S, mcp_states
from butler_cli.cli import render
from butler_cli.cli.options import Json
from butler_cli.core.errors import ExitCode
from butler_cli.ui.text import visible

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
    """Start each configured server (side by side, each bounded by its start_timeout), list
    its tools, refresh the tool cache, and say which tools wait for approval. Exits 1 when a
    server fails to start (its stderr is in the log file named); runs then go on without it
    for 5 min, and this command tries it again at once."""
    config = load_config()
    if not config.mcp:
        if json_out:
            render.print_json({"servers": []})
        else:
            print(EXAMPLE.format(path=config_path()), end="")
        return
    servers = mcp_states(config)
    if json_out:
        render.print_json({"servers": [asdict(s) for s in servers]})
    else:
        for s in servers:
            print(visible(f"{s.name}: {s.state}"))
            if s.failed:
                print(visible(f"  its stderr: {s.log}"))
            if s.retry_after:
                print(
                    visible(
                        f"  runs go on without it until {s.retry_after} (a failed start is "
                        f"remembered for {REMEMBERED_FAILURE_S / 60:g} min); `butler mcp list` "
                        "tries it at once"
                    )
                )
            for t in s.tools:
                print(visible(f"  {t.name:<32} {t.kind:<9} {t.hints}"))
    if any(s.failed for s in servers):
        raise typer.Exit(ExitCode.FAILED)
